"""Databases of the schemas before ``tether/3``, for the migration tests: the events table exactly as the
``tether/1`` and ``tether/2`` code made it (``prev_hash`` and ``hash`` as 64 hex characters)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tether.events.store import EventStore

EVENTS_BEFORE_3 = """
CREATE TABLE events (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
"""


def downgrade(db: Path, version: int = 2) -> None:
    """Rewrite a closed ``tether/3`` database as the ``tether/<version>`` code would have written it."""
    with EventStore.open(db, readonly=True) as store:
        rows = [row for info in store.runs() for row in store._rows(info.run_id) if row[0] == info.run_id]
    conn = sqlite3.connect(db)
    conn.executescript("DROP TABLE events;" + EVENTS_BEFORE_3)
    conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?,?)", rows)
    if version == 1:
        conn.executescript(
            "DROP TABLE leases; DROP TRIGGER anchors_no_update; DROP TRIGGER anchors_no_delete; DROP TABLE anchors;"
        )
    conn.execute("UPDATE meta SET value=? WHERE key='schema'", (f"tether/{version}",))
    conn.commit()
    conn.close()


def schema(db: Path) -> tuple[str, list[str]]:
    """The database's meta.schema and its events table's columns."""
    conn = sqlite3.connect(db)
    try:
        tag = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()[0]
        columns = [r[1] for r in conn.execute("PRAGMA table_info(events)")]
    finally:
        conn.close()
    return tag, columns
