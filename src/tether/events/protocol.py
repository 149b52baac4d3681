"""The store protocol: the surface of an event store that the rest of tether calls.

Written down from the call sites (kernel, guard, control, cli, console, observe), not invented, so that a
second store (PostgreSQL, issue 16) can be built against it and checked by the same conformance tests.
:class:`~tether.events.store.EventStore` (SQLite) satisfies it; mypy proves that below.

What every store must guarantee behind these methods (docs/store.md):

- a run's events form one hash chain (:func:`~tether.events.chain.event_hash`); ``verify`` recomputes it;
- append-only: no event, blob or signed checkpoint is ever updated or deleted;
- compare-and-append: ``expect=(seq, hash)`` names the head an append extends; a moved head raises
  :class:`~tether.errors.HeadMoved` and writes nothing; each call is one transaction, all or nothing;
- one driver per run: a store holding a run's lease checks, in the append's transaction, that it still does;
- blobs are content-addressed (``sha256:`` of their bytes).

Approvals have no methods of their own: a request and its answer are events, appended with ``expect``
(kernel/approvals.py), so a store that keeps the guarantees above keeps theirs.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

from tether.errors import InputError

from .anchor import AnchorKey, Checkpoint
from .lease import Lease
from .payload import Emitted, Payload
from .redact import Redactor
from .store import Audit, Batch, Event, EventStore, Head, RunInfo

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from .kinds import RunForked
    from .pgstore import PgStore


class Store(Protocol):
    """An event store: runs, their hash-chained logs, leases and blobs."""

    @property
    def path(self) -> Path:
        """Where the log lives: error messages name it, and the workspace's memory and snapshots sit beside it.

        A SQLite store's file; a PostgreSQL store's is a name in the workspace's ``.tether/``, never a file.
        """
        ...

    #: How long a write waits for a lock another process holds (SQLite's writer lock, a PostgreSQL run's) before
    #: :class:`~tether.errors.DatabaseLocked`; set it to change the bound of an open store (``--lock-timeout``).
    lock_timeout_s: float

    def close(self) -> None:
        """Release every lease this store holds, then the connection."""
        ...

    def __enter__(self) -> Store: ...

    def __exit__(self, *exc: object) -> None: ...

    # ---- secrets: never written --------------------------------------------------------------

    @property
    def redactor(self) -> Redactor:
        """The secret values this store replaces in every event and blob it writes."""
        ...

    def redact_also(self, secrets: Mapping[str, str]) -> None:
        """From now on, replace these values (name -> value) in everything this store writes."""
        ...

    # ---- runs --------------------------------------------------------------------------------

    def create_run(
        self,
        task: str,
        first: Sequence[Emitted] = (),
        *,
        run_id: str | None = None,
        parent_run: str | None = None,
        lease: bool = False,
    ) -> str:
        """A new run with its first events (and its lease), in one transaction; its id."""
        ...

    def create_fork(
        self,
        task: str,
        forked: RunForked,
        rest: Sequence[Emitted] = (),
        *,
        run_id: str | None = None,
        lease: bool = False,
    ) -> str:
        """A new run whose log goes on from the parent's at ``forked.at_seq`` (the prefix is shared)."""
        ...

    def run(self, run_id: str) -> RunInfo:
        """A run by exact id or unique literal prefix; :class:`~tether.errors.InputError` otherwise."""
        ...

    def runs(self, newest: int | None = None) -> list[RunInfo]:
        """Every run, oldest first; with ``newest``, only that many of the runs last created in this store (a
        session's first call looks for the workspace's latest earlier session without reading a long-lived store's
        every run)."""
        ...

    def head(self, run_id: str) -> Head:
        """The run's (seq, hash): what the next compare-and-append must ``expect``."""
        ...

    def lineage(self, run_id: str) -> list[tuple[str, int, int]]:
        """Whose events make up the run's log: ``(run, first seq, last seq)`` per segment, oldest first."""
        ...

    # ---- writing -----------------------------------------------------------------------------

    @overload
    def append(self, run_id: str, event: Payload, *, expect: Head | None = None) -> Event: ...
    @overload
    def append(self, run_id: str, event: str, payload: Mapping[str, Any], *, expect: Head | None = None) -> Event: ...

    def append_many(
        self, run_id: str, items: Sequence[Emitted], *, durable: bool = True, expect: Head | None = None
    ) -> list[Event]:
        """Validate, chain and commit events in one transaction; nothing if the head is not ``expect``."""
        ...

    def append_batch(self, batch: Batch) -> None:
        """Write events chained in memory in one transaction (synced if ``batch.durable``); nothing, and
        :class:`~tether.errors.HeadMoved`, if the run's head is no longer ``batch.base``."""
        ...

    def adopt(
        self, runs: Sequence[RunInfo], rows: Sequence[tuple[Any, ...]], blobs: Iterable[bytes], *, origin: str
    ) -> None:
        """Add an imported run exactly as exported (its chain verified before commit): all of it, or nothing.
        Each run it adds is marked imported from ``origin`` (:meth:`imported`)."""
        ...

    def imported(self, run_id: str) -> str | None:
        """Where ``run_id`` was imported from (the ``origin`` :meth:`adopt` was given); None for a run begun here.

        Why: an imported run's envelope is its sender's, so driving it again (resume, fork, replay) would run
        the sender's commands under the sender's contract on this machine: the kernel asks the operator first."""
        ...

    def exclusive(self, run_id: str) -> AbstractContextManager[None]:
        """Hold what keeps other writers from appending to ``run_id`` while held: SQLite's writer lock, PostgreSQL's
        advisory lock of the run (the one each append takes in its transaction). For a writer that lost a
        compare-and-append and reads, builds and appends again (guard/session.py ``_write``)."""
        ...

    # ---- blobs -------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        """Store bytes content-addressed; their ``sha256:`` hash."""
        ...

    def get_blob(self, h: str) -> bytes:
        """The bytes stored under ``h``; :class:`~tether.errors.InputError` if none."""
        ...

    # ---- the lease: one driver per run -------------------------------------------------------

    def acquire(self, run_id: str, ttl_s: float = ...) -> Lease:
        """Take the run's lease (or a dead holder's); :class:`~tether.errors.RunLeased` if it is alive."""
        ...

    def holds(self, run_id: str) -> bool:
        """Whether this store holds the run's lease, as far as it knows."""
        ...

    def release(self, run_id: str) -> None:
        """Give the run's lease back (a no-op if not held)."""
        ...

    def lease(self, run_id: str) -> Lease | None:
        """The run's current lease, whoever holds it."""
        ...

    # ---- reading and auditing ----------------------------------------------------------------

    def events(
        self, run_id: str, *, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[Event]:
        """The run's log after seq ``after`` up to seq ``upto`` (all of it: None), of ``kinds`` (all: None), a
        fork's starting with its parent's prefix. A long log is read a page at a time
        (:func:`tether.events.stream.stream`), never whole, on a run's own path."""
        ...

    def rows(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run's log as stored, ``(run_id, seq, ts, kind, payload text, prev_hash, hash)``: for export."""
        ...

    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's signed checkpoints held by the store."""
        ...

    def verify(self, run_id: str) -> int:
        """Recompute the chain; the number of events. :class:`~tether.errors.LogCorrupt` names the first bad seq."""
        ...

    def verify_run(
        self, run_id: str, key: AnchorKey | None = None, anchor_file: Path | None = None, *, since: Head | None = None
    ) -> Audit:
        """The chain (from ``since``, a head verified before, when the store can), then every signed checkpoint
        against it."""
        ...


def has_run(store: Store, run_id: str) -> bool:
    """Whether ``store`` holds a run of exactly ``run_id`` (:meth:`Store.run` also answers a unique prefix of one)."""
    try:
        return store.run(run_id).run_id == run_id
    except InputError:
        return False


def _sqlite_is_a_store(store: EventStore) -> Store:
    """Never called: mypy --strict checks here that the SQLite store satisfies :class:`Store`."""
    return store


def _postgres_is_a_store(store: PgStore) -> Store:
    """Never called: mypy --strict checks here that the PostgreSQL store satisfies :class:`Store`."""
    return store
