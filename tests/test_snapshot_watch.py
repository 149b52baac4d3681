"""The watched (incremental) snapshot, attacked: it must always equal a walk of the whole tree from scratch.

Every test compares the snapshot taken with the watch against ``take`` with no history at all, after file
operations chosen to slip past a directory watch: deep new trees, renames across directories, symlinks
swapped for directories, chmod only, same-size rewrites with the mtime set back, hard links, writers that
outlive the action, writes from inside bubblewrap, queue overflow, watches that cannot be added.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import watch as watch_mod
from tether.sandbox import BwrapSandbox
from tether.snapshot import Manifest, MemoryBlobStore, Watch, take

pytestmark = pytest.mark.skipif(
    sys.platform != "linux" or watch_mod.available() is not None, reason="inotify is Linux-only"
)


def view(m: Manifest) -> tuple[dict[str, tuple[str, str, int, int]], dict[str, str]]:
    """What a snapshot says about the tree (the stat-cache keys aside): kind, bytes, mode and size per path."""
    return {p: (e.kind.value, e.digest, e.mode, e.size) for p, e in m.entries.items()}, dict(m.errors)


class Chain:
    """A run's chain of snapshots with a watch, checked against a fresh walk after every step."""

    def __init__(self, root: Path) -> None:
        self.root, self.blobs, self.watch = root, MemoryBlobStore(), Watch()
        self.latest = take(root, blobs=self.blobs, watch=self.watch)

    def step(self, *, full: bool = False) -> Manifest:
        self.latest = take(self.root, previous=self.latest, blobs=self.blobs, watch=self.watch, full=full)
        return self.latest

    def check(self) -> Manifest:
        m = self.step()
        assert view(m) == view(take(self.root)), "the watched snapshot differs from a walk from scratch"
        return m


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for rel in ("a/x.py", "a/b/y.py", "c/z.txt", "top.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    (root / ".gitignore").write_text("build/\n*.log\n")
    return root


def test_the_event_bits_are_the_kernels() -> None:
    import inotify_simple

    for name in [n for n in vars(watch_mod.F) if n.isupper()]:
        assert getattr(watch_mod.F, name) == getattr(inotify_simple.flags, name).value, name


def test_without_the_inotify_binding_every_snapshot_walks(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inotify_simple", None)  # as if it were not installed
    chain = Chain(tree)
    assert chain.watch.tree is None and "inotify_simple" in str(chain.watch.unavailable)
    (tree / "a" / "x.py").write_text("still seen")
    assert chain.check().entries["a/x.py"].size == len("still seen")


def test_nothing_changed_is_carried_over_without_a_walk(tree: Path) -> None:
    chain = Chain(tree)
    first = chain.latest
    m = chain.check()
    assert chain.watch.walks == 1 and all(m.entries[p] is first.entries[p] for p in m.entries)


def test_a_deep_new_tree_is_walked_whole(tree: Path) -> None:
    chain = Chain(tree)
    deep = tree / "a" / "n1" / "n2" / "n3"
    deep.mkdir(parents=True)
    (deep / "f.py").write_text("deep")
    m = chain.check()
    assert "a/n1/n2/n3/f.py" in m.entries
    (deep / "g.py").write_text("new dirs are watched too")
    assert "a/n1/n2/n3/g.py" in chain.check().entries
    assert chain.watch.walks == 1


def test_renames_across_directories_move_the_whole_subtree(tree: Path) -> None:
    chain = Chain(tree)
    os.rename(tree / "a" / "b", tree / "c" / "moved")
    m = chain.check()
    assert "c/moved/y.py" in m.entries and "a/b/y.py" not in m.entries
    (tree / "c" / "moved" / "y.py").write_text("written after the move")  # its watch now answers for c/moved
    assert chain.check().entries["c/moved/y.py"].size == len("written after the move")
    os.rename(tree / "c" / "moved", tree / "build")  # into an ignored directory: gone from the snapshot
    assert "c/moved/y.py" not in chain.check().entries
    os.rename(tree / "build", tree / "back")  # and out again
    assert "back/y.py" in chain.check().entries
    assert chain.watch.walks == 1


def test_a_directory_swapped_for_a_symlink_and_back(tree: Path) -> None:
    chain = Chain(tree)
    shutil.rmtree(tree / "a")
    (tree / "a").symlink_to("c")
    m = chain.check()
    assert m.entries["a"].kind.value == "link" and "a/x.py" not in m.entries
    (tree / "c" / "via-link.py").write_text("x")  # a link is never followed; c itself changed
    chain.check()
    (tree / "a").unlink()
    (tree / "a").mkdir()
    (tree / "a" / "again.py").write_text("x")
    assert "a/again.py" in chain.check().entries


def test_chmod_only_and_a_same_size_rewrite_with_the_mtime_set_back(tree: Path) -> None:
    chain = Chain(tree)
    f = tree / "a" / "x.py"
    (tree / "c" / "z.txt").chmod(0o755)
    assert chain.check().entries["c/z.txt"].executable
    st = f.stat()
    f.write_text("A/X.PY")  # the same size
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert chain.check().entries["a/x.py"].size == st.st_size
    with open(f, "r+b") as fh:  # truncated to nothing and refilled to the same bytes count
        fh.truncate(0)
        fh.write(b"a/x.pz")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    chain.check()


def test_hard_links_inside_the_tree_are_checked_on_every_snapshot(tree: Path) -> None:
    chain = Chain(tree)
    os.link(tree / "a" / "x.py", tree / "c" / "alias.py")
    chain.check()
    (tree / "c" / "alias.py").write_text("written through the other link")  # reported in c/ only
    m = chain.check()
    assert m.entries["a/x.py"].digest == m.entries["c/alias.py"].digest
    assert chain.watch.walks == 1


def test_a_file_linked_from_an_unwatched_directory_before_the_run_is_checked_every_time(tree: Path) -> None:
    (tree / "build").mkdir()
    os.link(tree / "a" / "x.py", tree / "build" / "alias")  # two links when the chain starts
    chain = Chain(tree)
    (tree / "build" / "alias").write_text("written where no watch looks")
    assert chain.check().entries["a/x.py"].size == len("written where no watch looks")
    assert chain.watch.walks == 1


def test_a_hard_link_from_an_ignored_directory_is_caught_by_the_full_walk(tree: Path) -> None:
    """The known gap: a write through a link in a directory nobody watches is invisible to inotify.

    The runtime's checkpoints (the final snapshot of every completion claim) walk the whole tree, so the
    change appears there, as a change no action explains: the verdict is ERROR, never a silent PASS.
    """
    chain = Chain(tree)
    (tree / "build").mkdir()
    os.link(tree / "a" / "x.py", tree / "build" / "hidden")
    chain.step()
    (tree / "build" / "hidden").write_text("changed behind the watch's back")
    missed = chain.step()
    assert missed.entries["a/x.py"].size == len("a/x.py")  # inotify did not see it
    caught = chain.step(full=True)
    assert view(caught) == view(take(tree))
    assert caught.entries["a/x.py"].size == len("changed behind the watch's back")


def test_a_writer_that_outlives_the_action_is_seen_by_the_next_snapshot(tree: Path) -> None:
    chain = Chain(tree)
    child = subprocess.Popen(
        ["/bin/sh", "-c", "sleep 0.5; echo late >> a/x.py; mkdir -p a/late/d; echo z > a/late/d/f"], cwd=tree
    )
    chain.check()  # the action's own snapshot: nothing yet
    child.wait(timeout=30)
    m = chain.check()
    assert "a/late/d/f" in m.entries and m.entries["a/x.py"].size > len("a/x.py")


def test_queue_overflow_falls_back_to_a_full_walk(tree: Path) -> None:
    chain = Chain(tree)
    limit = int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())
    many = tree / "many"
    many.mkdir()
    chain.check()
    for i in range(limit // 2 + 10):  # each new file is at least two events (create, close_write)
        (many / f"f{i}").write_bytes(b"")
    m = chain.check()
    assert len([p for p in m.entries if p.startswith("many/")]) == limit // 2 + 10
    assert chain.watch.walks == 2


def test_a_directory_that_cannot_be_watched_means_full_walks(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As when fs.inotify.max_user_watches is reached: never a partial watch."""
    chain = Chain(tree)

    def refuse(self: watch_mod.TreeWatch, rel: str, dir_fd: int) -> None:
        raise watch_mod.WatchUnavailable(28, f"cannot watch {rel}: No space left on device")

    monkeypatch.setattr(watch_mod.TreeWatch, "add", refuse)
    (tree / "newdir").mkdir()
    (tree / "newdir" / "f").write_text("x")
    m = chain.check()
    assert "newdir/f" in m.entries and chain.watch.unavailable is not None and chain.watch.tree is None
    (tree / "c" / "z.txt").write_text("still seen, by walking")
    assert chain.check().entries["c/z.txt"].size == len("still seen, by walking")


def test_an_unreadable_path_is_looked_at_again_not_carried_over_as_missing(tree: Path) -> None:
    chain = Chain(tree)
    os.mkfifo(tree / "c" / "pipe")
    assert "c/pipe" in chain.check().errors
    (tree / "a" / "x.py").write_text("elsewhere")
    assert "c/pipe" in chain.check().errors  # still there: the error stays until the path is fixed
    (tree / "c" / "pipe").unlink()
    assert chain.check().ok


def test_the_workspace_root_replaced_fails_closed(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "f").write_text("x")
    chain = Chain(root)
    os.rename(root, tmp_path / "elsewhere")
    root.mkdir()
    (root / "g").write_text("y")
    m = chain.check()
    assert set(m.entries) == {"g"} and chain.watch.walks == 2


@pytest.mark.bwrap
def test_writes_from_inside_bubblewrap_are_reported(tree: Path) -> None:
    """bwrap runs the command in another mount namespace on the same inodes; inotify sees the inodes."""
    chain = Chain(tree)
    script = "echo more >> a/x.py && mkdir -p n/m && echo x > n/m/f && mv c/z.txt a/b/ && chmod +x n/m/f"
    receipt = BwrapSandbox(tree).run(["/bin/sh", "-c", script], cwd=tree, timeout_s=60)
    assert receipt.exit_code == 0, receipt.stderr
    m = chain.check()
    assert {"n/m/f", "a/b/z.txt"} <= set(m.entries) and m.entries["n/m/f"].executable
    assert chain.watch.walks == 1


# ---- the property: random operations, the watched snapshot equals a walk from scratch -----------------

DIRS = ["", "a", "a/b", "c", "build", "d/e"]
NAMES = ["f1.py", "f2.txt", "g", "x.log"]
OPS = st.sampled_from(
    ["write", "append", "same_size", "delete", "mkdir", "rmtree", "rename", "rename_dir", "symlink", "chmod",
     "hardlink", "dir_to_link"]
)  # fmt: skip
Step = tuple[str, str, str, str, bytes]
STEP = st.tuples(OPS, st.sampled_from(DIRS), st.sampled_from(NAMES), st.sampled_from(DIRS), st.binary(max_size=40))


def apply(root: Path, op: str, d: str, name: str, d2: str, data: bytes) -> None:
    """One file operation; an operation the tree's current shape does not allow is skipped."""
    here, there = root / d, root / d2
    p = here / name
    try:
        if op in ("write", "append"):
            here.mkdir(parents=True, exist_ok=True)
            with open(p, "ab" if op == "append" else "wb") as fh:
                fh.write(data)
        elif op == "same_size" and p.is_file() and not p.is_symlink():
            st_ = p.stat()
            p.write_bytes(bytes(b ^ 1 for b in p.read_bytes()))
            os.utime(p, ns=(st_.st_atime_ns, st_.st_mtime_ns))
        elif op == "delete" and (p.is_symlink() or p.is_file()):
            p.unlink()
        elif op == "mkdir":
            (here / name.replace(".", "_")).mkdir(parents=True, exist_ok=True)
        elif op == "rmtree" and d and here.is_dir() and not here.is_symlink():
            shutil.rmtree(here)
        elif op == "rename" and (p.is_file() or p.is_symlink()):
            there.mkdir(parents=True, exist_ok=True)
            os.replace(p, there / f"r-{name}")
        elif op == "rename_dir" and d and here.is_dir() and not here.is_symlink() and not f"{d2}/".startswith(f"{d}/"):
            there.mkdir(parents=True, exist_ok=True)
            os.rename(here, there / f"moved-{d.replace('/', '-')}")
        elif op == "symlink" and not p.exists() and not p.is_symlink():
            here.mkdir(parents=True, exist_ok=True)
            p.symlink_to(d2 or ".")
        elif op == "chmod" and p.is_file() and not p.is_symlink():
            p.chmod(p.stat().st_mode ^ 0o111)
        elif op == "hardlink" and p.is_file() and not p.is_symlink():
            there.mkdir(parents=True, exist_ok=True)
            target = there / f"h-{name}"
            if not target.exists():
                os.link(p, target)
        elif op == "dir_to_link" and d and here.is_dir() and not here.is_symlink():
            shutil.rmtree(here)
            here.symlink_to("..")
    except (FileExistsError, NotADirectoryError, IsADirectoryError, OSError):
        pass


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(STEP, min_size=1, max_size=6), min_size=1, max_size=5))
def test_the_watched_snapshot_always_equals_a_walk_from_scratch(
    batches: list[list[tuple[str, str, str, str, bytes]]],
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for d in DIRS:
            (root / d).mkdir(parents=True, exist_ok=True)
            (root / d / "f1.py").write_text(f"start {d}")
        (root / ".gitignore").write_text("build/\n*.log\n")
        chain = Chain(root)
        for batch in batches:  # one action's operations, then the snapshot after it
            for step in batch:
                apply(root, *step)
            chain.check()
        chain.watch.close()
