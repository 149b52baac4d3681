from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.sandbox import BwrapSandbox, LocalSandbox, Sandbox


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(params=["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def sandbox(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Sandbox]:
    """The conformance suite runs against every backend (bwrap skipped only if it cannot start)."""
    yield LocalSandbox() if request.param == "local" else BwrapSandbox(workspace)
