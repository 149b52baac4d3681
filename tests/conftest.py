"""Shared fixtures: real files, real SQLite, the repository's examples."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pgkit import Postgres, running
from pgkit import why_not as postgres_why_not
from privatekit import private_config
from temporalkit import why_not as temporal_why_not

from tether.sandbox import bwrap_available

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "bugfix"


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A private copy of examples/bugfix (plan, envelope, trajectory, project)."""
    dest = tmp_path / "bugfix"
    shutil.copytree(EXAMPLE, dest, ignore=shutil.ignore_patterns(".tether", "__pycache__", ".pytest_cache"))
    return dest


PROJECT_TOOLS = ("python", "python3", "pytest", "py.test")


@pytest.fixture(scope="session", autouse=True)
def _projects_python(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """PATH for the whole session: the scratch projects' ``python``/``pytest``, then this venv's ``bin``.

    Why: a run's test command (``python -m pytest -q``) finds ``python`` on PATH, here this venv's, whose pytest
    would auto-load every plugin the dev extras installed — langsmith's alone costs ~0.6 s of CPU — on each of
    the ~6 test runs of every end-to-end run. A project has its own environment without those; these shims are
    this venv's interpreter with plugin auto-loading off (a plugin named with ``-p``, as tether's reporter is,
    still loads). Only commands that look ``python`` up on PATH (the local sandbox) see them; bubblewrap sets its
    own PATH. The ``tether`` subprocesses of the tests inherit this PATH, so their runs see the same.
    """
    shims = tmp_path_factory.mktemp("projects-python")
    venv_bin = Path(sys.executable).parent
    for name in PROJECT_TOOLS:
        target = venv_bin / name
        if target.exists():
            (shims / name).write_text(f'#!/bin/sh\nPYTEST_DISABLE_PLUGIN_AUTOLOAD=1 exec "{target}" "$@"\n')
            (shims / name).chmod(0o755)
    before = os.environ.get("PATH", "")
    os.environ["PATH"] = f"{shims}:{venv_bin}:{before}"
    yield
    os.environ["PATH"] = before


@pytest.fixture(autouse=True)
def _private_config(tmp_path: Path) -> Iterator[None]:
    """No test reads or writes the developer's ~/.config/tether (the anchor key) or ~/.local/state/tether (the list
    of databases, a hook session's pin): ``privatekit.private_config`` for each test."""
    with private_config(tmp_path):
        yield


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``bwrap``, ``browser``, ``strace``, ``postgres``, ``temporal`` or ``root`` are skipped, with the
    reason, where bubblewrap cannot start, no chromium or strace is installed, no throwaway PostgreSQL can start
    (tests/pgkit.py), no Temporal dev server (tests/temporalkit.py) or the tests do not run as root — never in CI,
    which installs all five, runs as root and fails instead.

    One place for the rule, so that no test file can quietly skip a sandbox, browser or database test in CI.
    """
    needs = {
        "bwrap": lambda: bwrap_available() if shutil.which("bwrap") else "bubblewrap (bwrap) is not installed",
        "browser": lambda: None if shutil.which("chromium") else "chromium is not installed (apt-get install chromium)",
        "strace": lambda: None if shutil.which("strace") else "strace is not installed (apt-get install strace)",
        "postgres": postgres_why_not,
        "temporal": temporal_why_not,
        "root": _root_why_not,
    }
    for marker, why_not in needs.items():
        marked = [item for item in items if item.get_closest_marker(marker)]
        reason = why_not() if marked else None
        if reason is None:
            continue
        if os.environ.get("CI"):
            raise pytest.UsageError(f"CI must run the {marker} tests, but: {reason}")
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=f"{marker} unavailable: {reason}"))


def _root_why_not() -> str | None:
    """Tests that give a file to another user or run a check as one need root and ``setpriv`` (util-linux)."""
    if os.geteuid() != 0:
        return "the tests do not run as root (they give files to another user or act as one)"
    return None if shutil.which("setpriv") else "setpriv is not installed (apt-get install util-linux)"


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL server, one per test process (each xdist worker starts its own): tests/pgkit.py.

    Tests using it are marked ``postgres``; each makes its own database (:meth:`Postgres.create_database`).
    """
    with running() as pg:
        yield pg
