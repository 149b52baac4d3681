"""The paths git tracks, read from the repository's index file at decision time: so that a git command that rewrites
the work tree's tracked files (``git stash``, ``git reset --hard``, ``git checkout -- .``, ``git checkout BRANCH``) is
refused exactly when the deny list hides one of them, not in every workspace that holds a hidden file git ignores.

The index is read by dulwich, imported only here and only when a git command that rewrites the work tree is judged:
every version git writes (2 to 4), SHA-1 and SHA-256 repositories, a linked work tree's ``.git`` file; its checksum
is checked, so a changed or cut index is an error, not a shorter list. Anything that cannot be read is None, and the
caller fails closed: an index that is not a regular file (a FIFO would block) or is over :data:`MAX_BYTES`, one that
does not parse or whose checksum is wrong, a sparse index (its directory entries stand for files not listed).
"""

from __future__ import annotations

import os
import stat

MAX_BYTES = 64 * 1024 * 1024


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
        from dulwich.repo import Repo

        repo = Repo(work_tree)
        try:
            st = os.stat(repo.index_path())
        except FileNotFoundError:
            return []  # a fresh repository tracks nothing
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        index = repo.open_index()
        if index.is_sparse():
            return None
        return [p.decode("utf-8", "surrogateescape") for p in index.paths()]
    except Exception:  # a repository or an index dulwich cannot read raises what it raises: unknown, fail closed
        return None
