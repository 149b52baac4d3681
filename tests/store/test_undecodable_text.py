"""A row whose text is not UTF-8 (written behind the store's back: SQLite keeps whatever bytes a TEXT value is given)
is a corrupt log, named at its seq, by every reader: ``events`` (whole, after a seq, through a fork), ``verify``,
``tether log verify`` and ``tether show``, and a resident guard's refresh. sqlite3 raises ``OperationalError``
("Could not decode to UTF-8 column …") for it, the class of a busy or locked database too: a database another process
holds locked is not called corrupt.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from oldschema import downgrade

from tether.errors import DatabaseLocked, LogCorrupt
from tether.events.kinds import RunForked
from tether.events.store import EventStore

NOT_UTF8 = {"ts": "X'32303236ff'", "kind": "X'6d6fff'", "payload": "X'7b2274223aff7d'"}


def make_run(db: Path, n: int = 5) -> str:
    with EventStore.open(db) as store:
        run = store.create_run("t", [("run.started", {"task": "t"})])
        store.append_many(run, [("model.requested", {"turn": i, "model": "x"}) for i in range(n)])
    return run


def spoil(db: Path, run: str, seq: int, column: str) -> None:
    """What a writer of the file does: the column's bytes, not UTF-8, stored as TEXT (the triggers dropped first)."""
    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete;")
    conn.execute(f"UPDATE events SET {column} = CAST({NOT_UTF8[column]} AS TEXT) WHERE run_id=? AND seq=?", (run, seq))
    conn.commit()
    conn.close()


def tether(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a process of its own (the database named with ``--db``)."""
    command = [sys.executable, "-m", "tether.cli.main", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("column", sorted(NOT_UTF8))
def test_every_reader_names_the_seq(tmp_path: Path, column: str) -> None:
    db = tmp_path / "t.db"
    run = make_run(db)
    spoil(db, run, 3, column)
    for readonly in (True, False):
        with EventStore.open(db, readonly=readonly) as store:
            for read in (
                lambda: store.events(run),
                lambda: store.events(run, after=1),
                lambda: store.events(run, after=2, upto=3),
                lambda: store.verify(run),
                lambda: store.verify_run(run),
            ):
                with pytest.raises(LogCorrupt) as said:
                    read()
                assert (said.value.run_id, said.value.seq) == (run, 3), said.value
                assert f"{column} is not UTF-8" in said.value.reason
            assert [e.seq for e in store.events(run, upto=2)] == [0, 1, 2]  # the rows before it read as before
            assert [e.seq for e in store.events(run, after=3)] == [4, 5]


def test_the_cli_says_the_log_is_corrupt_at_the_seq(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    run = make_run(db)
    spoil(db, run, 4, "payload")
    verify = tether("log", "verify", run, "--db", str(db))
    assert verify.returncode == 1, verify
    assert f"BAD  {run}: first bad seq 4: row is malformed: its payload is not UTF-8" in verify.stdout, verify
    for command in (("show", run), ("log", "show", run)):
        out = tether(*command, "--db", str(db))
        said = out.stdout + out.stderr
        assert out.returncode != 0, out
        assert f"run {run}: event seq 4: row is malformed" in said and "internal error" not in said, out


def test_a_forks_parent_row_is_named_through_the_fork(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    parent = make_run(db)
    with EventStore.open(db) as store:
        h = store.events(parent)[4].hash
        fork = store.create_fork("t", RunForked(parent_run=parent, at_seq=4, parent_hash=h, workspace="/f", by="t"))
    spoil(db, parent, 2, "kind")
    with EventStore.open(db, readonly=True) as store:
        for read in (lambda: store.events(fork), lambda: store.verify(fork)):
            with pytest.raises(LogCorrupt) as said:
                read()
            assert (said.value.run_id, said.value.seq) == (fork, 2), said.value


def test_an_older_schemas_text_hash_is_named_too(tmp_path: Path) -> None:
    """``tether/2`` kept hashes as TEXT, read as it is by a read-only open: its hash columns are checked too."""
    db = tmp_path / "t.db"
    run = make_run(db)
    downgrade(db, 2)
    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER IF EXISTS events_no_update; DROP TRIGGER IF EXISTS events_no_delete;")
    conn.execute("UPDATE events SET prev_hash = CAST(X'61ff' AS TEXT) WHERE run_id=? AND seq=2", (run,))
    conn.commit()
    conn.close()
    with EventStore.open(db, readonly=True) as store:
        for read in (lambda: store.events(run), lambda: store.verify(run)):
            with pytest.raises(LogCorrupt) as said:
                read()
            assert (said.value.seq, said.value.reason) == (2, "row is malformed: its prev_hash is not UTF-8 text")


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("held", flush=True)
sys.stdin.read()
"""


def test_a_locked_database_is_not_called_corrupt(tmp_path: Path) -> None:
    """Another process holds the file locked (a rollback-journal file: its EXCLUSIVE lock keeps readers out): a read
    fails with sqlite3's "database is locked", an OperationalError as the decode failure is: it is DatabaseLocked (as
    an open is; it was the OperationalError, "internal error" in the CLI), not LogCorrupt; once the lock is gone the
    same store reads the log whole."""
    db = tmp_path / "t.db"
    run = make_run(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA journal_mode=DELETE").fetchone() == ("delete",)
    conn.close()
    with EventStore.open(db, readonly=True, lock_timeout_s=0.2) as store:
        holder = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            assert holder.stdout is not None and holder.stdout.readline() == "held\n"
            for read in (lambda: store.events(run), lambda: store.events(run, after=2), lambda: store.verify(run)):
                with pytest.raises(DatabaseLocked, match="database is locked by another process"):
                    read()
        finally:
            holder.communicate("")
        assert store.verify(run) == 6


class _Busy:
    """The store's connection, whose reads of a run's rows fail as SQLite fails a busy one (its error code set)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> sqlite3.Cursor:
        if "FROM events e" in sql or sql.startswith("SELECT seq, ts, kind, payload, hash"):
            e = sqlite3.OperationalError("database is locked")
            e.sqlite_errorcode = sqlite3.SQLITE_BUSY
            raise e
        return self._conn.execute(sql, params)

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


def test_a_busy_read_inside_the_audit_is_not_called_corrupt(tmp_path: Path) -> None:
    """The audit turned every ``DatabaseError`` of its reads into "the database cannot be read" (LogCorrupt at seq
    0), a busy or locked one too; SQLite's busy is raised as it is now, a malformed file still LogCorrupt."""
    db = tmp_path / "t.db"
    run = make_run(db)
    with EventStore.open(db, readonly=True) as store:
        real = store._conn
        store._conn = _Busy(real)  # type: ignore[assignment]
        with pytest.raises(DatabaseLocked, match="locked"):
            store.verify(run)
        store._conn = real
        assert store.verify(run) == 6


def test_a_resident_guards_refresh_names_the_seq(tmp_path: Path) -> None:
    """A guard held open (the daemon's); another process appends through its own store, then a writer of the file
    spoils the new row's payload: the refresh is LogCorrupt at that seq (it was sqlite3's OperationalError)."""
    from tether.guard import Guard
    from tether.hooks.calls import hook_envelope

    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        g = Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
        g.check("bash", {"command": "ls"}, call_id="l1")
        held = g.events[-1].seq
        code = (
            "import sys; from tether.events import EventStore\n"
            "with EventStore.open(sys.argv[1]) as s:\n"
            "    s.append_many(sys.argv[2], [('model.requested', {'turn': 9, 'model': 'x'})])\n"
        )
        subprocess.run([sys.executable, "-c", code, str(db), g.run_id], check=True)
        spoil(db, g.run_id, held + 1, "payload")
        with pytest.raises(LogCorrupt) as said:
            g.refresh()
        assert said.value.seq == held + 1


def test_a_signed_checkpoint_that_is_not_utf8_is_named_not_dropped(tmp_path: Path) -> None:
    """``checkpoints`` read a failed read of the anchors table as none (meant for a ``tether/1`` file, which has no
    such table): a checkpoint row whose text is not UTF-8 made every signed checkpoint of the database vanish from
    the audit, silently (a verifier holding only the key saw "no checkpoint … covers this run"). Now it is named."""
    from tether.events.anchor import AnchorKey, Signer

    key = AnchorKey.generate(tmp_path / "anchor.key")
    signer = Signer(key, tmp_path / "anchors.jsonl", every=2)
    db = tmp_path / "t.db"
    with EventStore.open(db, signer=signer) as store:
        run = store.create_run("t", [("run.started", {"task": "t"})])
        for i in range(5):
            store.append(run, "model.requested", {"turn": i, "model": "x"})
        signed = [cp.seq for cp in store.checkpoints(run)]
        assert store.verify_run(run).anchor.checkpoints >= 2
    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER IF EXISTS anchors_no_update;")
    conn.execute("UPDATE anchors SET key_id = CAST(X'6564ff' AS TEXT) WHERE run_id=? AND seq=?", (run, signed[1]))
    conn.commit()
    conn.close()
    public = AnchorKey.from_public_b64(key.public_b64(), "test")
    with EventStore.open(db, readonly=True) as store:
        for read in (lambda: store.checkpoints(run), lambda: store.verify_run(run, key=public)):
            with pytest.raises(LogCorrupt) as said:
                read()
            assert said.value.seq == signed[1] and "key_id is not UTF-8" in said.value.reason, said.value


@pytest.mark.parametrize("column", ["task", "created_at", "head_hash"])
def test_a_runs_row_that_is_not_utf8_is_named(tmp_path: Path, column: str) -> None:
    """The runs table's row of a run (updated as its head moves: no trigger keeps it) with text that is not UTF-8:
    ``tether runs``, ``show`` and ``log verify`` said "internal error: OperationalError" (exit 3); now the run's log
    is corrupt, named with its head's seq (exit 1). Another run's reads are refused too: the listing reads them all."""
    db = tmp_path / "t.db"
    run = make_run(db, n=3)
    conn = sqlite3.connect(db)
    conn.execute(f"UPDATE runs SET {column} = CAST(X'61ff' AS TEXT) WHERE run_id=?", (run,))
    conn.commit()
    conn.close()
    with EventStore.open(db, readonly=True) as store:
        for read in (store.runs, lambda: store.run(run), lambda: store.verify(run)):
            with pytest.raises(LogCorrupt) as said:
                read()
            assert (said.value.run_id, said.value.seq) == (run, 3), said.value
            assert said.value.reason == f"the run's row is malformed: its {column} is not UTF-8 text"
    for command in (("runs",), ("show", run), ("log", "verify", run)):
        out = tether(*command, "--db", str(db))
        assert out.returncode == 1 and f"run {run}: event seq 3: the run's row is malformed" in out.stderr, out


def test_a_forks_first_row_is_whatever_its_seq(tmp_path: Path) -> None:
    """The fork point is read (through :meth:`_read`) from the fork's first row by seq, a negative one too, as before
    it: a row planted at seq -1 is that first row, not run.forked, so the fork is not read as one and its log is
    missing its prefix (LogCorrupt), rather than the row being skipped."""
    db = tmp_path / "t.db"
    parent = make_run(db)
    with EventStore.open(db) as store:
        h = store.events(parent)[4].hash
        fork = store.create_fork("t", RunForked(parent_run=parent, at_seq=4, parent_hash=h, workspace="/f", by="t"))
        assert store.verify(fork) == 6
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO events (run_id, seq, ts, kind, payload, hash) VALUES (?, -1, 't', 'model.requested', '{}', ?)",
        (fork, b"\0" * 32),
    )
    conn.commit()
    conn.close()
    with EventStore.open(db, readonly=True) as store, pytest.raises(LogCorrupt):
        store.verify(fork)


def test_an_append_after_the_runs_row_was_spoiled_is_refused_as_corrupt(tmp_path: Path) -> None:
    """The head an append extends is read from the run's row: a head hash that is not UTF-8 text made
    ``append_many`` and ``append_batch`` (the loop's append) raise sqlite3's OperationalError; now the log is corrupt,
    named at the head's seq, and nothing is written."""
    from tether.events.store import Batch

    db = tmp_path / "t.db"
    run = make_run(db, n=3)
    with EventStore.open(db) as store:
        batch = Batch(run, store.head(run))
        batch.add(store.redactor, [("model.requested", {"turn": 9, "model": "x"})], durable=True)
        conn = sqlite3.connect(db)
        conn.execute("UPDATE runs SET head_hash = CAST(X'61ff' AS TEXT) WHERE run_id=?", (run,))
        conn.commit()
        conn.close()
        for append in (
            lambda: store.append_batch(batch),
            lambda: store.append_many(run, [("model.requested", {"turn": 9, "model": "x"})]),
        ):
            with pytest.raises(LogCorrupt) as said:
                append()
            assert (said.value.run_id, said.value.seq) == (run, 3), said.value
            assert said.value.reason == "the run's row is malformed: its head_hash is not UTF-8 text"
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM events WHERE run_id=?", (run,)).fetchone()[0] == 4
    conn.close()


@pytest.mark.parametrize("column", ["owner", "host"])
def test_a_lease_row_that_is_not_utf8_is_named_not_read_as_free(tmp_path: Path, column: str) -> None:
    """A run's lease row whose text is not UTF-8: lease() took any failed read for a tether/1 file's missing table and
    answered None (no one holds the run), and acquire() raised sqlite3's OperationalError ('internal error'). Now
    both name the run's log corrupt at its head's seq; a file without the table still answers None."""
    db = tmp_path / "t.db"
    run = make_run(db, n=2)
    with EventStore.open(db) as store:
        store.acquire(run)
        held = store.lease(run)
        assert held is not None
        conn = sqlite3.connect(db)
        conn.execute(f"UPDATE leases SET {column} = CAST(X'61ff' AS TEXT) WHERE run_id=?", (run,))
        conn.commit()
        conn.close()
        for read in (store.lease, store.acquire):
            with pytest.raises(LogCorrupt) as said:
                read(run)
            assert (said.value.run_id, said.value.seq) == (run, 2), said.value
            assert said.value.reason == f"the run's lease row is malformed: its {column} is not UTF-8 text"
