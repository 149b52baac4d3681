"""Helpers for run tests: the tether CLI in a process of its own and scripted trajectories."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import clikit
import yaml

#: The bugfix example, which the run tests copy (``conftest.bugfix``) and run.
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"


def write_script(example: Path, turns: list[dict[str, Any]]) -> None:
    (example / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))


def tether(*args: str, check: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``tether ARGS`` with this process's environment and directory, forked from one that imported the CLI
    (``tests/clikit.py``: each run's process no longer imports it, ~0.5 s); the exit code, stdout and stderr."""
    proc = clikit.run(args, dict(os.environ), timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"tether {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def recompile(envelope: Path) -> Path:
    """The example's plan compiled into ``envelope`` again once a test edited it: what `tether compile PLAN -o
    ENVELOPE` does (tests/test_envelope.py runs the command), here in the test's own process, as set-up and not what a
    run test proves (a process of its own cost each ~0.35 s)."""
    from tether.envelope.compile import compile_envelope

    compile_envelope(envelope.parent / "plan.yaml", envelope)
    return envelope


FIX = {
    "name": "edit_file",
    "args": {
        "path": "src/stats/core.py",
        "old": "    return ordered[middle]\n",
        "new": (
            "    if len(ordered) % 2:\n"
            "        return ordered[middle]\n"
            "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
        ),
    },
}
FINISH = {"name": "finish", "args": {"summary": "fixed median"}}


@dataclass(frozen=True)
class FinishedDemo:
    """`tether demo --json` run to its end: what it printed and its log; its workspace is gone."""

    db: Path
    run_id: str
    lines: list[dict[str, Any]]
    """The JSON lines it printed: the events as they were appended, then the output contract."""

    def copy_db(self, to: Path) -> Path:
        """A private copy of the log (SQLite's backup: consistent whatever the source's journal holds)."""
        to.mkdir(parents=True, exist_ok=True)
        src, dst = sqlite3.connect(self.db), sqlite3.connect(to / self.db.name)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        return to / self.db.name
