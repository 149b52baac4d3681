from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.tools import ToolContext
from tether.tools.git import git_diff

MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def sandbox(any_sandbox: Any) -> Any:
    """Every test here runs once per sandbox backend (local, and bwrap where it can start)."""
    return any_sandbox


def test_git_diff_outside_a_repo(ctx: ToolContext) -> None:
    r = git_diff.invoke({}, ctx)
    assert (r.ok, r.failure_class) == (False, "not_a_git_repo")


def test_git_diff_shows_status_and_diff_against_head(
    make_ctx: MakeCtx, git: Callable[..., str], git_workspace: Path
) -> None:
    ctx = make_ctx(ws=git_workspace)
    (git_workspace / "src/app.py").write_text("def add(a, b):\n    return a - b\n")
    (git_workspace / "new.txt").write_text("fresh\n")
    git(git_workspace, "add", "new.txt")
    (git_workspace / "untracked.txt").write_text("u\n")
    r = git_diff.invoke({}, ctx)
    assert r.ok, r.content
    assert r.data["against"] == "HEAD"
    assert " M src/app.py" in r.content and "A  new.txt" in r.content and "?? untracked.txt" in r.content
    assert "-    return a + b\n+    return a - b" in r.content
    assert "+fresh" in r.content  # staged changes are included against HEAD


def test_git_diff_scoped_to_a_path(make_ctx: MakeCtx, git_workspace: Path) -> None:
    ctx = make_ctx(ws=git_workspace)
    (git_workspace / "src/app.py").write_text("changed\n")
    (git_workspace / "README.md").write_text("changed too\n")
    r = git_diff.invoke({"path": "README.md"}, ctx)
    assert r.ok and r.data["path"] == "README.md"
    assert "README.md" in r.data["diff"] and "src/app.py" not in r.data["diff"]
    assert "src/app.py" not in r.content
    assert git_diff.invoke({"path": "../x"}, ctx).failure_class == "outside_workspace"


def test_git_diff_clean_and_no_commits(
    make_ctx: MakeCtx, git: Callable[..., str], git_workspace: Path, tmp_path: Path
) -> None:
    clean = git_diff.invoke({}, make_ctx(ws=git_workspace))
    assert clean.ok and "(clean)" in clean.content and "(no differences in tracked files)" in clean.content
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    git(fresh, "init", "-q")
    (fresh / "a.txt").write_text("a\n")
    git(fresh, "add", "a.txt")
    r = git_diff.invoke({}, make_ctx(ws=fresh))
    assert r.ok and r.data["against"] == "index"
    assert "A  a.txt" in r.content and "+a" in r.content


def test_git_diff_does_not_run_configured_external_diff(
    make_ctx: MakeCtx, git: Callable[..., str], git_workspace: Path
) -> None:
    marker = git_workspace.parent / "pwned"
    git(git_workspace, "config", "diff.external", f"touch {marker};")
    git(git_workspace, "config", "core.fsmonitor", f"touch {marker};")
    (git_workspace / "README.md").write_text("x\n")
    r = git_diff.invoke({}, make_ctx(ws=git_workspace))
    assert r.ok, r.content
    assert not marker.exists()
