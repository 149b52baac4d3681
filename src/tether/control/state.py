"""Control state: how much freedom the run has right now. Only the resolver sets it."""

from __future__ import annotations

from enum import StrEnum


class ControlState(StrEnum):
    NORMAL = "NORMAL"
    CAUTIOUS = "CAUTIOUS"
    BLOCKED = "BLOCKED"
    HUMAN_REQUIRED = "HUMAN_REQUIRED"
