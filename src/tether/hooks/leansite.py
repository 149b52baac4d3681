"""A hook process's site-packages on the path without loading ``site``, when that is all ``site`` would do.

The launcher starts Python bare (``-I -S``), and a call it decides in-process needs site-packages (the Bash
grammar, ahocorasick, pathspec; pydantic on the full path): :func:`tether.hooks.entry.full_path` loads ``site``.
Its ``main`` imports the module (~600 lines), reads ``pyvenv.cfg``, lists site-packages and runs its ``.pth``
files (setuptools' ``distutils-precedence.pth`` imports ``_distutils_hack``), looks for ``sitecustomize`` on the
whole path and installs ``help``, ``quit`` and the like: ~5.7 M instructions, of which a call on the plain path
needs only the directories it appends.

:func:`lean` appends exactly those, found the way ``site.main`` finds them (``site.venv``, ``getsitepackages``,
``addsitedir``, ``addpackage`` in CPython 3.11-3.13), and sets ``sys.prefix`` as ``site.venv`` does, but only
when that is all ``site`` would do that a decision could see:

- a venv that excludes the system's site-packages (``pyvenv.cfg`` beside the interpreter or one directory up,
  ``include-system-site-packages = false``): no user site either, as ``site.venv`` decides;
- a POSIX path layout (``sys.platlibdir`` is ``lib``);
- ``.pth`` files of directory lines only, or of setuptools' one line for ``distutils`` (:data:`DISTUTILS_LINE`:
  an import hook for ``distutils`` alone, which deciding never imports); any other line of code means ``site``;
- no ``sitecustomize`` anywhere on the resulting path (``site`` would import it).

Otherwise it changes nothing and says so: the caller loads ``site``, as before.
"""

from __future__ import annotations

import os
import sys

#: setuptools' ``distutils-precedence.pth``, the one line of code a lean start leaves out.
DISTUTILS_LINE = (
    "import os; var = 'SETUPTOOLS_USE_DISTUTILS'; enabled = os.environ.get(var, 'local') == 'local'; "
    "enabled and __import__('_distutils_hack').add_shim(); "
)


def lean() -> bool:
    """Append the venv's site-packages and the directories its ``.pth`` files name to ``sys.path`` and set
    ``sys.prefix``, as ``site.main()`` would; False, with nothing changed, when ``site`` would do more."""
    prefix = _venv()
    if prefix is None or sys.platlibdir != "lib" or os.sep != "/":
        return False
    sitedir = os.path.join(prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    known = {os.path.abspath(p) for p in sys.path if p}
    added = _entries(os.path.abspath(sitedir), known) if os.path.isdir(sitedir) else []
    if added is None:
        return False
    from _frozen_importlib_external import PathFinder  # importlib.machinery's, loaded at start-up: no importlib

    if PathFinder.find_spec("sitecustomize", [*sys.path, *added]) is not None:
        return False
    sys.path.extend(added)
    sys.prefix = sys.exec_prefix = prefix
    return True


def _venv() -> str | None:
    """The venv's directory, as ``site.venv`` finds it, when it excludes the system's site-packages; else None."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    for conf in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(os.path.dirname(exe_dir), "pyvenv.cfg")):
        if os.path.isfile(conf):
            break
    else:
        return None
    system = "true"
    try:
        with open(conf, encoding="utf-8") as f:
            for line in f:
                key, eq, value = line.partition("=")
                if eq and key.strip().lower() == "include-system-site-packages":
                    system = value.strip().lower()
    except (OSError, UnicodeError):
        return None
    return os.path.dirname(exe_dir) if system == "false" else None


def _entries(sitedir: str, known: set[str]) -> list[str] | None:
    """``sitedir`` and the existing directories its ``.pth`` files name, in ``site``'s order, those already known
    left out; None when a ``.pth`` file holds code other than :data:`DISTUTILS_LINE` (or cannot be read)."""
    added = [] if sitedir in known else [sitedir]
    seen = known | {sitedir}
    try:
        names = sorted(n for n in os.listdir(sitedir) if n.endswith(".pth"))
    except OSError:
        return added
    for name in names:
        try:
            with open(os.path.join(sitedir, name), encoding="locale") as f:
                lines = f.read().splitlines(keepends=True)
        except FileNotFoundError:
            continue  # site skips a file it cannot open
        except (OSError, UnicodeError):
            return None
        for line in lines:
            if line.startswith("#") or not line.strip():
                continue
            if line.startswith(("import ", "import\t")):
                if line.rstrip("\r\n") != DISTUTILS_LINE:
                    return None
                continue
            path = os.path.abspath(os.path.join(sitedir, line.rstrip()))
            if path not in seen and os.path.exists(path):
                added.append(path)
                seen.add(path)
    return added
