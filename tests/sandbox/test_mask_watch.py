"""The deny walk taken whole from the last one while inotify told of no change (sandbox/mask.py ``Watch``): every
attack must still find each denied file covered, exactly as a walk that remembers nothing."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from test_mask import DENY, SECRET, rel

from tether.sandbox import BwrapSandbox, mask
from tether.sandbox.mask import Listings, masks


@pytest.fixture
def deep(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tree of directories, aged past a short racy window (as the listings' own tests do)."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    for d in ("src/a/b/c", "lib/x", "docs"):
        (workspace / d).mkdir(parents=True)
    (workspace / "src" / "a" / "b" / "c" / "key.pem").write_text(SECRET)
    (workspace / "docs" / "readme").write_text("hi\n")
    for p in (*workspace.rglob("*"), workspace):
        p.chmod(0o777 if p.is_dir() else 0o666)
    time.sleep(0.1)
    return workspace


def test_an_unchanged_tree_is_not_walked_again(deep: Path) -> None:
    listings = Listings()
    assert listings.watch is not None  # inotify is there (Linux)
    first = masks(deep, DENY, listings)
    again = [masks(deep, DENY, listings) for _ in range(3)]
    assert (listings.walked, again) == (1, [first] * 3)
    assert rel(first.files, deep) == {"src/a/b/c/key.pem"}


@pytest.mark.parametrize(
    "change",
    [
        lambda t: (t / "src" / "a" / "b" / "c" / "new.pem").write_text(SECRET),  # deep in a watched directory
        lambda t: (t / "lib" / "x" / ".env").write_text(SECRET),
        lambda t: os.rename(t / "docs" / "readme", t / "docs" / "readme.pem"),  # renamed to a denied name
        lambda t: os.link(t / "docs" / "readme", t / "lib" / "x" / "copy.pem"),  # another name made there
        lambda t: (t / "lib" / "x" / "n" / "m").mkdir(parents=True) or (t / "lib/x/n/m/k.pem").write_text(SECRET),
        lambda t: shutil.move(t / "src" / "a", t / "lib" / "a"),  # a subtree moved elsewhere in the workspace
        lambda t: (t / "lib" / "x").chmod(0o000),  # no longer readable: no longer walked
        lambda t: (t / "src" / "a" / "b" / "c" / "key.pem").unlink(),
    ],
    ids=["created-deep", "created", "renamed", "linked", "new-dirs", "moved-subtree", "chmod", "deleted"],
)
def test_a_change_anywhere_is_seen_by_the_next_walk(deep: Path, change: Callable[[Path], object]) -> None:
    listings = Listings()
    masks(deep, DENY, listings)
    masks(deep, DENY, listings)
    change(deep)
    assert masks(deep, DENY, listings) == masks(deep, DENY)  # the same as a walk that remembers nothing
    assert listings.walked == 2


def test_a_file_made_in_a_directory_made_after_the_walk_is_seen(deep: Path) -> None:
    """The new directory is watched by the walk that sees it; what is made in it later is an event too."""
    listings = Listings()
    masks(deep, DENY, listings)
    (deep / "new").mkdir()
    masks(deep, DENY, listings)
    time.sleep(0.1)
    masks(deep, DENY, listings)
    (deep / "new" / "late.pem").write_text(SECRET)
    assert "new/late.pem" in rel(masks(deep, DENY, listings).files, deep)


def test_a_workspace_whose_parent_was_swapped_is_walked_afresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another directory at the workspace's path, by a rename of its parent (no event on the watched root): the
    root's device and inode differ, so the last walk is not taken."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    ws = tmp_path / "p" / "ws"
    ws.mkdir(parents=True)
    time.sleep(0.1)
    listings = Listings()
    assert masks(ws, DENY, listings).files == []
    os.rename(tmp_path / "p", tmp_path / "old")
    (tmp_path / "p" / "ws").mkdir(parents=True)
    (tmp_path / "p" / "ws" / ".env").write_text(SECRET)
    assert rel(masks(ws, DENY, listings).files, ws) == {".env"}


@pytest.mark.bwrap
def test_a_workspace_swapped_between_commands_is_covered_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox resolves the workspace once per command (for the working directory and the deny walk): after its
    parent is swapped, the path names another directory with a denied file, which the next command cannot read."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    ws = tmp_path / "p" / "ws"
    ws.mkdir(parents=True)
    ws.chmod(0o777)
    time.sleep(0.1)
    box = BwrapSandbox(ws, deny=DENY)
    assert box.run("true", cwd=ws, timeout_s=30).ok
    assert box.run("true", cwd=ws, timeout_s=30).ok  # the watch is quiet: taken from the last walk
    os.rename(tmp_path / "p", tmp_path / "old")
    (tmp_path / "p" / "ws").mkdir(parents=True)
    (tmp_path / "p" / "ws").chmod(0o777)
    (tmp_path / "p" / "ws" / ".env").write_text(SECRET)
    (tmp_path / "p" / "ws" / ".env").chmod(0o666)
    r = box.run("cat .env; ls -a", cwd=ws, timeout_s=30)
    assert SECRET not in r.stdout and ".env" in r.stdout  # there, covered


def test_without_a_watch_every_walk_looks(deep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A directory that cannot be watched (inotify's limit reached), a filesystem not known to be local, a forked
    child: each walk looks at the directories, as before the watch."""
    listings = Listings()
    monkeypatch.setattr(mask.Watch, "add", lambda self, path: path.endswith("/src") is False)
    masks(deep, DENY, listings)
    masks(deep, DENY, listings)
    assert listings.walked == 2
    monkeypatch.undo()
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    monkeypatch.setattr(mask, "fs_type", lambda path: "nfs")
    remote = Listings()
    masks(deep, DENY, remote)
    masks(deep, DENY, remote)
    assert (remote.watch, remote.walked) == (None, 2)
    monkeypatch.setattr(mask, "fs_type", lambda path: "ext4")
    forked = Listings()
    masks(deep, DENY, forked)
    assert forked.watch is not None
    forked.watch.pid = -1  # as seen from a forked child
    masks(deep, DENY, forked)
    assert forked.walked == 2


def test_fs_type_names_the_filesystem_of_the_longest_mount_point() -> None:
    assert mask.fs_type("/proc/self") == "proc"
    assert mask.fs_type("/") != ""


def test_threads_walking_at_once_never_take_a_stale_walk(deep: Path) -> None:
    """Two threads share one sandbox's listings: one drains the events; the other must not then take the walk
    from before the change."""
    listings = Listings()
    masks(deep, DENY, listings)
    results: list[set[str]] = []
    (deep / "lib" / "x" / "t.pem").write_text(SECRET)

    def one() -> None:
        results.append(rel(masks(deep, DENY, listings).files, deep))

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [{"src/a/b/c/key.pem", "lib/x/t.pem"}] * 4


@pytest.mark.bwrap
def test_a_directory_the_sandbox_made_then_filled_by_the_host_is_covered(deep: Path) -> None:
    """Changes made inside bubblewrap (through its bind mount) are events too: the command makes ``out/new``, the
    host then puts a denied file there, and the next command cannot read it."""
    box = BwrapSandbox(deep, deny=DENY)
    assert box.run("mkdir -p out/new && cat docs/readme", cwd=deep, timeout_s=30).ok
    assert box.run("cat docs/readme", cwd=deep, timeout_s=30).ok  # walks again (the mkdir), now watching out/new
    (deep / "out" / "new" / "k.pem").write_text(SECRET)
    (deep / "out" / "new" / "k.pem").chmod(0o666)
    r = box.run("cat out/new/k.pem; find . -name '*.pem' -type f -exec cat {} + 2>/dev/null", cwd=deep, timeout_s=30)
    assert SECRET not in r.stdout


def _watches_held(listings: Listings) -> int:
    """The inotify watches the kernel holds for the listings' instance (``/proc/self/fdinfo``)."""
    assert listings.watch is not None
    info = Path(f"/proc/self/fdinfo/{listings.watch.fd}").read_text()
    return sum(line.startswith("inotify wd:") for line in info.splitlines())


def test_a_workspace_over_the_watch_cap_takes_no_more_watches_and_is_walked_each_time(
    deep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """inotify watches are the user's, shared with their editors: a sandbox takes at most MAX_WATCHES, and a larger
    workspace is looked at whole every walk (never taken from a walk that was not all watched)."""
    monkeypatch.setattr(mask, "MAX_WATCHES", 3)
    listings = Listings()
    found = [masks(deep, DENY, listings) for _ in range(3)]
    assert listings.walked == 3 and _watches_held(listings) == 3
    (deep / "lib" / "x" / ".env").write_text(SECRET)  # in a directory past the cap: no event would tell
    assert rel(masks(deep, DENY, listings).files, deep) == {"src/a/b/c/key.pem", "lib/x/.env"}
    assert all(rel(f.files, deep) == {"src/a/b/c/key.pem"} for f in found)


def test_a_workspace_within_the_watch_cap_is_watched_whole(deep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = 1 + sum(p.is_dir() for p in deep.rglob("*"))
    monkeypatch.setattr(mask, "MAX_WATCHES", dirs)
    listings = Listings()
    for _ in range(3):
        masks(deep, DENY, listings)
    assert (listings.walked, _watches_held(listings)) == (1, dirs)


def test_a_deleted_directory_gives_its_watch_back(deep: Path) -> None:
    """Directories made and removed over a long run (build output) do not use up MAX_WATCHES: a watch the kernel
    dropped is no longer counted."""
    listings = Listings()
    masks(deep, DENY, listings)
    assert listings.watch is not None
    held = len(listings.watch.wds)
    (deep / "build" / "tmp").mkdir(parents=True)
    masks(deep, DENY, listings)
    assert len(listings.watch.wds) == held + 2 == _watches_held(listings)
    shutil.rmtree(deep / "build")
    masks(deep, DENY, listings)
    assert len(listings.watch.wds) == held == _watches_held(listings)
