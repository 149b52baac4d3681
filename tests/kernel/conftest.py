"""Run fixtures: a private copy of the bugfix example as a git workspace, and one finished demo run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from runkit import EXAMPLE, FinishedDemo

from tether.cli.demo_cmds import prepare


@pytest.fixture
def bugfix(tmp_path: Path) -> Path:
    """examples/bugfix copied, with its project made a git repository (as the demo does)."""
    return prepare(EXAMPLE, tmp_path)


@pytest.fixture(scope="session")
def finished_demo(tmp_path_factory: pytest.TempPathFactory) -> FinishedDemo:
    """One demo run per test process, shared by the tests that read what a finished demo left (its output, its
    log, a replay of it) instead of each running the whole demo again. Read-only: a test that writes copies the
    log (:meth:`FinishedDemo.copy_db`). The workspace is removed, so nothing can lean on it but the log."""
    work = tmp_path_factory.mktemp("finished-demo")
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_KEY", "TETHER_ANCHOR_FILE", "TETHER_ANCHOR_EVERY")}
    env |= {"XDG_CONFIG_HOME": str(work / "xdg-config"), "XDG_STATE_HOME": str(work / "xdg-state")}
    proc = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "demo", "--workdir", str(work), "--sandbox", "local", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    shutil.rmtree(work / "bugfix")
    return FinishedDemo(work / "tether.db", lines[-1]["run_id"], lines)
