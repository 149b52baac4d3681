from __future__ import annotations

from pathlib import Path

from tether.tools import ToolContext
from tether.tools.search import search


def _files(ws: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = ws / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content)


def _paths(ctx: ToolContext, **args: object) -> list[str]:
    r = search.invoke({"pattern": "needle", **args}, ctx)
    assert r.ok, r.content
    return sorted({m["path"] for m in r.data["matches"]})


def test_search_reports_path_line_and_text(ctx: ToolContext, workspace: Path) -> None:
    _files(workspace, {"src/a.py": "x = 1\nneedle = 2\n", "b.txt": "no\n"})
    r = search.invoke({"pattern": r"needle\s*="}, ctx)
    assert r.ok
    assert r.content.splitlines() == ["1 matches for /needle\\s*=/:", "src/a.py:2: needle = 2"]
    assert r.data["matches"] == [{"path": "src/a.py", "line": 2, "text": "needle = 2"}]
    assert r.data["files_scanned"] == 2


def test_search_honours_gitignore_at_every_level(ctx: ToolContext, workspace: Path) -> None:
    _files(
        workspace,
        {
            ".gitignore": "build/\n*.log\n!keep.log\n",
            "build/out.py": "needle\n",
            "app.log": "needle\n",
            "keep.log": "needle\n",
            "pkg/.gitignore": "generated.py\n",
            "pkg/generated.py": "needle\n",
            "pkg/real.py": "needle\n",
            "other/generated.py": "needle\n",
            "deep/build/x.py": "needle\n",
        },
    )
    assert _paths(ctx) == ["keep.log", "other/generated.py", "pkg/real.py"]


def test_search_honours_git_info_exclude(ctx: ToolContext, workspace: Path) -> None:
    _files(workspace, {".git/info/exclude": "secret.txt\n", "secret.txt": "needle\n", "ok.txt": "needle\n"})
    assert _paths(ctx) == ["ok.txt"]


def test_search_skips_tool_dirs_and_binary_files(ctx: ToolContext, workspace: Path) -> None:
    _files(
        workspace,
        {
            ".git/config": "needle\n",
            ".tether/log.txt": "needle\n",
            ".venv/lib/x.py": "needle\n",
            "img.png": b"\x89PNG\x00needle",
            "main.py": "needle\n",
        },
    )
    r = search.invoke({"pattern": "needle"}, ctx)
    assert [m["path"] for m in r.data["matches"]] == ["main.py"]
    assert r.data["skipped_binary"] == 1


def test_search_does_not_follow_symlinks_out_of_the_workspace(ctx: ToolContext, workspace: Path) -> None:
    outside = workspace.parent / "outside"
    outside.mkdir()
    (outside / "s.txt").write_text("needle\n")
    (workspace / "dirlink").symlink_to(outside)
    (workspace / "filelink.txt").symlink_to(outside / "s.txt")
    (workspace / "in.txt").write_text("needle\n")
    assert _paths(ctx) == ["in.txt"]
    assert search.invoke({"pattern": "needle", "path": "dirlink"}, ctx).failure_class == "outside_workspace"


def test_search_glob_and_path_scope(ctx: ToolContext, workspace: Path) -> None:
    _files(
        workspace, {"src/a.py": "needle\n", "src/sub/b.py": "needle\n", "src/c.txt": "needle\n", "t/d.py": "needle\n"}
    )
    assert _paths(ctx, glob="*.py") == ["src/a.py", "src/sub/b.py", "t/d.py"]
    assert _paths(ctx, path="src") == ["src/a.py", "src/c.txt", "src/sub/b.py"]
    assert _paths(ctx, path="src", glob="src/sub/**") == ["src/sub/b.py"]
    assert _paths(ctx, path="src/c.txt") == ["src/c.txt"]


def test_search_subdirectory_start_still_honours_parent_gitignore(ctx: ToolContext, workspace: Path) -> None:
    _files(workspace, {".gitignore": "*.gen\n", "a/b/x.gen": "needle\n", "a/b/y.py": "needle\n"})
    assert _paths(ctx, path="a/b") == ["a/b/y.py"]


def test_search_max_results_truncates(ctx: ToolContext, workspace: Path) -> None:
    _files(workspace, {"many.txt": "needle\n" * 50})
    r = search.invoke({"pattern": "needle", "max_results": 10}, ctx)
    assert len(r.data["matches"]) == 10 and r.data["truncated"] is True
    assert "stopped at 10 matches" in r.content


def test_search_no_matches_is_ok(ctx: ToolContext, workspace: Path) -> None:
    _files(workspace, {"a.txt": "hay\n"})
    r = search.invoke({"pattern": "needle"}, ctx)
    assert r.ok and r.data["matches"] == [] and r.content == "no matches for /needle/ (1 files scanned)"


def test_search_failures(ctx: ToolContext, workspace: Path) -> None:
    r = search.invoke({"pattern": "("}, ctx)
    assert (r.ok, r.failure_class) == (False, "invalid_args") and "not a valid regular expression" in r.content
    assert search.invoke({"pattern": "x", "path": "nope"}, ctx).failure_class == "not_found"
    assert search.invoke({"pattern": "x", "path": ".."}, ctx).failure_class == "outside_workspace"
