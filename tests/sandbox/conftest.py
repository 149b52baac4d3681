from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.sandbox import BwrapSandbox, LocalSandbox, Sandbox, bwrap_available

BWRAP_REASON = bwrap_available() if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip bwrap tests, with the reason, where bubblewrap cannot start — but never in CI, which installs it."""
    if BWRAP_REASON is None:
        return
    if os.environ.get("CI"):
        raise pytest.UsageError(f"CI must run the bwrap tests, but bubblewrap cannot start: {BWRAP_REASON}")
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
