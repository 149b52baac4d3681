"""Files Python runs instead of, or before, the sources the snapshot compares: judged by name and stat alone.

Python's import system tries an extension module (``name.cpython-311-x86_64-linux-gnu.so``, ``name.abi3.so``,
``name.so``, ``name.pyd``) ahead of ``name.py`` in the same directory, and at interpreter start-up ``site``
runs every ``.pth`` file and ``sitecustomize``/``usercustomize`` module it finds on its path. Such files are
usually ignored (``*.so`` in ``.gitignore``) or live in a virtualenv, so the snapshot never sees them: an agent
that compiles or plants one can make the tests pass with the sources untouched and nothing in the diff.

So the whole workspace is walked (ignored paths and virtualenvs included; ``.git/`` and ``.tether/`` not),
reading names and ``lstat`` only, never contents. :func:`scan` records each such file's stamp after the
pre-flight baseline run; before and after each completion test run :func:`judge` compares:

* a file created or modified since the baseline (any stamp field differs, ctime included, which no
  unprivileged process can set back) is blocking, whatever its name;
* an extension module whose module name is that of a ``.py`` module or of a namespace directory beside it
  shadows that source: blocking when it is new, reported but not blocking when it was there at the start
  (not the agent's doing). A directory with ``__init__.py`` is a package, which Python prefers: not shadowed.

Without a baseline scan nothing can be called pre-existing, so every shadowing extension blocks.

The files of a workspace virtualenv's ``bin/`` (``.venv/bin``, ``venv/bin``) are stamped too: that is where
``tether.verify.runner.find_tool`` finds ruff or mypy when tether's own environment lacks them, and the
snapshot never looks there, so a shim the agent writes (``echo []``) would be the sensor. One created or
modified since the baseline blocks like a start-up file, and the lint and types sensors refuse to run it.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

NOT_WALKED = frozenset({".git", ".tether"})
STARTUP_MODULES = frozenset({"sitecustomize.py", "usercustomize.py"})
EXTENSION_ENDINGS = (".so", ".pyd")
TOOL_DIRS = frozenset({".venv/bin", "venv/bin"})  # where find_tool looks inside the workspace

#: path -> (size, mtime_ns, ctime_ns, inode)
Stamps = dict[str, tuple[int, int, int, int]]


@dataclass(frozen=True)
class Finding:
    path: str
    why: str
    blocking: bool
    code: str


def is_extension(name: str) -> bool:
    """An extension module's file name: a module name, then any tag, ending in .so or .pyd."""
    stem = name.split(".", 1)[0]
    return name.endswith(EXTENSION_ENDINGS) and stem.isidentifier()


def _loads_early(name: str) -> bool:
    return is_extension(name) or name.endswith(".pth") or name in STARTUP_MODULES


def _walk(workspace: Path) -> Iterator[tuple[str, list[os.DirEntry[str]]]]:
    """(directory relative to the workspace, its entries) for every directory, never following a symlink."""
    stack = [""]
    while stack:
        rel = stack.pop()
        try:
            with os.scandir(workspace / rel if rel else workspace) as it:
                entries = list(it)
        except OSError:
            continue  # unreadable here means unreadable to the sandboxed test run too
        yield rel, entries
        for e in entries:
            if e.name not in NOT_WALKED and e.is_dir(follow_symlinks=False):
                stack.append(f"{rel}/{e.name}" if rel else e.name)


def _stamp(entry: os.DirEntry[str]) -> tuple[int, int, int, int] | None:
    try:
        st = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return None if stat.S_ISDIR(st.st_mode) else (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def scan(workspace: Path) -> tuple[Stamps, dict[str, str]]:
    """Every file that loads early, with its stamp; and each shadowing extension with the source it shadows."""
    stamps: Stamps = {}
    shadows: dict[str, str] = {}
    for rel, entries in _walk(workspace):
        names = {e.name: e for e in entries}
        tools = rel in TOOL_DIRS
        for e in entries:
            if not (tools or _loads_early(e.name)):
                continue
            s = _stamp(e)
            if s is None:
                continue
            path = f"{rel}/{e.name}" if rel else e.name
            stamps[path] = s
            if is_extension(e.name):
                target = _shadowed(workspace, rel, e.name.split(".", 1)[0], names)
                if target is not None:
                    shadows[path] = target
    return stamps, shadows


def _shadowed(workspace: Path, rel: str, module: str, names: dict[str, os.DirEntry[str]]) -> str | None:
    prefix = f"{rel}/" if rel else ""
    if f"{module}.py" in names:
        return f"{prefix}{module}.py"
    d = names.get(module)
    if d is not None and d.is_dir(follow_symlinks=False) and not (workspace / prefix / module / "__init__.py").exists():
        return f"{prefix}{module}/"
    return None


def dump(stamps: Stamps) -> bytes:
    """The baseline scan as a blob (sorted JSON)."""
    return json.dumps({p: list(s) for p, s in sorted(stamps.items())}, separators=(",", ":")).encode()


def load(data: bytes) -> Stamps:
    """A blob written by :func:`dump`; ValueError when it is not one."""
    raw = json.loads(data)
    if not isinstance(raw, dict):
        raise ValueError("not a mapping")
    out: Stamps = {}
    for p, s in raw.items():
        if not (isinstance(s, list) and len(s) == 4 and all(type(x) is int for x in s)):
            raise ValueError(f"bad stamp for {p!r}")
        out[p] = (s[0], s[1], s[2], s[3])
    return out


def _what(path: str) -> str:
    folder, _, name = path.rpartition("/")
    if folder in TOOL_DIRS:
        return "virtualenv tool"
    return "extension module" if is_extension(name) else "start-up file"


def stamp_of(path: Path) -> tuple[int, int, int, int] | None:
    """The stamp :func:`scan` records for ``path`` (its ``lstat``), None when it cannot be read."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def judge(workspace: Path, baseline: Stamps | None) -> list[Finding]:
    """The findings now: blocking ones for what the run created, changed or cannot prove it did not."""
    stamps, shadows = scan(workspace)
    out = []
    for path, s in sorted(stamps.items()):
        was = None if baseline is None else baseline.get(path)
        if baseline is not None and was != s:
            verb = "created" if was is None else "modified"
            what = _what(path)
            also = f", shadows {shadows[path]}" if path in shadows else ""
            why = f"{what} {verb} during the run{also}: Python loads it ahead of the sources tether compares"
            out.append(Finding(path, why, True, "shadowing.new"))
        elif path in shadows:
            if baseline is None:
                why = f"extension module shadows {shadows[path]} (no baseline scan: cannot tell who put it there)"
                out.append(Finding(path, why, True, "shadowing.shadows"))
            else:
                why = f"extension module shadows {shadows[path]} (there at the run's start: not the agent's doing)"
                out.append(Finding(path, why, False, "shadowing.preexisting"))
    return out
