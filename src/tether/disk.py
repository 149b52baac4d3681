"""``pathlib.Path``'s questions to the disk, asked of a path's text: the same answers and the same errors.

A cold hook call hands paths between the store, the guard and the kept files beside the database; a ``Path`` each
cost it the import of ``pathlib`` and what that imports (``urllib.parse``, ``ipaddress``, ``fnmatch``, ``ntpath``:
~14 M instructions, 6 % of it). These take any text (or ``os.PathLike``), read it as ``Path`` reads it
(:func:`tether.places.place`: ``""`` is ``.``, a trailing ``/`` dropped) and answer as ``Path``'s method does,
which is not always what ``os.path``'s namesake does: ``Path.exists`` raises a ``PermissionError`` that
``os.path.exists`` swallows, and ``Path.resolve`` raises ``RuntimeError`` on a symlink loop that ``realpath`` walks
past. ``tests/test_disk.py`` holds each to ``pathlib`` on a hostile tree (loops, dangling and chained links, a
folder without search permission, NUL, ``..``, ``//``, very long names).
"""

from __future__ import annotations

import os
from errno import EBADF, ELOOP, ENOENT, ENOTDIR
from stat import S_ISDIR, S_ISREG

from tether import places

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import TypeAlias

    StrPath: TypeAlias = "str | os.PathLike[str]"  # what Path() takes: the public API's callers hand either

#: The errors ``Path``'s questions take for "no" (pathlib's ``_IGNORED_ERRNOS``); any other is raised.
_NO = (ENOENT, ENOTDIR, EBADF, ELOOP)


def text(path: str | os.PathLike[str]) -> str:
    """``str(Path(path))``."""
    return places.place(os.fspath(path))


def _mode(path: str | os.PathLike[str]) -> int | None:
    """The mode ``Path(path).stat()`` finds, None where ``Path``'s questions answer "no"."""
    try:
        return os.stat(text(path)).st_mode
    except OSError as e:
        if e.errno not in _NO:
            raise
        return None
    except ValueError:  # NUL, or a text the file system cannot encode
        return None


def exists(path: str | os.PathLike[str]) -> bool:
    """``Path(path).exists()``."""
    return _mode(path) is not None


def is_dir(path: str | os.PathLike[str]) -> bool:
    """``Path(path).is_dir()``."""
    mode = _mode(path)
    return mode is not None and S_ISDIR(mode)


def is_file(path: str | os.PathLike[str]) -> bool:
    """``Path(path).is_file()``."""
    mode = _mode(path)
    return mode is not None and S_ISREG(mode)


def resolve(path: str | os.PathLike[str]) -> str:
    """``str(Path(path).resolve())``: ``realpath``, and a symlink loop is ``RuntimeError`` (``realpath`` alone
    would walk past it)."""
    try:
        real = os.path.realpath(text(path))
    except OSError as e:
        if e.errno == ELOOP:
            raise RuntimeError(f"Symlink loop from {e.filename!r}") from None
        raise
    try:
        os.stat(real)
    except OSError as e:
        if e.errno == ELOOP:
            raise RuntimeError(f"Symlink loop from {e.filename!r}") from None
    return real


def mkdir(path: str | os.PathLike[str], mode: int = 0o777, *, parents: bool = False, exist_ok: bool = False) -> None:
    """``Path(path).mkdir(mode, parents, exist_ok)``: the parents made as ``Path`` makes them (``os.makedirs``
    differs where a part is ``..``)."""
    place = text(path)
    try:
        os.mkdir(place, mode)
    except FileNotFoundError:
        parent = places.parent(place)
        if not parents or parent == place:
            raise
        mkdir(parent, parents=True, exist_ok=True)
        mkdir(place, mode, parents=False, exist_ok=exist_ok)
    except OSError:  # as Path: not EEXIST alone, which the system may rank below EACCES or EROFS
        if not exist_ok or not is_dir(place):
            raise


def home() -> str:
    """``str(Path.home())``: ``RuntimeError`` where no home is known (``os.path.expanduser`` leaves the ``~``)."""
    found = os.path.expanduser("~")
    if found.startswith("~"):
        raise RuntimeError("Could not determine home directory.")
    return text(found)
