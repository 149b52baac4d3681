"""Which bytecode a tether test run may use: only what tether's own baseline run compiled.

CPython and pytest's assertion rewriter reuse a ``.pyc`` whose header matches the source's mtime and size.
The agent can plant a ``.pyc`` and set both (a same-size edit, ``touch -r``), so bytecode found in the
workspace is never trusted: before each of tether's test runs every ``__pycache__`` under the workspace is
removed (:func:`drop`), never following a symlink.

Recompiling every module was most of the completion run's cost, so the pre-flight run — the first run, before
the agent's first write, itself started with no bytecode — leaves the bytecode it compiled, and tether keeps a
copy (:func:`capture`) with the digest of the source each file was compiled from. The copies are blobs in
the event store, outside the sandbox. Before a completion run, after the drop, tether writes back
(:func:`restore`) only the copies whose source has the same digest in the final snapshot as at the run's
start — files the agent did not change, judged by bytes (snapshots key their cache on ctime, which no
unprivileged process can set back). Changed and new modules compile from source.

Sourceless bytecode: Python imports ``name.pyc`` from a directory on its path when there is no ``name.py``
beside it; :func:`drop` reports such files (it does not delete what is not a cache) and the tests sensor
refuses to run over them.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import stat
import struct
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from tether.canonical import bytes_hash
from tether.events.kinds_baseline import CachedBytecode
from tether.snapshot import ALWAYS_SKIPPED, BlobStore

CACHE_DIR = "__pycache__"
NOT_WALKED = frozenset({".git", ".tether"})  # never Python's import path; .tether/ is tether's own
MAX_PYC_BYTES = 8 * 1024 * 1024
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # a project whose bytecode is larger keeps the rest cold
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_HEADER = struct.Struct("<4sIII")  # magic, flags, then source mtime and size, or a source hash (PEP 552)


@dataclass(frozen=True)
class Dropped:
    """What :func:`drop` did: whether every cache directory is gone, and the sourceless ``.pyc`` it saw."""

    complete: bool
    sourceless: tuple[str, ...]


def drop(workspace: Path) -> Dropped:
    """Remove every ``__pycache__`` under the workspace (never following a symlink); list sourceless ``.pyc``."""
    complete, sourceless = True, []
    for root, dirs, files in os.walk(workspace):
        for d in [d for d in dirs if d == CACHE_DIR]:
            path = Path(root) / d
            try:
                if path.is_symlink():
                    path.unlink()
                else:
                    shutil.rmtree(path)  # fd-based on Linux: safe against symlinks swapped in underneath
            except OSError:
                complete = False
        dirs[:] = [d for d in dirs if d != CACHE_DIR and d not in NOT_WALKED]
        sourceless += _sourceless(workspace, root, files)
    return Dropped(complete, tuple(sorted(sourceless)))


def sourceless(workspace: Path) -> list[str]:
    """The ``.pyc`` files Python would import instead of a source (no ``.py`` beside them); nothing is removed."""
    found = []
    for root, dirs, files in os.walk(workspace):
        dirs[:] = [d for d in dirs if d not in ALWAYS_SKIPPED]
        found += _sourceless(workspace, root, files)
    return sorted(found)


def _sourceless(workspace: Path, root: str, files: list[str]) -> list[str]:
    """Sourceless ``.pyc`` in one directory. Virtualenvs and caches are the snapshot's blind spots anyway
    (a source hidden there is as invisible as bytecode), so only what snapshots look at is judged."""
    if ALWAYS_SKIPPED.intersection(Path(root).relative_to(workspace).parts):
        return []
    names = set(files)
    out = []
    for f in files:
        stem, dot, ext = f.rpartition(".")
        if dot and ext in ("pyc", "pyo") and f"{stem}.py" not in names:
            out.append((Path(root) / f).relative_to(workspace).as_posix())
    return out


@contextmanager
def fresh(workspace: Path) -> Iterator[tuple[dict[str, str], Dropped]]:
    """The environment for a test run that uses no bytecode found in the workspace, and what :func:`drop` saw.

    Where a cache directory cannot be removed, Python is pointed at a fresh, empty cache directory
    instead (slower: everything recompiles, the interpreter's own modules included).
    """
    dropped = drop(workspace)
    if dropped.complete:
        yield {}, dropped
        return
    cache = Path(tempfile.gettempdir()) / f"tether-pycache-{secrets.token_hex(6)}"
    try:
        yield {"PYTHONPYCACHEPREFIX": str(cache)}, dropped
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def capture(workspace: Path, blobs: dict[str, bytes]) -> list[CachedBytecode]:
    """The bytecode now in the workspace's caches, each with its source's digest; the bytes go into ``blobs``.

    Call it right after a run that started from no bytecode (so every file was compiled by that run from
    the source as it was). A file is kept only when its header names the source's current mtime and size
    (Python would use it) and the source is a regular file read without following links.
    """
    out: list[CachedBytecode] = []
    total = 0
    for rel_dir, names in _caches(workspace):
        for name in sorted(names):
            source = f"{rel_dir}/{name.split('.', 1)[0]}.py".lstrip("/")
            pyc = f"{rel_dir}/{CACHE_DIR}/{name}".lstrip("/")
            src, got = _read_regular(workspace / source), _read_regular(workspace / pyc)
            if src is None or got is None or not _current(got[0], *src) or total + len(got[0]) > MAX_TOTAL_BYTES:
                continue
            data = got[0]
            total += len(data)
            h = bytes_hash(data)
            blobs[h] = data
            out.append(CachedBytecode(path=pyc, source=source, source_digest=bytes_hash(src[0]), blob=h))
    return out


def _caches(workspace: Path) -> Iterator[tuple[str, list[str]]]:
    """(directory relative to the workspace, names of the ``.pyc`` files in its real ``__pycache__``).

    Directories snapshots never track (virtualenvs, caches, ``.git``) are skipped: their sources have no
    digest in the final snapshot, so their bytecode could never be restored.
    """
    for root, dirs, _ in os.walk(workspace):
        rel = Path(root).relative_to(workspace).as_posix()
        rel = "" if rel == "." else rel
        if CACHE_DIR in dirs:
            cache = Path(root) / CACHE_DIR
            try:
                if not cache.is_symlink():
                    yield rel, [e.name for e in os.scandir(cache) if e.name.endswith(".pyc") and e.is_file()]
            except OSError:
                pass
        dirs[:] = [d for d in dirs if d not in ALWAYS_SKIPPED]


def _read_regular(path: Path, limit: int = MAX_PYC_BYTES) -> tuple[bytes, os.stat_result] | None:
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        return (data, st) if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _current(pyc: bytes, source: bytes, st: os.stat_result) -> bool:
    """Whether Python (or pytest) would use this pyc for this source: by mtime and size, or by checked hash."""
    if len(pyc) < _HEADER.size:
        return False
    flags = _HEADER.unpack_from(pyc)[1]
    if flags == 0:  # timestamp-based (PEP 552)
        _, _, mtime, size = _HEADER.unpack_from(pyc)
        return bool(mtime == int(st.st_mtime) & 0xFFFFFFFF and size == st.st_size & 0xFFFFFFFF)
    return flags == 3 and pyc[8:16] == importlib.util.source_hash(source)  # checked hash: pytest >= 9 writes these


def restore(
    workspace: Path, cached: Sequence[CachedBytecode], unchanged: Callable[[str, str], bool], blobs: BlobStore
) -> int:
    """Write back the cached bytecode whose source is ``unchanged(source, digest)``; how many files were written.

    Run after :func:`drop`. Every directory is opened relative to the workspace without following a
    symlink, and every file is created exclusively, so a link swapped into the tree cannot redirect a write.
    A blob whose bytes do not hash to its name is skipped (that module compiles from source).
    """
    written = 0
    root = os.open(workspace, _DIR_FLAGS)
    try:
        for item in cached:
            if not unchanged(item.source, item.source_digest):
                continue
            try:
                data = blobs.get_blob(item.blob)
            except Exception:  # a missing blob: the store raises its own error types
                continue
            if bytes_hash(data) == item.blob and _write_below(root, item.path, data):
                written += 1
    finally:
        os.close(root)
    return written


def _write_below(root: int, rel: str, data: bytes) -> bool:
    *parents, cache, name = rel.split("/")
    if cache != CACHE_DIR or not name.endswith(".pyc") or any(p in ("", ".", "..") for p in (*parents, name)):
        return False
    fds: list[int] = []
    try:
        fd = root
        for part in parents:
            fd = os.open(part, _DIR_FLAGS, dir_fd=fd)
            fds.append(fd)
        with suppress(FileExistsError):  # modes as Python creates them (the umask or the default ACL applies)
            os.mkdir(CACHE_DIR, 0o777, dir_fd=fd)
        fd = os.open(CACHE_DIR, _DIR_FLAGS, dir_fd=fd)
        fds.append(fd)
        out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666, dir_fd=fd)
        try:
            with os.fdopen(out, "wb", closefd=False) as f:
                f.write(data)
        finally:
            os.close(out)
        return True
    except OSError:
        return False
    finally:
        for fd in fds:
            os.close(fd)
