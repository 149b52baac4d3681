"""Host-side git on an agent-written workspace never runs a program the agent configured."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tether.verify.gitdiff import workspace_diff


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_clean_filter_planted_in_the_repo_does_not_run_during_the_diff(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    git(ws, "init", "-q")
    (ws / "f.txt").write_text("a\n")
    git(ws, "add", ".")
    git(ws, "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "base")
    base = git(ws, "rev-parse", "HEAD")
    pwned = tmp_path / "PWNED"
    git(ws, "config", "filter.x.clean", f"sh -c 'touch {pwned}; cat'")
    (ws / ".gitattributes").write_text("f.txt filter=x\n")
    (ws / "f.txt").write_text("a\nb\n")

    diff = workspace_diff(ws, base)
    assert "f.txt" in diff.paths and not pwned.exists()
    subprocess.run(["git", "diff", "--stat", base], cwd=ws, capture_output=True, check=False)
    assert pwned.exists()  # the planted filter is real: plain git runs it
