"""Which workspace paths the bubblewrap sandbox hides: ``environment.filesystem.deny``, made physical.

The gate refuses commands that name a denied file, but a command it lets through can still select
files itself (``find``, a test that reads ``.env``, a build script). So inside the sandbox every
workspace path matching a deny glob is covered when the command starts: a file by ``/dev/null`` (device
access is off in the workspace mount, so opening it fails), a directory by an empty read-only tmpfs.
Also covered:

* another name (hard link) of a denied file, found by inode;
* the target of a symlink that matches, when the target is inside the workspace (a target outside
  is not mounted in the sandbox at all);
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
count of every denied file (other names of it are then searched afresh).
"""

from __future__ import annotations

import os
import re
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pathspec
from pathspec.pattern import RegexPattern

from tether.snapshot import RACY_WINDOW_NS

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


def masks(workspace: Path, deny: Sequence[str], listings: Listings | None = None) -> Masks:
    """Walk ``workspace`` (never following symlinks) and collect what ``deny`` covers; with ``listings``, the
    directories unchanged since the walk that filled it are not listed again."""
    matches = matcher((*deny, *ALWAYS_COVERED))
    root_s = resolve_dir(workspace) or os.path.realpath(workspace)
    if listings is not None and listings.root != root_s:
        listings.root, listings.by_dir = root_s, {}
    found_files: list[str] = []
    found_dirs: list[str] = []
    found_links: list[str] = []
    seen: dict[str, Listing] = {}
    settled = time.time_ns() - RACY_WINDOW_NS  # taken before any directory is looked at: never later than its own
    stack = [""]  # paths relative to the workspace, as strings: Path objects would dominate the walk's cost
    while stack:
        here = stack.pop()
        got = _listing(f"{root_s}/{here}" if here else root_s, here, matches, listings, settled)
        if got is None:
            continue  # unreadable here means unreadable in the sandbox too
        if got.key[0] >= 0:
            seen[here] = got
        found_files += got.files
        found_dirs += got.dirs
        found_links += got.links
        stack += got.walk
    if listings is not None:
        listings.by_dir = seen  # what is no longer walked is dropped
    if not (found_files or found_dirs or found_links):
        return Masks()  # the common case: nothing matched, no path to build
    root = Path(root_s)
    files = dict.fromkeys(root / rel for rel in found_files)
    dirs = dict.fromkeys(root / rel for rel in found_dirs)
    for link in (root / rel for rel in found_links):  # cover what a matching link points at, if inside the workspace
        target = Path(os.path.realpath(link))
        if target.is_relative_to(root) and target != root and target.exists():
            (dirs if target.is_dir() else files)[target] = None
    _add_hard_links(root, files, dirs)
    covered = list(dirs)
    return Masks(
        files=[f for f in files if not any(f.is_relative_to(d) for d in covered)],
        dirs=[d for d in dirs if not any(d != o and d.is_relative_to(o) for o in covered)],
    )


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
        except OSError:
            return None
        if stat.S_ISDIR(st.st_mode) and max(st.st_ctime_ns, st.st_mtime_ns) < settled:
            key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns)
            last = listings.by_dir.get(here)
            if last is not None and last.key == key:
                return last
        listings.listed += 1
    try:
        entries = list(os.scandir(path))
    except OSError:
        return None
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


def _add_hard_links(root: Path, files: dict[Path, None], dirs: dict[Path, None]) -> None:
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
    for here, subdirs, names in os.walk(root):
        subdirs[:] = [d for d in subdirs if Path(here, d) not in dirs]
        for name in names:
            path = Path(here, name)
            try:
                st = path.stat(follow_symlinks=False)
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in inodes:
                files[path] = None
