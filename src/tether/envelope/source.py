"""Reading an input file's bytes, bounded, without parsing them (and without importing the YAML loader).

:func:`tether.envelope.document.read_text` decodes what this reads; the hooks' kept envelopes
(:mod:`tether.guard.envcache`) hash it, so that what is hashed is exactly what would be parsed.
"""

from __future__ import annotations

import io
import os
import stat

from tether.errors import EnvelopeInvalid, FileError, Problem

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from tether.disk import StrPath

MAX_DOCUMENT_BYTES = 1024 * 1024
"""An envelope is a few kilobytes; a megabyte leaves room for long instructions and stops a runaway file."""


def read_bytes(path: StrPath, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (a FIFO or device is refused, not read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError as e:
        raise FileError(f"{path}: file not found", path=str(path)) from e
    except OSError as e:
        raise FileError(f"{path}: cannot read ({e.__class__.__name__}: {e.strerror})", path=str(path)) from e
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise FileError(f"{path}: cannot read ({what}); expected a YAML or JSON file", path=str(path))
    with os.fdopen(fd, "rb", buffering=0) as f:
        try:
            data = _read_at_most(f, limit + 1, info.st_size)
        except OSError as e:
            raise FileError(f"{path}: cannot read ({e.__class__.__name__}: {e.strerror})", path=str(path)) from e
    if len(data) > limit:
        size = max(info.st_size, len(data))
        raise EnvelopeInvalid([Problem("$", f"{size} bytes", f"a document of at most {limit} bytes", str(path))])
    return data


def _read_at_most(f: io.FileIO, most: int, size: int) -> bytes:
    """Up to ``most`` bytes of ``f``, to its end. The first read asks for the file's size and one byte more (a
    file that grew since its ``fstat``, or one that reports no size, is read on in chunks): one read of
    ``most`` bytes would allocate a megabyte for a file of a few kilobytes, which a daemon does on every call."""
    parts: list[bytes] = []
    got, want = 0, min(size + 1, most)
    while got < most:
        chunk = f.read(min(want, most - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
        want = 1 << 16
    return b"".join(parts)
