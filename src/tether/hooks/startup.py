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

from .import_roots import Roots, outermost

VERSIONED = re.compile(r"python(\d+)\.(\d+)(t?)\Z")
PLATLIBS = ("lib", "lib64")


def start_roots(python: str) -> Roots | str:
    """What ``python`` loads as it starts, before it runs a line of the caller's (:mod:`this module's rules
    <tether.hooks.startup>`): the standard library directories to walk, the entries not there yet (judged where
    they would be made), the ``libpython`` files and ``lib`` directories of its prefix; or why it cannot be
    known without running it (then it is not run)."""
    why = "its standard library cannot be found without running it"
    executable = os.path.abspath(python)
    real = os.path.realpath(executable)
    version = VERSIONED.match(os.path.basename(real))
    if not version:
        pypy = "pypy" in os.path.basename(real)
        said = "is PyPy's, whose layout is not CPython's" if pypy else "does not say its version"
        return f"{python} (what it imports cannot be asked: {why}: its real name {real} {said})"
    for marker in (executable + "._pth", real + "._pth"):
        if os.path.lexists(marker):
            return f"{python} (what it imports cannot be asked: {why}: {marker} replaces its path)"
    home = venv_home(executable)
    if home is not None and not os.path.isabs(home):
        return f"{python} (what it imports cannot be asked: {why}: its pyvenv.cfg names a relative home, {home})"
    start = home or os.path.dirname(real)
    for marker in ("pybuilddir.txt", "Modules/Setup.local"):  # looked for where the real interpreter is
        if any(os.path.lexists(os.path.join(d, marker)) for d in {start, os.path.dirname(real)}):
            return f"{python} (what it imports cannot be asked: {why}: it runs from a build directory)"
    major, minor, thread = version.groups()
    subdir, zipname = f"python{major}.{minor}{thread}", f"python{major}{minor}{thread}.zip"
    ups = [Path(start), *Path(start).parents]
    walk: list[Path] = []
    missing: list[Path] = []
    libraries: list[Path] = []
    for platlib in PLATLIBS:
        zips = [up / platlib / zipname for up in ups]
        found = next((z for z in zips if z.is_file()), None)
        missing += [z for z in zips if not z.exists()]
        stdlib = found.parent / subdir if found else None
        if stdlib is None:
            landmarks = [up / platlib / subdir for up in ups]
            stdlib = next((d for d in landmarks if (d / "os.py").is_file() or (d / "os.pyc").is_file()), None)
            missing += [d / "os.py" for d in landmarks[: landmarks.index(stdlib) if stdlib else len(landmarks)]]
        if stdlib is None:
            continue
        dynload = next((d for up in ups if (d := up / platlib / subdir / "lib-dynload").is_dir()), None)
        walk += [p for p in (stdlib, dynload) if p is not None and p.is_dir()]
        if found:
            libraries.append(found)
        lib = stdlib.parent
        shared = sorted(p for p in lib.glob(f"libpython{major}.{minor}{thread}*") if p.is_file())
        if any(p.name.endswith("._pth") for p in shared):
            return f"{python} (what it imports cannot be asked: {why}: a ._pth file in {lib} replaces its path)"
        libraries += [lib, *shared]
    if not walk:
        return f"{python} (what it imports cannot be asked: {why}: no {subdir} found above {start})"
    real_walk = [Path(os.path.realpath(p)) for p in walk]
    return Roots(
        walk=outermost(real_walk),
        written=[w for w, r in zip(walk, real_walk, strict=True) if w != r],
        missing=list(dict.fromkeys(missing)),
        libraries=list(dict.fromkeys(libraries)),
    )


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
