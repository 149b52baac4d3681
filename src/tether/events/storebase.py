"""What every event store is and does the same way, whatever its database: the records a store hands out
(:class:`RunInfo`, :class:`Audit`), the log's clock (:func:`now_iso`), and :class:`StoreBase`, the half of a
store that is one logic over SQLite and PostgreSQL — the lease (one driver per run), a run named by a prefix,
a run's and a fork's creation (their events validated and redacted by :func:`prepare_all`), the checks before a
fork, an import's rows, a checkpoint's signing, the audit.

A store derives from :class:`StoreBase` and keeps in its own module what really differs: its SQL (each
statement the base runs is a class attribute in the store's dialect), its locking and its transactions
(``_transaction``, ``_snapshot``, ``_lock_run``), and how it reads rows and checks a chain.
"""

from __future__ import annotations

import os
import time
from abc import ABC, abstractmethod

from tether.canonical import bytes_hash
from tether.clock import UTC, datetime
from tether.errors import InputError, RunLeased
from tether.ids import uuid4_hex
from tether.records import dataclass, field
from tether.typeless import Generic, TypeVar, overload

from .anchor import AnchorKey, AnchorReport, Checkpoint, Signer, check_anchor, read_anchor_file
from .chain import GENESIS
from .lease import LEASE_TTL_S, Heartbeat, Lease, holder_is_gone, process_start, this_host
from .payload import Emitted, Payload, prepare
from .redact import Redactor

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Collection, Iterable, Mapping, Sequence
    from contextlib import AbstractContextManager
    from pathlib import Path
    from typing import Any, ClassVar, Protocol, Self, TypeAlias

    from .kinds import RunForked

Head = tuple[int, str]  # (seq, hash) of a run's last event; (-1, GENESIS) before the first
#: An event checked for appending: kind, JSON dict, model (a string: a cold call does not import typing).
Prepared: TypeAlias = "tuple[str, dict[str, Any], Payload | None]"


def stored(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A row ``(run_id, seq, ts, kind, payload, prev_hash, hash)`` as tether/3 inserts it: no prev_hash (the
    previous row's hash, joined back when read), the hash as its 32 bytes."""
    return row[0], row[1], row[2], row[3], row[4], bytes.fromhex(row[6])


@dataclass(frozen=True)
class RunInfo:
    """One run as the runs table lists it."""

    run_id: str
    created_at: str
    task: str
    parent_run: str | None
    head_seq: int
    head_hash: str


@dataclass(frozen=True)
class Audit:
    """What ``verify_run`` established about one run: the chain, its head, and the anchor; ``first``: the hash of
    its first event as verified (a reader that read that event in another read compares it: guard/session.py)."""

    run_id: str
    events: int
    head: Head
    anchor: AnchorReport
    first: str = ""
    #: Every event's hash as verified, by seq: a reader that read the events in a read of its own compares them
    #: (``store.unverified``: guard/session.py).
    hashes: Sequence[str] = field(default=(), repr=False, compare=False)
    #: The seq the chain was recomputed from: 0, the whole log; else a head the caller vouched for (``since``), whose
    #: events before it were not hashed again (their entries in ``hashes`` are ``""``, the first event's as stored).
    base: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "events": self.events,
            "head": {"seq": self.head[0], "hash": self.head[1]},
            "anchor": self.anchor.to_dict(),
        }


#: The last second :func:`iso_of_us` formatted: (seconds since the epoch, its ``YYYY-MM-DDTHH:MM:SS``). One tuple,
#: replaced whole, so a thread reads a second and its text that belong together.
_SECOND: tuple[int, str] = (-1, "")


def now_iso() -> str:
    """The time now, UTC, as ``datetime.now(UTC).isoformat(timespec="microseconds")`` writes it: the same clock
    (``time.time_ns``), cut to the microsecond the same way (floor). Once per event on the append path: what
    :func:`iso_of_us` does, written out (one Python frame, not two)."""
    s, micro = divmod(time.time_ns() // 1000, 1_000_000)
    second = _SECOND
    if second[0] != s:
        second = _second(s)
    return f"{second[1]}.{micro:06d}+00:00"


def iso_of_us(us: int) -> str:
    """``us`` microseconds since the epoch as ``isoformat(timespec="microseconds")`` of that UTC datetime: the
    date and time of day are formatted by ``datetime`` once per second, the microseconds here
    (``tests/store/test_now_iso.py`` checks it against ``datetime`` for any instant)."""
    s, micro = divmod(us, 1_000_000)
    second = _SECOND
    if second[0] != s:
        second = _second(s)
    return f"{second[1]}.{micro:06d}+00:00"


def _second(s: int) -> tuple[int, str]:
    """Second ``s``'s text, kept as :data:`_SECOND` (one tuple, replaced whole)."""
    global _SECOND
    second = _SECOND = (s, datetime.fromtimestamp(s, UTC).isoformat()[:19])
    return second


def new_run_id() -> str:
    """A run's id: when it was made (UTC, to the second, so ids sort by time) and 6 random hex digits."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + uuid4_hex()[:6]


def prepare_all(redactor: Redactor, items: Iterable[Emitted]) -> list[Prepared]:
    """The append path's first step, shared by every store: validate each item (:func:`~.payload.prepare`),
    then replace secret values; an event that changed is validated again from its redacted dict.

    Raises (an unknown kind, a payload that does not fit) before anything is written.
    """
    prepared = [prepare(item) for item in items]
    if not redactor:
        return prepared
    out = []
    for kind, payload, data in prepared:
        clean = redactor.value(payload)
        out.append((kind, payload, data) if clean is payload else prepare((kind, clean)))  # still valid?
    return out


if TYPE_CHECKING:  # types only: a Protocol class costs its making at import, on a cold hook's path too

    class Executes(Protocol):
        """A transaction's handle as the base uses it: SQLite's connection, or a psycopg cursor."""

        def execute(self, query: str, params: Sequence[Any] = ..., /) -> Any: ...

    class Logged(Protocol):
        """What the base reads of an event (the store's :class:`~.store.Event`)."""

        @property
        def kind(self) -> str: ...

        @property
        def hash(self) -> str: ...


IMPORTED = "imported:"
"""The meta key prefix marking a run ``tether import`` added (its value: where the run came from)."""

E = TypeVar("E", bound="Logged")  # tether.typeless's: no ForwardRef made (its making compiles the bound)


class StoreBase(ABC, Generic[E]):
    """The part of an event store that is the same over every database (see the module's docstring); ``E``, the
    store's event (named here by what the base reads of it, so this module needs nothing of the store's)."""

    #: The statements the base runs, in the store's SQL: the run's lease row; write it (replacing the run's);
    #: drop it (``run_id``, ``owner``); refresh its heartbeat (``heartbeat``, ``run_id``, ``owner``).
    SQL_LEASE: ClassVar[str]
    SQL_PUT_LEASE: ClassVar[str]
    SQL_DROP_LEASE: ClassVar[str]
    SQL_BEAT: ClassVar[str]
    #: A signed checkpoint, kept once (a second of the same run, seq and key is ignored).
    SQL_ANCHOR: ClassVar[str]
    #: An import's statements: an event's hash as hex (``run_id``, ``seq``); an event row as stored; a blob, kept once.
    SQL_HASH_AT: ClassVar[str]
    SQL_EVENT: ClassVar[str]
    SQL_BLOB: ClassVar[str]

    redactor: Redactor
    signer: Signer | None
    readonly: bool
    _leases: dict[str, Lease]  # runs this store drives
    _heartbeat: Heartbeat | None
    _pending_anchor: list[Checkpoint]  # signed in the open transaction: to the anchor file once it commits

    @property
    @abstractmethod
    def where(self) -> str:
        """What error messages name the store by: a SQLite file's path, a URL without its password."""

    # ---- what each store does its own way --------------------------------------------------------

    @abstractmethod
    def _transaction(self, durable: bool = True) -> AbstractContextManager[Any]:
        """One write transaction, its cursor yielded; committed (synced to disk when ``durable``) or rolled back."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[None]:
        """One read snapshot: the reads inside it see one state of the database."""

    def _lock_run(self, cur: Any, run_id: str) -> None:
        """Queue behind any other transaction writing this run; a store whose every write holds one lock (SQLite's
        writer lock) has nothing more to take."""

    @abstractmethod
    def _runs_named(self, run_id: str) -> list[tuple[Any, ...]]:
        """The run rows whose id is ``run_id``, or else the first 11 (by id) it is a literal prefix of."""

    @abstractmethod
    def _verified_hashes(self, info: RunInfo) -> list[str]:
        """The event hashes of the run's whole log, its chain checked; :class:`LogCorrupt` if it does not hold."""

    def _verified_since(self, info: RunInfo, since: Head) -> list[str] | None:
        """The event hashes by seq, the chain checked from ``since`` (a head verified before) to the run's head;
        None when this store does not read a log from a head (this one: the whole log is verified instead), or the
        rows from there do not vouch for it."""
        return None

    @abstractmethod
    def _events_in(
        self, run_id: str, *, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[E]:
        """The run's events after seq ``after`` up to ``upto``, of ``kinds`` when given, in order."""

    @abstractmethod
    def _insert_run(self, cur: Any, run_id: str, task: str, parent: str | None, head: Head) -> None:
        """The run's row (its head ``head``, where the store keeps one); a run id taken already is
        :class:`RunExists` naming it (the caller's transaction rolls back)."""

    @abstractmethod
    def _append_locked(self, cur: Any, run_id: str, prepared: Sequence[Prepared], head: Head) -> list[E]:
        """``prepared`` chained after ``head`` and inserted (the head moved, a checkpoint signed if due), inside the
        caller's transaction: the events written."""

    @abstractmethod
    def append_many(
        self, run_id: str, items: Sequence[Emitted], *, durable: bool = True, expect: Head | None = None
    ) -> list[E]:
        """Append ``items`` to the run in one transaction (synced to disk when ``durable``), chained after its head;
        with ``expect`` (the head the caller saw) nothing is written and :class:`HeadMoved` raised if it moved."""

    @abstractmethod
    def checkpoints(self, run_id: str) -> list[Checkpoint]:
        """The run's signed checkpoints, oldest first."""

    # ---- the same over every store --------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @abstractmethod
    def close(self) -> None:
        """Release this store's leases and close its connection; must not fail."""

    @overload
    def append(self, run_id: str, event: Payload, *, expect: Head | None = None) -> E: ...
    @overload
    def append(self, run_id: str, event: str, payload: Mapping[str, Any], *, expect: Head | None = None) -> E: ...
    def append(
        self, run_id: str, event: Payload | str, payload: Mapping[str, Any] | None = None, *, expect: Head | None = None
    ) -> E:
        """Validate, chain and durably commit one event: a payload object, or a kind and its dict."""
        item: Emitted = event if isinstance(event, Payload) else (event, payload if payload is not None else {})
        return self.append_many(run_id, [item], expect=expect)[0]

    def create_run(
        self,
        task: str,
        first: Sequence[Emitted] = (),
        *,
        run_id: str | None = None,
        parent_run: str | None = None,
        lease: bool = False,
    ) -> str:
        """Create a run with its ``first`` events (and, with ``lease``, its lease) in one transaction.

        Invalid events raise before anything is written: no run without its first events.
        """
        prepared = prepare_all(self.redactor, first)
        return self._create(
            self.redactor.value(task), run_id or new_run_id(), parent_run, (-1, GENESIS), prepared, lease
        )

    def create_fork(
        self,
        task: str,
        forked: RunForked,
        rest: Sequence[Emitted] = (),
        *,
        run_id: str | None = None,
        lease: bool = False,
    ) -> str:
        """Create a run that goes on from ``forked.parent_run``'s log at ``forked.at_seq``: one transaction.

        The parent's events up to that seq are the fork's prefix (shared, not copied): the fork's head starts
        at the parent's (seq, hash) there, so ``run.forked`` chains onto it. Refused when the parent has no
        event at that seq or its hash there is not ``forked.parent_hash`` (the parent moved or was rewritten).
        A parent named by a unique prefix of its id is named by its id in ``run.forked``, which is what a reader
        follows to the parent's events (the prefix there made a log of the fork's own events alone).
        """
        prepared = prepare_all(self.redactor, (forked, *rest))
        parent = self._fork_parent(forked)
        if forked.parent_run != parent.run_id:  # validated again (a copy is not fresh)
            prepared[0] = prepare_all(self.redactor, [forked.model_copy(update={"parent_run": parent.run_id})])[0]
        task = self.redactor.value(task)
        run_id = run_id or new_run_id()
        head = (forked.at_seq, forked.parent_hash)
        return self._create(task, run_id, parent.run_id, head, prepared, lease, (parent, forked))

    def _create(
        self,
        task: str,
        run_id: str,
        parent: str | None,
        head: Head,
        prepared: Sequence[Prepared],
        lease: bool,
        fork: tuple[RunInfo, RunForked] | None = None,
    ) -> str:
        """A run's row and its first events (a ``fork``'s base checked first, in the same transaction:
        :meth:`_check_fork_base`), with ``lease`` its lease; then, with ``lease``, the heartbeat."""
        with self._transaction() as cur:
            self._lock_run(cur, run_id)
            if fork is not None:
                self._check_fork_base(*fork)
            self._insert_run(cur, run_id, task, parent, head)
            if prepared:
                self._append_locked(cur, run_id, prepared, head)
            taken = self._lease_locked(cur, run_id) if lease else None
        if taken is not None:
            self._hold(taken)
        return run_id

    def _fork_parent(self, forked: RunForked) -> RunInfo:
        """The run a fork goes on from; refused when it has no event at the fork's seq."""
        parent = self.run(forked.parent_run)
        at = forked.at_seq
        if at > parent.head_seq:
            raise InputError(f"run {parent.run_id} has no event seq {at} (its last is {parent.head_seq})")
        return parent

    def _check_fork_base(self, parent: RunInfo, forked: RunForked) -> None:
        """Refuse a fork whose parent's event at the fork's seq does not have the hash the fork names (the parent
        was rewritten: its events up to that seq never change otherwise)."""
        at = forked.at_seq
        found = self._events_in(parent.run_id, after=at - 1, upto=at)
        if not found or found[0].hash != forked.parent_hash:
            raise InputError(
                f"run {parent.run_id}: event seq {at} does not have the hash the fork names "
                f"({forked.parent_hash}); see `tether log verify {parent.run_id}`"
            )

    def _sign_locked(
        self, cur: Executes, run_id: str, rows: Sequence[tuple[Any, Logged]], base_seq: int, seq: int, prev: str
    ) -> None:
        """A checkpoint of the new head, when the signer says one is due (written after the commit)."""
        if self.signer is not None and self.signer.due(base_seq, seq, (e.kind for _, e in rows)):
            cp = self.signer.sign(run_id, seq, prev, now_iso())
            cur.execute(self.SQL_ANCHOR, (cp.run_id, cp.seq, cp.hash, cp.key_id, cp.signed_at, cp.signature))
            self._pending_anchor.append(cp)

    def _adopt_rows(self, cur: Executes, rows: Sequence[tuple[Any, ...]], blobs: Iterable[bytes]) -> None:
        """An import's events (each new one inserted, each already here the same) and its blobs."""
        for row in rows:
            found = cur.execute(self.SQL_HASH_AT, (row[0], row[1])).fetchone()
            if found is None:
                cur.execute(self.SQL_EVENT, stored(row))
            elif found[0] != row[6]:
                raise InputError(
                    f"{self.where}: run {row[0]} is already here with a different event seq {row[1]}; "
                    "import into another store"
                )
        for data in blobs:
            cur.execute(self.SQL_BLOB, (bytes_hash(data), len(data), data))

    # ---- the lease: one driver per run ------------------------------------------------------------

    def acquire(self, run_id: str, ttl_s: float = LEASE_TTL_S) -> Lease:
        """Take the run's lease, or take over a dead holder's, in one transaction; else :class:`RunLeased`."""
        with self._transaction() as cur:
            self._lock_run(cur, run_id)
            lease = self._lease_locked(cur, run_id, ttl_s)
        self._hold(lease)
        return lease

    def _hold(self, lease: Lease) -> None:
        """A lease whose row is committed is this store's, and is kept alive: only then (a transaction that failed
        after writing the row left none, and ``holds`` must not say otherwise)."""
        self._leases[lease.run_id] = lease
        self._start_heartbeat()

    def _lease_row(self, cur: Executes, run_id: str) -> Any:
        """The run's lease row, or None (SQLite's store names a row that is not UTF-8 text)."""
        return cur.execute(self.SQL_LEASE, (run_id,)).fetchone()

    def _lease_locked(self, cur: Executes, run_id: str, ttl_s: float = LEASE_TTL_S) -> Lease:
        """Write the run's lease row for this store (refused while another live driver holds it); the caller's
        transaction commits it, then :meth:`_hold`."""
        row = self._lease_row(cur, run_id)
        mine = self._leases.get(run_id)
        if row is not None:
            held = Lease(*row)
            if (mine is None or held.owner != mine.owner) and not holder_is_gone(held, this_host(), time.time()):
                raise RunLeased(run_id, held.describe())
        pid = os.getpid()
        lease = Lease(run_id, uuid4_hex(), this_host(), pid, process_start(pid) or "", now_iso(), time.time(), ttl_s)
        cur.execute(
            self.SQL_PUT_LEASE,
            (lease.run_id, lease.owner, lease.host, lease.pid, lease.pid_start, lease.since, lease.heartbeat, ttl_s),
        )
        return lease

    def _check_lease_locked(self, cur: Executes, run_id: str) -> None:
        row = self._lease_row(cur, run_id)
        if row is None or row[1] != self._leases[run_id].owner:
            del self._leases[run_id]
            holder = Lease(*row).describe() if row else "nobody (the lease was released)"
            raise RunLeased(run_id, f"{holder}; this driver's lease was taken over, so it stops")

    def holds(self, run_id: str) -> bool:
        """Whether this store holds the run's lease (as far as it knows; appends check the row itself)."""
        return run_id in self._leases

    def release(self, run_id: str) -> None:
        """Give the run's lease back (a no-op if this store does not hold it)."""
        lease = self._leases.pop(run_id, None)
        if not self._leases:
            self._stop_heartbeat()
        if lease is not None:
            with self._transaction() as cur:
                self._lock_run(cur, run_id)
                cur.execute(self.SQL_DROP_LEASE, (run_id, lease.owner))

    def _start_heartbeat(self) -> None:
        """While this store holds leases, refresh their heartbeat (a holder on another host is judged by it)."""
        if self._heartbeat is None and self._leases:
            self._heartbeat = Heartbeat(min(lease.ttl_s for lease in self._leases.values()) / 3, self._beat)

    def _beat(self) -> None:
        # Not synced: a heartbeat lost to a power cut only makes its (dead) holder look dead sooner.
        with self._transaction(durable=False) as cur:
            for run_id, lease in list(self._leases.items()):
                cur.execute(self.SQL_BEAT, (time.time(), run_id, lease.owner))

    def _stop_heartbeat(self) -> None:
        beat, self._heartbeat = self._heartbeat, None
        if beat is not None:
            beat.stop()

    # ---- reading --------------------------------------------------------------------------------

    def events(
        self, run_id: str, *, after: int = -1, upto: int | None = None, kinds: Collection[str] | None = None
    ) -> list[E]:
        """The run's log after seq ``after`` up to seq ``upto`` (only the events of ``kinds``, when given), each
        payload parsed into its model (:meth:`Event.from_row`); a fork's starts with its parent's events up to
        the fork point. A whole log a page at a time: :func:`tether.events.stream.stream`."""
        return self._events_in(run_id, after=after, upto=upto, kinds=kinds)

    def head(self, run_id: str) -> Head:
        info = self.run(run_id)
        return info.head_seq, info.head_hash

    def run(self, run_id: str) -> RunInfo:
        """A run by exact id or unique prefix (a literal prefix: no character is a wildcard)."""
        if not run_id:
            raise InputError(f"{self.where}: empty run id; see `tether runs`")
        rows = self._runs_named(run_id)
        if len(rows) == 1:
            return RunInfo(*rows[0])
        if not rows:
            raise InputError(f"{self.where}: no run {run_id!r}; see `tether runs`")
        names = ", ".join(r[0] for r in rows[:10]) + (", …" if len(rows) > 10 else "")
        raise InputError(f"{self.where}: run id prefix {run_id!r} is ambiguous; it matches {names}")

    def verify(self, run_id: str) -> int:
        """Recompute the chain; return the number of events. Raises :class:`LogCorrupt`."""
        with self._snapshot():
            return len(self._verified_hashes(self.run(run_id)))

    def verify_run(
        self, run_id: str, key: AnchorKey | None = None, anchor_file: Path | None = None, *, since: Head | None = None
    ) -> Audit:
        """The chain, then every signed checkpoint (database and anchor file) against it.

        The key and anchor file default to the store's signer's. Raises :class:`LogCorrupt` naming the
        first bad seq, or the first signed checkpoint that no longer matches. Without a key the audit's
        limits say what could not be detected.

        ``since``: a head ``(seq, hash)`` the caller vouches was verified before (a cold hook call's fold
        checkpoint: guard/checkpoint.py ``Pending.mark``). The chain is then recomputed from it only, when this store
        can and the row at that seq still has that hash (``Audit.base``); the signed checkpoints before it are not
        checked again. In any other case the whole log is verified, as without it.
        """
        if key is None and self.signer is not None:
            key, anchor_file = self.signer.key, self.signer.anchor_file
        with self._snapshot():
            info = self.run(run_id)
            hashes = None if since is None else self._verified_since(info, since)
            base = 0 if hashes is None or since is None else since[0]
            if hashes is None:
                hashes = self._verified_hashes(info)
            checkpoints = self.checkpoints(info.run_id)
        if key is not None and anchor_file is not None:
            checkpoints += read_anchor_file(anchor_file, info.run_id)
        if base:
            checkpoints = [cp for cp in checkpoints if cp.seq >= base]
        report = check_anchor(info.run_id, hashes, checkpoints, key)
        first = hashes[0] if hashes else ""
        return Audit(info.run_id, len(hashes), (info.head_seq, info.head_hash), report, first, hashes, base)
