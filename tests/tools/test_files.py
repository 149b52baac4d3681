from __future__ import annotations

import stat
from pathlib import Path

import pytest

from tether.tools import ToolContext
from tether.tools.files import MAX_READ_LINES, edit_file, list_dir, read_file, write_file

# --------------------------------------------------------------------------- read_file


def test_read_file_slices_with_line_numbers(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    r = read_file.invoke({"path": "a.txt", "start_line": 3, "end_line": 5}, ctx)
    assert r.ok
    assert r.content.splitlines() == [
        "a.txt (lines 3-5 of 10)",
        "     3\tline 3",
        "     4\tline 4",
        "     5\tline 5",
        "[... 5 more lines; file has 10]",
    ]
    assert r.data["total_lines"] == 10 and r.data["end_line"] == 5
    assert r.data["sha256"].startswith("sha256:")


def test_read_file_whole_and_clamped_end(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("x\ny\n")
    r = read_file.invoke({"path": "a.txt", "end_line": 99}, ctx)
    assert r.content == "a.txt (lines 1-2 of 2)\n     1\tx\n     2\ty"


def test_read_file_caps_lines_and_says_how_to_continue(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "big.txt").write_text("".join(f"{i}\n" for i in range(MAX_READ_LINES + 500)))
    r = read_file.invoke({"path": "big.txt"}, ctx)
    assert r.ok and r.data["truncated"] is True
    assert r.data["end_line"] == MAX_READ_LINES
    assert f"start_line={MAX_READ_LINES + 1}" in r.content
    assert len(r.content.splitlines()) == MAX_READ_LINES + 2


def test_read_file_clips_long_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "min.js").write_text("a" * 50_000 + "\n")
    r = read_file.invoke({"path": "min.js"}, ctx)
    assert len(r.content) < 3000 and "line clipped, 48000 more characters" in r.content


@pytest.mark.parametrize(
    ("setup", "args", "failure"),
    [
        (None, {"path": "missing.txt"}, "not_found"),
        ("dir", {"path": "d"}, "is_a_directory"),
        ("bin", {"path": "b.bin"}, "not_text"),
        ("text", {"path": "t.txt", "start_line": 5}, "invalid_args"),
        ("text", {"path": "t.txt", "start_line": 2, "end_line": 1}, "invalid_args"),
        (None, {"path": "../outside.txt"}, "outside_workspace"),
        (None, {"path": "/etc/passwd"}, "outside_workspace"),
    ],
)
def test_read_file_failures(
    ctx: ToolContext, workspace: Path, setup: str | None, args: dict[str, object], failure: str
) -> None:
    (workspace.parent / "outside.txt").write_text("secret\n")
    if setup == "dir":
        (workspace / "d").mkdir()
    elif setup == "bin":
        (workspace / "b.bin").write_bytes(b"\x7fELF\x00\x01")
    elif setup == "text":
        (workspace / "t.txt").write_text("one\ntwo\n")
    r = read_file.invoke(args, ctx)
    assert (r.ok, r.failure_class) == (False, failure), r.content
    assert "secret" not in r.content


def test_read_file_refuses_symlink_escape(ctx: ToolContext, workspace: Path) -> None:
    (workspace.parent / "outside.txt").write_text("secret\n")
    (workspace / "link.txt").symlink_to(workspace.parent / "outside.txt")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "up").symlink_to(workspace.parent)
    for path in ("link.txt", "sub/up/outside.txt"):
        r = read_file.invoke({"path": path}, ctx)
        assert (r.ok, r.failure_class) == (False, "outside_workspace")
        assert "secret" not in r.content


def test_read_file_follows_symlink_inside_and_allows_absolute_inside(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "real.txt").write_text("hello\n")
    (workspace / "alias.txt").symlink_to("real.txt")
    assert read_file.invoke({"path": "alias.txt"}, ctx).content.startswith("real.txt (lines 1-1 of 1)")
    assert read_file.invoke({"path": str(workspace / "real.txt")}, ctx).ok


# --------------------------------------------------------------------------- list_dir


def test_list_dir(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "b.txt").write_text("12345")
    (workspace / "a.txt").write_text("")
    (workspace / "ln").symlink_to("b.txt")
    r = list_dir.invoke({}, ctx)
    assert r.ok
    assert r.content.splitlines() == ["./ (4 entries)", "src/", "a.txt  (0 bytes)", "b.txt  (5 bytes)", "ln -> b.txt"]
    assert [e["kind"] for e in r.data["entries"]] == ["dir", "file", "file", "symlink"]


def test_list_dir_failures(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "f").write_text("")
    assert list_dir.invoke({"path": "nope"}, ctx).failure_class == "not_found"
    assert list_dir.invoke({"path": "f"}, ctx).failure_class == "not_a_directory"
    assert list_dir.invoke({"path": ".."}, ctx).failure_class == "outside_workspace"


# --------------------------------------------------------------------------- write_file


def test_write_file_creates_with_parents(ctx: ToolContext, workspace: Path) -> None:
    r = write_file.invoke({"path": "pkg/new/mod.py", "content": "x = 1\n"}, ctx)
    assert r.ok and r.changed_files == ("pkg/new/mod.py",)
    assert (workspace / "pkg/new/mod.py").read_text() == "x = 1\n"
    assert r.data["created"] is True and r.data["diff_stat"] == {"added": 1, "removed": 0}
    # Readable by the unprivileged user sandboxed commands run as (mkstemp alone would leave 0600).
    assert stat.S_IMODE((workspace / "pkg/new/mod.py").stat().st_mode) == 0o644


def test_write_file_overwrite_keeps_mode(ctx: ToolContext, workspace: Path) -> None:
    script = workspace / "run.sh"
    script.write_text("echo old\n")
    script.chmod(0o755)
    r = write_file.invoke({"path": "run.sh", "content": "echo new\n"}, ctx)
    assert r.ok and r.data["sha256_before"] != r.data["sha256_after"]
    assert script.read_text() == "echo new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    assert not [p.name for p in workspace.iterdir() if p.name.endswith(".tether-tmp")]


def test_write_file_is_idempotent(ctx: ToolContext, workspace: Path) -> None:
    first = write_file.invoke({"path": "a.txt", "content": "same\n"}, ctx)
    second = write_file.invoke({"path": "a.txt", "content": "same\n"}, ctx)
    assert write_file.contract.idempotent is True
    assert first.changed_files == ("a.txt",)
    assert second.ok and second.changed_files == ()
    assert "unchanged" in second.content
    assert (workspace / "a.txt").read_text() == "same\n"


def test_write_file_preview_is_a_diff_and_writes_nothing(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.py").write_text("a = 1\nb = 2\n")
    preview = write_file.preview({"path": "a.py", "content": "a = 1\nb = 3\n"}, ctx)
    assert preview.splitlines() == ["--- a/a.py", "+++ b/a.py", "@@ -1,2 +1,2 @@", " a = 1", "-b = 2", "+b = 3"]
    assert (workspace / "a.py").read_text() == "a = 1\nb = 2\n"
    new = write_file.preview({"path": "n.txt", "content": "hi"}, ctx)
    assert new.splitlines()[:2] == ["--- /dev/null", "+++ b/n.txt"] and "\\ No newline at end of file" in new
    assert not (workspace / "n.txt").exists()


def test_write_file_refuses_outside_and_symlink_escape(ctx: ToolContext, workspace: Path) -> None:
    target = workspace.parent / "victim.txt"
    target.write_text("keep\n")
    (workspace / "evil").symlink_to(target)
    (workspace / "dangling").symlink_to(workspace.parent / "created-outside.txt")
    for path in ("../victim.txt", "evil", "dangling", str(target)):
        r = write_file.invoke({"path": path, "content": "pwned\n"}, ctx)
        assert (r.ok, r.failure_class) == (False, "outside_workspace"), path
        assert write_file.preview({"path": path, "content": "x"}, ctx).startswith("write_file would fail")
    assert target.read_text() == "keep\n"
    assert not (workspace.parent / "created-outside.txt").exists()


def test_write_file_to_directory_fails(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "d").mkdir()
    assert write_file.invoke({"path": "d", "content": "x"}, ctx).failure_class == "is_a_directory"


# --------------------------------------------------------------------------- edit_file


SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"


def test_edit_file_replaces_unique_match(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    r = edit_file.invoke({"path": "m.py", "old": "def g():\n    return 1", "new": "def g():\n    return 2"}, ctx)
    assert r.ok, r.content
    assert (workspace / "m.py").read_text() == SOURCE.replace("def g():\n    return 1", "def g():\n    return 2")
    assert r.changed_files == ("m.py",)
    assert r.data["line"] == 5 and "edited m.py at line 5" in r.content
    assert "-    return 1\n+    return 2" in r.content


def test_edit_file_ambiguous_match_names_count_and_lines(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    r = edit_file.invoke({"path": "m.py", "old": "    return 1", "new": "    return 2"}, ctx)
    assert (r.ok, r.failure_class) == (False, "ambiguous_match")
    assert "occurs 2 times (starting at lines 2, 6)" in r.content
    assert r.data["lines"] == [2, 6] and r.data["matches"] == 2
    assert (workspace / "m.py").read_text() == SOURCE


def test_edit_file_overlapping_occurrences_are_ambiguous(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "a.txt").write_text("aaa")
    r = edit_file.invoke({"path": "a.txt", "old": "aa", "new": "b"}, ctx)
    assert r.failure_class == "ambiguous_match" and r.data["matches"] == 2


def test_edit_file_no_match_says_zero_and_hints(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    r = edit_file.invoke({"path": "m.py", "old": "return 3", "new": "return 4"}, ctx)
    assert (r.ok, r.failure_class) == (False, "no_match")
    assert "0 matches" in r.content and r.data["matches"] == 0
    r = edit_file.invoke({"path": "m.py", "old": "  def g():  ", "new": "def h():"}, ctx)
    assert "occurs at line 5" in r.content


def test_edit_file_preserves_crlf_and_hints_about_it(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "w.txt").write_bytes(b"one\r\ntwo\r\nthree\r\n")
    r = edit_file.invoke({"path": "w.txt", "old": "one\ntwo", "new": "1\n2"}, ctx)
    assert r.failure_class == "no_match" and "CRLF" in r.content
    r = edit_file.invoke({"path": "w.txt", "old": "two", "new": "2"}, ctx)
    assert r.ok
    assert (workspace / "w.txt").read_bytes() == b"one\r\n2\r\nthree\r\n"


@pytest.mark.parametrize(
    ("args", "failure"),
    [
        ({"path": "m.py", "old": "", "new": "x"}, "invalid_args"),
        ({"path": "m.py", "old": "f", "new": "f"}, "invalid_args"),
        ({"path": "nope.py", "old": "a", "new": "b"}, "not_found"),
        ({"path": "../m.py", "old": "a", "new": "b"}, "outside_workspace"),
        ({"path": "blob", "old": "a", "new": "b"}, "not_text"),
    ],
)
def test_edit_file_failures(ctx: ToolContext, workspace: Path, args: dict[str, str], failure: str) -> None:
    (workspace / "m.py").write_text(SOURCE)
    (workspace / "blob").write_bytes(b"a\x00b")
    r = edit_file.invoke(args, ctx)
    assert (r.ok, r.failure_class) == (False, failure), r.content


def test_edit_file_preview_is_a_diff_and_writes_nothing(ctx: ToolContext, workspace: Path) -> None:
    (workspace / "m.py").write_text(SOURCE)
    preview = edit_file.preview({"path": "m.py", "old": "def f():", "new": "def first():"}, ctx)
    assert "-def f():\n+def first():" in preview and preview.startswith("--- a/m.py\n+++ b/m.py")
    assert (workspace / "m.py").read_text() == SOURCE
    failing = edit_file.preview({"path": "m.py", "old": "return 1", "new": "x"}, ctx)
    assert failing.startswith("edit_file would fail: [ambiguous_match]")


def test_write_tools_refuse_git_internals_and_run_state(ctx: ToolContext, workspace: Path) -> None:
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    (workspace / ".tether").mkdir()
    (workspace / ".tether" / "runs.db").write_text("log\n")
    (workspace / "cfg").symlink_to(".git/config")
    for path in (".git/config", "cfg", ".git/hooks/pre-commit", ".tether/runs.db", "./.tether/new"):
        r = write_file.invoke({"path": path, "content": '[filter "x"]\n\tclean = sh -c evil\n'}, ctx)
        assert (r.ok, r.failure_class) == (False, "protected_path"), path
    r = edit_file.invoke({"path": ".git/config", "old": "[core]", "new": "[core]\n\tfsmonitor = evil"}, ctx)
    assert (r.ok, r.failure_class) == (False, "protected_path")
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert (workspace / ".tether" / "runs.db").read_text() == "log\n"
    assert not (workspace / ".git" / "hooks").exists()
    # Reading them is the gate's business, not a write-tool concern.
    assert read_file.invoke({"path": ".git/config"}, ctx).ok
    # A file merely named like them elsewhere is fine.
    assert write_file.invoke({"path": "docs/.git-notes", "content": "x"}, ctx).ok
