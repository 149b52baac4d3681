"""The paths git tracks, read from the repository's index file at decision time: so that a git command that rewrites
the work tree's tracked files (``git stash``, ``git reset --hard``, ``git checkout -- .``, ``git checkout BRANCH``) is
refused exactly when the deny list hides one of them, not in every workspace that holds a hidden file git ignores.

Versions 2 and 3 of the index (git's default) are read: entries in order, each a fixed header, a SHA-1, flags and a
NUL-terminated name padded to 8 bytes. Anything else is None, and the caller fails closed: a version-4 index
(prefix-compressed names), a SHA-256 repository (the entry no longer lines up), a ``.git`` file (a linked work
tree), more than :data:`MAX_BYTES`, an entry that does not parse. Only a regular file is opened.
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 64 * 1024 * 1024
_FIXED = 62  # ctime, mtime, dev, ino, mode, uid, gid, size (40 bytes), SHA-1 (20), flags (2)


def top(start: str, stop: str) -> str | None:
    """The work tree git finds from ``start``: the first directory at or above it holding ``.git``, searching no
    higher than ``stop`` (the workspace); None when none is found there (git would look further up)."""
    here = start
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        if here == stop or os.path.dirname(here) == here:
            return None
        here = os.path.dirname(here)


def tracked(work_tree: str) -> list[str] | None:
    """The paths (relative to ``work_tree``) its index lists; None when they cannot be read (see the module)."""
    try:
        path = os.path.join(work_tree, ".git", "index")
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        return [] if os.path.isdir(os.path.join(work_tree, ".git")) else None  # a fresh repository tracks nothing
    except OSError:
        return None
    return _entries(data)


def _entries(data: bytes) -> list[str] | None:
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version = int.from_bytes(data[4:8], "big")
    count = int.from_bytes(data[8:12], "big")
    if version not in (2, 3):
        return None
    out: list[str] = []
    at = 12
    for _ in range(count):
        if at + _FIXED > len(data):
            return None
        flags = int.from_bytes(data[at + 60 : at + 62], "big")
        start = at + _FIXED + (2 if version == 3 and flags & 0x4000 else 0)
        end = data.find(b"\0", start)
        if end < 0 or (flags & 0xFFF) not in (end - start, 0xFFF):
            return None  # the name's length is in the flags: a mismatch means the layout is not the one read here
        out.append(data[start:end].decode("utf-8", "surrogateescape"))
        at += (end - at + 8) & ~7  # the entry, its name and 1-8 NULs: a multiple of 8
    return out
