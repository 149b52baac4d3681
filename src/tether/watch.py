"""Which directories of the workspace changed since the last look: a Linux inotify watch of a tree.

Why: a snapshot after every action that walks the whole workspace costs what the repository costs, not
what the action changed. The kernel can say which directories saw a change; only those need a new look.
This module only reports; :mod:`tether.snapshot` decides what to re-read, and walks everything whenever
this module cannot answer.

Each directory is watched through a descriptor of the directory itself (``/proc/self/fd/N``), opened
without following a link, *before* it is listed, so a change made after the listing is always reported.
inotify sees the inode, whatever mount namespace the writer is in (bubblewrap's bind mount of the
workspace included).

:meth:`TreeWatch.changes` answers ``None`` — "cannot tell, walk everything" — when the kernel's queue
overflowed, the watched root itself was moved or deleted, a file system was unmounted, or an event names
a watch it does not know. What inotify never reports is listed in docs/verification.md; the snapshot's
periodic full walks catch it.
"""

from __future__ import annotations

import errno
import gc
import os
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Changed", "TreeWatch", "WatchUnavailable"]


class F:
    """inotify's event bits (``include/uapi/linux/inotify.h``, a stable kernel ABI)."""

    MODIFY = 0x2
    ATTRIB = 0x4
    CLOSE_WRITE = 0x8
    MOVED_FROM = 0x40
    MOVED_TO = 0x80
    CREATE = 0x100
    DELETE = 0x200
    DELETE_SELF = 0x400
    MOVE_SELF = 0x800
    UNMOUNT = 0x2000
    Q_OVERFLOW = 0x4000
    IGNORED = 0x8000
    ONLYDIR = 0x1000000
    ISDIR = 0x40000000


MASK = (
    F.CREATE
    | F.DELETE
    | F.MODIFY
    | F.ATTRIB
    | F.CLOSE_WRITE
    | F.MOVED_FROM
    | F.MOVED_TO
    | F.DELETE_SELF
    | F.MOVE_SELF
    | F.ONLYDIR
)
_ENTRY_OF_DIR = F.CREATE | F.DELETE | F.MOVED_FROM | F.MOVED_TO  # with ISDIR: a subdirectory came or went
_UNSURE = F.Q_OVERFLOW | F.UNMOUNT


class WatchUnavailable(OSError):
    """inotify could not be set up or a directory could not be watched (e.g. fs.inotify.max_user_watches)."""


@dataclass
class Changed:
    """What happened since the last look, by directory (workspace-relative, "" for the root).

    ``dirs``: directories whose entries changed (created, deleted, written, renamed, chmod, touch).
    ``replaced``: subdirectories that were created, deleted or moved in or out; what was known of them is void.
    """

    dirs: set[str] = field(default_factory=set)
    replaced: set[str] = field(default_factory=set)


class TreeWatch:
    """inotify watches on a set of directories, each known by its workspace-relative path."""

    def __init__(self) -> None:
        try:
            self._ino: Any = open_inotify()
        except OSError as e:
            raise WatchUnavailable(e.errno, f"inotify is not available: {e.strerror}") from e
        self._path: dict[int, str] = {}
        self._wd: dict[str, int] = {}
        self._removed: set[int] = set()

    def close(self) -> None:
        self._ino.close()

    def __len__(self) -> int:
        return len(self._wd)

    def add(self, rel: str, dir_fd: int) -> None:
        """Watch the open directory ``dir_fd`` as ``rel``; call it before listing the directory."""
        try:
            wd = self._ino.add_watch(f"/proc/self/fd/{dir_fd}", MASK)
        except OSError as e:
            raise WatchUnavailable(e.errno, f"cannot watch {rel or '.'}: {e.strerror}") from e
        old = self._path.get(wd)
        if old is not None and old != rel:  # the same directory, known before under another path (moved)
            self._wd.pop(old, None)
        self._path[wd] = rel
        self._wd[rel] = wd

    def forget(self, rel: str) -> None:
        """Stop watching ``rel`` and every directory under it (they were deleted, moved or replaced)."""
        prefix = rel + "/" if rel else ""
        for path in [p for p in self._wd if p == rel or p.startswith(prefix)]:
            wd = self._wd.pop(path)
            self._path.pop(wd, None)
            self._removed.add(wd)
            with suppress(OSError):  # already gone with its directory
                self._ino.rm_watch(wd)

    def watched(self, rel: str) -> bool:
        return rel in self._wd

    def changes(self) -> Changed | None:
        """The directories that changed since the last call; None when that cannot be known."""
        out = Changed()
        for event in self._ino.read(timeout=0):
            if event.mask & _UNSURE:
                return None
            rel = self._path.get(event.wd)
            if rel is None:
                if event.wd in self._removed:  # a watch we removed: its directory is being scanned afresh
                    continue
                return None
            if event.mask & F.IGNORED:  # the kernel dropped the watch: its directory is gone
                if not rel:
                    return None
                out.replaced.add(rel)
                out.dirs.add(_parent(rel))
                continue
            if event.mask & (F.DELETE_SELF | F.MOVE_SELF):
                if not rel:  # the workspace itself
                    return None
                out.replaced.add(rel)
                out.dirs.add(_parent(rel))
                continue
            out.dirs.add(rel)
            if event.mask & F.ISDIR and event.mask & _ENTRY_OF_DIR:
                out.replaced.add(f"{rel}/{event.name}" if rel else event.name)
        return out


def open_inotify() -> Any:
    """A new inotify instance. They are few (fs.inotify.max_user_instances, per user): when none is left,
    instances still held by unreachable watches are released first, and it is tried once more.

    The binding is imported here, so that a missing ``inotify_simple`` (an environment installed before
    it became a dependency) only means full walks, never a snapshot that cannot be taken.
    """
    try:
        from inotify_simple import INotify
    except ImportError as e:
        raise OSError(errno.ENOSYS, f"the inotify_simple package is not installed ({e})") from e
    try:
        return INotify(nonblocking=True)
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
    gc.collect()
    return INotify(nonblocking=True)


def _parent(rel: str) -> str:
    return rel.rpartition("/")[0]


def available() -> str | None:
    """None when inotify works here, else why not (for ``tether doctor`` and tests)."""
    try:
        TreeWatch().close()
    except WatchUnavailable as e:
        return str(e)
    return None


def open_dir(path: str, dir_fd: int | None = None) -> int:
    """A directory opened without following a final symlink (OSError when it is not a directory)."""
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
