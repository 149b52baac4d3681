"""The machine's list of tether databases, so that ``tether runs --all`` can find every one.

A database is written under its workspace (``.tether/tether.db``), wherever that is; nothing else would
remember where. The store appends a database's absolute path here when it creates one. The list is one
path a line in ``$XDG_STATE_HOME/tether/databases`` (default ``~/.local/state/tether/databases``).

It is an index, never the truth: a database that was deleted or moved stays listed until the next
:func:`prune`, which reports it as stale. Writers (appends) and the pruner (a rewrite) take the same
``flock``, so an entry appended while the list is pruned is not lost. Failing to record is never an
error for the run that created the database (a read-only home must not stop an agent): :func:`record`
returns False instead.
"""

from __future__ import annotations

import fcntl
import os

from tether import disk, places
from tether.records import dataclass
from tether.scoped import contextmanager

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from tether.disk import StrPath


def registry_path() -> str:
    """``$XDG_STATE_HOME/tether/databases`` (``~/.local/state`` without it), as ``Path`` would spell it: a
    database's first open records itself here, on a hook call's path too (no pathlib)."""
    state = os.environ.get("XDG_STATE_HOME") or places.join(disk.home(), ".local/state")
    return places.join(disk.text(state), "tether/databases")


@contextmanager
def _locked(path: str) -> Iterator[None]:
    disk.mkdir(places.parent(path), parents=True, exist_ok=True)
    fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _read(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    seen: dict[str, None] = {}  # ordered and deduplicated: a database re-created at the same path is one entry
    for line in text.splitlines():
        if line.strip():
            seen.setdefault(line.strip(), None)
    return list(seen)


def record(database: StrPath) -> bool:
    """Add ``database`` (made absolute) to the list; False when the list cannot be written."""
    line = disk.resolve(database)
    if "\n" in line:  # a path with a newline cannot be one line of the list; it is simply not recorded
        return False
    path = registry_path()
    try:
        with _locked(path):
            if line in _read(path):
                return True
            with open(path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        return True
    except OSError:
        return False


@dataclass(frozen=True)
class Listing:
    """What the list held: the databases that still exist, and the stale entries just removed from it."""

    databases: list[Path]
    stale: list[Path]


def prune() -> Listing:
    """Every listed database, dropping (and returning as ``stale``) those no longer on disk.

    The rewrite is a new file renamed over the old one: a crash leaves the old list or the new, never half.
    """
    from pathlib import Path  # the CLI's listing: never a hook call's

    path = registry_path()
    if not disk.exists(path):
        return Listing([], [])
    with _locked(path):
        entries = [Path(p) for p in _read(path)]
        live = [p for p in entries if p.is_absolute() and p.is_file()]  # a relative line was not written by us
        stale = [p for p in entries if p not in live]
        if stale:
            tmp = path + ".tmp"
            with open(tmp, "w", encoding="utf-8") as f:
                f.write("".join(f"{p}\n" for p in live))
            os.replace(tmp, path)
    return Listing(live, stale)
