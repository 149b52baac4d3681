"""Opening a store while other processes open, create or write it: they wait for each other, none fails.

Claude Code runs the hooks of parallel tool calls at once, so several cold processes open one new database
together. Setting a new file up writes (the WAL switch, the schema), and SQLite does not busy-wait the WAL
switch's lock upgrade: the store does that set-up under its writer lock, and a reader that finds the file
empty waits for that lock instead of calling it "not a tether database".
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tether.errors import NotATetherDatabase
from tether.events.store import EventStore

# Holds what a creator holds in the middle of making a new file: the writer lock and SQLite's write lock on
# the still-empty file (the WAL switch's transaction), until its stdin closes.
CREATOR_MIDWAY = """
import fcntl, sqlite3, sys
db = sys.argv[1]
lock = open(db + ".lock", "a")
fcntl.flock(lock, fcntl.LOCK_EX)
conn = sqlite3.connect(db, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("held", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""

# A real creator, paused inside its set-up: its first BEGIN IMMEDIATE is the schema's, after the WAL switch.
SLOW_CREATOR = """
import _sqlite3, sys, time
from tether.events.store import EventStore
connect = _sqlite3.connect  # what the store connects with (sqlite3's C part: events/store.py)
def pause(sql):
    if sql.startswith("BEGIN IMMEDIATE"):
        print("creating", flush=True)
        time.sleep(0.5)
def traced(*args, **kwargs):
    conn = connect(*args, **kwargs)
    conn.set_trace_callback(pause)
    return conn
_sqlite3.connect = traced
with EventStore.open(sys.argv[1]) as s:
    s.create_run("made")
"""

# One racer: imports first, says so, then opens one new database per round at the round's instant.
RACER = """
import os, sys, time
from tether.events.store import EventStore
base, role, rounds, gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
print("ready", flush=True)
t0 = float(sys.stdin.readline())
failed = []
for r in range(rounds):
    db = os.path.join(base, f"r{r}.db")
    t = t0 + r * gap
    time.sleep(max(0.0, t - time.time() - 0.002))
    while time.time() < t:
        pass
    try:
        if role == "writer":
            with EventStore.open(db) as s:
                run = s.create_run("race")
                s.append(run, "model.requested", {"turn": 0, "model": "x"})
        else:
            while not os.path.exists(db):
                time.sleep(0.0001)
            with EventStore.open(db, readonly=True) as s:
                s.runs()
    except Exception as e:
        failed.append(f"{role} round {r}: {type(e).__name__}: {e}")
print("\\n".join(failed), flush=True)
"""


def test_an_open_during_a_creators_set_up_waits_for_it_instead_of_failing(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    creator = subprocess.Popen(
        [sys.executable, "-c", CREATOR_MIDWAY, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert creator.stdout is not None and creator.stdin is not None
        assert creator.stdout.readline().strip() == "held"
        assert db.exists() and db.stat().st_size == 0
        threading.Timer(0.5, creator.stdin.close).start()  # the creator lets go half a second from now
        # before: the WAL switch's upgrade was refused at once, "database is locked", though the timeout was 10 s
        with EventStore.open(db, lock_timeout_s=60) as store:
            run = store.create_run("after the creator")
            assert store.verify(run) == 0
        assert creator.wait(timeout=60) == 0
    finally:
        creator.kill()
    with EventStore.open(db, readonly=True) as reader:
        assert [r.task for r in reader.runs()] == ["after the creator"]


def test_a_reader_that_finds_the_file_being_created_waits_for_its_creator(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    creator = subprocess.Popen([sys.executable, "-c", SLOW_CREATOR, str(db)], stdout=subprocess.PIPE, text=True)
    try:
        assert creator.stdout is not None and creator.stdout.readline().strip() == "creating"
        # the file exists, in WAL mode, without its tables yet: the reader waits for the creator's lock
        # (it used to fail: NotATetherDatabase, "an empty file")
        with EventStore.open(db, readonly=True, lock_timeout_s=60) as reader:
            assert [r.task for r in reader.runs()] in ([], ["made"])  # the schema is there; the run may be too
            assert creator.wait(timeout=60) == 0
            assert [r.task for r in reader.runs()] == ["made"]
    finally:
        creator.kill()


def test_a_reader_of_an_empty_file_nobody_is_creating_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    db.touch()
    Path(str(db) + ".lock").touch()
    with pytest.raises(NotATetherDatabase, match="an empty file"):
        EventStore.open(db, readonly=True, lock_timeout_s=60)


def test_eight_cold_processes_racing_on_new_databases_all_open_them(tmp_path: Path) -> None:
    """Six writers and two readers open each of 15 new databases at one instant; every open succeeds, and
    every database ends with the six writers' runs, each chain verifying."""
    roles = ["writer"] * 6 + ["reader"] * 2
    rounds, gap = 15, 0.15
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(tmp_path), role, str(rounds), str(gap)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for role in roles
    ]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        start = f"{time.time() + 0.3}\n"
        for p in procs:
            assert p.stdin is not None
            p.stdin.write(start)
            p.stdin.close()
        failures = [line for p in procs if p.stdout for line in p.stdout.read().splitlines() if line]
        assert [p.wait(timeout=120) for p in procs] == [0] * len(procs)
    finally:
        for p in procs:
            p.kill()
    assert failures == []
    for r in range(rounds):
        with EventStore.open(tmp_path / f"r{r}.db", readonly=True) as store:
            runs = store.runs()
            assert len(runs) == 6
            assert all(store.verify(info.run_id) == 1 for info in runs)
