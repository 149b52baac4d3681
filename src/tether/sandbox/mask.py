"""Which workspace paths the bubblewrap sandbox hides: ``environment.filesystem.deny``, made physical.

The gate refuses commands that name a denied file, but a command it lets through can still select
files itself (``find``, a test that reads ``.env``, a build script). So inside the sandbox every
workspace path matching a deny glob is covered when the command starts: a file by ``/dev/null`` (device
access is off in the workspace mount, so opening it fails), a directory by an empty read-only tmpfs.
Also covered:

* another name (hard link) of a denied file, found by inode;
* the target of a symlink that matches, when the target is inside the workspace (a target outside
  is not mounted in the sandbox at all);
* with :class:`Listings`, what the last walk covered, by inode, wherever it is now in the workspace (a parent
  directory renamed: ``mv config cfg`` and ``config/prod.*`` names nothing);
* a directory the walk cannot list, whole (:data:`UNLISTED`);
* tether's own state directory ``.tether/`` at the workspace root (the default home of the run's log and
  approvals), always: nothing tether runs in the sandbox needs it (the test report is written elsewhere).

Not covered: files created *after* the command starts (the list is taken at sandbox start; a file the
command itself creates is its own), and copies of a denied file's content under another name made
outside the sandbox.

The walk runs before every command. With a :class:`Listings` (the bubblewrap sandbox keeps one per workspace
and glob list), a directory whose inode, ctime and mtime are those of the last walk is not listed again: its
matches and subdirectories are taken from that walk. Any change of a directory's entries (a name created,
removed, renamed in or out, a file replaced by a directory or a link) moves its ctime, which nothing
unprivileged can set back (``touch`` restores an mtime, never a ctime); a directory replaced by another has
another inode. The racy-git rule guards the clock's coarseness: a listing whose directory changed within
:data:`RACY_WINDOW_NS` before it was read may have missed a change made in the same tick, so it is not kept.
What is not a directory's entry is looked at on every walk: the targets of matching links, and the link
count of every denied file (other names of it are then searched afresh). On a local filesystem the listings also
watch every directory with inotify (:class:`Watch`): while no event came, no directory is looked at at all.
"""

from __future__ import annotations

import errno
import os
import re
import select
import stat
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import pathspec
from pathspec.pattern import RegexPattern

from tether.snapshot import RACY_WINDOW_NS
from tether.watch import open_inotify

from .base import resolve_dir

ALWAYS_COVERED = ("/.tether/",)


@dataclass(frozen=True)
class Masks:
    files: list[Path] = field(default_factory=list)
    dirs: list[Path] = field(default_factory=list)

    def bwrap_args(self) -> list[str]:
        """Covering arguments; they must follow the workspace bind."""
        args: list[str] = []
        for d in self.dirs:
            args += ["--perms", "0555", "--tmpfs", str(d), "--remount-ro", str(d)]
        for f in self.files:
            args += ["--ro-bind", "/dev/null", str(f)]
        return args


@dataclass(frozen=True)
class Listing:
    """What one directory of the walk gave: its key when listed, and its entries by what the walk does with them
    (paths relative to the workspace)."""

    key: tuple[int, int, int, int]
    """``(st_dev, st_ino, st_ctime_ns, st_mtime_ns)`` of the directory."""
    files: tuple[str, ...]
    dirs: tuple[str, ...]
    links: tuple[str, ...]
    walk: tuple[str, ...]
    """Subdirectories to descend into (those not covered)."""


@dataclass
class Listings:
    """The directory listings of a workspace's last walk, for the next (see the module docstring). Only for the
    same workspace and the same deny globs: the caller keeps one per pair."""

    root: str = ""
    """The resolved workspace the listings are of: another one (its path now leads elsewhere) starts afresh."""
    by_dir: dict[str, Listing] = field(default_factory=dict)
    listed: int = 0
    """Directories listed (not taken from the last walk) so far: for tests and benchmarks."""
    walked: int = 0
    """Walks that looked at the directories (not taken whole from the last one, see :class:`Watch`): for tests."""
    watch: Watch | None = field(default_factory=lambda: Watch.start())
    last: Walked | None = None
    """The last walk's matches, when every directory it looked at was watched before it was looked at."""
    lock: threading.Lock = field(default_factory=threading.Lock)
    covered: set[tuple[int, int]] = field(default_factory=set)
    """``(st_dev, st_ino)`` of what the last walk covered: a covered file or directory renamed since (the sandbox
    can rename a denied file's parent directory, ``mv config cfg``, and ``config/prod.*`` then names nothing) is
    found again by inode and stays covered while it is in the workspace."""


@dataclass(frozen=True)
class Walked:
    """What one walk found (paths relative to the workspace), and the workspace root's ``(st_dev, st_ino)``."""

    root: tuple[int, int]
    files: tuple[str, ...]
    dirs: tuple[str, ...]
    links: tuple[str, ...]
    unlisted: tuple[str, ...] = ()
    """Those of ``dirs`` covered because they could not be listed (:data:`UNLISTED`), not for a glob."""


IN_CHANGES = 0x4 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800 | 0x2000 | 0x1000000 | 0x2000000
"""Every event that can change what a walk finds in a watched directory: an attribute change (a child's too), a
name moved out or in, created, deleted, the directory itself deleted or moved, its filesystem unmounted; no
symlink followed (``IN_DONT_FOLLOW``), and only directories (``IN_ONLYDIR``)."""
IN_IGNORED = 0x8000
"""The kernel dropped a watch (its directory deleted, or its filesystem unmounted): it no longer counts."""
MAX_WATCHES = 2048
"""Directories one :class:`Watch` watches at most. inotify watches are counted per user
(``fs.inotify.max_user_watches``), shared with the user's editors and file watchers: a sandbox over a larger
workspace does not take them all, it looks at every directory each walk (as without a watch)."""
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "overlay", "zfs"})
"""Filesystems whose every change on this host reaches inotify: nothing writes them behind the kernel's back (a
network or FUSE filesystem can change on another machine, or in a process that tells no one)."""


class Watch:
    """inotify on every directory a walk looks at: while no event came since the last walk, and the workspace root
    is the same directory on the same local filesystem, nothing a walk finds can have changed, and it is not
    walked (no ``lstat`` per directory: for a workspace of D directories, D system calls fewer per command).

    Each directory is watched before it is looked at, so a change after that is an event, and one before it is
    seen by the look itself. Any event, a queue overflow, a directory that could not be watched, or a directory on
    another device (a mount inside the workspace) makes the next walk a full one, as without a watch. A mount made
    on a workspace directory is not an inotify event: the mount table is polled too, and any mount or unmount in
    tether's mount namespace (a container's root, a user namespace's, the host's propagated in) makes the next walk
    a full one."""

    def __init__(self, notify: Any, mounts: int) -> None:
        self.notify = notify
        """The inotify instance (``inotify_simple.INotify``, non-blocking: :func:`tether.watch.open_inotify`)."""
        self.fd: int = notify.fileno()
        self.mounts = mounts
        """``/proc/self/mountinfo``, open: the kernel marks it (``POLLPRI``) when a mount is made or removed in this
        process's mount namespace, which no inotify watch tells."""
        self.wds: set[int] = set()
        """The watches this instance holds (one per directory: watching it again returns the same)."""
        self.pid = os.getpid()
        """A forked child shares the instance: it neither reads it (that would take the parent's events) nor
        trusts it."""
        self.poll = select.poll()
        """Both descriptors, registered once: one ``poll`` per command tells whether anything happened (the mount
        table's ``POLLPRI``, the queue's ``POLLIN``); the queue is read only when it holds something."""
        self.poll.register(mounts, select.POLLPRI)
        self.poll.register(self.fd, select.POLLIN)
        self._closer = weakref.finalize(self, _close, notify, mounts)

    @classmethod
    def start(cls) -> Watch | None:
        """A new inotify instance and the mount table open, or None where either is missing (then every walk is
        full)."""
        try:
            mounts = os.open("/proc/self/mountinfo", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            notify = open_inotify()
        except OSError:
            os.close(mounts)
            return None
        return cls(notify, mounts)

    def add(self, path: str) -> bool:
        """Watch ``path``; False when it is not watched (then the next walk must look again): a forked child, a
        directory that cannot be watched, or :data:`MAX_WATCHES` reached."""
        if os.getpid() != self.pid or len(self.wds) >= MAX_WATCHES:
            return False
        try:
            self.wds.add(self.notify.add_watch(path, IN_CHANGES))
        except OSError:
            return False
        return True

    def quiet(self) -> bool:
        """True if no event came since the last call (none is left pending either way)."""
        if os.getpid() != self.pid:
            return False
        try:
            ready = dict(self.poll.poll(0))
            if not ready:
                return True  # the common case: one system call
            while events := self.notify.read(timeout=0):  # drained whatever else is ready: this walk starts afresh
                self.wds.difference_update(e.wd for e in events if e.mask & IN_IGNORED)
        except OSError:
            return False
        return False  # an event, the mount table marked, or an error on either descriptor

    def close(self) -> None:
        self._closer()


def _close(notify: Any, mounts: int) -> None:
    notify.close()
    os.close(mounts)


def fs_type(path: str) -> str:
    """The type of the filesystem ``path`` (resolved) is on: its longest mount point in ``/proc/self/mountinfo``."""
    best, kind = -1, ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                fields = line.split()
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])
                inside = path == point or path.startswith(point.rstrip("/") + "/")
                if inside and len(point) > best:
                    best, kind = len(point), fields[fields.index("-") + 1]
    except (OSError, ValueError, IndexError, UnicodeError):
        return ""
    return kind


def masks(
    workspace: Path, deny: Sequence[str], listings: Listings | None = None, *, resolved: str | None = None
) -> Masks:
    """Walk ``workspace`` (never following symlinks) and collect what ``deny`` covers; with ``listings``, the
    directories unchanged since the walk that filled it are not listed again, and none is looked at when nothing
    changed since (:class:`Watch`). ``resolved``: ``workspace`` resolved by the caller just before (the bubblewrap
    sandbox has, when the command runs at the workspace root), so that it is not resolved twice per command."""
    matches = matcher((*deny, *ALWAYS_COVERED))
    root_s = resolved or resolve_dir(workspace) or os.path.realpath(workspace)
    if listings is None:
        return _covering(root_s, _walk(root_s, matches, None))
    with listings.lock:
        if listings.root != root_s:
            listings.root, listings.by_dir, listings.last = root_s, {}, None
            if listings.watch is not None and fs_type(root_s) not in LOCAL_FILESYSTEMS:
                listings.watch.close()
                listings.watch = None
        found = _unchanged(root_s, listings)
        if found is None:
            found = _walk(root_s, matches, listings)
        return _covering(root_s, found, listings.covered)


def _unchanged(root_s: str, listings: Listings) -> Walked | None:
    """The last walk's matches if nothing it looked at changed since (no event, the same root), else None."""
    last, listings.last = listings.last, None
    watch = listings.watch
    if watch is None or not watch.quiet() or last is None:  # (drained either way: this walk starts afresh)
        return None
    try:
        st = os.lstat(root_s)
    except OSError:
        return None
    if (st.st_dev, st.st_ino) != last.root:
        return None
    listings.last = last
    return last


def _walk(root_s: str, matches: Callable[[str], bool], listings: Listings | None) -> Walked:
    """Look at every directory (each watched first, with ``listings``' watch) and collect what ``matches``."""
    found_files: list[str] = []
    found_dirs: list[str] = []
    found_links: list[str] = []
    unlisted: list[str] = []
    seen: dict[str, Listing] = {}
    watch = listings.watch if listings is not None else None
    watched = watch is not None
    settled = time.time_ns() - RACY_WINDOW_NS  # taken before any directory is looked at: never later than its own
    stack = [""]  # paths relative to the workspace, as strings: Path objects would dominate the walk's cost
    root_key = (-1, -1)
    while stack:
        here = stack.pop()
        path = f"{root_s}/{here}" if here else root_s
        if watch is not None and not watch.add(path):
            watched = False  # not watched: the next walk must look again
        got = _listing(path, here, matches, listings, settled)
        if got is None:
            continue  # gone since its parent was listed
        if got is UNLISTED:
            found_dirs.append(here)
            unlisted.append(here)
            watched = False  # no event tells when it can be listed again (a file descriptor freed)
            continue
        if got.key[0] >= 0:
            seen[here] = got
        if watched:
            dev_ino = got.key[:2] if got.key[0] >= 0 else _dev_ino(path)
            if not here:
                root_key = dev_ino
            elif dev_ino[0] != root_key[0]:
                watched = False  # another filesystem mounted inside the workspace: not known to be local
        found_files += got.files
        found_dirs += got.dirs
        found_links += got.links
        stack += got.walk
    walked = Walked(root_key, tuple(found_files), tuple(found_dirs), tuple(found_links), tuple(unlisted))
    if listings is not None:
        listings.by_dir = seen  # what is no longer walked is dropped
        listings.walked += 1
        listings.last = walked if watched and root_key[0] >= 0 else None
    return walked


def _dev_ino(path: str) -> tuple[int, int]:
    try:
        st = os.lstat(path)
    except OSError:
        return (-1, -1)
    return (st.st_dev, st.st_ino)


def _covering(root_s: str, found: Walked, covered: set[tuple[int, int]] | None = None) -> Masks:
    """The masks of what a walk found: the targets of matching links inside the workspace and other names of
    denied files looked at now (they are not a directory's entries: no watch or listing tells their changes), and
    what ``covered`` (the last walk's inodes, updated) names wherever it is now."""
    if not (found.files or found.dirs or found.links or covered):
        return Masks()  # the common case: nothing matched, no path to build
    root = Path(root_s)
    files = dict.fromkeys(root / rel for rel in found.files)
    dirs = dict.fromkeys(root / rel for rel in found.dirs)
    for link in (root / rel for rel in found.links):  # cover what a matching link points at, if inside the workspace
        target = Path(os.path.realpath(link))
        if target.is_relative_to(root) and target != root and target.exists():
            (dirs if target.is_dir() else files)[target] = None
    unlisted = {root / rel for rel in found.unlisted}
    _add_hard_links(root, files, dirs, unlisted)
    if covered is not None:
        _keep_covered(root, files, dirs, unlisted, covered)
    under = list(dirs)
    return Masks(
        files=[f for f in files if not any(f.is_relative_to(d) for d in under)],
        dirs=[d for d in dirs if not any(d != o and d.is_relative_to(o) for o in under)],
    )


def _inodes(paths: Iterable[Path]) -> dict[tuple[int, int], Path]:
    found = {}
    for p in paths:
        try:
            st = p.stat(follow_symlinks=False)
        except OSError:
            continue
        found[(st.st_dev, st.st_ino)] = p
    return found


def _keep_covered(
    root: Path, files: dict[Path, None], dirs: dict[Path, None], unlisted: set[Path], covered: set[tuple[int, int]]
) -> None:
    """Cover what ``covered`` names that is no longer where a glob matches (searched for only then); ``covered``
    becomes what is covered now (an inode gone from the workspace is forgotten), less what is covered only for
    not being listable (``unlisted``: listed again once it can be)."""
    missing = covered - _inodes((*files, *dirs)).keys()
    if missing:
        for path, st in _entries(root, files, dirs, unlisted):
            if (st.st_dev, st.st_ino) in missing:
                (dirs if stat.S_ISDIR(st.st_mode) else files)[path] = None
    covered.clear()
    covered.update(_inodes(p for p in (*files, *dirs) if p not in unlisted))


def _listing(
    path: str, here: str, matches: Callable[[str], bool], listings: Listings | None, settled: int
) -> Listing | None:
    """The directory ``path`` (``here`` relative to the workspace) sorted by what the walk does with each entry:
    the last walk's listing if the directory has not changed since, else listed now. None: it cannot be listed.
    A listing that may be stale by next time (see the racy rule: changed at ``settled`` or later, a clock reading
    taken before the walk began, less the racy window) gets a key of -1s: never reused."""
    key = (-1, -1, -1, -1)
    if listings is not None:
        try:
            st = os.lstat(path)
        except OSError as e:
            return _unlisted(e)
        if stat.S_ISDIR(st.st_mode) and max(st.st_ctime_ns, st.st_mtime_ns) < settled:
            key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)
            last = listings.by_dir.get(here)
            if last is not None and last.key == key:
                return last
        listings.listed += 1
    try:
        entries = list(os.scandir(path))
    except OSError as e:
        return _unlisted(e)
    files: list[str] = []
    dirs: list[str] = []
    links: list[str] = []
    walk: list[str] = []
    for entry in entries:
        rel = f"{here}/{entry.name}" if here else entry.name
        if entry.is_symlink():
            if matches(rel):
                links.append(rel)
        elif entry.is_dir(follow_symlinks=False):
            if matches(rel + "/"):
                dirs.append(rel)
            else:
                walk.append(rel)
        elif matches(rel):
            files.append(rel)
    return Listing(key, tuple(files), tuple(dirs), tuple(links), tuple(walk))


UNLISTED = Listing((-1, -1, -1, -1), (), (), (), ())
"""A directory the walk could not list (no permission, no file descriptor left): covered whole. The sandbox user
may own it (tether not root: it is the caller), so it can make it readable again inside the sandbox and read a
denied file in it by name: skipping it would leave that file open."""


def _unlisted(e: OSError) -> Listing | None:
    """None for a directory gone (or replaced by a non-directory) since its parent was listed, else :data:`UNLISTED`."""
    return None if e.errno in (errno.ENOENT, errno.ENOTDIR) else UNLISTED


@lru_cache(maxsize=32)
def matcher(globs: tuple[str, ...]) -> Callable[[str], bool]:
    """gitignore-style matching; one combined regular expression when no glob negates (the common case:
    a walk of a large workspace calls this once per entry). Cached: a sandbox asks for the same globs on
    every command."""
    spec = pathspec.GitIgnoreSpec.from_lines(globs)
    patterns = [p for p in spec.patterns if p.include is not None]
    if not all(isinstance(p, RegexPattern) and p.include and p.regex is not None for p in patterns):
        return spec.match_file
    if not patterns:
        return lambda _: False
    combined = re.compile("|".join(f"(?:{p.regex.pattern.replace('(?P<ps_d>', '(')})" for p in patterns))  # type: ignore[union-attr]
    return lambda path: combined.match(path) is not None


def _add_hard_links(root: Path, files: dict[Path, None], dirs: dict[Path, None], unlisted: set[Path]) -> None:
    """Other names of denied files: only walked for when a denied file has more than one link."""
    inodes = set()
    for f in files:
        try:
            st = f.stat(follow_symlinks=False)
        except OSError:
            continue
        if st.st_nlink > 1:
            inodes.add((st.st_dev, st.st_ino))
    if not inodes:
        return
    for path, st in _entries(root, files, dirs, unlisted):
        if (st.st_dev, st.st_ino) in inodes and not stat.S_ISDIR(st.st_mode):
            files[path] = None


def _entries(
    root: Path, files: dict[Path, None], dirs: dict[Path, None], unlisted: set[Path]
) -> Iterator[tuple[Path, os.stat_result]]:
    """Every file and directory under ``root`` with its ``lstat``, not descending into ``dirs``; a directory (or
    an entry) that cannot be looked at is covered (added to ``dirs`` or ``files``, and to ``unlisted``), as by the
    walk (:data:`UNLISTED`): it may hold what is searched for."""

    def refused(e: OSError) -> None:
        if _unlisted(e) is UNLISTED and e.filename is not None:
            dirs[Path(os.fsdecode(e.filename))] = None
            unlisted.add(Path(os.fsdecode(e.filename)))

    for here, subdirs, names in os.walk(root, onerror=refused):
        subdirs[:] = [d for d in subdirs if Path(here, d) not in dirs]
        for name in (*subdirs, *names):
            path = Path(here, name)
            try:
                yield path, path.stat(follow_symlinks=False)
            except OSError as e:
                if _unlisted(e) is UNLISTED:
                    files[path] = None  # cannot tell: covered
                    unlisted.add(path)
