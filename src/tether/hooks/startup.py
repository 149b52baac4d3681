"""What an interpreter loads before it can say what it imports, found without running it.

:func:`tether.hooks.import_roots.import_roots` asks the hook's interpreter for its path (``-I -S``): that run
already imports the interpreter's own standard library (``encodings``, ``codecs``, ``io``, ``site``…) and maps
its shared libraries. So before it is run, the places it will load that from are derived the way CPython's
``Modules/getpath.py`` does on POSIX, and judged first:

- a venv: ``pyvenv.cfg`` one directory above the interpreter, else beside it (``getpath`` reads them in that
  order), and the ``home`` it names is the directory the prefix is searched from; otherwise the directory of
  the interpreter's real path;
- the prefix: the first directory from there up whose ``PLATLIB/pythonXY.zip`` is a file, else the first whose
  ``PLATLIB/pythonX.Y/os.py`` (or ``os.pyc``) is; the standard library is ``<prefix>/PLATLIB/pythonX.Y``, and
  each candidate nearer the interpreter that is not there is an entry whoever may write above it can make (a
  ``python3XY.zip`` anywhere up to ``/``); the exec prefix: the first directory up with
  ``PLATLIB/pythonX.Y/lib-dynload``. ``PLATLIB`` is compiled in (``lib``, Fedora's ``lib64``): both are taken;
- ``X.Y`` comes from the interpreter's real name (``python3.12``, ``python3.13t``);
- ``<prefix>/PLATLIB`` itself, and the ``libpython`` files in it, as the shared library a shared build maps.

Where this cannot be derived with certainty it fails closed, saying why: a real name without its version, a
PyPy, a ``._pth`` file beside the interpreter or its ``libpython`` (it replaces the path), a ``home`` that is
not absolute (found from the hook's working directory), a build directory (``pybuilddir.txt``), no
standard library found (the compiled-in prefix is not known without running it). What the dynamic loader maps
from elsewhere (the C library, a ``libpython`` an ``RPATH`` names outside the prefix) is not judged before the
first run; :func:`tether.hooks.import_roots.loaded_roots` judges what the process mapped once the roots are
vouched for.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from .import_roots import Roots, outermost

VERSIONED = re.compile(r"python(\d+)\.(\d+)(t?)\Z")
PLATLIBS = ("lib", "lib64")


class Names(NamedTuple):
    """The names ``getpath`` looks for, made of the version in the interpreter's real name (``X.Y``, ``t`` for a
    free-threaded build)."""

    stdlib: str  # pythonX.Y: the standard library's directory under PLATLIB
    zip: str  # pythonXY.zip: a zipped standard library, looked for first
    libpython: str  # libpythonX.Y: the prefix of a shared build's library files in PLATLIB


def start_roots(python: str) -> Roots | str:
    """What ``python`` loads as it starts, before it runs a line of the caller's (:mod:`this module's rules
    <tether.hooks.startup>`): the standard library directories to walk, the entries not there yet (judged where
    they would be made), the ``libpython`` files and ``lib`` directories of its prefix; or why it cannot be
    known without running it (then it is not run). Each ``PLATLIB`` is searched on its own
    (:func:`platlib_roots`): a build uses one of them, which is not known without running it."""
    found = searched_from(python)
    if isinstance(found, str):
        return refused(python, found)
    start, names = found
    ups = [Path(start), *Path(start).parents]
    walk: list[Path] = []
    missing: list[Path] = []
    libraries: list[Path] = []
    for platlib in PLATLIBS:
        part = platlib_roots(ups, platlib, names)
        if isinstance(part, str):
            return refused(python, part)
        walk, missing, libraries = walk + part[0], missing + part[1], libraries + part[2]
    if not walk:
        return refused(python, f"no {names.stdlib} found above {start}")
    real_walk = [Path(os.path.realpath(p)) for p in walk]
    return Roots(
        walk=outermost(real_walk),
        written=[w for w, r in zip(walk, real_walk, strict=True) if w != r],
        missing=list(dict.fromkeys(missing)),
        libraries=list(dict.fromkeys(libraries)),
    )


def refused(python: str, reason: str) -> str:
    """The one form every refusal takes: what ``python`` imports is not asked, because asking runs it, and what
    that run would load first cannot be judged before it (``reason``)."""
    why = "its standard library cannot be found without running it"
    return f"{python} (what it imports cannot be asked: {why}: {reason})"


def searched_from(python: str) -> tuple[str, Names] | str:
    """The directory ``getpath`` searches for the prefix from (a venv's ``home``, else the directory of the
    interpreter's real path) and the names it looks for there; or why they cannot be known without running it:
    a real name without its version (or a PyPy's, laid out otherwise), a ``._pth`` file that replaces the path, a
    relative ``home`` (found from whatever directory the hook runs in), a build directory (which ``getpath``
    treats apart)."""
    executable = os.path.abspath(python)
    real = os.path.realpath(executable)
    version = VERSIONED.match(os.path.basename(real))
    if not version:
        pypy = "pypy" in os.path.basename(real)
        said = "is PyPy's, whose layout is not CPython's" if pypy else "does not say its version"
        return f"its real name {real} {said}"
    for marker in (executable + "._pth", real + "._pth"):
        if os.path.lexists(marker):
            return f"{marker} replaces its path"
    home = venv_home(executable)
    if home is not None and not os.path.isabs(home):
        return f"its pyvenv.cfg names a relative home, {home}"
    start = home or os.path.dirname(real)
    for marker in ("pybuilddir.txt", "Modules/Setup.local"):  # looked for where the real interpreter is
        if any(os.path.lexists(os.path.join(d, marker)) for d in {start, os.path.dirname(real)}):
            return "it runs from a build directory"
    major, minor, thread = version.groups()
    return start, Names(
        f"python{major}.{minor}{thread}", f"python{major}{minor}{thread}.zip", f"libpython{major}.{minor}{thread}"
    )


def platlib_roots(ups: list[Path], platlib: str, names: Names) -> tuple[list[Path], list[Path], list[Path]] | str:
    """What one ``PLATLIB`` adds (directories to walk, entries not there, library files), or why the interpreter
    cannot be judged: the standard library found there (:func:`stdlib_of`) and its ``lib-dynload`` (the first
    one up, as ``getpath`` finds the exec prefix) are walked; the prefix's ``PLATLIB`` and its ``libpython``
    files are what a shared build maps. A ``._pth`` file among those replaces the path as one beside the
    interpreter does."""
    stdlib, zipped, missing = stdlib_of(ups, platlib, names)
    if stdlib is None:
        return [], missing, []
    dynload = next((d for up in ups if (d := up / platlib / names.stdlib / "lib-dynload").is_dir()), None)
    walk = [p for p in (stdlib, dynload) if p is not None and p.is_dir()]
    lib = stdlib.parent
    shared = sorted(p for p in lib.glob(f"{names.libpython}*") if p.is_file())
    if any(p.name.endswith("._pth") for p in shared):
        return f"a ._pth file in {lib} replaces its path"
    return walk, missing, [*([zipped] if zipped else []), lib, *shared]


def stdlib_of(ups: list[Path], platlib: str, names: Names) -> tuple[Path | None, Path | None, list[Path]]:
    """Where ``getpath`` finds the standard library under ``platlib``: below the first directory up whose
    ``PLATLIB/pythonXY.zip`` is a file (that zip is returned too), else the first whose ``PLATLIB/pythonX.Y/os.py``
    (or ``os.pyc``) is; None where there is none. Also the candidates not there: every zip, and each landmark
    passed over: one made there would be found first, so whoever may write where it would be made decides what
    the interpreter runs."""
    zips = [up / platlib / names.zip for up in ups]
    found = next((z for z in zips if z.is_file()), None)
    missing = [z for z in zips if not z.exists()]
    if found:
        return found.parent / names.stdlib, found, missing
    landmarks = [up / platlib / names.stdlib for up in ups]
    stdlib = next((d for d in landmarks if (d / "os.py").is_file() or (d / "os.pyc").is_file()), None)
    missing += [d / "os.py" for d in landmarks[: landmarks.index(stdlib) if stdlib else len(landmarks)]]
    return stdlib, None, missing


def venv_home(executable: str) -> str | None:
    """The ``home`` of the ``pyvenv.cfg`` ``getpath`` reads for ``executable`` (one directory above it first,
    then beside it), or None (no venv, or one without ``home``)."""
    here = os.path.dirname(executable)
    for cfg in (os.path.join(os.path.dirname(here), "pyvenv.cfg"), os.path.join(here, "pyvenv.cfg")):
        try:
            with open(cfg, encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except (FileNotFoundError, PermissionError):
            continue
        except OSError:
            return None
        for line in lines:
            key, equals, value = line.partition("=")
            if equals and key.strip().lower() == "home":
                return value.strip() or None
        return None
    return None
