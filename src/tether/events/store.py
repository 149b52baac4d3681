"""The event store: SQLite, append-only, hash-chained. The only writer of events.

Schema (``tether/3``): ``runs`` (one row per run, holding its head seq and hash so truncation
is detectable), ``events`` (append-only: triggers reject UPDATE and DELETE), ``blobs``
(content-addressed large outputs), ``leases`` (who drives a run: :mod:`.lease`) and ``anchors``
(signed checkpoints of the head: :mod:`.anchor`). An event row stores its chain hash as 32 bytes and
not its ``prev_hash``: that is the previous row's hash (a fork's first row: its parent's at the fork
point), which the readers join back in, so an :class:`Event` reads as before. A ``tether/1`` or
``tether/2`` database is migrated in place, in one transaction, the first time a writer opens it;
readers open it as it is (docs/store.md, "The schema and its versions").

Appends are compare-and-append: ``expect=(seq, hash)`` names the head the caller extends, and an
append on a moved head raises :class:`HeadMoved` instead of forking the run's history. A store that
holds a run's lease also checks, in the same transaction, that the lease is still its own.

Durability: WAL. A durable append (the default) commits with ``synchronous=FULL``
and returns only once the event is on disk, so an event that precedes a side
effect is durable before the effect runs; in WAL mode that sync also makes every
earlier commit durable, so order is never lost. ``durable=False`` commits with
``synchronous=NORMAL``: it survives a crash of the process (SIGKILL), and an OS
crash or power loss can lose at most the tail after the last durable event —
which a resume reads as an action without a completion, and refuses to repeat.
The runtime appends durably exactly the kinds in ``tether.kernel.runtime.DURABLE_KINDS``
(run.started, action.started, approval.requested, delegate.started, run.finished) and every batch
holding one; it stages a step's events and writes them with :meth:`EventStore.append_batch`, two
commits per tool step (docs/store.md, "Commits per step"). Creating a run and taking or releasing
a lease are always durable; blobs and lease heartbeats are not synced on their own.
Writers are serialised by an advisory file lock (``<db>.lock``): contending
SQLite writers starve each other on busy-retry, a lock queues them.
A full disk is reported as :class:`DiskFull` naming the path; the transaction is rolled back whole.
"""

from __future__ import annotations

import _sqlite3 as sqlite3  # sqlite3's C part, its very classes: the package's dbapi2 imports datetime (tether.clock)
import _thread
import errno
import fcntl
import os
import time

from tether import disk, jsonc, places, plain
from tether.canonical import bytes_hash, canonical_json, canonical_tree, openssl_sha256, sha256
from tether.errors import (
    DatabaseLocked,
    DiskFull,
    FileError,
    HeadMoved,
    InputError,
    LogCorrupt,
    NotATetherDatabase,
    RunExists,
)
from tether.jsonc import encode_basestring
from tether.plain import ValidationError
from tether.records import dataclass, field
from tether.scoped import contextmanager, suppress
from tether.typeless import TypeVar

from . import registry
from .anchor import Checkpoint, Signer
from .bulk import gc_paused
from .chain import GENESIS, event_hash
from .lease import Heartbeat, Lease
from .payload import REGISTRY, Emitted, Payload, parse
from .redact import Redactor
from .storebase import IMPORTED, StoreBase
from .storebase import Audit as Audit
from .storebase import Head as Head
from .storebase import Prepared as Prepared
from .storebase import RunInfo as RunInfo
from .storebase import iso_of_us as iso_of_us
from .storebase import new_run_id as new_run_id
from .storebase import now_iso as now_iso
from .storebase import prepare_all as prepare_all
from .storebase import stored as stored

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any, TypeAlias

    from tether.disk import StrPath

    from .storebase import Executes

SCHEMA_VERSION = "3"
READABLE_SCHEMAS = ("tether/1", "tether/2", "tether/3")
RUN_COLUMNS = "SELECT run_id, created_at, task, parent_run, head_seq, head_hash FROM runs"
EVENT_COLUMNS = "run_id, seq, ts, kind, payload, prev_hash, hash"  # an event as read and exported (rows())
STORED_COLUMNS = "run_id, seq, ts, kind, payload, hash"  # an event row as tether/3 stores it (hash: 32 bytes)
#: A run's rows with their prev_hash: the previous row's hash, joined (hex, lower case, as hashes are read).
SELECT_ROWS = (
    "SELECT e.run_id, e.seq, e.ts, e.kind, e.payload, lower(hex(p.hash)), lower(hex(e.hash)) FROM events e "
    "LEFT JOIN events p ON p.run_id = e.run_id AND p.seq = e.seq - 1 "
    "WHERE e.run_id=? AND e.seq BETWEEN ? AND ?"
)
#: The same for an unfiltered range, cheaper (no join): each row's hash in hex, and its prev_hash left empty for
#: :func:`chain_prev` to take from the row before it (a join costs a third more CPU per row read).
SELECT_RANGE = (
    "SELECT e.run_id, e.seq, e.ts, e.kind, e.payload, '', lower(hex(e.hash)) FROM events e "
    "WHERE e.run_id=? AND e.seq BETWEEN ? AND ?"
)
#: A run's whole log as its chain is checked (:func:`chain_hashes`): the hash as stored (32 bytes), no prev_hash.
SELECT_CHAIN = "SELECT seq, ts, kind, payload, hash FROM events WHERE run_id=? ORDER BY seq"
#: The same from a verified head's seq on, and the first row (:func:`chain_hashes_since`).
#: Two ranges of the primary key, merged: written as one ``seq = 0 OR seq >= ?``, SQLite walked every row of the run
#: (7,500 in a long hook session: the audit 7-15 ms for the ~250 rows it needed, a cold call ~3 ms slower in all).
SELECT_CHAIN_SINCE = (
    "SELECT seq, ts, kind, payload, hash FROM events WHERE run_id=:run AND seq = 0 UNION ALL "
    "SELECT seq, ts, kind, payload, hash FROM events WHERE run_id=:run AND seq >= :seq AND seq > 0 ORDER BY seq"
)
SELECT_ROWS_BEFORE_3 = f"SELECT {EVENT_COLUMNS} FROM events e WHERE e.run_id=? AND e.seq BETWEEN ? AND ?"
#: The columns of an event row read as text (``tether/3``; before it, the hashes too): each must be UTF-8.
TEXT_COLUMNS = ("ts", "kind", "payload")
TEXT_COLUMNS_BEFORE_3 = (*TEXT_COLUMNS, "prev_hash", "hash")
ANCHOR_TEXT_COLUMNS = ("hash", "key_id", "signed_at", "signature")
MAX_SEQ = 2**63 - 1
LEASE_COLUMNS = "SELECT run_id, owner, host, pid, pid_start, since, heartbeat, ttl_s FROM leases"
#: A run's head moved from (seq, hash) to the new one; no row changes if the head is elsewhere.
ADVANCE = "UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=? AND head_seq=? AND head_hash=?"
#: The same, and only while the run's lease is the given owner's.
ADVANCE_LEASED = ADVANCE + " AND EXISTS (SELECT 1 FROM leases WHERE run_id=? AND owner=?)"
LOCK_TIMEOUT_S = 10.0
P = TypeVar("P", bound=Payload)

SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    created_at TEXT NOT NULL,
    task TEXT NOT NULL,
    parent_run TEXT,
    head_seq INTEGER NOT NULL DEFAULT -1,
    head_hash TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS blobs (hash TEXT PRIMARY KEY, size INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TRIGGER IF NOT EXISTS blobs_no_update BEFORE UPDATE ON blobs
    BEGIN SELECT RAISE(ABORT, 'tether blobs are immutable'); END;
CREATE TRIGGER IF NOT EXISTS blobs_no_delete BEFORE DELETE ON blobs
    BEGIN SELECT RAISE(ABORT, 'tether blobs are immutable'); END;
"""
SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS leases (
    run_id TEXT PRIMARY KEY REFERENCES runs(run_id),
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    pid_start TEXT NOT NULL,
    since TEXT NOT NULL,
    heartbeat REAL NOT NULL,
    ttl_s REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS anchors (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL,
    key_id TEXT NOT NULL,
    signed_at TEXT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (run_id, seq, key_id)
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS anchors_no_update BEFORE UPDATE ON anchors
    BEGIN SELECT RAISE(ABORT, 'tether anchors are append-only'); END;
CREATE TRIGGER IF NOT EXISTS anchors_no_delete BEFORE DELETE ON anchors
    BEGIN SELECT RAISE(ABORT, 'tether anchors are append-only'); END;
"""
#: tether/3's events: no prev_hash (the previous row's hash), the hash as 32 bytes (64 hex characters before).
EVENTS_V3 = """
CREATE TABLE IF NOT EXISTS {table} (
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    seq INTEGER NOT NULL,
    ts TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
"""
EVENT_TRIGGERS = """
CREATE TRIGGER IF NOT EXISTS events_no_update BEFORE UPDATE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
CREATE TRIGGER IF NOT EXISTS events_no_delete BEFORE DELETE ON events
    BEGIN SELECT RAISE(ABORT, 'tether events are append-only'); END;
"""
#: tether/1 and tether/2 to tether/3, inside the transaction that also adds SCHEMA_V2's tables. Every row is
#: copied with its hash as bytes (:func:`stored_hash`); the old prev_hash is dropped, which loses nothing the
#: chain checks: each hash covers its prev_hash, so a row whose stored prev_hash was edited (and its hash
#: recomputed) fails verification as before. DROP TABLE fires no trigger.
MIGRATE_EVENTS = (
    EVENTS_V3.format(table="events_v3")
    + """
INSERT INTO events_v3 (run_id, seq, ts, kind, payload, hash)
    SELECT run_id, seq, ts, kind, payload, tether_stored_hash(hash) FROM events ORDER BY run_id, seq;
DROP TABLE events;
ALTER TABLE events_v3 RENAME TO events;
"""
)


class Event:
    """One row of the log. ``payload`` is the stored JSON object; :attr:`data` is the same as its kind's model.

    An event read from the store is parsed once, straight from its stored JSON text into its kind's model
    (pydantic's JSON validator costs what ``json.loads`` of the text did); the dict ``payload`` is built
    from the text only when something asks for it (display, export). Events are immutable.
    """

    __slots__ = ("_text", "data", "hash", "id", "kind", "payload", "prev_hash", "run_id", "seq", "ts")
    run_id: str
    seq: int
    ts: str
    kind: str
    prev_hash: str
    hash: str
    payload: dict[str, Any]
    """The stored JSON object: built when first read if the event was made from its text or its model."""
    data: Payload
    """The payload as its kind's model (folds ``match`` on it), parsed when first read and kept.

    A payload tether wrote always fits: it was validated on append. One that does not — an unknown kind, a missing or
    mistyped field — is a log tether did not write (a rewrite that kept the chain consistent), so reading it fails
    closed with :class:`LogCorrupt` naming the seq and the field."""
    id: str
    """Stable citation for this event: ``<run>#<seq>``. Built once, so the folds that keep it for the whole run (the
    run state's evidence, the beliefs' citations) share one string (issue 18)."""
    _text: str | None

    # ``payload``, ``data`` and ``id`` are slots, left empty until known: a read of one that is set is a plain slot
    # read, with no Python frame (about 25 reads an event's folds make a step, issue 18); a read of one that is not
    # set falls through to ``__getattr__``, which works it out and fills the slot.

    def __init__(
        self, run_id: str, seq: int, ts: str, kind: str, payload: dict[str, Any], prev_hash: str = "", hash: str = ""
    ) -> None:
        _init(self, run_id, seq, ts, kind, prev_hash, hash, payload, None, None)

    @classmethod
    def of(cls, run_id: str, seq: int, ts: str, data: Payload, prev_hash: str = "", hash: str = "") -> Event:
        """An event holding ``data`` (its JSON as ``payload``): an appended one, or a not-yet-appended one
        that a pure function shows to the next stage as if it were in the log. Its payload is dumped when first
        read (``data`` is frozen): the control layer's pending events are mostly read as ``data`` or not at all."""
        return _new(run_id, seq, ts, data.KIND, prev_hash, hash, None, data, None)

    @classmethod
    def from_row(cls, run_id: str, seq: int, ts: str, kind: str, text: str, prev_hash: str, hash: str) -> Event:
        """A stored row, its payload validated from ``text``. A payload that does not fit its kind's model is
        kept as its JSON object, and reading :attr:`data` raises (naming the seq and the field); a payload that
        is not a JSON object at all raises :class:`LogCorrupt` here.

        A kind whose module is not imported yet (``payload.LATER``: a hook session's ``tests.baseline``) is kept as
        its JSON object too and parsed when :attr:`data` is read, which imports it: reading a log does not import
        every later kind module for an event no fold asks about (the same checks, on first use)."""
        model = REGISTRY.loaded(kind)
        if model is not None:
            try:
                return _new(run_id, seq, ts, kind, prev_hash, hash, None, model.model_validate_json(text), text)
            except ValidationError:
                pass
        return _new(run_id, seq, ts, kind, prev_hash, hash, _json_object(run_id, seq, text), None, text)

    if not TYPE_CHECKING:  # hidden from mypy, which would otherwise allow any attribute name on an Event

        def __getattr__(self, name: str) -> Any:
            """An empty slot of ``payload``, ``data`` or ``id``, worked out and kept (only an unset slot comes here)."""
            if name == "payload":
                value = _payload_of(self)
            elif name == "data":
                value = _data_of(self)
            elif name == "id":
                value = f"{self.run_id}#{self.seq}"
            else:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            _set(self, name, value)
            return value

    def data_as(self, model: type[P]) -> P:
        """:attr:`data`, which must be a ``model``: for readers that picked the event by its kind."""
        data = self.data
        if not isinstance(data, model):
            raise LogCorrupt(self.run_id, self.seq, f"{self.kind} payload read as {model.__name__}")
        return data

    @property
    def head(self) -> Head:
        return self.seq, self.hash

    def _key(self) -> tuple[Any, ...]:
        return self.run_id, self.seq, self.ts, self.kind, self.payload, self.prev_hash, self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Event) and self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]  # equal events may hold different (mutable) dicts

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Event is immutable (cannot set {name})")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Event is immutable (cannot delete {name})")

    def __repr__(self) -> str:
        return f"Event(run_id={self.run_id!r}, seq={self.seq!r}, kind={self.kind!r}, hash={self.hash[:12]!r})"

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


_set = object.__setattr__
_DATA_SLOT = Event.__dict__["data"]


class _Filling:
    """An :class:`Event` being filled: the same slots, in the same layout, without ``Event``'s refusal to be set, so
    each field is a plain slot store; a filled one becomes an ``Event`` by ``__class__`` assignment, which Python
    allows only between classes of the same slots. Eight to ten events a step (issue 18): each
    ``object.__setattr__`` call it saves is a C call through a method wrapper (0.9 -> 0.2 us an event). Never handed
    out: :func:`_new` and :func:`chained` return it as an ``Event``."""

    __slots__ = Event.__slots__


def _init(
    e: Event,
    run_id: str,
    seq: int,
    ts: str,
    kind: str,
    prev_hash: str,
    hash: str,
    payload: dict[str, Any] | None,
    data: Payload | None,
    text: str | None,
) -> None:
    """Fill an ``Event`` made by ``Event(...)`` (its ``__init__``; the append and read paths use :func:`_new`)."""
    _set(e, "run_id", run_id)
    _set(e, "seq", seq)
    _set(e, "ts", ts)
    _set(e, "kind", kind)
    _set(e, "prev_hash", prev_hash)
    _set(e, "hash", hash)
    if payload is not None:
        _set(e, "payload", payload)
    if data is not None:
        _set(e, "data", data)
    _set(e, "_text", text)


def _payload_of(e: Event) -> dict[str, Any]:
    """The payload of an event made from its text (parsed) or its model (dumped)."""
    text = e._text
    if text is not None:
        return _json_object(e.run_id, e.seq, text)
    try:  # the slot itself: an event made with neither (``Event(..., payload=None)``) must not recurse
        data: Payload = _DATA_SLOT.__get__(e, Event)
    except AttributeError:
        raise LogCorrupt(e.run_id, e.seq, "event has neither a payload nor its model") from None
    return data.model_dump(mode="json")


def _data_of(e: Event) -> Payload:
    """The model of an event made from a payload that did not fit it when read (or of a kind not imported then)."""
    try:
        return parse(e.kind, e.payload)
    except ValueError as err:
        raise LogCorrupt(e.run_id, e.seq, str(err)) from None


def _new(
    run_id: str,
    seq: int,
    ts: str,
    kind: str,
    prev_hash: str,
    hash: str,
    payload: dict[str, Any] | None,
    data: Payload | None,
    text: str | None,
) -> Event:
    e: Any = _Filling()
    e.run_id, e.seq, e.ts, e.kind, e.prev_hash, e.hash, e._text = run_id, seq, ts, kind, prev_hash, hash, text
    if payload is not None:
        e.payload = payload
    if data is not None:
        e.data = data
    e.__class__ = Event
    return e  # type: ignore[no-any-return]


def _json_object(run_id: str, seq: int, text: str) -> dict[str, Any]:
    try:
        payload = jsonc.loads(text)
    except (ValueError, TypeError):
        payload = None
    if not isinstance(payload, dict):
        raise LogCorrupt(run_id, seq, "row is malformed: payload is not a JSON object (see `tether log verify`)")
    return payload


class EventStore(StoreBase[Event]):
    """Open with :meth:`open`; one instance may be shared by threads of one process."""

    SQL_LEASE = LEASE_COLUMNS + " WHERE run_id=?"
    SQL_PUT_LEASE = (
        "INSERT OR REPLACE INTO leases (run_id, owner, host, pid, pid_start, since, heartbeat, ttl_s) "
        "VALUES (?,?,?,?,?,?,?,?)"
    )
    SQL_DROP_LEASE = "DELETE FROM leases WHERE run_id=? AND owner=?"
    SQL_BEAT = "UPDATE leases SET heartbeat=? WHERE run_id=? AND owner=?"
    SQL_ANCHOR = "INSERT OR IGNORE INTO anchors (run_id, seq, hash, key_id, signed_at, signature) VALUES (?,?,?,?,?,?)"
    SQL_HASH_AT = "SELECT lower(hex(hash)) FROM events WHERE run_id=? AND seq=?"
    SQL_EVENT = f"INSERT INTO events ({STORED_COLUMNS}) VALUES (?,?,?,?,?,?)"
    SQL_BLOB = "INSERT OR IGNORE INTO blobs (hash, size, data) VALUES (?,?,?)"

    def __init__(
        self,
        path: StrPath,
        conn: sqlite3.Connection,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
        *,
        readonly: bool = False,
        signer: Signer | None = None,
    ) -> None:
        self.file = disk.text(path)  # the database's path as text: what a hook call opens and names it by
        self.lock_timeout_s = lock_timeout_s
        self.readonly = readonly
        self.signer = signer
        self._conn = conn
        self._thread_lock = _thread.RLock()
        self._lock_fd: int | None = None
        self._sync_mode = "FULL"
        self._leases: dict[str, Lease] = {}  # runs this store drives
        self._heartbeat: Heartbeat | None = None
        self._pending_anchor: list[Checkpoint] = []
        self._select_rows = SELECT_ROWS  # SELECT_ROWS_BEFORE_3 for an older database opened read-only
        self.redactor = Redactor()  # secret values handed out in this process: never written (see redact_also)

    def redact_also(self, secrets: Mapping[str, str]) -> None:
        """From now on, replace these values (name -> value) in every event and blob this store writes.

        The broker calls this before it hands a value to a sandbox, so whatever the tool prints is redacted
        before it is hashed and written. Values accumulate for the store's life (a redaction too many is safe).
        """
        with self._thread_lock:
            self.redactor = self.redactor.with_secrets(secrets)

    @property
    def path(self) -> Path:
        """The database's file as a ``Path`` (the store's protocol), for the callers off a hook call's path (the
        memory and the snapshots beside it): pathlib imported here, not by a hook call (``file`` is its text)."""
        from pathlib import Path

        return Path(self.file)

    # ---- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: StrPath,
        *,
        create: bool = True,
        readonly: bool = False,
        signer: Signer | None = None,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> EventStore:
        """Open (and with ``create`` make) a store. ``readonly`` never creates or changes a file."""
        path = disk.text(path)  # str(Path(path)): the file named as Path names it, without pathlib
        created = not disk.exists(path)
        if created:
            if readonly or not create:
                raise FileError(f"{path}: no tether database here (run something first, or pass --db)", path=path)
            try:
                disk.mkdir(places.parent(path), parents=True, exist_ok=True)
            except OSError as e:
                raise _os_error(e, path) from e
        elif disk.is_dir(path):
            raise FileError(f"{path}: is a directory, expected a tether database file", path=path)
        try:
            connect = cls._connect_reader if readonly else cls._connect_writer
            store = connect(path, signer=signer, lock_timeout_s=lock_timeout_s)
        except sqlite3.DatabaseError as e:
            if "locked" in str(e):
                raise DatabaseLocked(f"{path}: database is locked by another process ({e})") from e
            if _is_disk_full(e, path):
                raise DiskFull(f"disk full: {path} ({e})") from e
            raise NotATetherDatabase(f"{path}: not a tether database ({e})", path=str(path)) from e
        except OSError as e:
            raise _os_error(e, path) from e
        if created:
            registry.record(path)  # so that `tether runs --all` finds it wherever it lives
        return store

    @classmethod
    def _connect_reader(cls, path: str, *, signer: Signer | None, lock_timeout_s: float) -> EventStore:
        """A read-only connection. An empty file may be one a writer is creating (it does so under the writer
        lock, :meth:`_connect_writer`): wait for that lock, then look once more."""

        def connect() -> EventStore:
            from pathlib import Path  # as_uri's quoting: a read-only open, never a hook call's

            uri = Path(disk.resolve(path)).as_uri() + "?mode=ro"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False, timeout=lock_timeout_s)
            return cls(path, conn, lock_timeout_s, readonly=True, signer=signer)

        store = connect()
        try:
            if store._schema_version() is None:
                store._conn.close()
                _wait_for_writer(path, lock_timeout_s)
                store = connect()
            store._conn.execute("PRAGMA foreign_keys=ON")
            store._init_schema()
        except BaseException:
            store._conn.close()
            raise
        return store

    @classmethod
    def _connect_writer(cls, path: str, *, signer: Signer | None, lock_timeout_s: float) -> EventStore:
        """A connection to a file made (if need be) a current tether database: WAL mode, whole schema.

        That set-up writes, so it runs under the writer lock (:meth:`_init_schema`); a file already set up,
        the usual case, is opened without it.
        """
        fd = None
        if not _has_content(path):
            # A new file is made under the writer lock, taken before SQLite creates it: a reader that finds
            # the file empty waits for that lock (:func:`_wait_for_writer`). ``_write`` takes the same
            # descriptor's lock again (a no-op) and releases it once the schema is committed; if another
            # process made the file while this one waited, the ``finally`` releases it.
            fd = _open_lock(path)
            try:
                _flock(fd, fcntl.LOCK_EX, path, lock_timeout_s)
                conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=lock_timeout_s)
            except BaseException:
                os.close(fd)
                raise
        else:
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=lock_timeout_s)
        store = cls(path, conn, lock_timeout_s, signer=signer)
        store._lock_fd = fd
        try:
            conn.execute("PRAGMA foreign_keys=ON")
            store._init_schema()
            conn.execute("PRAGMA synchronous=FULL")
        except BaseException:
            store.close()  # the connection and the lock file's descriptor: the lock is released
            raise
        finally:
            if fd is not None and store._lock_fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)  # another process made the file meanwhile: ``_write`` never ran
        return store

    def _init_schema(self) -> None:
        version = self._schema_version()
        wal = self.readonly or self._conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        if (version == SCHEMA_VERSION and wal) or (self.readonly and version is not None):
            self._select_rows = SELECT_ROWS if version == SCHEMA_VERSION else SELECT_ROWS_BEFORE_3
            return
        if version is None and self.readonly:
            raise NotATetherDatabase(f"{self.file}: an empty file, not a tether database")
        # One transaction: a new database gets the whole schema; a tether/1 or tether/2 one the new tables and
        # its events copied into tether/3's table. A failure or a crash before the COMMIT leaves it as it was.
        self._conn.create_function("tether_stored_hash", 1, lambda h: stored_hash(h), deterministic=True)
        with self._write():  # every writer takes this lock first: no other can make or migrate it meanwhile
            # Under the lock: switching a new file to WAL upgrades a read transaction to a write one, which
            # SQLite refuses at once ("database is locked", no busy wait) while another connection switches it.
            self._conn.execute("PRAGMA journal_mode=WAL")
            version = self._schema_version()
            if version != SCHEMA_VERSION:
                events = EVENTS_V3.format(table="events") if version is None else MIGRATE_EVENTS
                try:  # BEGIN inside the script: executescript commits a transaction begun before it
                    self._conn.executescript(
                        "BEGIN IMMEDIATE;"
                        + SCHEMA_V1
                        + SCHEMA_V2
                        + events
                        + EVENT_TRIGGERS
                        + f"INSERT OR REPLACE INTO meta VALUES ('schema', 'tether/{SCHEMA_VERSION}');COMMIT;"
                    )
                except BaseException as e:
                    if self._conn.in_transaction:
                        self._conn.execute("ROLLBACK")
                    if version is None or not isinstance(e, sqlite3.Error) or "locked" in str(e):
                        raise
                    if _is_disk_full(e, self.file):
                        raise DiskFull(f"disk full: {self.file} ({e}); the database is unchanged") from e
                    raise NotATetherDatabase(
                        f"{self.file}: migrating tether/{version} to tether/{SCHEMA_VERSION} failed ({e}); "
                        "the database is unchanged (`tether log verify` it)",
                        path=str(self.file),
                    ) from e
        self._select_rows = SELECT_ROWS

    def _schema_version(self) -> str | None:
        """The database's schema version (``"2"`` for ``tether/2``), None for an empty one; refuses anything else."""
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            return None
        if "meta" not in tables:
            raise NotATetherDatabase(
                f"{self.file}: an SQLite database, but not a tether one (tables: {sorted(tables)})"
            )
        row = self._conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
        if row is not None and row[0] in READABLE_SCHEMAS:
            return str(row[0]).removeprefix("tether/")
        found = row and row[0]
        if isinstance(found, str) and found.startswith("tether/") and found[7:].isdigit():
            raise NotATetherDatabase(
                f"{self.file}: meta.schema is {found!r}, written by a newer tether than this one (it reads "
                f"{', '.join(READABLE_SCHEMAS)}); upgrade tether to open it"
            )
        raise NotATetherDatabase(
            f"{self.file}: meta.schema is {found!r}; expected one of {', '.join(READABLE_SCHEMAS)}"
        )

    def close(self) -> None:
        for run_id in list(self._leases):
            with suppress(Exception):  # closing must not fail; a lease left behind is taken over once we are gone
                self.release(run_id)
        self._conn.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    @property
    def where(self) -> str:
        return self.file

    # ---- writing ---------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[None]:
        """Hold the thread lock and the cross-process writer lock for one transaction."""
        if self.readonly:
            raise InputError(f"{self.file}: opened read-only")
        with self._thread_lock:
            if self._lock_fd is None:
                self._lock_fd = _open_lock(self.file)
            fd = self._lock_fd
            _flock(fd, fcntl.LOCK_EX, self.file, self.lock_timeout_s)
            try:
                yield
            except sqlite3.OperationalError as e:
                if _is_disk_full(e, self.file):
                    raise DiskFull(f"disk full: {self.file} ({e}); nothing was written") from e
                raise
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def exclusive(self, run_id: str) -> AbstractContextManager[None]:
        """The writer lock (and the thread lock) every writer of the file takes, held: no other store appends
        meanwhile. An append inside takes it again (both are re-entrant for this store) and lets it go when done."""
        return self._write()

    def _transaction(self, durable: bool = True) -> _Transaction:
        """One ``BEGIN IMMEDIATE … COMMIT`` under the writer lock; anything raised rolls it back whole."""
        return _Transaction(self, durable)

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Reads that must agree (a run's head and its rows) in one read transaction: one WAL snapshot, so an
        append by another process between them is not mistaken for a truncated log."""
        with self._thread_lock:
            self._conn.execute("BEGIN")
            try:
                yield
            finally:
                self._conn.execute("COMMIT")

    def _insert_run(self, conn: sqlite3.Connection, run_id: str, task: str, parent: str | None, head: Head) -> None:
        """The run's row; a run id taken already is an input error naming it (the caller's transaction rolls back)."""
        cur = conn.execute(
            "INSERT OR IGNORE INTO runs (run_id, created_at, task, parent_run, head_seq, head_hash) "
            "VALUES (?,?,?,?,?,?)",
            (run_id, now_iso(), task, parent, *head),
        )
        if cur.rowcount != 1:
            raise RunExists(f"{self.file}: run {run_id} already exists")

    def append_many(
        self, run_id: str, items: Sequence[Emitted], *, durable: bool = True, expect: Head | None = None
    ) -> list[Event]:
        """Append several events in one transaction (at most one fsync; none unless ``durable``).

        ``expect`` is the head (seq, hash) these events extend; if the run's head has moved, nothing is
        written and :class:`HeadMoved` is raised.
        """
        prepared = prepare_all(self.redactor, items)
        with self._transaction(durable) as conn:
            head = self._head_locked(run_id)
            if expect is not None and tuple(expect) != head:
                raise HeadMoved(run_id, (int(expect[0]), str(expect[1])), head)
            if run_id in self._leases:
                self._check_lease_locked(conn, run_id)
            return self._append_locked(conn, run_id, prepared, head)

    def append_batch(self, batch: Batch) -> None:
        """Write events chained in memory (:class:`Batch`) in one transaction, synced if ``batch.durable``.

        Nothing is written, and :class:`HeadMoved` is raised, if the run's head is no longer ``batch.base``;
        the lease is checked as for :meth:`append_many`.
        """
        run_id, rows = batch.run_id, batch.rows
        plain.writing()
        with self._transaction(batch.durable) as conn:
            # The checks and the head's move in one statement: it moves only from the batch's base, and (when this
            # store holds the run's lease) only while the lease is still this store's. When it does not, the
            # checks run one by one, to say what failed (or, for a head SQLite compares otherwise, to move it).
            seq, prev = rows[-1][1].head if rows else batch.base
            base_seq, base_hash = batch.base
            lease = self._leases.get(run_id)
            if lease is None:
                cur = conn.execute(ADVANCE, (seq, prev, run_id, base_seq, base_hash))
            else:
                cur = conn.execute(ADVANCE_LEASED, (seq, prev, run_id, base_seq, base_hash, run_id, lease.owner))
            if cur.rowcount != 1:
                self._check_head_locked(conn, batch)
                conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, prev, run_id))
            conn.executemany(f"INSERT INTO events ({STORED_COLUMNS}) VALUES (?,?,?,?,?,?)", stored_rows(rows, _BLOB))
            self._sign_locked(conn, run_id, rows, batch.base[0], seq, prev)

    def _head_locked(self, run_id: str) -> Head:
        """The run's head as its row in the runs table holds it (inside a write transaction); an unknown run is an
        input error, a row whose head hash is not UTF-8 text :class:`LogCorrupt` (:meth:`_run_rows`)."""
        rows = self._run_rows("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run_id,))
        if not rows:
            raise InputError(f"unknown run {run_id!r}")
        return (int(rows[0][0]), str(rows[0][1]))

    def _check_head_locked(self, conn: sqlite3.Connection, batch: Batch) -> None:
        """What :meth:`append_batch` checks, one at a time: the run exists, its head is the batch's base, and
        the lease (if this store holds it) is still this store's; raises naming the first that fails."""
        head = self._head_locked(batch.run_id)
        if tuple(batch.base) != head:
            raise HeadMoved(batch.run_id, batch.base, head)
        if batch.run_id in self._leases:
            self._check_lease_locked(conn, batch.run_id)

    def _append_locked(
        self,
        conn: sqlite3.Connection,
        run_id: str,
        prepared: Sequence[Prepared],
        head: Head,
    ) -> list[Event]:
        rows = chained(run_id, prepared, head)
        self._insert_locked(conn, run_id, rows, head)
        return [event for _, event in rows]

    def _insert_locked(self, conn: sqlite3.Connection, run_id: str, rows: Sequence[Chained], head: Head) -> None:
        plain.writing()  # a plain hook process that doubts from here on refuses rather than run the call again
        conn.executemany(f"INSERT INTO events ({STORED_COLUMNS}) VALUES (?,?,?,?,?,?)", stored_rows(rows, _BLOB))
        seq, prev = rows[-1][1].head if rows else head
        conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, prev, run_id))
        self._sign_locked(conn, run_id, rows, head[0], seq, prev)

    def _flush_anchor(self) -> None:
        """After the commit: append the transaction's checkpoints to the anchor file outside the database."""
        while self._pending_anchor and self.signer is not None:
            self.signer.record(self._pending_anchor[0])
            self._pending_anchor.pop(0)

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
        data = self.redactor.value(data)  # a file that holds a secret is kept redacted, under the redacted hash
        h = bytes_hash(data)
        with self._write():
            self._sync("NORMAL")
            self._conn.execute("INSERT OR IGNORE INTO blobs (hash, size, data) VALUES (?,?,?)", (h, len(data), data))
        return h

    # ---- the lease: one driver per run (the rest: StoreBase) -------------------------------

    def lease(self, run_id: str) -> Lease | None:
        """The run's current lease row, whoever holds it (None if free or the table does not exist yet)."""
        if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE name='leases'").fetchone():
            return None  # a tether/1 database opened read-only
        row = self._lease_row(self._conn, run_id)
        return Lease(*row) if row else None

    def _lease_row(self, cur: Executes, run_id: str) -> Any:
        """The run's lease row; one whose text is not UTF-8 is :class:`LogCorrupt` at the run's head, not sqlite3's
        error nor (as :meth:`lease` took any failed read) a free run; busy is :class:`DatabaseLocked`."""
        try:
            return cur.execute(self.SQL_LEASE, (run_id,)).fetchone()
        except sqlite3.OperationalError as e:
            self._locked(e)
            columns = ("owner", "host", "pid_start", "since")
            select = ", ".join(f"CAST({c} AS BLOB)" for c in columns)
            values = self._conn.execute(f"SELECT {select} FROM leases WHERE run_id=?", (run_id,)).fetchone()
            column = None if values is None else not_utf8(columns, values)
            if column is None:
                raise
            head = self._conn.execute("SELECT head_seq FROM runs WHERE run_id=?", (run_id,)).fetchone()
            seq = head[0] if head is not None and type(head[0]) is int else -1
            raise LogCorrupt(run_id, seq, f"the run's lease row is malformed: its {column} is not UTF-8 text") from e

    # ---- reading ---------------------------------------------------------------------------

    def get_blob(self, h: str) -> bytes:
        row = self._conn.execute("SELECT data FROM blobs WHERE hash=?", (h,)).fetchone()
        if row is None:
            raise InputError(f"no blob {h}")
        return bytes(row[0])

    def _events_in(
        self, run_id: str, *, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[Event]:
        rows = self._rows(run_id, after, upto, kinds)
        with gc_paused():
            return [row_event(r) for r in rows]

    def _rows(
        self, run_id: str, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[tuple[Any, ...]]:
        """Rows ``(run_id, seq, ts, kind, payload, prev_hash, hash)`` of the run's log (its lineage's segments,
        oldest first) with after < seq <= upto (of ``kinds``); ``prev_hash`` is the previous row's hash."""
        query = self._select_rows
        ranged = kinds is None and query is SELECT_ROWS
        if ranged:
            query = SELECT_RANGE
        elif kinds is not None:
            query += f" AND e.kind IN ({','.join('?' * len(kinds))})"
        query += " ORDER BY e.seq"
        rows: list[tuple[Any, ...]] = []
        segments = self.lineage(run_id)
        for n, (rid, first, last) in enumerate(segments):
            lo, hi = max(first, after + 1), last if upto is None else min(last, upto)
            if lo <= hi:
                found = self._read(query, (rid, lo, hi, *sorted(kinds or ())), run_id, (rid, lo, hi))
                if ranged:
                    found = chain_prev(found, self._hash_at)
                rows += join_base(found, segments[:n], first, self._hash_at)
        return rows

    def _read(
        self, query: str, params: tuple[Any, ...], run_id: str, span: tuple[str, int, int]
    ) -> list[tuple[Any, ...]]:
        """``query``'s rows, all of them events of run ``span[0]`` with ``span[1] <= seq <= span[2]``. sqlite3
        raises ``OperationalError`` for a TEXT value that is not UTF-8 (no tether writer stores one: a writer of
        the file did), the class it raises for a busy or locked database too; so that span is read again as bytes
        (:meth:`_not_utf8`), and a row found there is :class:`LogCorrupt` at its seq (of ``run_id``'s log); if none
        is, the error is what it was."""
        try:
            return self._conn.execute(query, params).fetchall()
        except sqlite3.OperationalError as e:
            self._locked(e)
            columns = TEXT_COLUMNS if self._select_rows is SELECT_ROWS else TEXT_COLUMNS_BEFORE_3
            bad = self._not_utf8("events", columns, *span)
            if bad is None:
                raise
            raise LogCorrupt(run_id, bad[0], f"row is malformed: its {bad[1]} is not UTF-8 text") from e

    def _locked(self, e: sqlite3.Error) -> None:
        """A read SQLite refused as busy or locked (another process holds the file) is :class:`DatabaseLocked`, as
        an open is: not a corrupt log, and not sqlite3's error ("internal error" in the CLI)."""
        if _held(e):
            raise DatabaseLocked(f"{self.file}: database is locked by another process ({e})") from e

    def _not_utf8(self, table: str, columns: Sequence[str], rid: str, lo: int, hi: int) -> tuple[int, str] | None:
        """The first row of ``table`` (events, anchors) of run ``rid`` from seq ``lo`` to ``hi`` with a text column
        (of ``columns``) that is not UTF-8, and the column; each is read as its bytes (``CAST … AS BLOB``), which
        sqlite3 does not decode."""
        where = f"FROM {table} WHERE run_id=? AND seq BETWEEN ? AND ? ORDER BY seq"
        found = self._first_not_utf8("seq", columns, where, (rid, lo, hi))
        return None if found is None else (found[0], found[2])

    def _first_not_utf8(
        self, key: str, columns: Sequence[str], where: str, params: tuple[Any, ...] = ()
    ) -> tuple[Any, list[Any], str] | None:
        """The first row of ``SELECT key, columns… where`` with a text column (of ``columns``) that is not UTF-8:
        its ``key``, its columns' values, and the column. Each column is read as its bytes (``CAST … AS BLOB``),
        which sqlite3 does not decode, so the read that failed on the text is not failed again."""
        select = ", ".join(f"CAST({c} AS BLOB)" for c in columns)
        for key_value, *values in self._conn.execute(f"SELECT {key}, {select} {where}", params):
            column = not_utf8(columns, values)
            if column is not None:
                return key_value, values, column
        return None

    def _run_rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """``query``'s rows of the runs table (:data:`RUN_COLUMNS`). A run's row whose text is not UTF-8 (written
        into the file behind the store: the row is updated as its head moves, so no trigger guards it) is
        :class:`LogCorrupt` of that run at its head's seq, as :meth:`_read` names an event's; anything else is
        raised as it was."""
        try:
            return self._conn.execute(query, params).fetchall()
        except sqlite3.OperationalError as e:
            self._locked(e)
            columns = ("run_id", "created_at", "task", "parent_run", "head_hash")
            found = self._first_not_utf8("head_seq", columns, "FROM runs ORDER BY run_id")
            if found is None:
                raise
            head_seq, values, column = found
            run_id = bytes(values[0]).decode(errors="backslashreplace")
            seq = head_seq if type(head_seq) is int else -1
            raise LogCorrupt(run_id, seq, f"the run's row is malformed: its {column} is not UTF-8 text") from e

    def _hash_at(self, run_id: str, seq: int) -> str | None:
        old = self._select_rows is not SELECT_ROWS  # an older file read as it is: the hash as stored, text
        query = "SELECT hash FROM events" if old else "SELECT lower(hex(hash)) FROM events"
        rows = self._read(query + " WHERE run_id=? AND seq=?", (run_id, seq), run_id, (run_id, seq, seq))
        return str(rows[0][0]) if rows else None

    def lineage(self, run_id: str) -> list[tuple[str, int, int]]:
        """Whose events make up a run's log: ``(run, first seq, last seq)`` per segment, oldest first."""
        return lineage(run_id, self._fork_point)

    def _fork_point(self, run_id: str) -> tuple[str, int] | None:
        """The fork point named by the run's first row whatever its seq, negative too (a row planted before
        ``run.forked`` is that first row); a seq that is no integer (not numbered by tether) no read takes."""
        every = (run_id, -MAX_SEQ - 1, MAX_SEQ)
        rows = self._read(
            "SELECT e.seq, e.kind, e.payload FROM runs r JOIN events e ON e.run_id = r.run_id "
            "WHERE r.run_id=? AND e.seq BETWEEN ? AND ? AND r.parent_run IS NOT NULL ORDER BY e.seq LIMIT 1",
            every,
            run_id,
            every,
        )
        return fork_point(run_id, rows[0] if rows else None)

    def _runs_named(self, run_id: str) -> list[tuple[Any, ...]]:
        rows = self._run_rows(RUN_COLUMNS + " WHERE run_id=?", (run_id,))
        if rows:
            return rows
        return self._run_rows(
            RUN_COLUMNS + " WHERE substr(run_id, 1, ?) = ? ORDER BY run_id LIMIT 11", (len(run_id), run_id)
        )

    def rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's log, ``(run_id, seq, ts, kind, payload text, prev_hash, hash)``: for export."""
        return self._rows(self.run(run_id).run_id)

    def adopt(
        self, runs: Sequence[RunInfo], rows: Sequence[tuple[Any, ...]], blobs: Iterable[bytes], *, origin: str
    ) -> None:
        """Add an imported run exactly as exported, in one transaction: all of it, or nothing.

        ``runs`` is the run's lineage, oldest first, each with the head the package holds of it (a parent's
        is the fork point); ``rows`` are its events as :meth:`rows` gives them. A run already here must hold
        the same events (a parent imported before); the imported run itself must be new. The chain is
        verified again inside the transaction, before anything is committed.
        """
        main = runs[-1]
        verify_rows(main, rows)  # the rows as given: their prev_hash too, which the store does not keep
        with self._transaction() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id=?", (main.run_id,)).fetchone():
                raise InputError(f"{self.file}: run {main.run_id} is already in this store")
            for info in runs:
                if not conn.execute("SELECT 1 FROM runs WHERE run_id=?", (info.run_id,)).fetchone():
                    conn.execute(
                        "INSERT INTO runs (run_id, created_at, task, parent_run, head_seq, head_hash) "
                        "VALUES (?,?,?,?,?,?)",
                        (info.run_id, info.created_at, info.task, info.parent_run, info.head_seq, info.head_hash),
                    )
                    conn.execute("INSERT INTO meta (key, value) VALUES (?, ?)", (IMPORTED + info.run_id, origin))
            self._adopt_rows(conn, rows, blobs)
            self._verified_hashes(self.run(main.run_id))

    def imported(self, run_id: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (IMPORTED + run_id,)).fetchone()
        return None if row is None else str(row[0])

    def runs(self, newest: int | None = None) -> list[RunInfo]:
        if newest is not None:
            # the last created here (rowid order, no scan or sort of the table): runs() ordered by created_at
            # but for a run imported later with an older time (``adopt``), which counts as newer here
            rows = self._run_rows(RUN_COLUMNS + " ORDER BY rowid DESC LIMIT ?", (max(newest, 0),))
            return [RunInfo(*r) for r in reversed(rows)]
        rows = self._run_rows(RUN_COLUMNS + " ORDER BY created_at")
        return [RunInfo(*r) for r in rows]

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's signed checkpoints recorded in the database."""
        try:
            rows = self._conn.execute(
                "SELECT run_id, seq, hash, key_id, signed_at, signature FROM anchors WHERE run_id=? ORDER BY seq",
                (run_id,),
            ).fetchall()
        except sqlite3.OperationalError as e:
            self._locked(e)
            if not self._conn.execute("SELECT 1 FROM sqlite_master WHERE name='anchors'").fetchone():
                return []  # a tether/1 database opened read-only has no anchors table
            # A checkpoint's text that is not UTF-8: named, not read as no checkpoints (a busy database: raised)
            bad = self._not_utf8("anchors", ANCHOR_TEXT_COLUMNS, run_id, 0, MAX_SEQ)
            if bad is None:
                raise
            why = f"a signed checkpoint's row is malformed: its {bad[1]} is not UTF-8 text"
            raise LogCorrupt(run_id, bad[0], why) from e
        return [Checkpoint(*r) for r in rows]

    def _verified_hashes(self, info: RunInfo) -> list[str]:
        """The chain of the run's whole log: a fork's shared prefix is verified against the parent's rows. A run of
        this schema that is not a fork is checked first in one pass over its stored rows (:func:`chain_hashes`);
        whatever that pass cannot vouch for is read and verified again row by row (:func:`verify_rows`), which
        names what is wrong."""
        with gc_paused():  # a row tuple per event, none of them cyclic: see events/bulk.py
            try:
                if self._select_rows is SELECT_ROWS and self._fork_point(info.run_id) is None:
                    hashes = self._chain_hashes(info)
                    if hashes is not None:
                        return hashes
                rows = self._rows(info.run_id)
            except sqlite3.DatabaseError as e:
                self._locked(e)
                if _transient(e):
                    raise  # interrupted, out of memory or disk: not a corrupt log
                raise LogCorrupt(info.run_id, 0, f"the database cannot be read ({e}); restore it from a copy") from e
            return verify_rows(info, rows)

    def _verified_since(self, info: RunInfo, since: Head) -> list[str] | None:
        """:func:`chain_hashes_since` of the run's rows from ``since`` on: a run of this schema that is not a fork,
        read in one pass; None for any other, or when that pass cannot vouch for them (the caller then verifies the
        whole log, which names what is wrong)."""
        seq = since[0]
        if self._select_rows is not SELECT_ROWS or type(seq) is not int or not 0 <= seq <= info.head_seq:
            return None
        with gc_paused():
            try:
                if self._fork_point(info.run_id) is not None:
                    return None
                rows = self._conn.execute(SELECT_CHAIN_SINCE, {"run": info.run_id, "seq": seq}).fetchall()
            except sqlite3.DatabaseError:
                return None
            return chain_hashes_since(info, rows, since)

    def _chain_hashes(self, info: RunInfo) -> list[str] | None:
        """:func:`chain_hashes` of the run's stored rows; None when they cannot be read as that query reads them: a
        hash stored as TEXT whose bytes are not UTF-8 fails to decode here, where the row-by-row read (its hex)
        reads it, and accepts it when those are the hash's bytes; so that read judges and names it, as before the
        one pass (not "the database cannot be read" at seq 0)."""
        try:
            rows = self._conn.execute(SELECT_CHAIN, (info.run_id,)).fetchall()
        except sqlite3.OperationalError:
            return None
        return chain_hashes(info, rows)


#: An event ready to insert: its row, and the Event an append returns.
Chained: TypeAlias = "tuple[tuple[Any, ...], Event]"


def chained(run_id: str, prepared: Sequence[Prepared], head: Head) -> list[Chained]:
    """The append path's second step, shared by every store: number, time and chain the events after ``head``.

    Each comes as the row to insert (``run_id, seq, ts, kind, payload text, prev_hash, hash``: the payload
    canonical JSON, hashed verbatim) and the :class:`Event` the append returns. What
    :func:`~tether.canonical.canonical_json`, :func:`~.chain.event_hash` and ``Event`` build, written out in one
    loop (8 events a step: each call it saves is a Python frame per event, issue 18); the same text, timestamps
    and hashes (``tests/test_eventlog_golden.py``, ``tests/store/test_chained_inline.py``).
    """
    seq, prev = head
    out: list[Chained] = []
    # event_hash()'s fast path, inline: the head's canonical JSON written directly, for a str run id and an int seq
    rid = encode_basestring(run_id) if type(run_id) is str and type(seq) is int else None
    for kind, payload, data in prepared:
        seq += 1
        ts = now_iso()
        body = canonical_tree(payload)
        if rid is not None and type(kind) is str and type(ts) is str:
            h = sha256(
                (
                    f'{prev}{{"kind":{encode_basestring(kind)},"run_id":{rid},'
                    f'"seq":{int.__repr__(seq)},"ts":{encode_basestring(ts)}}}{body}'
                ).encode()
            ).hexdigest()
        else:
            h = event_hash(prev, run_id, seq, ts, kind, body)
        event: Any = _Filling()  # _new(), one frame less; data: parsed from this dict
        event.run_id, event.seq, event.ts, event.kind, event.prev_hash, event.hash = run_id, seq, ts, kind, prev, h
        event.payload, event._text = payload, None
        if data is not None:
            event.data = data
        event.__class__ = Event
        out.append(((run_id, seq, ts, kind, body, prev, h), event))
        prev = h
    return out


@dataclass
class Batch:
    """Events numbered, timed and chained in memory after ``base`` (the run's head they extend), to be written
    later in one transaction by ``Store.append_batch``: how the runtime records a step in one commit.

    Each event is validated and redacted as it is added (with the redactor of that moment, as an append
    would), so writing the batch cannot fail on its contents; only on the store (a moved head, a lost
    lease, a full disk), and then nothing of it is written.
    """

    run_id: str
    base: Head
    rows: list[Chained] = field(default_factory=list)
    durable: bool = False  # synced to disk when written: it holds an event that precedes an effect or a human

    @property
    def head(self) -> Head:
        if not self.rows:
            return self.base
        last = self.rows[-1][1]
        return last.seq, last.hash

    @property
    def events(self) -> list[Event]:
        return [e for _, e in self.rows]

    def add(self, redactor: Redactor, items: Iterable[Emitted], *, durable: bool = False) -> list[Event]:
        """Validate, redact and chain ``items`` after the batch's head; their events (not yet written)."""
        new = chained(self.run_id, prepare_all(redactor, items), self.head)
        self.rows += new
        self.durable = self.durable or durable
        return [e for _, e in new]


def lineage(run_id: str, fork_point: Callable[[str], tuple[str, int] | None]) -> list[tuple[str, int, int]]:
    """Whose events make up a run's log: ``(run, first seq, last seq)`` per segment, oldest first.

    A run that is not a fork is one segment of its own. A fork (its first own event is ``run.forked``)
    is its parent's lineage cut at the fork point, then its own events; forks of forks nest.
    ``fork_point`` gives a run's (parent, seq) or None (a store reads it with :func:`fork_point`).
    """
    segments: list[tuple[str, int, int]] = []
    rid, upto, seen = run_id, MAX_SEQ, set()
    while True:
        if rid in seen:
            raise LogCorrupt(run_id, 0, f"run.forked events form a cycle through run {rid}")
        seen.add(rid)
        fork = fork_point(rid)
        first = fork[1] + 1 if fork else 0
        segments.append((rid, first, upto))
        if fork is None:
            return segments[::-1]
        rid, upto = fork[0], min(upto, fork[1])


def fork_point(run_id: str, first: tuple[Any, ...] | None) -> tuple[str, int] | None:
    """(parent, seq) named by a run's ``first`` own event ``(seq, kind, payload text)`` — read only for a run
    with a parent — when it is ``run.forked``; else None."""
    if first is None or first[1] != "run.forked":
        return None
    from .kinds import RunForked  # here: only a fork's first event needs it (a later kind module: payload.LATER)

    seq = int(first[0])
    try:
        p = RunForked.model_validate_json(first[2])
    except ValueError as e:
        raise LogCorrupt(run_id, seq, f"run.forked payload does not fit its model: {e}") from None
    if p.at_seq != seq - 1:
        raise LogCorrupt(run_id, seq, f"run.forked names seq {p.at_seq}, but it is seq {seq}")
    return p.parent_run, p.at_seq


def verify_rows(info: RunInfo, rows: Sequence[tuple[Any, ...]]) -> list[str]:
    """Check each row's shape, then the chain; return the event hashes in seq order.

    Rows are ``(run_id, seq, ts, kind, payload, prev_hash, hash)``: a fork's prefix rows are its parent's,
    hashed under the parent's id. A payload is parsed only when its hash does not match (to say why): a
    matching hash means tether wrote it (canonical JSON), or someone rewrote the chain — which only the
    anchor can tell.
    """
    prev = GENESIS
    hashes: list[str] = []
    for expected_seq, (rid, seq, ts, kind, payload, prev_hash, h) in enumerate(rows):
        if seq != expected_seq:
            why = f"missing or reordered event (found seq {seq!r})"
            raise LogCorrupt(info.run_id, expected_seq, why + _shared(info, rid))
        if not (type(ts) is type(kind) is type(payload) is type(prev_hash) is type(h) is str):
            malformed = _not_text(ts, kind, payload, prev_hash, h)
            raise LogCorrupt(info.run_id, seq, f"row is malformed: {malformed}{_shared(info, rid)}")
        if prev_hash != prev:
            why = "prev_hash does not match the previous event's hash"
            raise LogCorrupt(info.run_id, seq, why + _shared(info, rid))
        if event_hash(prev, rid, seq, ts, kind, payload) != h or payload[:1] != "{":
            raise LogCorrupt(info.run_id, seq, _why_not(payload) + _shared(info, rid))
        prev = h
        hashes.append(h)
    n = len(rows)
    if n - 1 != info.head_seq or prev != info.head_hash:
        raise LogCorrupt(
            info.run_id, n, f"log ends at seq {n - 1} but the run's head is seq {info.head_seq} (truncated)"
        )
    return hashes


#: From this many rows on, :func:`chain_sha256` loads OpenSSL's SHA-256 for the chain check when nothing has yet.
HASHLIB_ROWS = 4096


def chain_sha256(rows: int) -> Callable[[bytes], Any]:
    """The SHA-256 constructor a chain check of ``rows`` rows hashes with: OpenSSL's (``hashlib.sha256``, taken from
    ``_hashlib``: :func:`tether.canonical.openssl_sha256`; a 1,000-call session's 4,032 rows of ~270 bytes in 1.9 ms
    of CPU, against 4.4 ms with the builtin ``_sha256``; best of 7) when ``_hashlib`` is loaded already or the log is
    long enough (:data:`HASHLIB_ROWS`) to pay for loading it (~3.3 ms); else :data:`tether.canonical.sha256`, so
    neither a short session's cold call nor a long one's audit from its fold checkpoint's head loads libcrypto. The
    same digests."""
    import sys

    if "_hashlib" in sys.modules or rows >= HASHLIB_ROWS:
        return openssl_sha256()
    return sha256


class Verified(list[str]):
    """:func:`chain_hashes`' answer: the event hashes in seq order, as a list, and the rows they were verified from
    (``rows``) with the run's id (``run_id``), so that :func:`unverified` can tell an event read apart that is
    exactly an audited row without hashing it again (a cold hook call: every event it folds). Held as long as the
    audit that holds it (a guard's open)."""

    __slots__ = ("rows", "run_id")

    def __init__(self, hashes: list[str], rows: Sequence[tuple[Any, ...]], run_id: str) -> None:
        super().__init__(hashes)
        self.rows, self.run_id = rows, run_id


def chain_hashes(info: RunInfo, rows: Sequence[tuple[Any, ...]]) -> list[str] | None:
    """:func:`verify_rows`' checks of a run that is not a fork, over its rows as tether/3 stores them (``seq, ts,
    kind, payload, hash``: :data:`SELECT_CHAIN`), in one loop: each row's hash recomputed (the head written as
    :func:`~.chain.event_hash` writes it for three strings and an int) and compared with its stored 32 bytes, its
    seq the next one, its payload a JSON object, the last row the run's head. The event hashes in seq order, or None
    when any of that does not hold — a row of another type (``encode_basestring`` and ``int.__repr__`` refuse a
    non-string and a non-int; a payload that is not text hashes as its ``repr``, which no stored hash matches), a
    gap, a mismatch — and :func:`verify_rows` then says which. What it spares a cold call in a long session: the
    7-column rows (each hash as hex, the previous row's joined back) and a Python frame per event (4,051 events:
    ~14 -> ~9 ms of CPU). Hashed by :func:`chain_sha256`."""
    hashes = _chained(info, rows, GENESIS, 0)
    return None if hashes is None else Verified(hashes, rows, info.run_id)


def chain_hashes_since(info: RunInfo, rows: Sequence[tuple[Any, ...]], since: Head) -> list[str] | None:
    """:func:`chain_hashes` from a head ``since`` = ``(seq, hash)`` that a fold checkpoint says was verified
    (guard/checkpoint.py ``Pending.mark``), over the run's first row and its rows from that seq on
    (:data:`SELECT_CHAIN_SINCE`): the row at ``seq`` has that hash as stored, each later row chains after it as
    :func:`chain_hashes` checks them, the last is the run's head. What a cold hook call late in a session audits
    (docs/hook-latency.md, "The log from the checkpoint's head"): the rows before ``seq`` are not hashed again.

    The hashes by seq, as :func:`chain_hashes` gives them, with ``""`` at the seqs not read (no event has that hash:
    :func:`unverified` names any event compared there), the first row's hash as stored (whoever reads that event
    compares its contents with it: ``Guard.open``'s genesis); None when any of it does not hold."""
    seq, head = since
    start = 1 if seq and rows and rows[0][0] == 0 else 0  # the first row, read beside the range
    tail = rows[start:]
    if not rows or rows[0][0] != 0 or type(rows[0][4]) is not bytes or not isinstance(head, str):
        return None
    if not tail or tail[0][0] != seq or tail[0][4] != stored_hash(head):
        return None
    hashes = _chained(info, tail[1:], head, seq + 1)
    if hashes is None:
        return None
    gap = seq - start
    return Verified(
        [rows[0][4].hex()] * start + [""] * gap + [head, *hashes], [*rows[:start], *([()] * gap), *tail], info.run_id
    )


def _chained(info: RunInfo, rows: Sequence[tuple[Any, ...]], prev: str, first: int) -> list[str] | None:
    """:func:`chain_hashes`' loop over ``rows``, the first at seq ``first`` chained after hash ``prev``, the last the
    run's head: their hashes, or None."""
    rid = encode_basestring(info.run_id)
    hashes: list[str] = []
    new = chain_sha256(len(rows))
    try:
        for expected, (seq, ts, kind, payload, h) in enumerate(rows, first):
            digest = new(
                (
                    f'{prev}{{"kind":{encode_basestring(kind)},"run_id":{rid},'
                    f'"seq":{int.__repr__(seq)},"ts":{encode_basestring(ts)}}}{payload}'
                ).encode()
            ).digest()
            if digest != h or seq != expected or payload[:1] != "{":
                return None
            prev = digest.hex()
            hashes.append(prev)
    except (TypeError, ValueError):
        return None
    if first + len(rows) - 1 != info.head_seq or prev != info.head_hash:
        return None
    return hashes


#: How the SQLite store hands ``sqlite3`` an event's 32-byte hash (see :func:`stored_rows`).
_BLOB = bytearray.fromhex


def stored_rows(
    rows: Sequence[Chained], fromhex: Callable[[str], bytes | bytearray] = bytes.fromhex
) -> list[tuple[Any, ...]]:
    """:func:`stored` of each chained row, in one call (a step's 8 rows: one frame, not 8; issue 18).

    The SQLite store passes ``bytearray.fromhex``: ``sqlite3`` binds a ``bytearray`` as it binds ``bytes`` (a BLOB of
    the same bytes, read back as ``bytes``) but without asking its adapters first, which for ``bytes`` looks up
    ``PrepareProtocol.__adapt__``, an attribute the type lacks: an ``AttributeError`` made and cleared per row
    (8 a step, about 2 us)."""
    return [(r[0], r[1], r[2], r[3], r[4], fromhex(r[6])) for r, _ in rows]


def stored_hash(h: str | bytes | int | float | None) -> bytes | int | float | None:
    """An older schema's stored hash as tether/3 keeps it (the migration): 64 lower-case hex characters as their
    32 bytes; anything else (a row tether did not write) as its UTF-8 bytes, which read back as a hash that
    no event has, so verification fails on that row as it did before."""
    if isinstance(h, str):
        if len(h) == 64 and h.isascii():
            with suppress(ValueError):
                b = bytes.fromhex(h)
                if b.hex() == h:
                    return b
        return h.encode()
    return h


def chain_prev(rows: list[tuple[Any, ...]], hash_at: Callable[[str, int], str | None]) -> list[tuple[Any, ...]]:
    """Rows of one run in seq order, each prev_hash the hash of the row before it — what the join reads, without
    it: the row at seq - 1 when that is the previous row, else (the first row of a range, a row after a gap)
    read with ``hash_at``, empty when the run has no such row (a fork's first own row: see :func:`join_base`)."""
    out: list[tuple[Any, ...]] = []
    last_seq: object = None
    last_hash = ""
    for r in rows:
        seq = r[1]
        if type(seq) is not int or type(last_seq) is not int or seq != last_seq + 1:
            last_hash = (hash_at(r[0], seq - 1) if type(seq) is int else None) or ""
        out.append((r[0], seq, r[2], r[3], r[4], last_hash, r[6]))
        last_seq, last_hash = seq, r[6]
    return out


def join_base(
    rows: list[tuple[Any, ...]],
    before: Sequence[tuple[str, int, int]],
    first: int,
    hash_at: Callable[[str, int], str | None],
) -> list[tuple[Any, ...]]:
    """One lineage segment's rows (from seq ``first`` on), the prev_hash of its first row filled in where its own
    run has no previous row: GENESIS at seq 0; a fork's first own row chains onto the event at ``first - 1`` in
    the earlier segments ``before`` (its parent's at the fork point, or a grandparent's). ``hash_at(run, seq)``
    reads one stored hash. A row whose previous row is missing otherwise (deleted) keeps an empty prev_hash."""
    if rows and rows[0][1] == first and not rows[0][5]:
        prev = GENESIS if first == 0 else ""
        for rid, lo, hi in reversed(before):
            if lo <= first - 1 <= hi:
                prev = hash_at(rid, first - 1) or ""
                break
        rows[0] = (*rows[0][:5], prev, rows[0][6])
    return rows


def _shared(info: RunInfo, rid: str) -> str:
    """What an error adds when the bad row is a parent's, shared by a fork (said only when raising)."""
    return "" if rid == info.run_id else f" (an event of parent run {rid}, shared by this fork)"


def _why_not(payload: str) -> str:
    try:
        parsed = jsonc.loads(payload)
    except ValueError:
        return "row is malformed: payload is not JSON"
    if type(parsed) is not dict:
        return "row is malformed: payload is not a JSON object"
    return "content does not match its hash (edited)"


def _not_text(*values: object) -> str:
    names = ("ts", "kind", "payload", "prev_hash", "hash")
    found = zip(names, values, strict=True)
    return ", ".join(f"{n} is {type(v).__name__}, not text" for n, v in found if type(v) is not str)


def contents_hash(e: Event, prev: str) -> str:
    """The hash ``e`` chains to after ``prev`` from its own contents (its stored payload text, else its canonical
    JSON), not the hash column read beside them: what a reader that read ``e`` apart from the audit compares."""
    text = e._text if e._text is not None else canonical_json(e.payload)
    return event_hash(prev, e.run_id, e.seq, e.ts, e.kind, text)


def first_hash(e: Event) -> str:
    """The hash a run's first event chains to from its own contents (:func:`contents_hash`); "" for an event that is
    not a first one. What ``verify_run``'s ``Audit.first`` is compared with by a reader that read the event in a read
    of its own (guard/session.py)."""
    return contents_hash(e, GENESIS) if e.seq == 0 else ""


def unverified(events: Sequence[Event], hashes: Sequence[str]) -> int | None:
    """The seq of the first of ``events`` (read in a read of their own, after an audit that verified ``hashes``) whose
    contents, chained after the verified hash before it, or whose hash column, is not the hash verified at its seq:
    a row rewritten between the audit and this read (and maybe put back since); None when every one is. An event
    past the audit (appended since) is not judged: nothing verified it.

    When the audit kept the rows it verified (:class:`Verified`), an event whose run id, seq, time, kind and stored
    payload text are exactly its row's is not hashed: its contents hash is the one the audit computed from those
    very values after that very previous hash, and found stored (:func:`chain_hashes`). Any other is hashed."""
    verified = hashes if type(hashes) is Verified else None
    for e in events:
        seq = e.seq
        if seq >= len(hashes):
            continue
        if seq < 0 or e.hash != hashes[seq]:
            return seq
        if verified is not None and _audited(e, verified.rows[seq], verified.run_id):
            continue
        if contents_hash(e, hashes[seq - 1] if seq else GENESIS) != hashes[seq]:
            return seq
    return None


def _audited(e: Event, row: tuple[Any, ...], run_id: str) -> bool:
    """Is ``e`` the row :func:`chain_hashes` verified (``seq, ts, kind, payload, hash``), of run ``run_id``: equal
    values, which :func:`contents_hash` hashes as the audit hashed them (a str's subclass as its text; an int seq,
    not a bool, which the head's JSON would write ``true``)? One comparison of two tuples: an event a cold call
    folds."""
    return type(e.seq) is int and (e.seq, e.ts, e.kind, e._text, e.run_id) == (row[0], row[1], row[2], row[3], run_id)


def unchained(events: Sequence[Event], head: Head) -> int | None:
    """The seq of the first of ``events`` (read after ``head``, the last event a reader already verified, in a read no
    audit covers: a resident guard's refresh) that is not the next event chained after the one before it: its seq
    is not the next, or its contents chained after the previous hash are not its hash column. None when every one
    is. A row appended behind the reader's back with a forged hash, one chained after a rewritten head, and a gap
    are all caught. A row that chains is not: any writer of the log could have appended it, and no reader tells it
    from the session's own (docs/store.md)."""
    seq, prev = head
    for e in events:
        seq += 1
        if e.seq != seq or contents_hash(e, prev) != e.hash:
            return e.seq
        prev = e.hash
    return None


def row_event(r: tuple[Any, ...]) -> Event:
    run_id, seq, ts, kind, text, prev_hash, h = r
    if type(seq) is not int or type(text) is not str:
        seq = seq if type(seq) is int else -1
        raise LogCorrupt(str(run_id), seq, "row is malformed: payload is not a JSON object (see `tether log verify`)")
    return Event.from_row(run_id, seq, ts, kind, text, prev_hash, h)


class _Transaction:
    """:meth:`EventStore._transaction`: what ``_write`` and a ``BEGIN IMMEDIATE … COMMIT`` inside it do, as one
    object. The two nested generator context managers it replaces cost about 24 Python calls per commit, two
    commits a tool step (issue 18); the steps, their order and what each failure does are theirs:

    enter: refuse a read-only store, take the thread lock, open the lock file once, take the writer lock, switch
    ``synchronous`` (FULL for a durable commit), ``BEGIN IMMEDIATE``. exit: ``COMMIT`` (or, on any exception, a
    ``ROLLBACK`` and the pending anchors dropped), the anchors appended after a commit, then the writer lock and the
    thread lock released whatever happened; an ``OperationalError`` of a full disk, from the body, the ``COMMIT``
    or the ``ROLLBACK``, raised as :class:`DiskFull`."""

    __slots__ = ("_durable", "_fd", "_store")

    def __init__(self, store: EventStore, durable: bool) -> None:
        self._store = store
        self._durable = durable
        self._fd = -1

    def __enter__(self) -> sqlite3.Connection:
        store = self._store
        if store.readonly:
            raise InputError(f"{store.file}: opened read-only")
        lock = store._thread_lock
        lock.acquire()
        try:
            if store._lock_fd is None:
                store._lock_fd = _open_lock(store.file)
            fd = store._lock_fd
            _flock(fd, fcntl.LOCK_EX, store.file, store.lock_timeout_s)
        except BaseException:
            lock.release()
            raise
        self._fd = fd
        try:
            store._sync("FULL" if self._durable else "NORMAL")
            store._conn.execute("BEGIN IMMEDIATE")
        except BaseException as e:
            self._release(e)
            raise
        return store._conn

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        store = self._store
        conn = store._conn
        try:
            if error is None:
                try:
                    conn.execute("COMMIT")
                except BaseException:
                    self._abort(conn)
                    raise
                store._flush_anchor()  # under the writer lock, so the anchor file's lines keep the log's order
            else:
                self._abort(conn)
        except BaseException as e:
            self._release(e)
            raise
        self._release(error)

    def _abort(self, conn: sqlite3.Connection) -> None:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        self._store._pending_anchor.clear()

    def _release(self, error: BaseException | None) -> None:
        """Unlock (the writer lock, then the thread lock); a full disk's ``error`` raised as :class:`DiskFull`."""
        store = self._store
        try:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        finally:
            store._thread_lock.release()
        if isinstance(error, sqlite3.OperationalError) and _is_disk_full(error, store.file):
            raise DiskFull(f"disk full: {store.file} ({error}); nothing was written") from error


def _flock(fd: int, op: int, path: str, timeout_s: float) -> None:
    """Take the writer lock file's lock (``LOCK_EX`` to write, ``LOCK_SH`` to wait for a writer), polling: a
    blocking flock could not time out. Held past ``timeout_s`` by another process: :class:`DatabaseLocked`."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, op | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise DatabaseLocked(
                    f"{path}: another tether process has held the writer lock for {timeout_s:g}s ({path}.lock)"
                ) from None
            time.sleep(0.002)


def _open_lock(path: str) -> int:
    """The descriptor of the database's writer lock file, ``<db>.lock`` (made if missing)."""
    lock_path = path + ".lock"
    try:
        return os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise _os_error(e, lock_path) from e


def _has_content(path: str) -> bool:
    try:
        return os.stat(path).st_size > 0
    except FileNotFoundError:
        return False


def _wait_for_writer(path: str, timeout_s: float) -> None:
    """Wait until no process holds the writer lock of the database at ``path`` (a read-only open that found
    the file empty: its creator makes it under that lock). No lock file: no writer has started."""
    try:
        fd = os.open(str(path) + ".lock", os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        _flock(fd, fcntl.LOCK_SH, path, timeout_s)
    finally:
        os.close(fd)  # closing the descriptor releases its lock


#: SQLite's primary result codes of a database another process holds (:meth:`EventStore._locked`).
_HELD = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
#: SQLite's primary result codes of a database that could not be read now, whatever it holds: held, or the read
#: interrupted, out of memory or disk.
_TRANSIENT = _HELD | {sqlite3.SQLITE_INTERRUPT, sqlite3.SQLITE_NOMEM, sqlite3.SQLITE_FULL}


def _result(e: sqlite3.Error) -> int | None:
    """SQLite's primary result code of ``e`` (its extended code's low byte); None for an error sqlite3 raises
    itself (a text that is not UTF-8), which has no code."""
    code = getattr(e, "sqlite_errorcode", None)
    return None if code is None else code & 0xFF


def _held(e: sqlite3.Error) -> bool:
    """Whether SQLite said another process holds the database (busy, locked)."""
    return _result(e) in _HELD


def _transient(e: sqlite3.Error) -> bool:
    """Whether SQLite said the database cannot be read *now* (another process holds it, …), not that it is
    malformed."""
    return _result(e) in _TRANSIENT


def _is_disk_full(e: sqlite3.Error, path: str) -> bool:
    """SQLITE_FULL, or an I/O error (creating the WAL index, say) where the filesystem has no room left."""
    if "disk is full" in str(e) or getattr(e, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
        return True
    if "disk I/O error" not in str(e):
        return False
    try:
        fs = os.statvfs(places.parent(path))
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < 64 * 1024


def _os_error(e: OSError, path: str) -> Exception:
    if e.errno == errno.ENOSPC:
        return DiskFull(f"disk full: {path} ({e.strerror})")
    return FileError(f"{path}: {e.strerror}")


def not_utf8(columns: Sequence[str], values: Sequence[object]) -> str | None:
    """The first of ``columns`` whose value (read as bytes) is not UTF-8 text; None when each is (or is no text)."""
    for column, value in zip(columns, values, strict=True):
        if type(value) is bytes and not is_utf8(value):
            return column
    return None


def is_utf8(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
