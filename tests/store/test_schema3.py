"""``tether/3``: an event row keeps its hash as 32 bytes and no ``prev_hash`` (the previous row's hash, joined
back when read). The attacks of tests/test_eventlog.py on this layout, the readers' view, and the migration of
``tether/1`` and ``tether/2`` databases in place (atomic: a failure or a SIGKILL mid-way leaves the old schema).
"""

from __future__ import annotations

import itertools
import json
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from oldschema import downgrade, schema

from tether.canonical import canonical_json
from tether.errors import LogCorrupt, NotATetherDatabase
from tether.events import store as store_module
from tether.events.anchor import AnchorKey, Signer
from tether.events.chain import GENESIS, event_hash
from tether.events.kinds import RunForked
from tether.events.store import EventStore

OLD_LOG = Path(__file__).parent.parent / "data" / "old_log"
OLD_RUN = "20260101-000000-0ld10g"


def req(i: int, model: str = "x") -> tuple[str, dict[str, object]]:
    return "model.requested", {"turn": i, "model": model}


def make_run(store: EventStore, n: int = 6, model: str = "x") -> str:
    run = store.create_run("t", [("run.started", {"task": "t"})])
    store.append_many(run, [req(i, model) for i in range(n)])
    return run


def make_fork(store: EventStore, parent: str, at: int, n: int = 2) -> str:
    h = store.events(parent)[at].hash
    run = store.create_fork("t", RunForked(parent_run=parent, at_seq=at, parent_hash=h, workspace="/f", by="t"))
    store.append_many(run, [req(100 + i) for i in range(n)])
    return run


def edit(db: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    """What an attacker with write access to the file does (the triggers dropped first)."""
    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete;")
    conn.execute(sql, params)
    conn.commit()
    conn.close()


def rehash(db: Path, run: str, seq: int) -> None:
    """Recompute one row's stored hash over its own content and the previous row's hash (nothing later)."""
    conn = sqlite3.connect(db)
    ts, kind, body = conn.execute(
        "SELECT ts, kind, payload FROM events WHERE run_id=? AND seq=?", (run, seq)
    ).fetchone()
    row = conn.execute("SELECT hash FROM events WHERE run_id=? AND seq=?", (run, seq - 1)).fetchone()
    prev = GENESIS if seq == 0 else bytes(row[0]).hex()
    conn.close()
    edit(
        db,
        "UPDATE events SET hash=? WHERE run_id=? AND seq=?",
        (bytes.fromhex(event_hash(prev, run, seq, ts, kind, body)), run, seq),
    )


def first_bad(db: Path, run: str) -> int:
    with EventStore.open(db, readonly=True) as store, pytest.raises(LogCorrupt) as info:
        store.verify(run)
    return info.value.seq


@pytest.fixture
def two_runs(tmp_path: Path) -> tuple[Path, str, str]:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        a, b = make_run(store), make_run(store, model="y")
    return db, a, b


def test_a_row_stores_its_hash_as_32_bytes_and_no_prev_hash(two_runs: tuple[Path, str, str]) -> None:
    db, a, _ = two_runs
    assert schema(db) == ("tether/3", ["run_id", "seq", "ts", "kind", "payload", "hash"])
    conn = sqlite3.connect(db)
    stored = [bytes(r[0]) for r in conn.execute("SELECT hash FROM events WHERE run_id=? ORDER BY seq", (a,))]
    with EventStore.open(db, readonly=True) as store:
        events = store.events(a)
    assert [e.hash for e in events] == [h.hex() for h in stored] and {len(h) for h in stored} == {32}
    assert events[0].prev_hash == GENESIS
    assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(events))


def test_readers_see_the_previous_seqs_hash_whatever_they_filter(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        parent = make_run(store)
        child = make_fork(store, parent, at=3)
        grandchild = make_fork(store, child, at=2)  # within the parent's prefix: its base is the parent's row
        for run in (parent, child, grandchild):
            every = store.events(run)
            by_seq = {e.seq: e for e in every}
            assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(every))
            for after in range(-1, len(every)):
                assert [e.to_dict() for e in store.events(run, after=after)] == [
                    e.to_dict() for e in every[after + 1 :]
                ]
            for e in store.events(run, kinds={"run.forked"}) + store.events(run, kinds={"model.requested"}):
                assert e.prev_hash == (by_seq[e.seq - 1].hash if e.seq else GENESIS)
            assert store.verify(run) == len(every)
        forked = store.events(grandchild, kinds={"run.forked"})
        assert [e.run_id for e in forked] == [grandchild]
        assert forked[0].prev_hash == store.events(parent)[2].hash == forked[0].data_as(RunForked).parent_hash


# ---- the attacks: each is caught on this layout, at the same seq as before -------------------------------


def test_a_rewritten_row_is_caught_at_its_seq_or_at_the_next(two_runs: tuple[Path, str, str]) -> None:
    db, a, _ = two_runs
    body = canonical_json({"turn": 99, "model": "x"})
    edit(db, "UPDATE events SET payload=? WHERE run_id=? AND seq=3", (body, a))
    assert first_bad(db, a) == 3  # its hash no longer matches
    rehash(db, a, 3)  # its own hash made consistent: the next row was chained over the old one
    assert first_bad(db, a) == 4


def test_a_deleted_row_is_caught_even_with_the_rest_renumbered(two_runs: tuple[Path, str, str]) -> None:
    db, a, _ = two_runs
    edit(db, "DELETE FROM events WHERE run_id=? AND seq=2", (a,))
    assert first_bad(db, a) == 2
    for seq in range(3, 7):  # close the gap: the chain covers each seq, and each hash the one before
        edit(db, "UPDATE events SET seq=seq-1 WHERE run_id=? AND seq=?", (a, seq))
    edit(db, "UPDATE runs SET head_seq=5 WHERE run_id=?", (a,))
    assert first_bad(db, a) == 2


def test_reordered_rows_are_caught(two_runs: tuple[Path, str, str]) -> None:
    db, a, _ = two_runs
    edit(db, "UPDATE events SET seq=-1 WHERE run_id=? AND seq=2", (a,))
    edit(db, "UPDATE events SET seq=2 WHERE run_id=? AND seq=3", (a,))
    edit(db, "UPDATE events SET seq=3 WHERE run_id=? AND seq=-1", (a,))
    assert first_bad(db, a) == 2


def test_a_row_from_another_run_is_caught(two_runs: tuple[Path, str, str]) -> None:
    db, a, b = two_runs
    edit(db, "DELETE FROM events WHERE run_id=? AND seq=3", (a,))
    edit(
        db,
        "INSERT INTO events SELECT ?, seq, ts, kind, payload, hash FROM events WHERE run_id=? AND seq=3",
        (a, b),
    )
    assert first_bad(db, a) == 3


@pytest.mark.parametrize(
    "value",
    [
        "hex",  # the right hash, as text: not what tether writes
        b"\x00" * 32,
        b"short",
        7,
    ],
)
def test_a_hash_that_is_not_its_32_bytes_is_caught(two_runs: tuple[Path, str, str], value: object) -> None:
    db, a, _ = two_runs
    if value == "hex":
        with EventStore.open(db, readonly=True) as store:
            value = store.events(a)[4].hash
    edit(db, "UPDATE events SET hash=? WHERE run_id=? AND seq=4", (value, a))
    assert first_bad(db, a) == 4


def test_a_rewritten_parent_row_is_caught_through_the_fork(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        parent = make_run(store)
        child = make_fork(store, parent, at=3)
    edit(
        db, "UPDATE events SET payload=? WHERE run_id=? AND seq=3", (canonical_json({"turn": 9, "model": "x"}), parent)
    )
    rehash(db, parent, 3)
    assert first_bad(db, child) == 4  # run.forked was chained over the parent's original row


# ---- the migration --------------------------------------------------------------------------------------


def everything(db: Path) -> dict[str, list[dict[str, object]]]:
    with EventStore.open(db, readonly=True) as store:
        return {info.run_id: [e.to_dict() for e in store.events(info.run_id)] for info in store.runs()}


def test_the_old_log_fixture_migrates_in_place_and_verifies(tmp_path: Path) -> None:
    """tests/data/old_log/run.db was written by an older tether (tether/2)."""
    db = tmp_path / "run.db"
    shutil.copy(OLD_LOG / "run.db", db)
    assert schema(db)[0] == "tether/2"
    before = everything(db)  # read as it is: a reader does not migrate
    assert schema(db) == ("tether/2", ["run_id", "seq", "ts", "kind", "payload", "prev_hash", "hash"])
    with EventStore.open(db) as store:
        assert store.verify(OLD_RUN) == 73
        store.append(OLD_RUN, *req(1))
    assert schema(db) == ("tether/3", ["run_id", "seq", "ts", "kind", "payload", "hash"])
    after = everything(db)
    assert after[OLD_RUN][:73] == before[OLD_RUN] and len(after[OLD_RUN]) == 74
    cli = [sys.executable, "-m", "tether.cli.main", "log", "verify", OLD_RUN, "--db", str(db)]
    proc = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("version", [1, 2])
def test_forks_and_signed_checkpoints_survive_the_migration(tmp_path: Path, version: int) -> None:
    db = tmp_path / "t.db"
    key = AnchorKey.generate(tmp_path / "key" / "anchor.key")
    signer = Signer(key, tmp_path / "anchors.jsonl", every=2)
    with EventStore.open(db, signer=signer) as store:
        parent = make_run(store)
        child = make_fork(store, parent, at=3)
        grandchild = make_fork(store, child, at=5)
    before = everything(db)
    downgrade(db, version)
    assert everything(db) == before  # the downgraded file reads the same with the old layout
    with EventStore.open(db, signer=signer) as store:
        assert schema(db)[0] == "tether/3"
        for run in (parent, child, grandchild):
            audit = store.verify_run(run)  # with the anchor file's checkpoints, and (tether/2) the database's
            assert audit.anchor.checkpoints >= 2 and audit.anchor.last_signed_seq == audit.head[0]
    assert everything(db) == before


def _tampered_old(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = make_run(store)
    downgrade(db, 2)
    return db, run


@pytest.mark.parametrize(
    ("sql", "bad"),
    [
        ('UPDATE events SET payload=\'{"turn":9,"model":"x"}\' WHERE seq=3', 3),
        ("UPDATE events SET prev_hash='" + "1" * 64 + "' WHERE seq=3", 3),  # caught before by the column only
        ("UPDATE events SET hash=upper(hash) WHERE seq=2", 2),
        ("UPDATE events SET hash='nothex' WHERE seq=2", 2),
        ("DELETE FROM events WHERE seq=4", 4),
    ],
)
def test_a_tampered_old_log_still_fails_after_the_migration(tmp_path: Path, sql: str, bad: int) -> None:
    """The migration launders nothing a verify caught before it (a prev_hash edit alone is the one exception:
    the hash of that row was computed over the original, which is what the row now chains onto, so only the
    dropped column held the edit — reported by `log verify` before the migration, a no-op after)."""
    db, run = _tampered_old(tmp_path)
    edit(db, sql)
    assert first_bad(db, run) == bad
    EventStore.open(db).close()
    assert schema(db)[0] == "tether/3"
    if "prev_hash" in sql:
        with EventStore.open(db, readonly=True) as store:
            assert store.verify(run) == 7
    else:
        assert first_bad(db, run) == bad


def test_a_failure_mid_migration_leaves_the_old_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db, run = _tampered_old(tmp_path)
    before = everything(db)
    calls, real = itertools.count(), store_module.stored_hash

    def fail_at_the_fourth(h: object) -> object:
        if next(calls) == 3:
            raise OSError("injected")
        return real(h)

    monkeypatch.setattr(store_module, "stored_hash", fail_at_the_fourth)
    with pytest.raises(NotATetherDatabase, match=r"migrating tether/2 to tether/3 failed .* database is unchanged"):
        EventStore.open(db)
    assert schema(db) == ("tether/2", ["run_id", "seq", "ts", "kind", "payload", "prev_hash", "hash"])
    assert everything(db) == before and next(calls) == 4
    monkeypatch.undo()
    with EventStore.open(db) as store:
        assert store.verify(run) == 7
    assert schema(db)[0] == "tether/3" and everything(db) == before


KILLER = """
import os, signal, sys
from tether.events import store
real, n = store.stored_hash, [0]
def killing(h):
    n[0] += 1
    if n[0] == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return real(h)
store.stored_hash = killing
store.EventStore.open(sys.argv[1])
"""


@pytest.mark.parametrize("at", [1, 5])
def test_a_sigkill_mid_migration_leaves_the_old_schema(tmp_path: Path, at: int) -> None:
    db, run = _tampered_old(tmp_path)
    before = everything(db)
    proc = subprocess.run([sys.executable, "-c", KILLER, str(db), str(at)], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert schema(db)[0] == "tether/2" and everything(db) == before
    with EventStore.open(db, readonly=True) as store:
        assert store.verify(run) == 7
    with EventStore.open(db) as store:
        assert store.verify(run) == 7
    assert schema(db)[0] == "tether/3" and everything(db) == before


def test_writers_opening_an_old_database_at_once_migrate_it_once(tmp_path: Path) -> None:
    db, run = _tampered_old(tmp_path)
    script = (
        "import sys; from tether.events.store import EventStore; s = EventStore.open(sys.argv[1]);"
        "[s.append(sys.argv[2], 'model.requested', {'turn': i, 'model': sys.argv[3]}) for i in range(5)]"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(db), run, f"w{i}"]) for i in range(3)]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    with EventStore.open(db, readonly=True) as store:
        assert store.verify(run) == 22
    assert schema(db)[0] == "tether/3"


@pytest.mark.parametrize("readonly", [False, True])
def test_a_database_of_a_newer_tether_is_refused_saying_so(two_runs: tuple[Path, str, str], readonly: bool) -> None:
    db, _, _ = two_runs
    conn = sqlite3.connect(db)
    conn.execute("UPDATE meta SET value='tether/4' WHERE key='schema'")
    conn.commit()
    conn.close()
    with pytest.raises(NotATetherDatabase, match=r"'tether/4', written by a newer tether .* upgrade tether"):
        EventStore.open(db, readonly=readonly)
    assert schema(db)[0] == "tether/4"


def test_events_hold_the_same_json_as_before(two_runs: tuple[Path, str, str]) -> None:
    db, a, _ = two_runs
    with EventStore.open(db, readonly=True) as store:
        rows = store.rows(a)
    assert all(len(r) == 7 and json.loads(r[4]) for r in rows)
    assert [r[5] for r in rows[1:]] == [r[6] for r in rows[:-1]] and rows[0][5] == GENESIS


def test_a_row_after_a_deleted_one_reads_with_no_prev_hash_not_an_older_one(two_runs: tuple[Path, str, str]) -> None:
    """A reader that checks the chain itself (control/fold.py) sees the gap: the hash two rows back is never
    passed off as the previous one, whichever way the rows are read."""
    db, a, _ = two_runs
    edit(db, "DELETE FROM events WHERE run_id=? AND seq=3", (a,))
    with EventStore.open(db, readonly=True) as store:
        for events in (store.events(a), store.events(a, after=1), store.events(a, kinds={"model.requested"})):
            after_gap = next(e for e in events if e.seq == 4)
            assert after_gap.prev_hash == ""
        every = store.events(a)
        assert [e.seq for e in every] == [0, 1, 2, 4, 5, 6]
        assert every[4].prev_hash == every[3].hash and every[1].prev_hash == every[0].hash
