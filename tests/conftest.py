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


@pytest.fixture(autouse=True)
def _private_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the developer's ~/.config/tether (the anchor key lives there)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg-config"))
    for name in ("TETHER_KEY", "TETHER_ANCHOR_FILE", "TETHER_ANCHOR_EVERY"):
        monkeypatch.delenv(name, raising=False)
