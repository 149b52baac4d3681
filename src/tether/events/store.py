"""The event store: SQLite, append-only, hash-chained. The only writer of events.

Schema: ``runs`` (one row per run, holding its head seq and hash so truncation
is detectable), ``events`` (append-only: triggers reject UPDATE and DELETE) and
``blobs`` (content-addressed large outputs).

Durability: WAL. A durable append (the default) commits with ``synchronous=FULL``
and returns only once the event is on disk, so an event that precedes a side
effect is durable before the effect runs; in WAL mode that sync also makes every
earlier commit durable, so order is never lost. ``durable=False`` commits with
``synchronous=NORMAL``: it survives a crash of the process (SIGKILL), and an OS
crash or power loss can lose at most the tail after the last durable event —
which a resume reads as an action without a completion, and refuses to repeat.
Writers are serialised by an advisory file lock (``<db>.lock``): contending
SQLite writers starve each other on busy-retry, a lock queues them.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.canonical import bytes_hash, canonical_json
from tether.errors import DatabaseLocked, FileError, InputError, LogCorrupt, NotATetherDatabase

from .chain import GENESIS, event_hash
from .kinds import validate_payload

SCHEMA_VERSION = "1"
RUN_COLUMNS = "SELECT run_id, created_at, task, parent_run, head_seq, head_hash FROM runs"
LOCK_TIMEOUT_S = 10.0

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    parent_run TEXT,
    head_seq INTEGER NOT NULL DEFAULT -1,
    head_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS events (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS blobs_no_update BEFORE UPDATE ON blobs
    BEGIN SELECT RAISE(ABORT, 'tether blobs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS blobs_no_delete BEFORE DELETE ON blobs
    BEGIN SELECT RAISE(ABORT, 'tether blobs are immutable'); END;
"""


@dataclass(frozen=True)
class Event:
    run_id: str
    seq: int
    ts: str
    kind: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    @property
    def id(self) -> str:
        """Stable citation for this event: ``<run>#<seq>``."""
        return f"{self.run_id}#{self.seq}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "seq": self.seq,
            "ts": self.ts,
            "kind": self.kind,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    created_at: str
    task: str
    parent_run: str | None
    head_seq: int
    head_hash: str


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def default_db_path(workspace: Path) -> Path:
    env = os.environ.get("TETHER_DB")
    return Path(env) if env else workspace / ".tether" / "tether.db"


class EventStore:
    """Open with :meth:`open`; one instance may be shared by threads of one process."""

    def __init__(self, path: Path, conn: sqlite3.Connection, lock_timeout_s: float = LOCK_TIMEOUT_S) -> None:
        self.path = path
        self.lock_timeout_s = lock_timeout_s
        self._conn = conn
        self._thread_lock = threading.RLock()
        self._lock_path = Path(str(path) + ".lock")
        self._lock_fd: int | None = None
        self._sync_mode = "FULL"

    # ---- opening ---------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, *, create: bool = True, lock_timeout_s: float = LOCK_TIMEOUT_S) -> EventStore:
        path = Path(path)
        if not path.exists():
            if not create:
                raise FileError(f"{path}: no tether database here (run something first, or pass --db)")
            path.parent.mkdir(parents=True, exist_ok=True)
        elif path.is_dir():
            raise FileError(f"{path}: is a directory, expected a tether database file")
        try:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=LOCK_TIMEOUT_S)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            store = cls(path, conn, lock_timeout_s)
            store._init_schema()
        except sqlite3.DatabaseError as e:
            if "locked" in str(e):
                raise DatabaseLocked(f"{path}: database is locked by another process ({e})") from e
            raise NotATetherDatabase(f"{path}: not a tether database ({e})") from e
        return store

    def _init_schema(self) -> None:
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "meta" not in tables:
            raise NotATetherDatabase(
                f"{self.path}: an SQLite database, but not a tether one (tables: {sorted(tables)})"
            )
        if tables:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None or row[0] != f"tether/{SCHEMA_VERSION}":
                raise NotATetherDatabase(
                    f"{self.path}: meta.schema is {row and row[0]!r}; expected 'tether/{SCHEMA_VERSION}'"
                )
            return
        with self._write():
            self._conn.executescript("BEGIN IMMEDIATE;" + SCHEMA + "COMMIT;")
            self._conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (f"tether/{SCHEMA_VERSION}",))

    def close(self) -> None:
        self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- writing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[None]:
        """Hold the thread lock and the cross-process writer lock for one transaction."""
        with self._thread_lock:
            if self._lock_fd is None:
                self._lock_fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            fd = self._lock_fd
            try:
                deadline = time.monotonic() + self.lock_timeout_s
                while True:
                    try:
                        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline:
                            raise DatabaseLocked(
                                f"{self.path}: another tether process has held the writer lock "
                                f"for {self.lock_timeout_s:g}s ({self._lock_path})"
                            ) from None
                        time.sleep(0.002)
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def create_run(self, task: str, *, run_id: str | None = None, parent_run: str | None = None) -> str:
        run_id = run_id or new_run_id()
        with self._write():
            self._conn.execute(
                "INSERT INTO runs (run_id, created_at, task, parent_run, head_seq, head_hash) VALUES (?,?,?,?,?,?)",
                (run_id, now_iso(), task, parent_run, -1, GENESIS),
            )
        return run_id

    def append(self, run_id: str, kind: str, payload: dict[str, Any] | Any) -> Event:
        """Validate, chain and durably commit one event."""
        return self.append_many(run_id, [(kind, payload)])[0]

    def append_many(self, run_id: str, items: Sequence[tuple[str, Any]], *, durable: bool = True) -> list[Event]:
        """Append several events in one transaction (at most one fsync; none unless ``durable``)."""
        prepared = [(kind, validate_payload(kind, payload)) for kind, payload in items]
        with self._write():
            conn = self._conn
            self._sync("FULL" if durable else "NORMAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run_id,)).fetchone()
                if row is None:
                    raise InputError(f"unknown run {run_id!r}")
                seq, prev = int(row[0]), str(row[1])
                out: list[Event] = []
                for kind, payload in prepared:
                    seq += 1
                    ts = now_iso()
                    body = canonical_json(payload)
                    h = event_hash(prev, run_id, seq, ts, kind, body)
                    conn.execute(
                        "INSERT INTO events (run_id, seq, ts, kind, payload, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
                        (run_id, seq, ts, kind, body, prev, h),
                    )
                    out.append(Event(run_id, seq, ts, kind, payload, prev, h))
                    prev = h
                conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, prev, run_id))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return out

    def _sync(self, mode: str) -> None:
        if self._sync_mode != mode:
            self._conn.execute(f"PRAGMA synchronous={mode}")
            self._sync_mode = mode

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` content-addressed; return its ``sha256:`` hash.

        Not synced on its own: a blob matters once an event refers to it, and the durable append of
        that event syncs the WAL, which makes every earlier commit (this one) durable too. A snapshot
        stores thousands of blobs; one fsync each would cost seconds.
        """
        h = bytes_hash(data)
        with self._write():
            self._sync("NORMAL")
            self._conn.execute("INSERT OR IGNORE INTO blobs (hash, size, data) VALUES (?,?,?)", (h, len(data), data))
        return h

    # ---- reading ---------------------------------------------------------------------------

    def get_blob(self, h: str) -> bytes:
        row = self._conn.execute("SELECT data FROM blobs WHERE hash=?", (h,)).fetchone()
        if row is None:
            raise InputError(f"no blob {h}")
        return bytes(row[0])

    def events(self, run_id: str, *, after: int = -1) -> list[Event]:
        rows = self._conn.execute(
            "SELECT run_id, seq, ts, kind, payload, prev_hash, hash FROM events WHERE run_id=? AND seq>? ORDER BY seq",
            (run_id, after),
        ).fetchall()
        return [_row_event(r) for r in rows]

    def run(self, run_id: str) -> RunInfo:
        row = self._conn.execute(RUN_COLUMNS + " WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            # Allow unique prefixes, as with git.
            rows = self._conn.execute(
                RUN_COLUMNS + " WHERE run_id LIKE ?",
                (run_id + "%",),
            ).fetchall()
            if len(rows) != 1:
                raise InputError(f"{self.path}: no run {run_id!r}" + (" (ambiguous prefix)" if rows else ""))
            row = rows[0]
        return RunInfo(*row)

    def runs(self) -> list[RunInfo]:
        rows = self._conn.execute(RUN_COLUMNS + " ORDER BY created_at").fetchall()
        return [RunInfo(*r) for r in rows]

    def verify(self, run_id: str) -> int:
        """Recompute the chain; return the number of events. Raises :class:`LogCorrupt`."""
        info = self.run(run_id)
        rows = self._conn.execute(
            "SELECT seq, ts, kind, payload, prev_hash, hash FROM events WHERE run_id=? ORDER BY seq", (info.run_id,)
        ).fetchall()
        return verify_rows(info, rows)


def verify_rows(info: RunInfo, rows: Sequence[tuple[Any, ...]]) -> int:
    prev = GENESIS
    for expected_seq, (seq, ts, kind, payload, prev_hash, h) in enumerate(rows):
        if seq != expected_seq:
            raise LogCorrupt(info.run_id, expected_seq, f"missing or reordered event (found seq {seq})")
        if prev_hash != prev:
            raise LogCorrupt(info.run_id, seq, "prev_hash does not match the previous event's hash")
        if event_hash(prev, info.run_id, seq, ts, kind, payload) != h:
            raise LogCorrupt(info.run_id, seq, "content does not match its hash (edited)")
        prev = h
    n = len(rows)
    if n - 1 != info.head_seq or prev != info.head_hash:
        raise LogCorrupt(
            info.run_id, n, f"log ends at seq {n - 1} but the run's head is seq {info.head_seq} (truncated)"
        )
    return n


def _row_event(r: tuple[Any, ...]) -> Event:
    return Event(r[0], int(r[1]), r[2], r[3], json.loads(r[4]), r[5], r[6])


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]
