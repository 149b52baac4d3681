"""The project's memory: facts its users stated, each with the run and event it came from, in SQLite.

It lives next to the run database (``.tether/memory.db`` beside ``.tether/tether.db``): one project, one
memory, shared by every run that writes to that database. Unlike the run log it is not append-only, because
a user must be able to take a fact back: :meth:`MemoryStore.forget` deletes the row (with SQLite's
``secure_delete``, so the text is overwritten on disk, not only unlinked) and records the forgetting — who,
when, why, which run and event the fact came from, and a hash of its normal form, never its text. That hash
is what keeps a forgotten fact from coming back: :meth:`remember` skips any statement whose normal form
hashes to a forgotten one, however often it is stated again. (The run log that first recorded the user's
words is immutable and keeps them; memory only stops offering them.)
"""

from __future__ import annotations

import hashlib
import sqlite3
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tether.errors import FileError, InputError

from .extract import Stated, fact_id, normal

MEMORY_FILE = "memory.db"
LOCK_TIMEOUT_S = 30.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS facts (
  id TEXT PRIMARY KEY, text TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
  source TEXT NOT NULL, stated_at TEXT NOT NULL, n INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS forgotten (
  fact_id TEXT PRIMARY KEY, norm_hash TEXT NOT NULL, run_id TEXT NOT NULL, seq INTEGER NOT NULL,
  by TEXT NOT NULL, at TEXT NOT NULL, reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS forgotten_norm ON forgotten(norm_hash);
"""


@dataclass(frozen=True)
class Fact:
    id: str
    text: str
    run_id: str
    seq: int
    source: str
    stated_at: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Forgotten:
    fact_id: str
    run_id: str
    seq: int
    by: str
    at: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _switch_to_wal(conn: sqlite3.Connection) -> None:
    """``PRAGMA journal_mode=WAL``, retried while another process holds the write lock: switching a new file
    upgrades a read transaction to a write one, which SQLite refuses at once ("database is locked", no busy
    wait), so two runs opening a new memory at one moment failed one of them. Switched already: a no-op."""
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as e:
            if "locked" not in str(e) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


def memory_path(database: Path) -> Path:
    """The memory that goes with the run database ``database``: the file beside it."""
    return database.parent / MEMORY_FILE


def _norm_hash(text: str) -> str:
    return hashlib.sha256(normal(text).encode()).hexdigest()


class MemoryStore:
    """Open with :meth:`open`; use as a context manager (closing it closes the connection)."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path, self._conn = path, conn

    @classmethod
    def open(cls, path: Path, *, create: bool = True) -> MemoryStore:
        if not path.exists() and not create:
            raise FileError(f"{path}: no memory here yet (a run remembers what its task states)", path=str(path))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, timeout=LOCK_TIMEOUT_S)
            conn.execute("PRAGMA secure_delete=ON")
            _switch_to_wal(conn)
            conn.executescript(_SCHEMA)
        except sqlite3.DatabaseError as e:
            raise FileError(f"{path}: not a tether memory database ({e})", path=str(path)) from e
        return cls(path, conn)

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def remember(self, run_id: str, stated: Sequence[Stated], at: str) -> list[Fact]:
        """Store the facts not already known nor forgotten; return those newly stored (the first statement wins)."""
        new: list[Fact] = []
        with self._tx() as db:
            for s in stated:
                fid = fact_id(s.text)
                known = db.execute("SELECT 1 FROM facts WHERE id = ?", (fid,)).fetchone()
                gone = db.execute("SELECT 1 FROM forgotten WHERE norm_hash = ?", (_norm_hash(s.text),)).fetchone()
                if known or gone:
                    continue
                n = db.execute("SELECT coalesce(max(n), 0) + 1 FROM facts").fetchone()[0]
                fact = Fact(fid, s.text, run_id, s.seq, s.source, at)
                db.execute("INSERT INTO facts VALUES (?, ?, ?, ?, ?, ?, ?)", (*asdict(fact).values(), n))
                new.append(fact)
        return new

    def facts(self, limit: int | None = None) -> list[Fact]:
        """The remembered facts, newest first (at most ``limit``)."""
        rows = self._conn.execute(
            "SELECT id, text, run_id, seq, source, stated_at FROM facts ORDER BY n DESC LIMIT ?",
            (-1 if limit is None else limit,),
        ).fetchall()
        return [Fact(*r) for r in rows]

    def get(self, ref: str) -> Fact:
        """The fact whose id is ``ref`` or starts with it (unambiguously)."""
        rows = self._conn.execute(
            "SELECT id, text, run_id, seq, source, stated_at FROM facts WHERE id >= ? AND id < ? ORDER BY id",
            (ref, ref + "\uffff"),
        ).fetchall()
        if len(rows) == 1 and ref:
            return Fact(*rows[0])
        gone = self._conn.execute("SELECT 1 FROM forgotten WHERE fact_id = ?", (ref,)).fetchone()
        if gone:
            raise InputError(f"{self.path}: fact {ref} was forgotten; see `tether memory list --forgotten`")
        what = "matches several facts" if rows else "matches no fact"
        raise InputError(f"{self.path}: {ref!r} {what}; see `tether memory list`")

    def forget(self, ref: str, by: str, reason: str, at: str) -> Fact:
        """Delete the fact (its text overwritten on disk) and record who forgot it, when and why."""
        fact = self.get(ref)
        with self._tx() as db:
            db.execute("DELETE FROM facts WHERE id = ?", (fact.id,))
            db.execute(
                "INSERT OR REPLACE INTO forgotten VALUES (?, ?, ?, ?, ?, ?, ?)",
                (fact.id, _norm_hash(fact.text), fact.run_id, fact.seq, by, at, reason),
            )
        self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the deleted text leaves the write-ahead log too
        return fact

    def forgotten(self) -> list[Forgotten]:
        rows = self._conn.execute(
            "SELECT fact_id, run_id, seq, by, at, reason FROM forgotten ORDER BY at, fact_id"
        ).fetchall()
        return [Forgotten(*r) for r in rows]
