"""A fork's log: the parent's prefix is shared (not copied) and verified as part of the fork's chain."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tether.errors import InputError, LogCorrupt
from tether.events.kinds import RunForked
from tether.events.store import EventStore
from tether.state import RunState


def make_run(store: EventStore, n: int = 5) -> str:
    run = store.create_run("demo task")
    store.append(run, "run.started", {"task": "demo task", "workspace": "/parent", "budgets": {"turns": 10}})
    for i in range(n):
        store.append(run, "model.requested", {"turn": i, "model": "scripted:x"})
    return run


def fork(store: EventStore, parent: str, at: int, n: int = 2, workspace: str = "/fork") -> str:
    at_hash = store.events(parent)[at].hash
    run = store.create_fork(
        "demo task", RunForked(parent_run=parent, at_seq=at, parent_hash=at_hash, workspace=workspace, by="t")
    )
    for i in range(n):
        store.append(run, "model.requested", {"turn": 100 + i, "model": "scripted:y"})
    return run


def tamper(db: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_the_prefix_is_shared_not_copied_and_the_chain_runs_through_it(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        parent = make_run(store)
        child = fork(store, parent, at=2)
        events = store.events(child)
        assert [(e.run_id, e.seq) for e in events] == [(parent, 0), (parent, 1), (parent, 2)] + [
            (child, s) for s in (3, 4, 5)
        ]
        assert events[3].kind == "run.forked" and events[3].prev_hash == events[2].hash
        assert store.verify(child) == 6 and store.verify(parent) == 6
        assert store.run(child).parent_run == parent
        copied = store._conn.execute("SELECT count(*) FROM events WHERE run_id=?", (child,)).fetchone()[0]
        assert copied == 3  # run.forked and its own two: the prefix rows stay the parent's
        assert [e.seq for e in store.events(child, after=1)] == [2, 3, 4, 5]
        state = RunState.from_events(events)
        assert (state.run_id, state.workspace, state.last_seq) == (child, "/fork", 5)


def test_fork_verify_catches_a_tampered_parent_prefix(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        parent = make_run(store)
        child = fork(store, parent, at=3)
    tamper(db, "UPDATE events SET payload=? WHERE run_id=? AND seq=1", ('{"model":"x","turn":9}', parent))
    with EventStore.open(db) as store, pytest.raises(LogCorrupt) as info:
        store.verify(child)
    assert info.value.seq == 1 and parent in str(info.value)


def test_a_parent_edit_after_the_fork_point_is_not_the_forks(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        parent = make_run(store)
        child = fork(store, parent, at=2)
    tamper(db, "UPDATE events SET payload=? WHERE run_id=? AND seq=4", ('{"model":"x","turn":9}', parent))
    with EventStore.open(db) as store:
        assert store.verify(child) == 6
        with pytest.raises(LogCorrupt):
            store.verify(parent)


def test_a_rewritten_parent_prefix_breaks_the_link_to_the_fork(tmp_path: Path) -> None:
    """An attacker who rewrites the parent and recomputes its hashes still breaks the fork's first link."""
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        parent = make_run(store, n=2)
        child = fork(store, parent, at=2)
    tamper(db, "DELETE FROM events WHERE run_id=? AND seq=2", (parent,))
    with EventStore.open(db) as store, pytest.raises(LogCorrupt) as info:
        store.verify(child)
    assert info.value.seq == 2


def test_a_fork_needs_the_parents_event_and_hash(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        parent = make_run(store, n=2)
        with pytest.raises(InputError, match="no event seq 9"):
            store.create_fork("t", RunForked(parent_run=parent, at_seq=9, parent_hash="0" * 64, workspace="/w"))
        with pytest.raises(InputError, match="does not have the hash"):
            store.create_fork("t", RunForked(parent_run=parent, at_seq=1, parent_hash="0" * 64, workspace="/w"))
        assert [r.run_id for r in store.runs()] == [parent]  # nothing half-created


def test_forks_of_forks_nest(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        root = make_run(store)
        child = fork(store, root, at=3)  # root 0..3, child 4..6
        grandchild = fork(store, child, at=5)  # root 0..3, child 4..5, own 6..
        before_first = fork(store, child, at=1)  # root 0..1, own 2..
        assert store.lineage(grandchild) == [(root, 0, 3), (child, 4, 5), (grandchild, 6, 2**63 - 1)]
        assert [e.run_id for e in store.events(grandchild)] == [root] * 4 + [child] * 2 + [grandchild] * 3
        assert [e.run_id for e in store.events(before_first)] == [root] * 2 + [before_first] * 3
        for run in (root, child, grandchild, before_first):
            store.verify(run)


def test_tether_runs_draws_the_family_tree(tmp_path: Path) -> None:
    import subprocess
    import sys

    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        root = make_run(store)
        other = make_run(store)
        child = fork(store, root, at=3)
        grandchild = fork(store, child, at=5)
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "runs", "--db", str(db)], capture_output=True, text=True, check=True
    ).stdout
    ids = (root, other, child, grandchild)
    names = [line.split("│")[-2][1:].rstrip() for line in out.splitlines() if any(r in line for r in ids)]
    assert names == [root, "└─ " + child, "   └─ " + grandchild, other], out
