"""The SQLite store hands ``sqlite3`` each event's hash as a ``bytearray`` (``store._BLOB``): bound without the
adapter lookup a ``bytes`` parameter gets (an ``AttributeError`` made and cleared per row), and stored exactly as
``bytes`` would be: a 32-byte BLOB, read back as ``bytes``, the chain verifying. Every way a row is inserted
(``append_batch``, ``append_many``, ``create_run``) is tried, against the column as ``bytes.fromhex`` would fill it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tether.events import store as store_module
from tether.events.store import Batch, EventStore

STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


def turn(i: int) -> tuple[str, dict[str, object]]:
    return ("model.requested", {"turn": i, "model": "scripted:x"})


def stored_hashes(db: Path) -> list[tuple[str, object]]:
    conn = sqlite3.connect(db)
    try:
        return [(t, h) for t, h in conn.execute("SELECT typeof(hash), hash FROM events ORDER BY seq")]
    finally:
        conn.close()


def test_each_way_in_stores_the_hash_as_its_32_bytes(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = EventStore.open(db)
    run = store.create_run("t", [STARTED], lease=True)
    store.append_many(run, [turn(1), turn(2)])
    batch = Batch(run, store.head(run))
    batch.add(store.redactor, [turn(3), turn(4), turn(5)], durable=True)
    store.append_batch(batch)
    events = list(store.events(run))
    assert len(events) == 6
    assert stored_hashes(db) == [("blob", bytes.fromhex(e.hash)) for e in events]
    assert all(type(h) is bytes and len(h) == 32 for _, h in stored_hashes(db))
    assert store.verify(run) == 6
    store.release(run)


def test_the_rows_are_the_rows_of_bytes(tmp_path: Path) -> None:
    """``stored_rows`` with the store's ``bytearray`` gives rows equal to :func:`stored`'s (``bytes``) row by row."""
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED])
    batch = Batch(run, store.head(run))
    batch.add(store.redactor, [turn(i) for i in range(8)])
    rows = store_module.stored_rows(batch.rows, store_module._BLOB)
    assert rows == [store_module.stored(row) for row, _ in batch.rows]
    assert all(type(r[5]) is bytearray for r in rows)
    assert store_module.stored_rows(batch.rows) == rows  # the default (PostgreSQL's) gives bytes
    assert all(type(r[5]) is bytes for r in store_module.stored_rows(batch.rows))
