"""filesystem.deny made physical in bubblewrap: what a command the gate let through can no longer read."""

from __future__ import annotations

import os
from pathlib import Path

import pathspec
import pytest

from tether.sandbox import BwrapSandbox
from tether.sandbox.mask import masks, matcher

SECRET = "hunter2-do-not-leak"
DENY = [".env", "**/*.pem", "secrets/", "config/prod.*"]


@pytest.fixture
def tree(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("print('hi')\n")
    (workspace / ".env").write_text(f"TOKEN={SECRET}\n")
    (workspace / "deep" / "er").mkdir(parents=True)
    (workspace / "deep" / "er" / "server.pem").write_text(SECRET)
    (workspace / "secrets" / "nested").mkdir(parents=True)
    (workspace / "secrets" / "nested" / "key").write_text(SECRET)
    (workspace / "config").mkdir()
    (workspace / "config" / "prod.yaml").write_text(SECRET)
    (workspace / "config" / "dev.yaml").write_text("dev\n")
    os.link(workspace / ".env", workspace / "src" / "innocent.txt")  # another name for a denied file
    (workspace / "src" / "link").symlink_to("../config/prod.yaml")  # a link to one
    (workspace / "prod.pem.lnk").symlink_to("src/app.py")  # a link whose *name* matches nothing
    for p in (*workspace.rglob("*"), workspace):
        if not p.is_symlink():
            p.chmod(0o777 if p.is_dir() else 0o666)  # only the cover may stop the sandbox user
    return workspace


def rel(paths: list[Path], root: Path) -> set[str]:
    return {p.relative_to(root.resolve()).as_posix() for p in paths}


def test_masks_collects_files_dirs_and_other_names(tree: Path) -> None:
    m = masks(tree, DENY)
    assert rel(m.files, tree) == {".env", "deep/er/server.pem", "config/prod.yaml", "src/innocent.txt"}
    assert rel(m.dirs, tree) == {"secrets"}  # nothing listed under a covered directory


def test_tethers_own_state_directory_is_always_covered(tree: Path) -> None:
    (tree / ".tether").mkdir()
    (tree / "sub" / ".tether").mkdir(parents=True)  # only the one at the root is tether's
    assert rel(masks(tree, []).dirs, tree) == {".tether"}


def test_link_matching_deny_covers_its_target_in_the_workspace(tree: Path) -> None:
    (tree / "leak.pem").symlink_to("src/app.py")
    assert "src/app.py" in rel(masks(tree, DENY).files, tree)


@pytest.mark.parametrize(
    "globs",
    [[".env", "**/*.pem", "secrets/", "/top", "a/**/b", "*.key"], ["**", "!src/**"], ["# comment", "", "x"]],
)
def test_fast_matcher_agrees_with_pathspec(globs: list[str]) -> None:
    spec = pathspec.GitIgnoreSpec.from_lines(globs)
    fast = matcher(tuple(globs))
    for path in [".env", "a/.env", "x.pem", "a/b/c.pem", "secrets/", "a/secrets/", "top", "a/top", "a/b",
                 "a/x/y/b", "k.key", "src/a.py", "x", "readme"]:  # fmt: skip
        assert fast(path) == spec.match_file(path), (globs, path)


@pytest.mark.bwrap
def test_denied_files_are_unreadable_inside_bwrap_however_they_are_read(tree: Path) -> None:
    box = BwrapSandbox(tree, deny=DENY)
    (tree / ".tether").mkdir()
    (tree / ".tether" / "tether.db").write_text(SECRET)
    readers = [
        "cat .env",
        "cat .tether/tether.db",
        "find . -type f -exec cat {} + 2>/dev/null",
        "grep -r TOKEN . 2>/dev/null",
        "cat src/innocent.txt src/link",
        "cat secrets/nested/key",
        "tar cf - . 2>/dev/null | strings",
        "python3 -c \"import pathlib; [print(p.read_text()) for p in pathlib.Path('.').rglob('*') if p.is_file()]\"",
    ]
    for command in readers:
        r = box.run(command, cwd=tree, timeout_s=30)
        assert SECRET not in r.stdout, command
    assert box.run("cat src/app.py config/dev.yaml", cwd=tree, timeout_s=30).stdout == "print('hi')\ndev\n"


@pytest.mark.bwrap
def test_denied_files_cannot_be_changed_or_moved(tree: Path) -> None:
    box = BwrapSandbox(tree, deny=DENY)
    box.run("echo x > .env; rm -f .env; mv .env moved; echo y > secrets/new; rm -rf secrets", cwd=tree, timeout_s=30)
    assert (tree / ".env").read_text() == f"TOKEN={SECRET}\n"
    assert (tree / "secrets" / "nested" / "key").read_text() == SECRET
    assert not (tree / "moved").exists() and not (tree / "secrets" / "new").exists()


@pytest.mark.bwrap
def test_the_same_reads_succeed_without_the_cover(tree: Path) -> None:
    """The control: the sandbox user can read these files; only the cover stops it."""
    r = BwrapSandbox(tree).run("cat .env secrets/nested/key", cwd=tree, timeout_s=30)
    assert SECRET in r.stdout


@pytest.mark.bwrap
def test_a_file_created_after_the_start_is_not_covered(tree: Path) -> None:
    """The documented limit: the list is taken when the sandbox starts; the command's own file is its own."""
    r = BwrapSandbox(tree, deny=DENY).run("echo mine > later.pem && cat later.pem", cwd=tree, timeout_s=30)
    assert r.stdout == "mine\n"
