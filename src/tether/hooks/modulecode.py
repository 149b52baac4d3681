"""The code of the modules a cold hook call imports to decide, kept in one file and unmarshalled at once.

A cold PreToolUse imports ~85 of tether's modules. For each, the import system finds its file, builds its spec,
stats the source, opens, reads and checks its ``.pyc`` (4 system calls besides the stat) and unmarshals its code.
Here a **table** holds those modules' code, read in one piece and unmarshalled as one value at the first module asked
of it, and the hook process's finder (:class:`.finder.OwnFinder`) answers a module the table holds, as it is now,
with a spec whose loader returns that code (:class:`KeptLoader`). Measured on whole cold calls late in a long
session (``docs/hook-latency.md``, "The modules' code in one file"): ~2.8 ms of ~55; the same table unmarshalled
module by module as each is imported saved ~0.7 ms only, so it is read at once, whatever a call then imports of it.

**An entry** is a module's name, its source file, whether it is a package, the directories whose listing decides
which file the import system finds for that name (the parent package's one directory; a package's own too) with
their ``st_mtime_ns``, the source's ``st_mtime_ns`` and ``st_size``, and its code. It answers only when the parent's
``__path__`` is that one directory, the source is the file the name names there (``<name>.py``, or
``<name>/__init__.py`` for a package), each directory's mtime is as recorded (a file added, removed or renamed there
changes it: the listing the import system would search is the one the entry was found in, as its own finders
assume) and the source's stat is as recorded (stricter than a ``.pyc``'s check: its mtime in whole seconds, 32 bits,
and its size). An entry is recorded as the path finder finds the module then: the directories stat'ed first, then
the path finder asked, then the source stat'ed, then its code read (the ``.pyc``'s, or the source compiled), so a
change between any two steps leaves a stamp that no longer matches; a module with a directory of its name beside it
(which could become a package without the listing changing) is not kept, nor one found any other way (an extension,
bytecode alone, a namespace), nor any name matched without regard to case (``PYTHONCASEOK``).

**The table** is a file of :mod:`tether.keptcode` (its header, writing, trust), stem ``module-code-<purpose>``,
beside this module's ``.pyc``; one per kind of call (``gate``: what a PreToolUse of a tool that runs no command
imports, ``gate-shell``: what one of a shell tool does, the shell's reading with it, ``observe``: what a receipt does,
each with ``-full`` for a call on the full path, with pydantic, which imports more and is rare), so a call reads only
its own. Its body is ``{name: entry}`` marshal'd as one value, at most
:data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` in all. Any doubt (header, unmarshalling, an entry's types) and
the entry or the table is as if not there: the module is found and loaded the standard way.

**Writing.** A hook process that imported a module of tether the table did not answer (missing, or no longer as
recorded), and could write the table (:func:`tether.keptcode.writable`: where it cannot, as for each user of a
managed install, nothing changes), writes it at exit (``atexit``, after its reply is out): those modules recorded
anew, then the entries on disk still as recorded, bounded. So the table follows the code: a module edited, added or
moved is loaded the standard way by the next cold call that imports it, and kept again by that call.
"""

from __future__ import annotations

import _frozen_importlib_external as _external
import marshal
import os
import sys
from _frozen_importlib_external import PathFinder, SourceFileLoader, spec_from_file_location
from types import CodeType

from tether import keptcode

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence
    from importlib.machinery import ModuleSpec
    from typing import Any

#: The table file's first bytes.
HEAD = b"TETHERMC"
#: The layout of the table; one of another layout is ignored (and its name differs).
FORMAT = 1
#: Entries kept at most: tether has ~320 modules, a cold call imports ~85.
MAX_ENTRIES = 1024
#: The table's size at most, in bytes: a larger file is not read, and a table is never written larger (a cold
#: PreToolUse's modules are ~1.7 MB of code).
MAX_BYTES = 16 << 20
#: The modules kept: tether's submodules (the package itself is found on ``sys.path``, which the table does not
#: follow).
PREFIX = "tether."
_FILE = 0o100000  # stat's S_IFREG


class Table:
    """One kind of call's table in this process: read at the first module asked of it; the modules of tether imported
    since :meth:`watch` that it did not answer are recorded and the table written at exit (when this process may)."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._entries: dict[Any, Any] | None = None
        self._answered: set[str] = set()
        self._before: set[str] | None = None

    def spec(self, name: str, path: Sequence[str] | None) -> ModuleSpec | None:
        """The spec of ``name`` (a submodule, ``path`` its parent's ``__path__``) with its code from the table,
        when the table holds it as it is now; else None (the import system finds it the standard way)."""
        if self._entries is None:
            self._entries = _read(self.path)
        entry = self._entries.get(name)
        if entry is None or path is None or len(path) != 1 or not _fits(entry) or _relaxed():
            return None
        source, package, dirs, mtime, size, code = entry
        tail = name.rpartition(".")[2]
        if source != (f"{path[0]}/{tail}/__init__.py" if package else f"{path[0]}/{tail}.py") or path[0] != dirs[0][0]:
            return None  # not the file the path finder would find for this name in this folder
        if not _current(dirs, source, mtime, size):
            return None
        self._answered.add(name)
        keptcode.LOADED[source] = (size, mtime)
        return spec_from_file_location(
            name,
            source,
            loader=KeptLoader(name, source, code),
            submodule_search_locations=[os.path.dirname(source)] if package else None,
        )

    def watch(self) -> None:
        """From now on, the modules of tether this process imports and the table does not answer are recorded at
        exit and the table written, when this process may write it."""
        if self._before is None and keptcode.writable(self.path):
            import atexit

            self._before = set(sys.modules)
            atexit.register(self.write)

    def write(self) -> bool:
        """Write the table: the modules imported since :meth:`watch` it did not answer, recorded now, then the entries
        on disk still as recorded, bounded. False, and nothing written, when there are none, bytecode is not written,
        or on any ``OSError``."""
        if self.path is None or self._before is None:
            return False
        try:  # run at exit, after the reply: a table is a cache, and whatever fails here leaves the one on disk
            new = [n for n in sys.modules if n.startswith(PREFIX) and n not in self._before and n not in self._answered]
            entries = {name: entry for name in new if (entry := _recorded(name)) is not None}
            if not entries:
                return False
            for name, entry in _read(self.path).items():
                if name not in entries and _fits(entry) and _current(entry[2], entry[0], entry[3], entry[4]):
                    entries[name] = entry
            return keptcode.write(self.path, HEAD, FORMAT, _body(entries), __file__)
        except Exception:
            return False


class KeptLoader(SourceFileLoader):
    """The source loader of a module the table answers: its ``get_code`` is the table's code (everything else, the
    source, the file's name and data, is the source loader's)."""

    def __init__(self, fullname: str, path: str, code: CodeType) -> None:
        super().__init__(fullname, path)
        self.code = code

    def get_code(self, fullname: str) -> CodeType | None:
        return self.code if fullname == self.name else super().get_code(fullname)


def table(purpose: str) -> Table:
    """The table for ``purpose`` (``gate``, ``gate-shell``, ``observe``, each also with ``-full``), beside this
    module's ``.pyc``."""
    return Table(keptcode.table_path(globals().get("__cached__"), f"module-code-{purpose}", FORMAT))


def _read(path: str | None) -> dict[Any, Any]:
    """The entries of the table at ``path``, all unmarshalled at once; empty on any doubt about the file."""
    body = keptcode.body(path, HEAD, FORMAT, MAX_BYTES)
    if body is None:
        return {}
    try:
        entries = marshal.loads(body)
    except (EOFError, ValueError, TypeError):
        return {}
    return entries if type(entries) is dict else {}


def _relaxed() -> bool:
    """Whether names are matched case-insensitively (``PYTHONCASEOK`` on such a platform): nothing answered then."""
    return bool(_external._relax_case())  # type: ignore[attr-defined]


def _fits(entry: object) -> bool:
    """Whether ``entry`` is an entry: (source, package, ((directory, mtime), ...), mtime, size, the code compiled from
    that source), the first directory the parent's, a package's own second."""
    if type(entry) is not tuple or len(entry) != 6:
        return False
    source, package, dirs, mtime, size, code = entry
    return (
        type(source) is str
        and type(package) is bool
        and type(dirs) is tuple
        and len(dirs) == 1 + package
        and all(type(d) is tuple and len(d) == 2 and type(d[0]) is str and type(d[1]) is int for d in dirs)
        and type(mtime) is int
        and type(size) is int
        and type(code) is CodeType
        and code.co_filename == source
    )


def _current(dirs: tuple[tuple[str, int], ...], source: str, mtime: int, size: int) -> bool:
    """Whether each directory and the source file are as an entry records them."""
    try:
        for folder, when in dirs:
            if os.stat(folder).st_mtime_ns != when:
                return False
        st = os.stat(source)
    except OSError:
        return False
    return st.st_mtime_ns == mtime and st.st_size == size and st.st_mode & 0o170000 == _FILE


def _recorded(name: str) -> tuple[Any, ...] | None:
    """The entry of ``name`` (imported) as the path finder finds it now (the module docstring), or None when it is
    not kept: not a submodule of a one-directory package, not found from its source, found otherwise than it was."""
    module, parent = sys.modules.get(name), sys.modules.get(name.rpartition(".")[0])
    spec, path = getattr(module, "__spec__", None), getattr(parent, "__path__", None)
    origin = getattr(spec, "origin", None)
    if type(path) is not list or len(path) != 1 or type(origin) is not str or _relaxed():
        return None
    folder, tail = path[0], name.rpartition(".")[2]
    package = getattr(spec, "submodule_search_locations", None) is not None
    try:
        dirs: tuple[tuple[str, int], ...] = ((folder, os.stat(folder).st_mtime_ns),)
        if package:
            dirs += ((os.path.dirname(origin), os.stat(os.path.dirname(origin)).st_mtime_ns),)
        elif os.path.isdir(os.path.join(folder, tail)):
            return None  # it could become a package without this listing changing
        found = PathFinder.find_spec(name, path)
        if found is None or type(found.loader) is not SourceFileLoader or found.origin != origin:
            return None
        if package != (found.submodule_search_locations is not None) or (
            package and dirs[-1][0] != os.path.join(folder, tail)
        ):
            return None
        st = os.stat(origin)
        code = found.loader.get_code(name)
    except (OSError, ImportError, SyntaxError, ValueError):
        return None
    if type(code) is not CodeType or code.co_filename != origin:
        return None
    entry = (origin, package, dirs, st.st_mtime_ns, st.st_size, code)
    return entry if _fits(entry) else None


def _body(entries: dict[str, Any]) -> bytes:
    """A table's body: ``entries`` in their order, within the bounds, marshal'd as one value."""
    kept: dict[str, Any] = {}
    room = MAX_BYTES - len(HEAD) - keptcode.FIXED - 16
    for name, entry in entries.items():
        cost = len(marshal.dumps((name, entry)))  # at most what it adds to the whole (which shares its names)
        if len(kept) < MAX_ENTRIES and cost <= room:
            kept[name] = entry
            room -= cost
    return marshal.dumps(kept)
