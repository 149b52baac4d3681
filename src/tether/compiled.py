"""The code ``dataclasses`` compiles for a class's ``__init__``, kept from one process to the next, as CPython keeps
a module's code in its ``__pycache__``.

The standard ``dataclass`` writes each method it adds as source text and ``exec``s it (``dataclasses._create_fn``:
``def __create_fn__(locals…): def __init__(…): …; return __init__``). :mod:`tether.records` makes every method but
``__init__`` without compiling; what is left is ~114 ``__init__`` texts a cold hook call compiles, ~0.5 M
instructions each (``docs/hook-latency.md``). A text depends only on the class's fields (names, whether each has a
default or a factory, ``init``/``kw_only``, frozen, ``__post_init__``, ``InitVar``), never on their values: those
are the ``locals`` the outer function is called with. So the code compiled from a text can be kept.

**What stands in, and where.** While :mod:`tether.records` makes a class (under its lock, restored at once, as it
stands in for ``_frozen_get_del_attr``), ``dataclasses``' global name ``exec`` is :func:`exec_cached`: the
standard ``_create_fn`` builds its text exactly as ever, and its ``exec(txt, globals, ns)`` runs the code object
compiled from that text (``compile(txt, "<string>", "exec")``, what ``exec`` of a string compiles: ``dataclasses``
has no ``__future__`` flags to inherit), taken from the table when it holds that exact text, compiled when not.
``exec`` of a code object then does what ``exec`` of its text does after compiling (the ``def`` statement makes
``__create_fn__`` over ``globals``, adding ``__builtins__`` to them if missing), and ``_create_fn`` calls it with the
locals as ever. Nothing of the text building is mirrored here, so a Python whose text differs (3.12 names the
return type otherwise) keys its own texts. The function made is the one compiled: same code object (``==``,
``co_filename`` ``"<string>"`` and line numbers included: marshal keeps them), signature, defaults, closure,
``__qualname__``, ``__annotations__``; ``tests/test_compiled.py`` compares them with the standard making.
Applies where :mod:`tether.records` mirrors the generated methods (3.11, 3.12, with ``_create_fn``); on 3.13
(no ``_create_fn``) nothing stands in.

**What is kept.** Only the ``__init__`` code of classes of tether's own package and of the libraries a hook process
makes dataclasses of while it imports what decides (:data:`KEPT`, judged by the ``__name__`` of the module globals
``dataclasses`` passes): any other class made by :mod:`tether.records` (a test's) is compiled as ever, never kept.

**The table.** A file of :mod:`tether.keptcode` (its name, header, writing and trust are that module's), stem
``dataclass-code``, beside this module's ``.pyc``. Its body is a marshal'd ``{text: marshal'd code}``, at most
:data:`MAX_ENTRIES` entries and :data:`MAX_BYTES` in all. Any doubt and it is as if there were none: a header that is
not this body's, a body that is not a dict, an entry that does not unmarshal to a code object, or whose code does not
fit its text (its function and the function inside named as the text's first two lines name them, with the arguments
the first line lists: a cheap check that catches an entry filed under another text; it is no check against a forger):
then the text is compiled as ever. The lookup is by the exact text (a dict: its hash, then the whole text compared).

**Writing.** A process that compiled a text the table lacked, and could write the table (bytecode is written, its
directory is writable: asked once, at the first text compiled; where not, as for each user of a managed install,
nothing is kept and a compile costs what it did), writes the table once, at exit (``atexit``): the file as it is then
on disk merged with what the process used, the entries this process used first (a process that misses puts back what
it needs), bounded. Two writers at once each rename a whole file: the entries of the one renamed first are lost until
a process misses them again. ``tests/test_compiled.py`` holds the trust of a managed install too: a table another
user could write is refused like a ``.pyc`` they could write.
"""

from __future__ import annotations

import marshal
import sys
from types import CodeType

from tether import keptcode

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import Any

#: The table file's first bytes.
HEAD = b"TETHERDC"
#: The layout of the table; one of another layout is ignored (and its name differs).
FORMAT = 2
#: Entries kept at most (a cold PreToolUse uses ~114; tether's whole import ~200).
MAX_ENTRIES = 512
#: The table's size at most, in bytes: a larger file is not read, and a table is never written larger.
MAX_BYTES = 2 << 20
#: A text longer than this is compiled each time, not kept (an ``__init__`` of ~50 fields is ~4 KB).
MAX_TEXT = 64 << 10
#: The length of :func:`header`: :data:`HEAD`, then the format, the magic number, the CRC-32 and the length (4 bytes
#: each).
HEADER_SIZE = len(HEAD) + keptcode.FIXED


def table_path() -> str | None:
    """Where the table is, beside this module's ``.pyc`` (None: nowhere, nothing is kept)."""
    return keptcode.table_path(globals().get("__cached__"), "dataclass-code", FORMAT)


#: Where the table is read from and written to; None: nowhere. Set once, when first needed (tests set it).
location: str | None = table_path()
_table: dict[Any, Any] | None = None  # as read, once per process
_used: dict[str, bytes] = {}  # the entries this process used or compiled, in that order
_keeping: bool | None = None  # whether a text was compiled that is kept, to be written at exit; None: none yet


def header(body: bytes | memoryview) -> bytes:
    """The table's first bytes for ``body`` (:func:`tether.keptcode.header`)."""
    return keptcode.header(HEAD, FORMAT, body)


def read(path: str | None) -> dict[Any, Any]:
    """The table at ``path``; empty when there is none or on any doubt about the file (the module docstring)."""
    rest = keptcode.body(path, HEAD, FORMAT, MAX_BYTES)  # a view: not copied to be unmarshalled (~150 KB)
    if rest is None:
        return {}
    try:
        body = marshal.loads(rest)
    except (EOFError, ValueError, TypeError):
        return {}
    return body if type(body) is dict else {}


def _fits(code: Any, text: str) -> bool:
    """Whether ``code`` is a module's code that defines the function the text's first line names, with the
    arguments it lists, and whose first nested function has the name the second line gives."""
    if type(code) is not CodeType or code.co_filename != "<string>":
        return False
    outer = next((c for c in code.co_consts if type(c) is CodeType), None)
    if outer is None:
        return False
    first, _, rest = text.partition("\n")
    if first != f"def {outer.co_name}({', '.join(outer.co_varnames[: outer.co_argcount])}):":
        return False
    inner = next((c for c in outer.co_consts if type(c) is CodeType), None)
    return inner is not None and rest.startswith(f" def {inner.co_name}(")


def code_of(text: str) -> CodeType:
    """The code ``exec(text)`` would compile: the table's when it holds ``text`` and it fits, else compiled (and
    kept, to be written at exit)."""
    global _table, _keeping
    if _table is None:
        _table = read(location)
    entry = _table.get(text)
    if type(entry) is bytes:
        try:
            code = marshal.loads(entry)
        except (EOFError, ValueError, TypeError):
            code = None
        if _fits(code, text):
            _used.setdefault(text, entry)
            return code  # type: ignore[no-any-return]
    code = compile(text, "<string>", "exec", dont_inherit=True)
    if _keeping is None:
        _keeping = keptcode.writable(location)
        if _keeping:
            import atexit

            atexit.register(write)
    if _keeping and len(text) <= MAX_TEXT and len(_used) < MAX_ENTRIES:
        _table[text] = _used[text] = marshal.dumps(code)  # a class of the same text later in this process too
    return code


#: The packages whose classes' ``__init__`` code is kept: tether's own, and the libraries whose dataclasses a hook
#: process makes while :func:`tether.records.standing_in` (what it imports to decide: pydantic's, annotated_types'
#: and pathspec's). A class of any other module (a test's, a plugin's) is compiled as ever and never kept: the table
#: holds the code of the one cold path it is for, not of whatever else a process with bytecode written makes.
KEPT = ("tether", "pydantic", "annotated_types", "pathspec")


def kept_for(module: Any) -> bool:
    """Whether ``module`` (the name in a class's module globals) is of a package of :data:`KEPT`."""
    return type(module) is str and any(module == p or module.startswith(f"{p}.") for p in KEPT)


def exec_cached(source: Any, globals: Any = None, locals: Any = None, /) -> None:
    """``exec`` as ``dataclasses`` calls it, with the text's code from the table (:func:`code_of`) for a class of a
    package of :data:`KEPT` (``dataclasses`` passes the class's module globals); anything else is handed to
    ``exec`` as it is. With no ``globals``, the caller's, as ``exec`` takes them."""
    if globals is None:
        caller = sys._getframe(1)
        globals = caller.f_globals
        if locals is None:
            locals = caller.f_locals
    if type(source) is str:  # compiled as by ``exec`` in ``dataclasses`` (no ``__future__`` flags of this module's)
        kept = type(globals) is dict and kept_for(globals.get("__name__"))
        source = code_of(source) if kept else compile(source, "<string>", "exec", dont_inherit=True)
    exec(source, globals, locals)


def merged(ours: dict[str, bytes], theirs: dict[Any, Any]) -> dict[str, bytes]:
    """``ours`` first, then the entries of ``theirs`` (the table on disk) ours lacks, within the bounds."""
    kept: dict[str, bytes] = {}
    room = MAX_BYTES - HEADER_SIZE - 64
    for text, entry in [*ours.items(), *theirs.items()]:
        if len(kept) >= MAX_ENTRIES:
            break
        if type(text) is not str or type(entry) is not bytes or text in kept:
            continue
        cost = len(text.encode("utf-8", "surrogatepass")) + len(entry) + 16
        if cost > room:
            continue
        room -= cost
        kept[text] = entry
    return kept


def write(path: str | None = None) -> bool:
    """Write the table (at ``path``, else :data:`location`): what is on disk merged with what this process used
    (:func:`tether.keptcode.write`). False, and nothing written, when nothing is new, bytecode is not written, or on
    any ``OSError``."""
    path = path or location
    if path is None or not _keeping or not _used:
        return False
    return keptcode.write(path, HEAD, FORMAT, marshal.dumps(merged(_used, read(path))), __file__)
