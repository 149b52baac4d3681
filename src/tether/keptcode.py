"""A file of code kept from one process to the next beside tether's own bytecode: how it is named, checked, read and
written. Two tables use it: the ``__init__`` code ``dataclasses`` compiles (:mod:`tether.compiled`) and the code of
the modules a cold hook call imports (:mod:`tether.hooks.modulecode`).

**The file.** ``<the __pycache__ of the module keeping it>/<stem>.<cache_tag>.v<format>.<magic hex>.marshal``: the
interpreter's ``sys.implementation.cache_tag`` and bytecode magic number in its name, so another Python never opens
it (none when the interpreter has no cache tag or the module no ``__cached__``). It is a header (the table's own
first bytes, its format, the magic number again, the CRC-32 and length of the body) and the body. Any doubt about the
header (a short, torn or foreign file) and the reader is told there is no table.

**Writing.** As CPython writes a ``.pyc``: to ``<table>.<pid>.<random>.tmp`` (``O_EXCL``, the mode of the keeping
module's source, as ``importlib`` gives a ``.pyc`` its source's) in the same directory, then renamed over the table;
any ``OSError`` (the directory not writable, not there, the disk full) and nothing is written, silently, as Python
skips a ``.pyc`` it cannot write; nor when ``sys.dont_write_bytecode``. So a reader sees the old table or the new one
whole (rename), two writers at once each rename a whole file (the last one stays), and a crash mid-write leaves the
old table and at most a ``.tmp`` file (as an interrupted ``.pyc`` write leaves one; the next write removes it once it
is :data:`STALE_S` old); a torn table after a power loss (no ``fsync``, as for a ``.pyc``) fails its CRC or length.

**Trust.** A table is code processes run. It lives where the package's own ``.pyc`` files live, with their owner and
permissions, and is read from nowhere else: whoever can write it can write a ``.pyc`` beside it, which Python runs
unchecked anyway. A managed install is vouched for by walking everything under tether's package
(``hooks/import_roots.py`` ``loose_under``, ``hooks/trust.py``): a table another user could write is refused like a
``.pyc`` they could write. A hook process runs with ``-I``, so ``PYTHONPYCACHEPREFIX`` cannot move a table (nor the
``.pyc`` files) somewhere a user can write. The CRC is against accidents (torn writes, a bug, a damaged disk: a
``.pyc`` has none), not against a writer, who could forge it.
"""

from __future__ import annotations

import binascii
import os
import sys
import time

from tether.scoped import suppress

#: The source files whose code a table gave this process, with the size and mtime (ns) it checked them at then: what
#: the caches beside a database ask of the code that wrote them (guard/cachefile.py ``runs_code``), without a
#: ``stat`` of their own.
LOADED: dict[str, tuple[int, int]] = {}
#: A temporary file of a writer this old (seconds) is a killed writer's, removed by the next write.
STALE_S = 600
#: The length of a header past the table's first bytes: the format, the magic number, the CRC-32 and the length.
FIXED = 16


def magic() -> bytes:
    from _frozen_importlib_external import MAGIC_NUMBER  # importlib's, without the package (it imports warnings)

    return MAGIC_NUMBER


def table_path(cached: object, stem: str, version: int) -> str | None:
    """Where the table ``stem`` of format ``version`` is, beside the ``.pyc`` at ``cached`` (a module's
    ``__cached__``); None: nowhere, nothing is kept."""
    tag = sys.implementation.cache_tag
    if not tag or not isinstance(cached, str):
        return None
    return os.path.join(os.path.dirname(cached), f"{stem}.{tag}.v{version}.{magic().hex()}.marshal")


def header(head: bytes, version: int, body: bytes | memoryview) -> bytes:
    """A table's first bytes for ``body``: ``head``, the format ``version``, the magic number, the body's CRC-32 and
    length (``binascii`` is loaded on the cold path already; a CRC-32 of a 1.8 MB table costs ~0.4 ms, a SHA-256 of
    it ~10 times that)."""
    check = binascii.crc32(body).to_bytes(4, "little") + len(body).to_bytes(4, "little")
    return head + version.to_bytes(4, "little") + magic() + check


def body(path: str | None, head: bytes, version: int, limit: int) -> memoryview | None:
    """The body of the table at ``path`` (a view of the bytes read, not a copy), or None when there is none, it is
    larger than ``limit`` in all, or its header is not that of this body (another table, format, Python; torn)."""
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError:
        return None
    size = len(head) + FIXED
    rest = memoryview(data)[size:]
    if len(data) > limit or len(data) < size or data[:size] != header(head, version, rest):
        return None
    return rest


def writable(path: str | None) -> bool:
    """Whether this process could write the table at ``path``: bytecode is written and its directory is writable
    (where it is not, as for every user of a managed install, nothing is kept)."""
    return path is not None and not sys.dont_write_bytecode and os.access(os.path.dirname(path), os.W_OK)


def write(path: str, head: bytes, version: int, table: bytes, source: str) -> bool:
    """Write ``table`` (a body) at ``path`` with its header, to a temporary file renamed into place, with the mode of
    ``source`` (the keeping module's file). False, and nothing written, when bytecode is not written or on any
    ``OSError``."""
    if sys.dont_write_bytecode:
        return False
    data = header(head, version, table) + table
    temporary = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    try:
        mode = (os.stat(source).st_mode | 0o200) & 0o666  # as importlib gives a .pyc its source's mode
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except OSError:
        return False
    try:
        with open(fd, "wb", closefd=True) as f:
            f.write(data)
        os.replace(temporary, path)
    except OSError:
        with suppress(OSError):
            os.unlink(temporary)
        return False
    sweep(path)
    return True


def sweep(path: str) -> None:
    """Remove what writers killed before their rename left (``<table>.<pid>.<random>.tmp``) once it is
    :data:`STALE_S` old: a write takes milliseconds, so a file that old has no writer."""
    folder, name = os.path.split(path)
    now = time.time()
    with suppress(OSError), os.scandir(folder or ".") as entries:
        for entry in entries:
            if entry.name.startswith(f"{name}.") and entry.name.endswith(".tmp"):
                with suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_S:
                        os.unlink(entry.path)
