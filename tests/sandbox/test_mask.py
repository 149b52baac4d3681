"""filesystem.deny made physical in bubblewrap: what a command the gate let through can no longer read."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pathspec
import pytest

from tether.sandbox import BwrapSandbox, mask
from tether.sandbox.mask import Listings, masks, matcher

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


# -- the listings kept between walks: an attack on that cache must find every denied file still covered --


@pytest.fixture
def aged(tree: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The tree, with the racy window shortened and waited out: its directories may be remembered between walks."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    time.sleep(0.1)
    return tree


def test_unchanged_directories_are_not_listed_again(aged: Path) -> None:
    listings = Listings()
    first = masks(aged, DENY, listings)
    listed = listings.listed
    assert listed == 5  # the root, src, deep, deep/er, config (secrets/ is covered whole, never walked)
    again = masks(aged, DENY, listings)
    assert listings.listed == listed and again == first


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "src" / "new.pem").write_text(SECRET),  # created in a remembered directory
        lambda t: os.rename(t / "src" / "app.py", t / "src" / "app.pem"),  # renamed into a denied name
        lambda t: os.link(t / "config" / "dev.yaml", t / "deep" / "er" / "copy.pem"),  # a link made there
        lambda t: (t / "deep" / "er" / "server.pem").unlink() or (t / "deep" / "er" / "server.pem").mkdir(),
    ],
    ids=["created", "renamed", "linked", "file-became-dir"],
)
def test_a_change_in_a_remembered_directory_is_seen(aged: Path, change: Callable[[Path], object]) -> None:
    listings = Listings()
    masks(aged, DENY, listings)
    change(aged)
    time.sleep(0.1)  # past the racy window: only the key can tell now
    assert masks(aged, DENY, listings) == masks(aged, DENY)  # the same as a walk that remembers nothing


def test_restoring_a_directorys_mtime_does_not_hide_a_new_file(aged: Path) -> None:
    """``touch -r`` (utimensat) sets an mtime back; the ctime it cannot, and the listing's key holds both."""
    listings = Listings()
    masks(aged, DENY, listings)
    before = os.stat(aged / "src")
    (aged / "src" / ".env").write_text(SECRET)
    os.utime(aged / "src", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(aged / "src").st_mtime_ns == before.st_mtime_ns
    time.sleep(0.1)  # past the racy window: only the key can tell now
    assert "src/.env" in rel(masks(aged, DENY, listings).files, aged)


def secret_dir(path: Path, name: str) -> Path:
    path.mkdir()
    (path / name).write_text(SECRET)
    return path


def test_a_directory_replaced_by_another_is_listed_afresh(aged: Path, tmp_path: Path) -> None:
    listings = Listings()
    masks(aged, DENY, listings)
    other = secret_dir(tmp_path / "other", "id.pem")
    os.utime(other, ns=(0, 0))
    os.rename(aged / "src", tmp_path / "old-src")
    os.rename(other, aged / "src")
    assert "src/id.pem" in rel(masks(aged, DENY, listings).files, aged)


def test_a_directory_changed_just_now_is_never_taken_from_the_last_walk(tree: Path) -> None:
    """The racy rule (the real window): a directory written within it may change again in the same clock tick
    after it is listed, so its listing is not reused, and a file made right after the walk is covered."""
    listings = Listings()
    masks(tree, DENY, listings)
    (tree / "src" / "later.pem").write_text(SECRET)
    assert "src/later.pem" in rel(masks(tree, DENY, listings).files, tree)
    assert listings.by_dir == {}  # nothing kept: every directory changed within the window


def test_another_workspace_does_not_use_the_listings(aged: Path, tmp_path: Path) -> None:
    listings = Listings()
    masks(aged, DENY, listings)
    ws2 = secret_dir(tmp_path / "ws2", ".env")
    assert rel(masks(ws2, DENY, listings).files, ws2) == {".env"}


@pytest.mark.bwrap
def test_bwrap_covers_a_file_denied_after_an_earlier_command_remembered_its_directory(
    aged: Path,
) -> None:
    box = BwrapSandbox(aged, deny=DENY)
    assert box.run("cat src/app.py", cwd=aged, timeout_s=30).ok  # the walk remembers src/
    (aged / "src" / "key.pem").write_text(SECRET)
    (aged / "src" / "key.pem").chmod(0o666)
    r = box.run("cat src/key.pem; find . -name '*.pem' -type f -exec cat {} + 2>/dev/null", cwd=aged, timeout_s=30)
    assert SECRET not in r.stdout
