"""The PostgreSQL event store (psycopg 3): the same log, chain and guarantees as the SQLite store, for many
processes on many machines.

The append path is the SQLite store's own code (:func:`~.storebase.prepare_all` validates and redacts,
:func:`~.store.chained` numbers, times and hashes), so an event is byte for byte what SQLite would write and
``tether log verify`` checks both the same way (:func:`~.store.verify_rows`); the lease, the audit and the rest
that is one logic over both databases is :class:`~.storebase.StoreBase`'s, run with this module's SQL.

Schema (``tether/pg2``) in the connection's current schema: ``tether_meta``, ``runs`` (one row per run,
never changed), ``events`` (primary key ``(run_id, seq)``; the hash as 32 bytes, no ``prev_hash``: readers
join the previous row's hash back, as the SQLite store's ``tether/3``), ``blobs`` (content-addressed),
``anchors`` (signed checkpoints) and ``leases`` (who drives a run). A run's head is its last event: no row
is ever updated to move it, so the application role needs only SELECT and INSERT on the log's tables. A
``tether/pg1`` schema is migrated in place, in one transaction, by its owner (``tether db init URL``, or
the first writer that owns the tables); the application role cannot alter tables and is told so.

- **append-only, twice:** the application role is granted SELECT and INSERT on runs, events, blobs and
  anchors, nothing else (``tether db init URL --app-role NAME`` sets this up as the schema's owner); and
  triggers refuse UPDATE, DELETE and TRUNCATE on those tables for everyone, the owner included. A superuser
  can disable triggers; what it rewrites then only a signed checkpoint kept outside the database (the anchor
  file) reveals, as for a SQLite file its owner rewrites. Leases are not history: the application role may
  update and delete them.
- **compare-and-append:** each append is one transaction that first takes a transaction-scoped advisory
  lock on the run (``pg_advisory_xact_lock``), so writers of one run queue and writers of different runs do
  not meet; it then reads the head, compares ``expect``, checks the lease and inserts. The primary key is
  the backstop: a second row at a seq can never land.
- **one driver per run:** the lease row is read and written under the same advisory lock as the append,
  so an append by a driver whose lease was taken over fails in the transaction that would have written.
- **durability:** a durable append commits with ``synchronous_commit`` as the server has it (on, by
  default: the commit returns once the WAL is flushed); ``durable=False`` commits with it off, and a later
  durable commit flushes the WAL before it, so order is never lost.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import errors as pgerr
from psycopg import sql

from tether.canonical import bytes_hash
from tether.errors import (
    DatabaseLocked,
    HeadMoved,
    InputError,
    LogCorrupt,
    NotATetherDatabase,
    RunExists,
    RuntimeFailure,
)

from .anchor import Checkpoint, Signer
from .bulk import gc_paused
from .chain import GENESIS
from .lease import Heartbeat, Lease
from .payload import Emitted
from .redact import Redactor, url_without_password
from .store import (
    LOCK_TIMEOUT_S,
    STORED_COLUMNS,
    Batch,
    Chained,
    Event,
    chained,
    fork_point,
    join_base,
    lineage,
    row_event,
    stored_rows,
    verify_rows,
)
from .storebase import IMPORTED, Head, Prepared, RunInfo, StoreBase, now_iso, prepare_all

if TYPE_CHECKING:
    from psycopg import Cursor

SCHEMA_TAG = "tether/pg2"
OLDER_TAGS = ("tether/pg1",)  # migrated in place by the tables' owner (MIGRATE)
LOG_TABLES = ("runs", "events", "blobs", "anchors")  # append-only: triggers, and INSERT/SELECT for the app role
SCHEMA_LOCK = 0x7E7E_0001  # advisory lock key while a schema is created (two first opens at once)
RUN_COLUMNS = (
    "SELECT r.run_id, r.created_at, r.task, r.parent_run, coalesce(h.seq, -1), coalesce(encode(h.hash, 'hex'), %s) "
    "FROM runs r "
    "LEFT JOIN LATERAL (SELECT seq, hash FROM events e WHERE e.run_id = r.run_id ORDER BY seq DESC LIMIT 1) h ON true"
)
LEASE_COLUMNS = "SELECT run_id, owner, host, pid, pid_start, since, heartbeat, ttl_s FROM leases"
#: A run's rows with their prev_hash, the previous row's hash (hashes read as 64 hex characters).
SELECT_ROWS = (
    "SELECT e.run_id, e.seq, e.ts, e.kind, e.payload, encode(p.hash, 'hex'), encode(e.hash, 'hex') FROM events e "
    "LEFT JOIN events p ON p.run_id = e.run_id AND p.seq = e.seq - 1 "
    "WHERE e.run_id=%s AND e.seq BETWEEN %s AND %s"
)
#: tether/pg1 to tether/pg2 (in one transaction, as the tables' owner): the stored prev_hash dropped (each hash
#: covers it), the hash as its 32 bytes; a hash that is not 64 lower-case hex characters (tether never wrote
#: one) kept as its UTF-8 bytes, which no event hashes to, so verification fails on that row as it did before.
#: ALTER TABLE fires no row trigger.
MIGRATE = [
    "ALTER TABLE events DROP COLUMN prev_hash, ALTER COLUMN hash TYPE bytea USING (CASE WHEN hash ~ "
    "'^[0-9a-f]{64}$' THEN decode(hash, 'hex') ELSE convert_to(hash, 'UTF8') END)",
    f"UPDATE tether_meta SET value = '{SCHEMA_TAG}' WHERE key = 'schema'",
]

DDL = """
CREATE TABLE tether_meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE runs (
    run_id text PRIMARY KEY,
    created_at text NOT NULL,
    task text NOT NULL,
    parent_run text
);
CREATE INDEX runs_created ON runs (created_at, run_id);
CREATE TABLE events (
    run_id text NOT NULL REFERENCES runs (run_id),
    seq bigint NOT NULL CHECK (seq >= 0),
    ts text NOT NULL,
    kind text NOT NULL,
    payload text NOT NULL,
    hash bytea NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE blobs (hash text PRIMARY KEY, size bigint NOT NULL, data bytea NOT NULL);
CREATE TABLE anchors (
    run_id text NOT NULL REFERENCES runs (run_id),
    seq bigint NOT NULL,
    hash text NOT NULL,
    key_id text NOT NULL,
    signed_at text NOT NULL,
    signature text NOT NULL,
    PRIMARY KEY (run_id, seq, key_id)
);
CREATE TABLE leases (
    run_id text PRIMARY KEY REFERENCES runs (run_id),
    owner text NOT NULL,
    host text NOT NULL,
    pid bigint NOT NULL,
    pid_start text NOT NULL,
    since text NOT NULL,
    heartbeat double precision NOT NULL,
    ttl_s double precision NOT NULL
);
CREATE FUNCTION tether_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'tether % are append-only: % refused', TG_TABLE_NAME, TG_OP;
END $$;
"""
TRIGGERS = """
CREATE TRIGGER {t}_append_only BEFORE UPDATE OR DELETE ON {t} FOR EACH ROW EXECUTE FUNCTION tether_append_only();
CREATE TRIGGER {t}_no_truncate BEFORE TRUNCATE ON {t} FOR EACH STATEMENT EXECUTE FUNCTION tether_append_only();
"""


@contextmanager
def _database_errors(where: str, lock_timeout_s: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """psycopg's errors as tether's, naming the database (its password hidden). A lock waited for past the
    connection's ``lock_timeout`` (:func:`_bound_lock_waits`) is :class:`DatabaseLocked`, as SQLite's writer lock
    held past the store's ``lock_timeout_s`` is."""
    try:
        yield
    except pgerr.LockNotAvailable as e:  # an OperationalError too: not "unreachable"
        raise DatabaseLocked(
            f"{where}: another tether process has held the lock this write waits for past {lock_timeout_s:g}s "
            f"(PostgreSQL: {e.diag.message_primary})"
        ) from e
    except pgerr.InsufficientPrivilege as e:
        raise RuntimeFailure(f"{where}: the database role may not do this ({e.diag.message_primary})") from e
    except pgerr.RaiseException as e:  # a trigger refused a change
        raise RuntimeFailure(f"{where}: {e.diag.message_primary}") from e
    except (pgerr.DataError, pgerr.IntegrityError) as e:
        raise InputError(f"{where}: {e.diag.message_primary}") from e
    except psycopg.OperationalError as e:
        raise RuntimeFailure(f"{where}: the database is unreachable ({str(e).strip()})") from e


def _connect(url: str, where: str, lock_timeout_s: float = LOCK_TIMEOUT_S) -> psycopg.Connection[Any]:
    """A connection to a database whose encoding is UTF-8, its lock waits bounded by ``lock_timeout_s``
    (:func:`_bound_lock_waits`). In any other encoding (``SQL_ASCII`` stores whatever bytes it is given and psycopg
    reads its text as ``bytes``) the log's text is not what tether hashed: refused by name, where it failed as
    "internal error: TypeError" and would have read every event as malformed. The server reports its encoding when
    the connection starts: no query."""
    with _database_errors(where, lock_timeout_s):
        try:
            conn = psycopg.connect(url, autocommit=True)
        except psycopg.ProgrammingError as e:  # the URL itself: an unknown parameter, a malformed part
            raise InputError(f"{where}: not a usable PostgreSQL URL ({str(e).strip()})") from e
    encoding = conn.info.parameter_status("server_encoding")
    if encoding != "UTF8":
        conn.close()
        raise NotATetherDatabase(
            f"{where}: the database's encoding is {encoding}; tether's log is UTF-8 text: use a database made "
            "with ENCODING 'UTF8'"
        )
    try:
        with _database_errors(where, lock_timeout_s):
            _bound_lock_waits(conn, lock_timeout_s)
    except BaseException:
        conn.close()
        raise
    return conn


def _bound_lock_waits(conn: psycopg.Connection[Any], lock_timeout_s: float) -> None:
    """Every lock this session waits for (the run's advisory lock an append or ``exclusive()`` takes, a row's, the
    schema's) waits ``lock_timeout_s`` at most, then fails (``LockNotAvailable``: :class:`DatabaseLocked`): a writer
    paused while it holds one (SIGSTOP, a debugger, a hung hook) would otherwise block every other writer of its run
    until it is killed. Session-wide, set once: not a statement more per append. At least 1 ms (0 is no bound)."""
    conn.execute("SELECT set_config('lock_timeout', %s, false)", (f"{max(1, round(lock_timeout_s * 1000))}ms",))


class PgStore(StoreBase[Event]):
    """Open with :meth:`open` (or :func:`~.backends.open_store`); one instance may be shared by threads."""

    SQL_LEASE = LEASE_COLUMNS + " WHERE run_id=%s"
    SQL_PUT_LEASE = (
        "INSERT INTO leases (run_id, owner, host, pid, pid_start, since, heartbeat, ttl_s) "
        "VALUES (%s,%s,%s,%s,%s,%s,%s,%s) ON CONFLICT (run_id) DO UPDATE SET owner=EXCLUDED.owner, "
        "host=EXCLUDED.host, pid=EXCLUDED.pid, pid_start=EXCLUDED.pid_start, since=EXCLUDED.since, "
        "heartbeat=EXCLUDED.heartbeat, ttl_s=EXCLUDED.ttl_s"
    )
    SQL_DROP_LEASE = "DELETE FROM leases WHERE run_id=%s AND owner=%s"
    SQL_BEAT = "UPDATE leases SET heartbeat=%s WHERE run_id=%s AND owner=%s"
    SQL_ANCHOR = (
        "INSERT INTO anchors (run_id, seq, hash, key_id, signed_at, signature) VALUES (%s,%s,%s,%s,%s,%s) "
        "ON CONFLICT DO NOTHING"
    )
    SQL_HASH_AT = "SELECT encode(hash, 'hex') FROM events WHERE run_id=%s AND seq=%s"
    SQL_EVENT = f"INSERT INTO events ({STORED_COLUMNS}) VALUES (%s,%s,%s,%s,%s,%s)"
    SQL_BLOB = "INSERT INTO blobs (hash, size, data) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING"

    def __init__(
        self,
        url: str,
        conn: psycopg.Connection[Any],
        local: Path,
        *,
        readonly: bool,
        signer: Signer | None,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> None:
        self.url = url
        self._where = url_without_password(url)
        self._lock_timeout_s = lock_timeout_s  # the connection's lock_timeout: set by the caller (_connect)
        self.path = local / "postgresql"  # no file here: its directory holds the workspace's memory.db
        self.readonly = readonly
        self.signer = signer
        self.redactor = Redactor()
        self._conn = conn
        self._lock = threading.RLock()
        self._leases: dict[str, Lease] = {}
        self._heartbeat: Heartbeat | None = None
        self._pending_anchor: list[Checkpoint] = []

    @classmethod
    def open(
        cls,
        url: str,
        *,
        create: bool = True,
        readonly: bool = False,
        signer: Signer | None = None,
        local: Path | None = None,
        lock_timeout_s: float = LOCK_TIMEOUT_S,
    ) -> PgStore:
        """Connect; with ``create``, make the schema in a database that has none (as the connecting role). A lock
        held by another session past ``lock_timeout_s`` (as SQLite's store's writer lock) is :class:`DatabaseLocked`."""
        where = url_without_password(url)
        conn = _connect(url, where, lock_timeout_s)
        store = cls(
            url, conn, local or Path.cwd() / ".tether", readonly=readonly, signer=signer, lock_timeout_s=lock_timeout_s
        )
        try:
            with store._errors():
                if readonly:
                    conn.execute("SET default_transaction_read_only = on")
                store._init_schema(create and not readonly)
        except BaseException:
            conn.close()
            raise
        return store

    def _init_schema(self, create: bool) -> None:
        if _has_schema(self._conn, self.where):
            if create and _tag(self._conn) in OLDER_TAGS:
                migrate(self._conn, self.where)
            return self._check_tag()
        if not create:
            raise NotATetherDatabase(
                f"{self.where}: no tether schema here (create it with `tether db init URL`, or run something first)"
            )
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if not _has_schema(self._conn, self.where):  # not made meanwhile by another first open
                create_schema(self._conn)
        self._check_tag()

    def _check_tag(self) -> None:
        tag = _tag(self._conn)
        if tag in OLDER_TAGS:
            raise NotATetherDatabase(
                f"{self.where}: tether_meta.schema is {tag!r}, an older schema; migrate it to {SCHEMA_TAG} with "
                "`tether db init URL` as the role that owns its tables (nothing else changes)"
            )
        if tag != SCHEMA_TAG:
            newer = isinstance(tag, str) and tag.startswith("tether/pg") and tag[9:].isdigit()
            why = ", written by a newer tether than this one; upgrade tether to open it" if newer else ""
            raise NotATetherDatabase(f"{self.where}: tether_meta.schema is {tag!r}; expected {SCHEMA_TAG}{why}")

    @property
    def where(self) -> str:
        return self._where

    @property
    def lock_timeout_s(self) -> float:
        """How long a write waits for a lock another session holds before :class:`DatabaseLocked`."""
        return self._lock_timeout_s

    @lock_timeout_s.setter
    def lock_timeout_s(self, seconds: float) -> None:
        with self._lock, self._errors():
            _bound_lock_waits(self._conn, seconds)
            self._lock_timeout_s = seconds

    def _errors(self) -> AbstractContextManager[None]:
        """psycopg's errors as tether's (:func:`_database_errors`), a lock's timeout naming this store's."""
        return _database_errors(self._where, self._lock_timeout_s)

    def close(self) -> None:
        for run_id in list(self._leases):
            with suppress(Exception):  # closing must not fail; a lease left behind is taken over once we are gone
                self.release(run_id)
        self._stop_heartbeat()
        self._conn.close()

    def redact_also(self, secrets: Mapping[str, str]) -> None:
        """From now on, replace these values (name -> value) in every event and blob this store writes."""
        with self._lock:
            self.redactor = self.redactor.with_secrets(secrets)

    # ---- transactions ------------------------------------------------------------------------

    @contextmanager
    def _transaction(self, durable: bool = True) -> Iterator[Cursor[Any]]:
        """One transaction on this store's connection; anything raised rolls it back whole."""
        if self.readonly:
            raise InputError(f"{self.where}: opened read-only")
        with self._lock, self._errors():
            try:
                with self._conn.transaction(), self._conn.cursor() as cur:
                    if not durable:
                        cur.execute("SET LOCAL synchronous_commit = off")
                    yield cur
            except BaseException:
                self._pending_anchor.clear()
                raise
            while self._pending_anchor and self.signer is not None:  # committed: now the anchor file
                self.signer.record(self._pending_anchor.pop(0))

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """Reads that must agree (a run's head and its rows) in one repeatable-read transaction, so an append
        by another process between them is not mistaken for a truncated log."""
        with self._lock, self._errors(), self._conn.transaction():
            self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    def _query(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with self._lock, self._errors():
            return self._conn.execute(query, params).fetchall()

    @contextmanager
    def exclusive(self, run_id: str) -> Iterator[None]:
        """The run's advisory lock (the one :meth:`_lock_run` takes in each append's transaction) held by this
        connection's session until the block ends: another connection's append to the run waits; this one's own
        append takes it again (a session holding a lock is not kept out by it)."""
        with self._lock, self._errors():
            self._conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (run_id,))
            try:
                yield
            finally:
                self._conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (run_id,))

    def _lock_run(self, cur: Cursor[Any], run_id: str) -> None:
        """Queue behind any other transaction writing this run (released at commit or rollback)."""
        cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (run_id,))

    @staticmethod
    def _head_in(cur: Cursor[Any], run_id: str) -> Head:
        row = cur.execute(
            "SELECT seq, encode(hash, 'hex') FROM events WHERE run_id=%s ORDER BY seq DESC LIMIT 1", (run_id,)
        ).fetchone()
        return (-1, GENESIS) if row is None else (int(row[0]), str(row[1]))

    # ---- writing -----------------------------------------------------------------------------

    def _insert_run(self, cur: Cursor[Any], run_id: str, task: str, parent_run: str | None, head: Head) -> None:
        """The run's row (no head in it: a run's head is its last event)."""
        cur.execute(
            "INSERT INTO runs (run_id, created_at, task, parent_run) VALUES (%s,%s,%s,%s) ON CONFLICT DO NOTHING",
            (run_id, now_iso(), task, parent_run),
        )
        if cur.rowcount != 1:
            raise RunExists(f"{self.where}: run {run_id} already exists")

    def append_many(
        self, run_id: str, items: Sequence[Emitted], *, durable: bool = True, expect: Head | None = None
    ) -> list[Event]:
        """Append events in one transaction; nothing, and :class:`HeadMoved`, if the head is not ``expect``."""
        prepared = prepare_all(self.redactor, items)
        with self._transaction(durable) as cur:
            self._lock_run(cur, run_id)
            if cur.execute("SELECT 1 FROM runs WHERE run_id=%s", (run_id,)).fetchone() is None:
                raise InputError(f"unknown run {run_id!r}")
            head = self._head_in(cur, run_id)  # a fork's own events start with run.forked: never empty
            if expect is not None and tuple(expect) != head:
                raise HeadMoved(run_id, (int(expect[0]), str(expect[1])), head)
            if run_id in self._leases:
                self._check_lease_locked(cur, run_id)
            return self._append_locked(cur, run_id, prepared, head)

    def append_batch(self, batch: Batch) -> None:
        """Write events chained in memory in one transaction; nothing, and :class:`HeadMoved`, if the head is
        no longer ``batch.base`` (as :meth:`EventStore.append_batch`)."""
        with self._transaction(batch.durable) as cur:
            self._lock_run(cur, batch.run_id)
            if cur.execute("SELECT 1 FROM runs WHERE run_id=%s", (batch.run_id,)).fetchone() is None:
                raise InputError(f"unknown run {batch.run_id!r}")
            head = self._head_in(cur, batch.run_id)
            if tuple(batch.base) != head:
                raise HeadMoved(batch.run_id, batch.base, head)
            if batch.run_id in self._leases:
                self._check_lease_locked(cur, batch.run_id)
            self._insert_locked(cur, batch.run_id, batch.rows, head)

    def _append_locked(self, cur: Cursor[Any], run_id: str, prepared: Sequence[Prepared], head: Head) -> list[Event]:
        rows = chained(run_id, prepared, head)
        self._insert_locked(cur, run_id, rows, head)
        return [event for _, event in rows]

    def _insert_locked(self, cur: Cursor[Any], run_id: str, rows: Sequence[Chained], head: Head) -> None:
        if not rows:
            return
        cur.executemany(self.SQL_EVENT, stored_rows(rows))
        seq, h = rows[-1][1].head
        self._sign_locked(cur, run_id, rows, head[0], seq, h)

    def put_blob(self, data: bytes) -> str:
        """Store ``data`` content-addressed; its ``sha256:`` hash (made durable by the next durable append)."""
        data = self.redactor.value(data)  # a file that holds a secret is kept redacted, under the redacted hash
        h = bytes_hash(data)
        with self._transaction(durable=False) as cur:
            cur.execute(
                "INSERT INTO blobs (hash, size, data) VALUES (%s,%s,%s) ON CONFLICT DO NOTHING", (h, len(data), data)
            )
        return h

    def adopt(
        self, runs: Sequence[RunInfo], rows: Sequence[tuple[Any, ...]], blobs: Iterable[bytes], *, origin: str
    ) -> None:
        """Add an imported run exactly as exported, in one transaction: all of it, or nothing (its chain and
        the head the package names are checked inside the transaction, before the commit)."""
        main = runs[-1]
        verify_rows(main, rows)  # the rows as given: their prev_hash too, which the store does not keep
        with self._transaction() as cur:
            for info in runs:
                self._lock_run(cur, info.run_id)
            if cur.execute("SELECT 1 FROM runs WHERE run_id=%s", (main.run_id,)).fetchone():
                raise InputError(f"{self.where}: run {main.run_id} is already in this store")
            for info in runs:
                added = cur.execute(
                    "INSERT INTO runs (run_id, created_at, task, parent_run) VALUES (%s,%s,%s,%s) "
                    "ON CONFLICT DO NOTHING",
                    (info.run_id, info.created_at, info.task, info.parent_run),
                )
                if added.rowcount:
                    cur.execute("INSERT INTO tether_meta VALUES (%s, %s)", (IMPORTED + info.run_id, origin))
            self._adopt_rows(cur, rows, blobs)
            here = self._run_in(cur, main.run_id)
            if here is None or (here.head_seq, here.head_hash) != (main.head_seq, main.head_hash):
                raise LogCorrupt(main.run_id, main.head_seq + 1, "the package's events do not end at its head")
            verify_rows(here, self._rows_in(cur, main.run_id))

    def imported(self, run_id: str) -> str | None:
        rows = self._query("SELECT value FROM tether_meta WHERE key=%s", (IMPORTED + run_id,))
        return str(rows[0][0]) if rows else None

    # ---- the lease: one driver per run (the rest: StoreBase) -------------------------------

    def lease(self, run_id: str) -> Lease | None:
        """The run's current lease row, whoever holds it (None if free)."""
        rows = self._query(LEASE_COLUMNS + " WHERE run_id=%s", (run_id,))
        return Lease(*rows[0]) if rows else None

    # ---- reading -----------------------------------------------------------------------------

    def get_blob(self, h: str) -> bytes:
        rows = self._query("SELECT data FROM blobs WHERE hash=%s", (h,))
        if not rows:
            raise InputError(f"no blob {h}")
        return bytes(rows[0][0])

    def _events_in(
        self, run_id: str, *, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[Event]:
        with self._lock, self._errors(), self._conn.cursor() as cur:
            rows = self._rows_in(cur, run_id, after, upto, kinds)
        with gc_paused():
            return [row_event(r) for r in rows]

    def _rows_in(
        self,
        cur: Cursor[Any],
        run_id: str,
        after: int = -1,
        upto: int | None = None,
        kinds: Collection[str] | None = None,
    ) -> list[tuple[Any, ...]]:
        """Rows ``(run_id, seq, ts, kind, payload, prev_hash, hash)`` of the run's log (its lineage's segments,
        oldest first) with after < seq <= upto (of ``kinds``); ``prev_hash`` is the previous row's hash."""
        query = SELECT_ROWS + ("" if kinds is None else " AND e.kind = ANY(%s)") + " ORDER BY e.seq"
        extra: tuple[Any, ...] = () if kinds is None else (sorted(kinds),)
        rows: list[tuple[Any, ...]] = []
        segments = lineage(run_id, lambda rid: self._fork_point(cur, rid))
        for n, (rid, first, last) in enumerate(segments):
            lo, hi = max(first, after + 1), last if upto is None else min(last, upto)
            if lo <= hi:
                found = cur.execute(query, (rid, lo, hi, *extra)).fetchall()
                rows += join_base(found, segments[:n], first, lambda r, s: _hash_at(cur, r, s))
        return rows

    def lineage(self, run_id: str) -> list[tuple[str, int, int]]:
        """Whose events make up a run's log: ``(run, first seq, last seq)`` per segment, oldest first."""
        with self._lock, self._errors(), self._conn.cursor() as cur:
            return lineage(run_id, lambda rid: self._fork_point(cur, rid))

    @staticmethod
    def _fork_point(cur: Cursor[Any], run_id: str) -> tuple[str, int] | None:
        row = cur.execute(
            "SELECT e.seq, e.kind, e.payload FROM runs r JOIN events e ON e.run_id = r.run_id "
            "WHERE r.run_id=%s AND r.parent_run IS NOT NULL ORDER BY e.seq LIMIT 1",
            (run_id,),
        ).fetchone()
        return fork_point(run_id, row)

    def _run_in(self, cur: Cursor[Any], run_id: str) -> RunInfo | None:
        row = cur.execute(RUN_COLUMNS + " WHERE r.run_id=%s", (GENESIS, run_id)).fetchone()
        return None if row is None else RunInfo(*row)

    def _runs_named(self, run_id: str) -> list[tuple[Any, ...]]:
        rows = self._query(RUN_COLUMNS + " WHERE r.run_id=%s", (GENESIS, run_id))
        if rows:
            return rows
        return self._query(
            RUN_COLUMNS + " WHERE starts_with(r.run_id, %s) ORDER BY r.run_id LIMIT 11", (GENESIS, run_id)
        )

    def runs(self, newest: int | None = None) -> list[RunInfo]:
        if newest is not None:
            query = RUN_COLUMNS + " ORDER BY r.created_at DESC, r.run_id DESC LIMIT %s"
            return [RunInfo(*r) for r in reversed(self._query(query, (GENESIS, max(newest, 0))))]
        return [RunInfo(*r) for r in self._query(RUN_COLUMNS + " ORDER BY r.created_at, r.run_id", (GENESIS,))]

    def rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's log as stored, ``(run_id, seq, ts, kind, payload text, prev_hash, hash)``: for export."""
        info = self.run(run_id)
        with self._lock, self._errors(), self._conn.cursor() as cur:
            return self._rows_in(cur, info.run_id)

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's signed checkpoints recorded in the database."""
        rows = self._query(
            "SELECT run_id, seq, hash, key_id, signed_at, signature FROM anchors WHERE run_id=%s ORDER BY seq",
            (run_id,),
        )
        return [Checkpoint(*r) for r in rows]

    def _verified_hashes(self, info: RunInfo) -> list[str]:
        with gc_paused():  # a row tuple per event, none of them cyclic: see events/bulk.py
            return verify_rows(info, self.rows(info.run_id))


def _hash_at(cur: Cursor[Any], run_id: str, seq: int) -> str | None:
    row = cur.execute("SELECT encode(hash, 'hex') FROM events WHERE run_id=%s AND seq=%s", (run_id, seq)).fetchone()
    return None if row is None else str(row[0])


def _tag(conn: psycopg.Connection[Any]) -> str | None:
    row = conn.execute("SELECT value FROM tether_meta WHERE key='schema'").fetchone()
    return None if row is None else str(row[0])


def migrate(conn: psycopg.Connection[Any], where: str) -> bool:
    """Migrate an older schema (``OLDER_TAGS``) to ``SCHEMA_TAG`` in one transaction; whether it did. Only the
    tables' owner may: anyone else is told to run ``tether db init`` as the owner, and nothing changes."""
    try:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if _tag(conn) not in OLDER_TAGS:  # migrated meanwhile by another first open
                return False
            for statement in MIGRATE:
                conn.execute(statement)  # our constant SQL, not input
    except pgerr.InsufficientPrivilege as e:
        raise NotATetherDatabase(
            f"{where}: tether_meta.schema is an older schema; migrate it to {SCHEMA_TAG} with `tether db init URL` "
            f"as the role that owns its tables ({e.diag.message_primary}); nothing was changed"
        ) from e
    return True


def _has_schema(conn: psycopg.Connection[Any], where: str) -> bool:
    """Whether the current schema holds tether's tables; refuses one holding tables of the same names that are
    not tether's (made by something else: tether never writes into them)."""
    ours = ["tether_meta", *LOG_TABLES, "leases"]
    row = conn.execute("SELECT array_agg(n) FROM unnest(%s::text[]) n WHERE to_regclass(n) IS NOT NULL", (ours,))
    found: list[str] = (row.fetchone() or [None])[0] or []
    if found and "tether_meta" not in found:
        names = ", ".join(sorted(found))
        raise NotATetherDatabase(f"{where}: tables {names} are here but are not tether's (no tether_meta)")
    return bool(found)


def create_schema(conn: psycopg.Connection[Any], app_role: str | None = None) -> None:
    """Make tether's tables and triggers (in the current transaction) as the connecting role, their owner;
    with ``app_role``, grant that role what the store needs and nothing more."""
    cur = conn.cursor()
    cur.execute(DDL)
    for table in LOG_TABLES:
        cur.execute(TRIGGERS.format(t=table))  # table names are ours, not input
    cur.execute("INSERT INTO tether_meta VALUES ('schema', %s)", (SCHEMA_TAG,))
    if app_role is not None:
        grant(cur, app_role)


def grant(cur: Cursor[Any], app_role: str) -> None:
    """The application role's privileges: read and insert the log; read and write leases; nothing else.

    It may insert into ``tether_meta`` (an import's mark, :meth:`PgStore.imported`) but never change a row of it:
    the schema's own row is there first, so its key can only be read."""
    role = sql.Identifier(app_role)
    cur.execute(sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(_current_schema(cur)), role))
    cur.execute(sql.SQL("GRANT SELECT, INSERT ON tether_meta TO {}").format(role))
    for table in LOG_TABLES:
        cur.execute(sql.SQL("GRANT SELECT, INSERT ON {} TO {}").format(sql.Identifier(table), role))
    cur.execute(sql.SQL("GRANT SELECT, INSERT, UPDATE, DELETE ON leases TO {}").format(role))


def _current_schema(cur: Cursor[Any]) -> str:
    row = cur.execute("SELECT current_schema()").fetchone()
    if row is None or row[0] is None:
        raise InputError("the connection has no current schema (search_path is empty)")
    return str(row[0])


def init(url: str, app_role: str | None = None) -> str:
    """``tether db init``: make the schema as the URL's role (its owner) and grant ``app_role``; what was done.

    A database that already holds the schema gets the grant only (run again for another application role).
    """
    where = url_without_password(url)
    with _database_errors(where), _connect(url, where) as conn:
        known = app_role is None or conn.execute("SELECT 1 FROM pg_roles WHERE rolname=%s", (app_role,)).fetchone()
        if not known:
            raise InputError(f"{where}: no role {app_role!r}; create it first (CREATE ROLE {app_role} LOGIN)")
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            if not _has_schema(conn, where):
                create_schema(conn, app_role)
                done = "created the tether schema"
            elif _tag(conn) in OLDER_TAGS:
                migrate(conn, where)
                if app_role is not None:
                    grant(conn.cursor(), app_role)
                done = f"migrated the tether schema to {SCHEMA_TAG}"
            elif app_role is not None:
                grant(conn.cursor(), app_role)
                done = "the tether schema was already there"
            else:
                done = "the tether schema was already there; nothing to do"
    return done + (f"; granted role {app_role} SELECT and INSERT on the log, and its leases" if app_role else "")
