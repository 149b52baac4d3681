"""The ``hook`` fixture: hook calls of a fresh project, answered in-process."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookkit import Hook


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)
