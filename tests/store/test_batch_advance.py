"""SQLite's ``append_batch`` checks the run's head and lease and moves the head in one UPDATE; when that UPDATE
moves nothing, the checks run one by one to say what failed. Each failure writes nothing and names its cause,
in the order the checks always ran: the run, then its head, then the lease."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.errors import HeadMoved, InputError, RunLeased
from tether.events.store import Batch, EventStore

STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


def turn(i: int) -> tuple[str, dict[str, object]]:
    return ("model.requested", {"turn": i, "model": "scripted:x"})


def staged(store: EventStore, run: str, *turns: int) -> Batch:
    batch = Batch(run, store.head(run))
    batch.add(store.redactor, [turn(i) for i in turns], durable=True)
    return batch


def rows(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])
    finally:
        conn.close()


def test_batches_in_a_row_move_the_head_each_time(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED], lease=True)
    for i in range(5):
        batch = staged(store, run, 2 * i, 2 * i + 1)
        store.append_batch(batch)
        assert store.head(run) == batch.head
    assert store.verify(run) == 11
    store.release(run)


def test_a_batch_for_an_unknown_run_writes_nothing(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED])
    batch = staged(store, run, 1)
    ghost = Batch("no-such-run", batch.base, batch.rows, durable=True)
    with pytest.raises(InputError, match="unknown run 'no-such-run'"):
        store.append_batch(ghost)
    assert rows(tmp_path / "t.db") == 1


def test_a_moved_head_is_reported_before_a_lost_lease(tmp_path: Path) -> None:
    """Both failed: the head is named, as the checks one by one always did."""
    first, second = EventStore.open(tmp_path / "t.db"), EventStore.open(tmp_path / "t.db")
    run = first.create_run("t", [STARTED], lease=True)
    batch = staged(first, run, 1)
    held = first._leases[run]
    first.release(run)
    first._leases[run] = held  # it still believes it holds the lease
    second.acquire(run)
    second.append(run, *turn(9))
    with pytest.raises(HeadMoved):
        first.append_batch(batch)
    assert [e.payload["turn"] for e in second.events(run)[1:]] == [9]
    second.release(run)


def test_a_lease_row_deleted_behind_the_driver_stops_it(tmp_path: Path) -> None:
    """Nobody holds the lease now: the head is where the batch began, the UPDATE's lease clause moves nothing."""
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED], lease=True)
    batch = staged(store, run, 1)
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("DELETE FROM leases")
    conn.commit()
    conn.close()
    with pytest.raises(RunLeased, match="nobody"):
        store.append_batch(batch)
    assert store.head(run)[0] == 0 and rows(tmp_path / "t.db") == 1
    assert run not in store._leases  # it knows it lost the lease: it stops


def test_a_head_hash_spelled_otherwise_is_a_moved_head(tmp_path: Path) -> None:
    """A runs row whose head hash was rewritten (upper case) matches no batch: refused, nothing written."""
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED])
    batch = staged(store, run, 1)
    conn = sqlite3.connect(tmp_path / "t.db")
    conn.execute("UPDATE runs SET head_hash=upper(head_hash)")
    conn.commit()
    conn.close()
    with pytest.raises(HeadMoved):
        store.append_batch(batch)
    assert rows(tmp_path / "t.db") == 1
