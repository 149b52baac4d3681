"""Helpers for run tests: the tether CLI in a subprocess and scripted trajectories."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


def write_script(example: Path, turns: list[dict[str, Any]]) -> None:
    (example / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))


def tether(*args: str, check: bool = False, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"tether {args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


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
