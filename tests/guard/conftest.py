"""Shared fixtures of the guard tests: a private copy of examples/guarded and a store in tmp_path."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.events import EventStore

GUARDED = Path(__file__).resolve().parents[2] / "examples" / "guarded"


@pytest.fixture
def guarded(tmp_path: Path) -> Path:
    """The framework examples' envelope and plan, copied (the envelope's workspace is its own directory)."""
    dest = tmp_path / "guarded"
    shutil.copytree(GUARDED, dest, ignore=shutil.ignore_patterns(".tether", "__pycache__"))
    return dest / "envelope.yaml"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    s = EventStore.open(tmp_path / "tether.db")
    yield s
    s.close()
