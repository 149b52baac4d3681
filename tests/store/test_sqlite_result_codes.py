"""events/store reads SQLite's result code once (``_result``) for both of its questions: is the database held by
another process (a read refused as :class:`DatabaseLocked`), and can it not be read *now* (the audit does not call
the log corrupt). An extended code counts as its primary code; an error sqlite3 raises itself has no code."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.errors import DatabaseLocked
from tether.events import store as store_module
from tether.events.store import EventStore


def coded(code: int | None) -> sqlite3.OperationalError:
    e = sqlite3.OperationalError("some error")
    if code is not None:
        e.sqlite_errorcode = code
    return e


@pytest.mark.parametrize(
    ("code", "held", "transient"),
    [
        (sqlite3.SQLITE_BUSY, True, True),
        (sqlite3.SQLITE_BUSY_SNAPSHOT, True, True),  # extended: 5 | 2 << 8
        (sqlite3.SQLITE_LOCKED_SHAREDCACHE, True, True),
        (sqlite3.SQLITE_INTERRUPT, False, True),
        (sqlite3.SQLITE_NOMEM, False, True),
        (sqlite3.SQLITE_FULL, False, True),
        (sqlite3.SQLITE_CORRUPT, False, False),
        (sqlite3.SQLITE_NOTADB, False, False),
        (sqlite3.SQLITE_IOERR_READ, False, False),
        (None, False, False),  # sqlite3's own error (a text that is not UTF-8)
    ],
)
def test_held_and_transient_read_one_code(code: int | None, held: bool, transient: bool) -> None:
    e = coded(code)
    assert store_module._held(e) is held
    assert store_module._transient(e) is transient
    assert not held or transient  # what another process holds cannot be read now


def test_a_held_database_is_database_locked_and_anything_else_passes(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        with pytest.raises(DatabaseLocked, match="locked by another process"):
            store._locked(coded(sqlite3.SQLITE_BUSY_RECOVERY))
        for code in (sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_CORRUPT, None):
            store._locked(coded(code))  # not held: the caller goes on to judge it
