"""One driver per run: the lease, compare-and-append, atomic run creation, schema migration."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from oldschema import downgrade

from tether.errors import HeadMoved, RunLeased
from tether.events.chain import GENESIS
from tether.events.lease import this_host
from tether.events.payload import InvalidPayload
from tether.events.store import EventStore

STARTED = ("run.started", {"task": "t"})


def req(i: int) -> tuple[str, dict[str, object]]:
    return "model.requested", {"turn": i, "model": "x"}


def test_create_run_writes_the_run_and_its_first_events_together(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    with pytest.raises(InvalidPayload):
        store.create_run("t", [STARTED, ("model.requested", {"turn": "zero"})])
    assert store.runs() == []  # rejected input wrote nothing: no orphan run
    run = store.create_run("t", [STARTED, req(0)])
    assert [e.kind for e in store.events(run)] == ["run.started", "model.requested"]
    assert store.verify(run) == 2


def test_an_append_on_a_moved_head_fails_instead_of_forking(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED])
    head = store.head(run)
    assert store.append(run, *req(0), expect=head).seq == 1
    with pytest.raises(HeadMoved, match="head moved") as info:
        store.append_many(run, [req(1), req(2)], expect=head)  # a second writer that read the old head
    assert info.value.found == store.head(run)
    assert store.verify(run) == 2  # nothing half-written
    with pytest.raises(HeadMoved):
        store.append(run, *req(1), expect=(-1, GENESIS))


def test_a_second_driver_is_refused_naming_the_holder(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    a = EventStore.open(db)
    run = a.create_run("t", [STARTED], lease=True)
    b = EventStore.open(db)
    with pytest.raises(RunLeased) as info:
        b.acquire(run)
    assert f"pid {os.getpid()} on {this_host()}" in str(info.value)
    a.append(run, *req(0))
    a.release(run)
    b.acquire(run)  # free once released
    with pytest.raises(RunLeased):
        a.acquire(run)


def test_a_driver_whose_lease_was_taken_over_cannot_append(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    a = EventStore.open(db)
    run = a.create_run("t", [STARTED])
    a.acquire(run)
    conn = sqlite3.connect(db)  # another driver decided we were dead and took over
    conn.execute("UPDATE leases SET owner='someone-else', pid=1, host='elsewhere', heartbeat=? ", (time.time(),))
    conn.commit()
    with pytest.raises(RunLeased, match="taken over"):
        a.append(run, *req(0))
    assert a.verify(run) == 1


def test_a_dead_holders_lease_is_taken_over(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = EventStore.open(db)
    run = store.create_run("t", [STARTED])
    holder = (
        "import os, sys; from tether.events.store import EventStore;"
        "s = EventStore.open(sys.argv[1]); s.acquire(sys.argv[2]); os._exit(0)"  # dies holding it
    )
    subprocess.run([sys.executable, "-c", holder, str(db), run], check=True, timeout=60)
    assert store.lease(run) is not None
    store.acquire(run)  # the pid is gone: taken over
    lease = store.lease(run)
    assert lease is not None and lease.pid == os.getpid()


def test_liveness_is_judged_by_pid_on_this_host_and_by_heartbeat_elsewhere(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store = EventStore.open(db)
    run = store.create_run("t", [STARTED])
    conn = sqlite3.connect(db)

    def holder(host: str, pid: int, pid_start: str, heartbeat: float) -> None:
        conn.execute("DELETE FROM leases")
        conn.execute(
            "INSERT INTO leases VALUES (?,?,?,?,?,?,?,?)", (run, "x" * 32, host, pid, pid_start, "then", heartbeat, 30)
        )
        conn.commit()

    holder("elsewhere", 1, "", time.time())  # a fresh heartbeat on another host: alive
    with pytest.raises(RunLeased, match="on elsewhere"):
        store.acquire(run)
    holder("elsewhere", 1, "", time.time() - 60)  # stale heartbeat: gone
    store.acquire(run)
    store.release(run)
    holder(this_host(), os.getpid(), "1", time.time())  # our pid, but another process's start time: reused pid
    store.acquire(run)
    store.release(run)
    parent = os.getppid()  # alive on this host, however old its heartbeat: never taken over
    holder(this_host(), parent, "", 0.0)
    with pytest.raises(RunLeased):
        store.acquire(run)


def test_the_holder_keeps_its_heartbeat_fresh(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", [STARTED])
    first = store.acquire(run, ttl_s=0.3).heartbeat
    deadline = time.monotonic() + 10
    while (lease := store.lease(run)) is not None and lease.heartbeat == first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lease is not None and lease.heartbeat > first
    store.close()
    assert EventStore.open(tmp_path / "t.db").lease(run) is None  # closing released it


def test_a_database_made_by_schema_1_is_read_as_is_and_migrated_by_a_writer(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [STARTED, req(0)])
    downgrade(db, 1)  # exactly what the schema-1 code made: no leases, no anchors, prev_hash and hash as text
    with EventStore.open(db, readonly=True) as ro:
        assert ro.verify(run) == 2 and ro.checkpoints(run) == [] and ro.lease(run) is None
    assert sqlite3.connect(db).execute("SELECT value FROM meta").fetchone()[0] == "tether/1"  # untouched
    with EventStore.open(db) as store:
        store.acquire(run)
        store.append(run, *req(1))
        assert store.verify(run) == 3
    assert sqlite3.connect(db).execute("SELECT value FROM meta").fetchone()[0] == "tether/3"
