"""Reading and writing an agent's settings file: bounded non-blocking reads, strict JSON as the agent reads
it, a write that is all or nothing (a temporary file, ``fsync``, ``rename``, an ``fsync`` of the directory) and
never lands over another program's edit, and an ``flock`` on the directory so installers take turns."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .command import utf8


class InstallError(Exception):
    """Bad arguments (exit 2), a settings file tether will not rewrite (2), or one it cannot write (1)."""

    def __init__(self, message: str, exit: int = 2) -> None:
        super().__init__(message)
        self.exit = exit


#: A settings file larger than this is refused, not read (real ones are a few KiB).
MAX_SETTINGS_BYTES = 8 << 20


def read_text(path: Path) -> str:
    """``path``'s text, UTF-8, read without blocking: OSError for anything but a regular file (a FIFO would hang
    the reader, a device would never end) or for one over :data:`MAX_SETTINGS_BYTES`; ValueError for bytes
    that are not UTF-8."""
    return read_bytes(path).decode("utf-8")


def read_bytes(path: Path) -> bytes:
    """:func:`read_text`'s bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file ({stat.filemode(info.st_mode)})")
        data = f.read(MAX_SETTINGS_BYTES + 1)
    if len(data) > MAX_SETTINGS_BYTES:
        raise OSError(f"larger than {MAX_SETTINGS_BYTES >> 20} MiB")
    return data


def parse_json(text: str, rewrite: bool = True) -> Any:
    """Strict JSON as the agent reads it (``NaN``/``Infinity`` are not JSON; nesting too deep to parse is a
    ValueError). With ``rewrite`` (install, uninstall), also nothing tether could not write back the same: a
    duplicate key (the agent reads the last; rewriting would silently drop the other) or a number out of range
    (written back as ``Infinity``, which is not JSON)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and rewrite:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    def number(word: str) -> float:
        value = float(word)
        if rewrite and value in (float("inf"), float("-inf")):
            raise ValueError(f"number {word[:40]} out of range")
        return value

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_constant=constant)
    except RecursionError as e:
        raise ValueError("nested too deeply") from e


def there(path: Path) -> bool | str:
    """Whether ``path`` exists, or why that cannot be known (a directory above it this user may not search:
    neither "no file" nor a crash)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.islink(path)  # a dangling link is there (and unreadable)
    except OSError as e:
        return f"cannot check it ({e.strerror})"
    return True


def read_settings(path: Path) -> tuple[dict[str, Any] | None, bytes | None]:
    """The JSON object in ``path`` and the bytes it was read from; (None, None) when there is no file.
    InstallError for a symbolic link (replacing it would turn the link into a plain file and detach whatever it
    pointed to), something that is not a regular file, or a file that is not a JSON object tether can write
    back whole (:func:`parse_json`)."""
    if path.is_symlink():
        raise InstallError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); tether does not replace links: edit the"
            " target yourself, or replace the link with a plain file; not changed"
        )
    try:
        data = read_bytes(path)
        settings = parse_json(data.decode("utf-8") or "{}")
    except FileNotFoundError:
        return None, None
    except PermissionError as e:
        raise InstallError(f"{path}: cannot read it ({e.strerror}); {as_root(path)}", exit=1) from e
    except OSError as e:
        raise InstallError(f"{path}: cannot read it ({e.strerror or e}); tether does not overwrite it") from e
    except ValueError as e:
        raise InstallError(f"{path}: not valid JSON ({e}); fix or remove it, tether does not overwrite it") from e
    if not isinstance(settings, dict):
        raise InstallError(f"{path}: expected a JSON object at the top, got {type(settings).__name__}; not changed")
    return settings, data


def as_root(path: Path) -> str:
    return f"the owner of {path.parent} (root, for managed settings) must run it, e.g. with sudo"


@contextlib.contextmanager
def _directory(directory: Path) -> Iterator[int]:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Installers on one directory take turns (an exclusive ``flock`` on the directory itself)."""
    with _directory(directory) as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield


def write_atomically(
    path: Path,
    settings: dict[str, Any] | None,
    mode: int = 0o644,
    strict: bool = False,
    expect: bytes | bool | None = False,  # False: whatever is there
    owner: tuple[int, int] | None = None,  # a new file's (uid, gid), when root writes it
) -> bool:
    """Replace ``path`` by ``settings`` as JSON (None: delete it), all or nothing, keeping its permissions and
    owner (``strict``, a file every user reads and none may change: without group or other write); the rename (or
    the deletion) is on disk when this returns. With ``expect`` (:func:`content` of the file as read):
    False, nothing written, when another program changed the file since (its edit would be lost)."""
    if settings is None:
        if expect is not False and content(path) != expect:
            return False
        path.unlink()
        sync_directory(path.parent)
        return True
    text = json.dumps(settings, indent=2, allow_nan=False, ensure_ascii=False) + "\n"  # é stays é
    if not utf8(text):  # a lone surrogate, as a \ud800 escape read it: written back escaped
        text = json.dumps(settings, indent=2, allow_nan=False) + "\n"
    old = path.stat() if path.exists() else None
    mode = (old.st_mode & 0o777 if old else mode) & (~0o022 if strict else 0o777)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            # By the descriptor, never the name: in a directory another user owns, the name could be swapped
            # for a link to /etc/shadow between two calls, and root would chmod or chown that instead.
            os.fchmod(fd, mode)
            keep = (old.st_uid, old.st_gid) if old else owner
            if keep and keep != (0, 0) and os.geteuid() == 0:
                os.fchown(fd, *keep)  # sudo in a developer's project: the file stays (or is made) theirs
            os.fsync(fd)
        if expect is not False and content(path) != expect:
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    sync_directory(path.parent)
    return True


def content(path: Path) -> bytes | None:
    """What ``path`` holds (None: no file), to tell whether another program rewrote it since: by its bytes, not
    its times, which the kernel keeps in ticks of milliseconds (two saves in one tick look alike)."""
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


def sync_directory(directory: Path) -> None:
    with _directory(directory) as fd:
        os.fsync(fd)
