"""Shared fixtures: real files, real SQLite, the repository's examples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "bugfix"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A private copy of examples/bugfix (plan, envelope, trajectory, project)."""
    dest = tmp_path / "bugfix"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".tether", "__pycache__", ".pytest_cache"))
    return dest
