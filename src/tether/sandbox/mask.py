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
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pathspec
from pathspec.pattern import RegexPattern

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


def masks(workspace: Path, deny: Sequence[str]) -> Masks:
    """Walk ``workspace`` (never following symlinks) and collect what ``deny`` covers."""
    matches = matcher((*deny, *ALWAYS_COVERED))
    root = Path(os.path.realpath(workspace))
    files: dict[Path, None] = {}
    dirs: dict[Path, None] = {}
    links: list[Path] = []
    stack = [""]  # paths relative to the workspace, as strings: Path objects would dominate the walk's cost
    while stack:
        here = stack.pop()
        try:
            entries = list(os.scandir(f"{root}/{here}" if here else root))
        except OSError:
            continue  # unreadable here means unreadable in the sandbox too
        for entry in entries:
            rel = f"{here}/{entry.name}" if here else entry.name
            if entry.is_symlink():
                if matches(rel):
                    links.append(root / rel)
            elif entry.is_dir(follow_symlinks=False):
                if matches(rel + "/"):
                    dirs[root / rel] = None
                else:
                    stack.append(rel)
            elif matches(rel):
                files[root / rel] = None
    for link in links:  # cover what a matching link points at, if it is inside the workspace
        target = Path(os.path.realpath(link))
        if target.is_relative_to(root) and target != root and target.exists():
            (dirs if target.is_dir() else files)[target] = None
    _add_hard_links(root, files, dirs)
    covered = list(dirs)
    return Masks(
        files=[f for f in files if not any(f.is_relative_to(d) for d in covered)],
        dirs=[d for d in dirs if not any(d != o and d.is_relative_to(o) for o in covered)],
    )


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
