"""`tether demo` leaves nothing behind unless asked to keep its directory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def demo(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(tmp)}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "demo", "--sandbox", "local", *args],
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def test_the_demo_cleans_up_unless_kept(tmp_path: Path) -> None:
    gone, kept = tmp_path / "gone", tmp_path / "kept"
    gone.mkdir()
    kept.mkdir()
    proc = demo(gone)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert list(gone.iterdir()) == []
    assert "removed" in proc.stdout and "--keep" in proc.stdout and "inspect it" not in proc.stdout
    proc = demo(kept, "--keep")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (work,) = kept.iterdir()
    assert (work / "tether.db").is_file() and f"--db {work / 'tether.db'}" in proc.stdout
