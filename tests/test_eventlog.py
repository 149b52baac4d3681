"""The event log: append-only, hash-chained, tamper-evident, typed."""

from __future__ import annotations

import itertools
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tether.errors import DatabaseLocked, InputError, LogCorrupt, NotATetherDatabase
from tether.events.payload import InvalidPayload, UnknownEventKind
from tether.events.store import EventStore
from tether.state import RunState


def make_run(db: Path, n: int = 5) -> tuple[EventStore, str]:
    store = EventStore.open(db)
    run = store.create_run("demo task")
    store.append(run, "run.started", {"task": "demo task", "budgets": {"turns": 10}})
    for i in range(n):
        store.append(run, "model.requested", {"turn": i, "model": "scripted:x"})
    return store, run


def tamper(db: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    """Edit the database by hand, the way an attacker with file access would (triggers dropped first)."""
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def test_seq_contiguous_and_chain_verifies(tmp_path: Path) -> None:
    store, run = make_run(tmp_path / "t.db")
    events = store.events(run)
    assert [e.seq for e in events] == list(range(6))
    assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(events))
    assert store.verify(run) == 6


def test_triggers_reject_update_and_delete(tmp_path: Path) -> None:
    make_run(tmp_path / "t.db")
    conn = sqlite3.connect(tmp_path / "t.db")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("UPDATE events SET payload='{}' WHERE seq=1")
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute("DELETE FROM events WHERE seq=1")


@pytest.mark.parametrize(
    ("sql", "bad_seq"),
    [
        ('UPDATE events SET payload=\'{"turn":99,"model":"scripted:x","n_messages":0}\' WHERE seq=3', 3),
        ("DELETE FROM events WHERE seq=2", 2),
        ("DELETE FROM events WHERE seq=5", 5),  # truncated tail
        ("UPDATE events SET seq=seq+100 WHERE seq=4", 4),  # reordered / moved
        ("UPDATE events SET kind='model.responded' WHERE seq=1", 1),
    ],
)
def test_verify_names_first_bad_seq(tmp_path: Path, sql: str, bad_seq: int) -> None:
    db = tmp_path / "t.db"
    store, run = make_run(db)
    store.close()
    tamper(db, sql)
    with pytest.raises(LogCorrupt) as info:
        EventStore.open(db).verify(run)
    assert info.value.seq == bad_seq


def test_cli_log_verify_detects_tampering(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store, run = make_run(db)
    store.close()
    cmd = [sys.executable, "-m", "tether.cli.main", "log", "verify", "--db", str(db)]
    assert subprocess.run([*cmd, run], capture_output=True).returncode == 0
    tamper(db, "UPDATE events SET payload=? WHERE seq=2", (json.dumps({"turn": 7, "model": "x", "n_messages": 0}),))
    proc = subprocess.run([*cmd, "--all", "--json"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)[0]["seq"] == 2


def test_unknown_kind_and_invalid_payload_fail_loudly(tmp_path: Path) -> None:
    store, run = make_run(tmp_path / "t.db", n=0)
    with pytest.raises(UnknownEventKind):
        store.append(run, "model.guessed", {})
    with pytest.raises(InvalidPayload):
        store.append(run, "model.requested", {"turn": "first", "model": "x"})
    with pytest.raises(InvalidPayload):
        store.append(run, "model.requested", {"turn": 1, "model": "x", "surprise": True})
    assert store.verify(run) == 1  # nothing half-written


def test_batch_append_is_one_transaction(tmp_path: Path) -> None:
    store, run = make_run(tmp_path / "t.db", n=0)
    with pytest.raises(InvalidPayload):
        store.append_many(run, [("model.requested", {"turn": 1, "model": "x"}), ("model.requested", {"turn": "x"})])
    assert len(store.events(run)) == 1
    store.append_many(run, [("model.requested", {"turn": i, "model": "x"}) for i in range(3)])
    assert store.verify(run) == 4


def test_blobs_are_content_addressed(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    h = store.put_blob(b"x" * 100_000)
    assert store.put_blob(b"x" * 100_000) == h
    assert store.get_blob(h) == b"x" * 100_000
    with pytest.raises(InputError):
        store.get_blob("sha256:nope")


def test_not_a_tether_database(tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE things (x)")
    conn.commit()
    conn.close()
    with pytest.raises(NotATetherDatabase, match=r"other\.db"):
        EventStore.open(other)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(NotATetherDatabase, match=r"garbage\.db"):
        EventStore.open(garbage)


def test_two_processes_append_without_breaking_the_chain(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store, run = make_run(db, n=0)
    script = (
        "import sys; from tether.events.store import EventStore;"
        "s = EventStore.open(sys.argv[1]);"
        "[s.append(sys.argv[2], 'model.requested', {'turn': i, 'model': sys.argv[3]}) for i in range(50)]"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(db), run, f"w{i}"]) for i in range(3)]
    assert all(p.wait(timeout=60) == 0 for p in procs)
    assert store.verify(run) == 151


def test_runstate_fold_is_deterministic(tmp_path: Path) -> None:
    store, run = make_run(tmp_path / "t.db", n=0)
    store.append(
        run,
        "model.responded",
        {
            "turn": 0,
            "model": "m",
            "termination": "tool_request",
            "input_tokens": 100,
            "output_tokens": 20,
            "cost_usd": 0.01,
        },
    )
    store.append(
        run,
        "action.proposed",
        {"call_id": "c1", "tool": "bash", "args": {"command": "ls"}, "args_hash": "h", "turn": 0},
    )
    store.append(run, "action.decided", {"call_id": "c1", "verdict": "ASK", "deciding_rule": "r", "reason": "why"})
    store.append(
        run,
        "approval.requested",
        {
            "approval_id": "a1",
            "call_id": "c1",
            "tool": "bash",
            "args_hash": "h",
            "preview": "ls",
            "reason": "why",
            "expires_at": 0,
        },
    )
    events = store.events(run)
    a, b = RunState.from_events(events), RunState.from_events(events)
    assert a == b
    assert a.status == "WAITING_APPROVAL"
    assert a.used.tokens == 120 and a.used.turns == 1 and a.used.tool_calls == 0
    assert a.budget_left()["turns"] == 9
    assert list(a.pending_approvals) == ["a1"]
    store.append(run, "approval.granted", {"approval_id": "a1", "by": "alice", "scope": "run", "rule": "bash(ls)"})
    store.append(run, "run.resumed", {"reason": "approved"})
    after = RunState.from_events(store.events(run))
    assert after.status == "RUNNING" and after.actions["c1"].approved_by == "alice"
    assert after.run_rules[0]["rule"] == "bash(ls)"


def test_a_held_writer_lock_is_a_clear_error_not_a_hang(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    store, run = make_run(db, n=0)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl,sys,time; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX);"
            "print('held', flush=True); time.sleep(30)",
            str(db) + ".lock",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        blocked = EventStore.open(db, lock_timeout_s=0.3)
        with pytest.raises(DatabaseLocked, match="writer lock"):
            blocked.append(run, "model.requested", {"turn": 0, "model": "x"})
    finally:
        holder.kill()
    assert store.verify(run) == 1
    store.append(run, "model.requested", {"turn": 0, "model": "x"})  # free again once the holder is gone


def test_only_durable_appends_wait_for_the_disk(tmp_path: Path) -> None:
    store, run = make_run(tmp_path / "t.db", n=0)

    def sync_mode() -> int:
        return int(store._conn.execute("PRAGMA synchronous").fetchone()[0])

    store.append_many(run, [("model.requested", {"turn": 0, "model": "x"})], durable=False)
    assert sync_mode() == 1  # NORMAL: survives a process crash, not a power cut
    store.append(run, "model.requested", {"turn": 1, "model": "x"})
    assert sync_mode() == 2  # FULL: on disk before append returns (and everything before it, in WAL)
    assert store.verify(run) == 3
