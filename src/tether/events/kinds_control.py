"""Event kinds for verification, beliefs and control (issue 5)."""

from __future__ import annotations
