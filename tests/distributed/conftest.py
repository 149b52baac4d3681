"""One Temporal dev server per test module (tests/temporalkit.py), on ports the OS handed out."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from temporalkit import Temporal, running


@pytest.fixture(scope="module")
def temporal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Temporal]:
    with running(tmp_path_factory.mktemp("temporal")) as server:
        yield server


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"
