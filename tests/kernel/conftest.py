"""Run fixtures: a private copy of the bugfix example as a git workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.cli.demo_cmds import prepare

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"


@pytest.fixture
def bugfix(tmp_path: Path) -> Path:
    """examples/bugfix copied, with its project made a git repository (as the demo does)."""
    return prepare(EXAMPLE, tmp_path)
