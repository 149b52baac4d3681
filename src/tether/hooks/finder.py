"""The finder of tether's own modules while a hook process imports its deciding code: the spec the interpreter's
path finder gives, without the walk that leads to it.

An ``import`` asks each finder of ``sys.meta_path`` in turn: the built-in and the frozen importers, then the path
finder, which asks the ``FileFinder`` of each directory of the package's ``__path__``, which joins (and offers to
log) a path for each suffix it tries: ~300 bytecodes of the import system's Python for every module, ~110 modules of
tether in a cold PreToolUse. :class:`OwnFinder`, first on ``sys.meta_path`` while
:func:`tether.hooks.entry.import_deciding_code` imports, answers for a submodule of a tether package of one
directory whose ``FileFinder`` exists already (the package's first submodule went the standard way) and whose
listing is still current (the directory's mtime, as that finder checks it), by the rule that finder follows: a name
that is a directory there (a package, or a namespace) is not answered; else the first suffix of the finder's
order whose file is listed and is a file, if that is source (``SourceFileLoader``): the spec
``spec_from_file_location`` makes for it, as ``FileFinder._get_spec`` makes it. Anything else is not answered (no
such finder yet, a changed directory, an extension module or bytecode first, case-insensitive names, another
Python than the 3.11 mirrored here), and the next finders are asked as ever. ``tests/hooks/test_finder.py`` holds
each answer to the path finder's. In a hook's own process it stays first for the whole process, and answers first
from the table of the modules' code (:func:`install`, :mod:`.modulecode`).
"""

from __future__ import annotations

import _frozen_importlib_external as _external
import os
import sys
from _frozen_importlib_external import FileFinder, SourceFileLoader, spec_from_file_location

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from types import ModuleType

    from .modulecode import Table

#: The Python whose ``FileFinder.find_spec`` this mirrors (its ``_path_cache``, ``_path_mtime`` and ``_loaders``).
MIRRORED = sys.version_info[:2] == (3, 11)
#: Whether names are matched case-insensitively (``PYTHONCASEOK`` on such a platform): not answered then.
_relax_case = _external._relax_case  # type: ignore[attr-defined]
#: The names answered for: tether's submodules.
PREFIX = "tether."
_FILE = 0o100000  # stat's S_IFREG, as ``_path_isfile`` tests it


class OwnFinder:
    """A meta path finder for tether's submodules: the path finder's answer, or None (see the module). With a
    ``table`` (:mod:`.modulecode`), first the table's answer: the same spec, its loader returning the code the table
    holds. As a context manager, it is first on ``sys.meta_path`` for the block, on the mirrored Python only, and gone
    after it, also when the block raises; not put there when one is there already (a hook process's own, with its
    table: :func:`install`)."""

    def __init__(self, table: Table | None = None) -> None:
        self.table = table

    def __enter__(self) -> None:
        if MIRRORED and not any(type(f) is OwnFinder for f in sys.meta_path):
            sys.meta_path.insert(0, self)

    def __exit__(self, *exc: object) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if path is None or len(path) != 1 or not name.startswith(PREFIX):
            return None
        if self.table is not None:
            try:
                kept = self.table.spec(name, path)
            except Exception:  # whatever the table's trouble, the standard way finds the module as ever
                kept = None
            if kept is not None:
                return kept
        folder = path[0]
        finder = sys.path_importer_cache.get(folder)
        if type(finder) is not FileFinder or finder.path != folder or folder.endswith("/") or _relax_case():
            return None
        try:
            if os.stat(folder).st_mtime != finder._path_mtime:  # type: ignore[attr-defined]
                return None  # the finder lists it again: the standard way
        except OSError:
            return None
        tail = name.rpartition(".")[2]
        listed = finder._path_cache  # type: ignore[attr-defined]
        if tail in listed:
            return None  # a package or a namespace: the standard way
        for suffix, loader in finder._loaders:  # type: ignore[attr-defined]
            if tail + suffix not in listed:
                continue
            file = f"{folder}/{tail}{suffix}"
            try:
                if os.stat(file).st_mode & 0o170000 != _FILE:
                    continue
            except OSError:
                continue
            if loader is not SourceFileLoader:
                return None
            return spec_from_file_location(
                name, file, loader=SourceFileLoader(name, file), submodule_search_locations=None
            )
        return None


def install(purpose: str) -> OwnFinder | None:
    """In a hook's own process (it ends after its call): this finder, with the table of the modules' code for
    ``purpose`` (``gate``, ``gate-shell``, ``observe``, each with ``-full`` on the full path: :mod:`.modulecode`),
    first on ``sys.meta_path`` for the rest of the process, the modules imported from now on watched
    (:meth:`.modulecode.Table.watch`). On the Python mirrored here only; once."""
    if not MIRRORED or any(type(f) is OwnFinder for f in sys.meta_path):
        return None
    from .modulecode import table

    kept = table(purpose)
    own = OwnFinder(kept)
    sys.meta_path.insert(0, own)
    kept.watch()
    return own
