"""The store conformance suite: the guarantees of tether's store protocol (events/protocol.py), checked only
through the protocol, so that every store runs the same tests.

``backend`` opens stores on one backend: a second ``open_store()`` is another process's view of the same log
(another connection), which is how the races and the lease are attacked. Every test runs on SQLite and on
PostgreSQL (a schema of its own on the worker's throwaway server, opened as the insert-only role). Tests that
need a backend's own access (editing rows behind the store's back) stay in that store's own tests
(tests/test_eventlog.py for SQLite, tests/store/test_pgstore.py for PostgreSQL).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from tether.canonical import bytes_hash
from tether.errors import HeadMoved, InputError, LogCorrupt, RunLeased
from tether.events import Store, open_store
from tether.events.kinds import RunForked
from tether.events.store import Batch, Event, EventStore
from tether.events.stream import PagedLog, stream, stream_back

OpenStore = Callable[[], Store]
STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


def turn(i: int) -> tuple[str, dict[str, object]]:
    return ("model.requested", {"turn": i, "model": "scripted:x"})


def _sqlite(request: pytest.FixtureRequest, where: Path) -> OpenStore:
    return lambda: EventStore.open(where / "tether.db")


def _postgres(request: pytest.FixtureRequest, where: Path) -> OpenStore:
    """A schema of its own on the worker's server, opened as the insert-only application role."""
    url = request.getfixturevalue("postgres").tether_store()
    return lambda: open_store(url, local=where)


@pytest.fixture(params=[_sqlite, pytest.param(_postgres, marks=pytest.mark.postgres)], ids=["sqlite", "postgres"])
def backends(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], OpenStore]]:
    """Backends of the kind under test, by name: each a store location of its own (closed at the end)."""
    opened: list[Store] = []

    def backend(name: str) -> OpenStore:
        (tmp_path / name).mkdir(exist_ok=True)
        open_at: OpenStore = request.param(request, tmp_path / name)

        def open_store() -> Store:
            opened.append(open_at())
            return opened[-1]

        return open_store

    yield backend
    for store in opened:
        store.close()


@pytest.fixture
def backend(backends: Callable[[str], OpenStore]) -> OpenStore:
    return backends("main")


@pytest.fixture
def store(backend: OpenStore) -> Store:
    return backend()


def test_a_run_is_one_hash_chain_from_genesis(store: Store) -> None:
    run = store.create_run("t", [STARTED])
    store.append_many(run, [turn(i) for i in range(4)])
    events = store.events(run)
    assert [e.seq for e in events] == list(range(5))
    assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(events))
    assert store.head(run) == (4, events[-1].hash)
    assert store.verify(run) == 5
    assert store.verify_run(run).events == 5
    assert [r[1] for r in store.rows(run)] == list(range(5))


def test_compare_and_append_on_a_moved_head_writes_nothing(store: Store) -> None:
    run = store.create_run("t", [STARTED])
    seen = store.head(run)
    store.append(run, *turn(1), expect=seen)
    with pytest.raises(HeadMoved):
        store.append_many(run, [turn(2), turn(3)], expect=seen)  # a stale writer: none of its batch lands
    assert [e.seq for e in store.events(run)] == [0, 1]
    assert store.verify(run) == 2


def test_a_batch_chained_in_memory_is_written_whole_as_it_was_chained(store: Store) -> None:
    """The runtime stages a step's events (Batch) and writes them in one transaction: the store writes exactly
    the events the batch numbered, timed and hashed, so what the runtime folded is what the log holds."""
    run = store.create_run("t", [STARTED])
    batch = Batch(run, store.head(run))
    staged = batch.add(store.redactor, [turn(1), turn(2)]) + batch.add(store.redactor, [turn(3)], durable=True)
    assert batch.durable and store.head(run)[0] == 0  # nothing written while it is staged
    store.append_batch(batch)
    assert store.events(run)[1:] == staged
    assert store.head(run) == batch.head == staged[-1].head
    assert store.verify(run) == 4
    store.append_batch(Batch(run, store.head(run)))  # an empty batch writes nothing and moves nothing
    assert store.head(run) == batch.head


def test_a_batch_on_a_moved_head_writes_none_of_it(backend: OpenStore) -> None:
    """Another writer appended after the batch was begun: HeadMoved, and not one of its events lands."""
    mine, other = backend(), backend()
    run = mine.create_run("t", [STARTED])
    batch = Batch(run, mine.head(run))
    batch.add(mine.redactor, [turn(1), turn(2)], durable=True)
    other.append(run, *turn(9))
    with pytest.raises(HeadMoved):
        mine.append_batch(batch)
    assert [e.payload["turn"] for e in mine.events(run)[1:]] == [9]
    assert mine.verify(run) == 2


def test_a_batch_of_a_driver_whose_lease_is_gone_writes_nothing(backend: OpenStore) -> None:
    """A driver whose lease row is no longer its own cannot write its staged step."""
    first, second = backend(), backend()
    run = first.create_run("t", [STARTED], lease=True)
    batch = Batch(run, first.head(run))
    batch.add(first.redactor, [turn(1)])
    release_behind_its_back(first, run)
    second.acquire(run)
    with pytest.raises(RunLeased):
        first.append_batch(batch)
    assert first.head(run)[0] == 0
    second.release(run)


def release_behind_its_back(store: Store, run: str) -> None:
    """Free the run's lease row as if its holder had died, while ``store`` still believes it holds it."""
    held = store._leases[run]  # type: ignore[attr-defined]
    store.release(run)
    store._leases[run] = held  # type: ignore[attr-defined]


def test_racing_writers_on_one_head_exactly_one_wins(backend: OpenStore) -> None:
    """Eight connections append on the same head at once: one event lands, seven see HeadMoved."""
    run = backend().create_run("t", [STARTED])
    stores = [backend() for _ in range(8)]
    head = stores[0].head(run)
    results: list[str] = []
    gate = threading.Barrier(len(stores))

    def write(s: Store, i: int) -> None:
        gate.wait()
        try:
            s.append(run, *turn(i), expect=head)
            results.append("won")
        except HeadMoved:
            results.append("moved")

    threads = [threading.Thread(target=write, args=(s, i)) for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == ["moved"] * 7 + ["won"]
    assert stores[0].verify(run) == 2


def test_a_bad_event_in_a_batch_writes_none_of_it(store: Store) -> None:
    run = store.create_run("t", [STARTED])
    with pytest.raises(InputError):
        store.append_many(run, [turn(1), ("model.requested", {"turn": "not a number"})])
    assert store.head(run)[0] == 0


def test_a_run_is_created_with_its_first_events_or_not_at_all(store: Store) -> None:
    with pytest.raises(InputError):
        store.create_run("t", [STARTED, ("no.such.kind", {})], run_id="r-half")
    with pytest.raises(InputError):
        store.run("r-half")
    assert store.runs() == []


def test_the_newest_runs_are_the_last_of_all_oldest_first(store: Store) -> None:
    """``runs(newest=n)``: what a hook session's first call reads to find the workspace's latest earlier session
    (hooks/earlier.py), the tail of ``runs()`` without reading a long-lived store's every run."""
    made = [store.create_run(f"t{i}", [STARTED], run_id=f"r-{i}") for i in range(5)]
    assert [r.run_id for r in store.runs()] == made
    assert [r.run_id for r in store.runs(newest=2)] == made[-2:]
    assert [r.run_id for r in store.runs(newest=9)] == made and store.runs(newest=0) == []


def test_a_run_id_starts_one_run_only(store: Store) -> None:
    """A caller that names its run (a schedule's trigger, a graph node's attempt) gets a second creation
    refused as an input error naming the id, with the first run and its log untouched."""
    store.create_run("first", [STARTED], run_id="r-once")
    head = store.head("r-once")
    with pytest.raises(InputError, match="r-once already exists"):
        store.create_run("second", [STARTED, turn(1)], run_id="r-once")
    parent = store.events("r-once")[0]
    forked = RunForked(parent_run="r-once", at_seq=parent.seq, parent_hash=parent.hash, workspace="/w")
    with pytest.raises(InputError, match="r-once already exists"):
        store.create_fork("again", forked, run_id="r-once")
    assert store.head("r-once") == head and store.run("r-once").task == "first"
    assert store.verify("r-once") == 1


def test_runs_are_found_by_id_or_unique_literal_prefix(store: Store) -> None:
    a = store.create_run("a", run_id="run-a1")
    store.create_run("b", run_id="run-a2")
    assert store.run("run-a1").run_id == a
    with pytest.raises(InputError, match="ambiguous"):
        store.run("run-a")
    with pytest.raises(InputError, match="no run"):
        store.run("run-%")  # a literal prefix: no wildcard
    with pytest.raises(InputError):
        store.append("nope", *turn(0))


def test_blobs_are_content_addressed(store: Store) -> None:
    data = b"\x00 output \xff" * 1000
    h = store.put_blob(data)
    assert h == bytes_hash(data)
    assert store.put_blob(data) == h  # the same bytes, the same blob
    assert store.get_blob(h) == data
    with pytest.raises(InputError):
        store.get_blob(bytes_hash(b"never stored"))


def test_one_driver_per_run(backend: OpenStore) -> None:
    first, second = backend(), backend()
    run = first.create_run("t", [STARTED], lease=True)
    assert first.holds(run)
    held = first.lease(run)
    assert held is not None
    with pytest.raises(RunLeased):
        second.acquire(run)  # a live holder is never taken over
    assert not second.holds(run)
    first.append(run, *turn(1))
    first.release(run)
    assert second.lease(run) is None
    taken = second.acquire(run)
    assert taken.owner != held.owner
    assert first.lease(run) == taken


def test_a_fork_shares_its_parents_prefix_and_verifies(store: Store) -> None:
    parent = store.create_run("p", [STARTED, turn(1), turn(2)])
    at = store.events(parent)[1]
    fork = store.create_fork(
        "f", RunForked(parent_run=parent, at_seq=1, parent_hash=at.hash, workspace="/w", by="t"), [turn(9)]
    )
    assert [(e.run_id, e.seq) for e in store.events(fork)] == [(parent, 0), (parent, 1), (fork, 2), (fork, 3)]
    assert store.lineage(fork)[0] == (parent, 0, 1)
    assert store.lineage(fork)[1][:2] == (fork, 2)  # the fork's own segment is open-ended
    assert store.verify(fork) == 4
    with pytest.raises(InputError, match="does not have the hash"):
        store.create_fork("f", RunForked(parent_run=parent, at_seq=1, parent_hash="0" * 64, workspace="/w"))
    assert len(store.runs()) == 2  # nothing half-created


class _CountingReads:
    def __init__(self, store: Store) -> None:
        self.store, self.reads = store, 0

    def events(self, *args: Any, **kwargs: Any) -> list[Event]:
        self.reads += 1
        return self.store.events(*args, **kwargs)


def test_a_log_read_in_pages_is_the_log(store: Store) -> None:
    """stream / PagedLog (what a long run's whole-history readers use): every page size, a fork's prefix, ranges,
    kinds, backwards, indexing and slicing give exactly what one whole read gives."""
    parent = store.create_run("p", [STARTED, *(turn(i) for i in range(1, 12))])
    at = store.events(parent)[6]
    fork = store.create_fork(
        "f", RunForked(parent_run=parent, at_seq=6, parent_hash=at.hash, workspace="/w", by="t"), [turn(99)]
    )
    store.append_many(fork, [turn(i) for i in range(100, 105)])
    for run in (parent, fork):
        whole = store.events(run)
        assert store.events(run, after=2, upto=8) == whole[3:9]
        assert store.events(run, after=5, upto=5) == []
        for page in (1, 2, 3, 7, 512):
            assert list(stream(store, run, page=page)) == whole
            assert list(stream(store, run, after=4, upto=9, page=page)) == whole[5:10]
            assert list(stream(store, run, kinds={"run.forked", "run.started"}, page=page)) == [
                e for e in whole if e.kind in {"run.forked", "run.started"}
            ]
            assert list(stream_back(store, run, upto=len(whole) - 1, page=page)) == whole[::-1]
            staged = [Event("x", len(whole), "", "note", {})]
            view = PagedLog(store, run, lambda w=whole, s=staged: (len(w) - 1, s), page=page)
            full = [*whole, *staged]
            assert len(view) == len(full) and list(view) == full and list(reversed(view)) == full[::-1]
            assert [view[i] for i in range(-len(full), len(full))] == full + full
            for sl in (slice(None), slice(3, 9), slice(-4, None), slice(None, None, 3), slice(None, None, -2)):
                assert view[sl] == full[sl], sl
            with pytest.raises(IndexError):
                view[len(full)]
            counting = _CountingReads(store)  # an index scan reads a page per page, not a query per event
            view = PagedLog(cast(Store, counting), run, lambda w=whole: (len(w) - 1, []), page=page)
            assert [view[i] for i in reversed(range(len(whole)))] == whole[::-1]
            assert counting.reads == -(-len(whole) // page)
    with pytest.raises(InputError):
        list(stream(store, parent, page=0))


def test_an_exported_run_is_adopted_whole_by_another_store(backends: Callable[[str], OpenStore]) -> None:
    source, target = backends("source")(), backends("target")()
    run = source.create_run("t", [STARTED, turn(1)])
    blob = source.put_blob(b"artifact")
    forged = [*source.rows(run)[:1], (*source.rows(run)[1][:4], '{"turn": 2, "model": "x"}', *source.rows(run)[1][5:])]
    with pytest.raises(LogCorrupt):
        target.adopt([source.run(run)], forged, [], origin="x.tar.gz")  # edited: verified before commit, nothing lands
    assert target.runs() == [] and target.imported(run) is None
    target.adopt([source.run(run)], source.rows(run), [source.get_blob(blob)], origin="x.tar.gz, unsigned")
    assert target.verify(run) == 2
    assert target.imported(run) == "x.tar.gz, unsigned" and source.imported(run) is None  # marked where it landed
    assert target.get_blob(blob) == b"artifact"
    with pytest.raises(InputError, match="already"):
        target.adopt([source.run(run)], source.rows(run), [], origin="a test")


def test_a_fork_made_with_its_lease_holds_it_and_a_refused_one_holds_nothing(backend: OpenStore) -> None:
    """create_run and create_fork are one code over both stores (StoreBase): a fork made with ``lease`` holds
    its lease from its creation's transaction on; one refused (its base's hash) leaves no run and no lease."""
    first, second = backend(), backend()
    parent = first.create_run("p", [STARTED, turn(1)], lease=True)
    at = first.events(parent)[1]
    fork = first.create_fork(
        "f", RunForked(parent_run=parent[:12], at_seq=1, parent_hash=at.hash, workspace="/w"), lease=True
    )
    assert first.holds(fork) and first.run(fork).parent_run == parent
    with pytest.raises(RunLeased):
        second.acquire(fork)
    bad = RunForked(parent_run=parent, at_seq=1, parent_hash="0" * 64, workspace="/w")
    with pytest.raises(InputError, match="does not have the hash"):
        second.create_fork("g", bad, run_id="r-refused", lease=True)
    assert not second.holds("r-refused") and second.lease("r-refused") is None
    with pytest.raises(InputError, match="no run"):
        second.run("r-refused")


def test_a_lease_whose_transaction_fails_is_not_held(backend: OpenStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lease's row written and then its transaction failing (as a COMMIT that fails): the store must not go on
    believing it holds the lease (``holds``), no row is left, and another driver takes the lease at once."""
    first, second = backend(), backend()
    run = first.create_run("t", [STARTED])
    written = type(first)._lease_locked

    def then_fail(self: Any, *args: Any, **kwargs: Any) -> Any:
        written(self, *args, **kwargs)
        raise OSError("the commit failed")

    monkeypatch.setattr(type(first), "_lease_locked", then_fail)
    with pytest.raises(OSError, match="the commit failed"):
        first.acquire(run)
    with pytest.raises(OSError, match="the commit failed"):
        first.create_run("u", [STARTED], run_id="r-unleased", lease=True)
    monkeypatch.undo()
    assert not first.holds(run) and first.lease(run) is None
    assert not first.holds("r-unleased")
    assert second.acquire(run).owner != ""
