from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.sandbox import BwrapSandbox, LocalSandbox, Sandbox, bwrap_available

BWRAP_REASON = bwrap_available() if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "bwrap: needs a working bubblewrap sandbox (skipped, with the reason, if not)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if BWRAP_REASON is None:
        return
    skip = pytest.mark.skip(reason=f"bwrap unavailable: {BWRAP_REASON}")
    for item in items:
        if item.get_closest_marker("bwrap"):
            item.add_marker(skip)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


@pytest.fixture(params=["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def sandbox(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Sandbox]:
    """The conformance suite runs against every backend (bwrap skipped only if it cannot start)."""
    yield LocalSandbox() if request.param == "local" else BwrapSandbox(workspace)
