"""The PostgreSQL store's own guarantees, attacked with the database's own access (the conformance suite runs
the shared ones through the protocol): the insert-only role, the append-only triggers, real processes racing
on one head, opening what is not a tether store, and the CLI end to end with ``--db postgresql://…``."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from pgkit import OWNER, STORES, Postgres

from tether.errors import HeadMoved, InputError, LogCorrupt, NotATetherDatabase, RunLeased, RuntimeFailure
from tether.events import open_store
from tether.events.anchor import AnchorKey, Signer
from tether.events.chain import GENESIS, event_hash
from tether.events.kinds import RunForked
from tether.events.pgstore import PgStore, init
from tether.events.store import EventStore
from tether.kernel.approvals import pending

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")
STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})
CHANGES = {
    "UPDATE": "UPDATE {t} SET {c} = {c}",
    "DELETE": "DELETE FROM {t}",
    "TRUNCATE": "TRUNCATE {t} CASCADE",
}
LOG = {"runs": "task", "events": "kind", "blobs": "size", "anchors": "seq"}


@pytest.fixture
def url(postgres: Postgres) -> str:
    return postgres.tether_store()


@pytest.fixture
def store(url: str, tmp_path: Path) -> Iterator[PgStore]:
    with open_store(url, local=tmp_path) as s:
        assert isinstance(s, PgStore)
        yield s


def _filled(store: PgStore) -> str:
    """A run with events, a blob and a signed-checkpoint row: every log table holds something to change."""
    run = store.create_run("t", [STARTED])
    store.put_blob(b"bytes")
    with psycopg.connect(store.url.replace("tether_app@", f"{OWNER}@"), autocommit=True) as owner:
        owner.execute(
            "INSERT INTO anchors VALUES (%s, 0, %s, 'k', 'now', 'sig')", (run, store.head(run)[1])
        )  # the owner may insert too: only changing is refused
    return run


def test_the_application_role_may_only_read_and_insert_the_log(store: PgStore) -> None:
    run = _filled(store)
    with psycopg.connect(store.url, autocommit=True) as app:
        for table, column in LOG.items():
            for op, statement in CHANGES.items():
                with pytest.raises(psycopg.errors.InsufficientPrivilege):
                    app.execute(statement.format(t=table, c=column))
                assert app.execute(f"SELECT count(*) FROM {table}").fetchone() == (1,), (table, op)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("ALTER TABLE events DISABLE TRIGGER ALL")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            app.execute("DROP TABLE events CASCADE")
    assert store.verify(run) == 1


def test_the_owner_is_refused_by_the_triggers(store: PgStore) -> None:
    run = _filled(store)
    with psycopg.connect(store.url.replace("tether_app@", f"{OWNER}@"), autocommit=True) as owner:
        for table, column in LOG.items():
            for op, statement in CHANGES.items():
                with pytest.raises(psycopg.errors.RaiseException, match=f"append-only: {op} refused"):
                    owner.execute(statement.format(t=table, c=column))
    assert store.verify(run) == 1 and store.get_blob(store.put_blob(b"bytes")) == b"bytes"


def test_a_refused_change_through_the_store_is_a_clear_error_and_writes_nothing(store: PgStore) -> None:
    run = store.create_run("t", [STARTED])
    with pytest.raises(InputError, match="already exists"):
        store.create_run("again", run_id=run)
    with pytest.raises(InputError):
        store.create_run("nul \x00 in a task")  # PostgreSQL text holds no NUL: refused, nothing half-written
    assert [r.run_id for r in store.runs()] == [run]


RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tether.errors import HeadMoved
    from tether.events import open_store
    url, run, seq, h, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], Path(sys.argv[5])
    with open_store(url, create=False) as store:
        store.head(run)  # connected and warm: now wait for the start line
        while not go.exists():
            time.sleep(0.001)
        try:
            store.append(run, "model.requested", {"turn": 1, "model": "x"}, expect=(seq, h))
            print("won")
        except HeadMoved:
            print("moved")
    """
)


def test_processes_racing_on_one_head_exactly_one_wins(store: PgStore, tmp_path: Path) -> None:
    run = store.create_run("t", [STARTED])
    seq, h = store.head(run)
    go = tmp_path / "go"
    racers = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, store.url, run, str(seq), h, str(go)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    time.sleep(1.0)  # let them connect; a slow one only races less, it cannot make two win
    go.touch()
    said = sorted(p.communicate(timeout=60)[0].strip() for p in racers)
    assert said == ["moved"] * 3 + ["won"]
    assert store.verify(run) == 2
    with pytest.raises(HeadMoved):
        store.append(run, "model.requested", {"turn": 2, "model": "x"}, expect=(seq, h))


KILLED_MIDWAY = textwrap.dedent(
    """
    import sys, time
    from tether.events import open_store
    from tether.events.store import prepare_all
    store = open_store(sys.argv[1], create=False)
    run = sys.argv[2]
    with store._transaction() as cur:  # an append, stopped between its insert and its commit
        store._lock_run(cur, run)
        head = store._head_in(cur, run)
        event = prepare_all(store.redactor, [("model.requested", {"turn": 1, "model": "x"})])
        store._append_locked(cur, run, event, head)
        print("inside", flush=True)
        time.sleep(600)
    """
)


def test_a_writer_killed_inside_its_transaction_leaves_nothing_and_blocks_no_one(store: PgStore) -> None:
    run = store.create_run("t", [STARTED])
    head = store.head(run)
    writer = subprocess.Popen([sys.executable, "-c", KILLED_MIDWAY, store.url, run], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "inside"
        writer.send_signal(signal.SIGKILL)  # holding the run's lock, one event inserted, nothing committed
    finally:
        writer.kill()
        writer.wait()
    assert store.head(run) == head  # the half-done append is gone with its connection
    store.append(run, "model.requested", {"turn": 1, "model": "x"}, expect=head)  # and so is its lock
    assert store.verify(run) == 2


def test_what_is_not_a_tether_store_is_refused(postgres: Postgres, tmp_path: Path) -> None:
    postgres.stores_database()  # the roles and database exist whether or not a store was made before (xdist order)
    empty = postgres.url(STORES, OWNER, "public")
    with pytest.raises(NotATetherDatabase, match="no tether schema"):
        open_store(empty, readonly=True)
    with psycopg.connect(postgres.conninfo(STORES), autocommit=True) as conn:
        conn.execute("CREATE SCHEMA other AUTHORIZATION tether_owner")
    other = postgres.url(STORES, OWNER, "other")
    with psycopg.connect(other, autocommit=True) as conn:
        conn.execute("CREATE TABLE events (x int)")
    with pytest.raises(NotATetherDatabase, match="events are here but are not tether's"):
        open_store(other)
    gone = f"postgresql://app:s3cret@/tether?host={tmp_path}"  # no server listens there
    with pytest.raises(RuntimeFailure, match="unreachable") as caught:
        open_store(gone)
    assert "s3cret" not in str(caught.value) and "app:***@" in str(caught.value)
    with pytest.raises(InputError, match="not a usable PostgreSQL URL"):
        open_store(f"postgresql://app@/tether?host={tmp_path}&no_such_option=1")


def test_a_driver_whose_lease_was_taken_over_cannot_append(url: str, store: PgStore, tmp_path: Path) -> None:
    """A holder on another host whose heartbeat stopped is taken over; its next append fails and writes nothing."""
    run = store.create_run("t", [STARTED], lease=True)
    with psycopg.connect(url, autocommit=True) as app:  # the holder looks like a silent driver elsewhere
        app.execute("UPDATE leases SET host='elsewhere', heartbeat=0 WHERE run_id=%s", (run,))
    with open_store(url, local=tmp_path) as other:
        other.acquire(run)
        with pytest.raises(RunLeased, match="taken over"):
            store.append(run, *STARTED)
        assert not store.holds(run) and other.verify(run) == 1
        other.append(run, *STARTED)  # the new driver goes on


def test_a_read_only_store_never_writes(url: str, store: PgStore) -> None:
    run = store.create_run("t", [STARTED])
    with open_store(url, readonly=True) as reader:
        assert reader.verify(run) == 1
        with pytest.raises(InputError, match="read-only"):
            reader.append(run, *STARTED)


def test_a_superusers_full_rewrite_is_caught_by_the_signed_checkpoints(
    postgres: Postgres, url: str, tmp_path: Path
) -> None:
    """Around the role and the triggers (a superuser disables them and recomputes every hash): the chain alone
    still verifies, the checkpoints signed outside the database do not."""
    key = AnchorKey.generate(tmp_path / "anchor.key")
    signer = Signer(key, tmp_path / "anchors.jsonl", every=2)
    with open_store(url, signer=signer, local=tmp_path) as store:
        run = store.create_run("t", [STARTED])
        for i in range(4):
            store.append(run, "model.requested", {"turn": i, "model": "x"})
        assert store.verify_run(run).anchor.checkpoints >= 2
    with psycopg.connect(postgres.url(STORES, schema=url.rsplit("%3D", 1)[1]), autocommit=True) as root:
        root.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        body = '{"model":"x","turn":99}'
        root.execute("UPDATE events SET payload=%s WHERE run_id=%s AND seq=1", (body, run))
        prev = GENESIS
        for seq, ts, kind, payload in root.execute(
            "SELECT seq, ts, kind, payload FROM events WHERE run_id=%s ORDER BY seq", (run,)
        ).fetchall():
            h = event_hash(prev, run, seq, ts, kind, payload)
            root.execute("UPDATE events SET hash=%s WHERE run_id=%s AND seq=%s", (bytes.fromhex(h), run, seq))
            prev = h
    with open_store(url, readonly=True) as store:
        assert store.verify(run) == 5  # a consistent rewrite: the chain cannot tell
        with pytest.raises(LogCorrupt, match="checkpoint"):
            store.verify_run(run, key, tmp_path / "anchors.jsonl")


def test_a_run_moves_between_the_stores_byte_for_byte(store: PgStore, tmp_path: Path) -> None:
    """The same log on both: a PostgreSQL run (a fork, with its parent's prefix) adopted by SQLite verifies there
    with identical rows, and back again into a fresh PostgreSQL schema."""
    parent = store.create_run("p", [STARTED, ("model.requested", {"turn": 1, "model": "x \u00e9 \U0001f600"})])
    at = store.events(parent)[1]
    fork = store.create_fork("f", RunForked(parent_run=parent, at_seq=1, parent_hash=at.hash, workspace="/w"))
    store.append(fork, "model.requested", {"turn": 2, "model": "y"})
    lineage = [store.run(parent), store.run(fork)]
    lineage[0] = dataclasses.replace(lineage[0], head_seq=1, head_hash=at.hash)  # the parent as the fork sees it
    with EventStore.open(tmp_path / "copy.db") as lite:
        lite.adopt(lineage, store.rows(fork), [], origin="a test")
        assert lite.rows(fork) == store.rows(fork) and lite.verify(fork) == 4
        with open_store(store.url.replace(store.url.rsplit("%3D", 1)[1], _fresh_schema(store)), local=tmp_path) as back:
            back.adopt([lite.run(parent), lite.run(fork)], lite.rows(fork), [], origin="a test")
            assert back.rows(fork) == store.rows(fork) and back.verify(fork) == 4


def _fresh_schema(store: PgStore) -> str:
    """Another empty tether schema beside ``store``'s, its tables made by the owner and granted to the app role."""
    name = f"s_{os.urandom(6).hex()}"
    owner = store.url.replace("tether_app@", f"{OWNER}@")
    with psycopg.connect(owner.replace(owner.rsplit("%3D", 1)[1], "public"), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {name}")
    init(owner.replace(owner.rsplit("%3D", 1)[1], name), app_role="tether_app")
    return name


def test_the_console_serves_a_postgres_store(url: str, store: PgStore) -> None:
    from tether.console.server import Background

    run = store.create_run("a task in postgres", [STARTED])
    server = Background(url)
    try:
        with urllib.request.urlopen(server.url, timeout=30) as page:
            html = page.read().decode()
        with urllib.request.urlopen(f"{server.url}runs/{run}", timeout=30) as page:
            assert page.status == 200
    finally:
        server.stop()
    assert run in html and "a task in postgres" in html


def test_the_python_api_takes_a_url_and_keeps_local_files_in_the_workspace(url: str, example: Path) -> None:
    from tether import Harness

    harness = Harness(example / "envelope.yaml", db=url)
    with harness.store() as store:
        assert isinstance(store, PgStore)
        assert store.path.parent == example / "project" / ".tether"  # memory.db goes here; nothing is written yet
        assert not store.path.exists()


def _tether(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("tether")
    env = {**os.environ, "TETHER_DB": ""}
    return subprocess.run([str(exe), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


@pytest.mark.slow
def test_the_cli_end_to_end_on_postgres(postgres: Postgres, example: Path, tmp_path: Path) -> None:
    """`tether db init`, a scripted run, its approval denied and resumed, and the log verified: all --db URL."""
    url = postgres.tether_store()
    owner = url.replace("tether_app@", f"{OWNER}@")
    init = _tether("db", "init", owner, "--app-role", "tether_app", cwd=tmp_path)
    assert init.returncode == 0 and "already there" in init.stdout, init.stderr
    trajectory = (example / "trajectory.yaml").read_text()  # the fix, the turn that asks (git push), finish
    turns = yaml.safe_load(trajectory)["turns"]
    asks = next(t for t in turns if "git push" in json.dumps(t))
    fixed = [t for t in turns if "edit_file" in json.dumps(t)][-1]
    fixed["tool_calls"] = fixed["tool_calls"][:1]  # the edit alone: the sensors run the tests at the end
    fixed["tool_calls"][0]["args"]["old"] = "    return ordered[middle]\n"  # the right fix, made first
    done = next(t for t in turns if '"finish"' in json.dumps(t))
    (example / "trajectory.yaml").write_text(yaml.safe_dump({"turns": [fixed, asks, done]}))

    run = _tether("run", "Fix the median.", "-e", "envelope.yaml", "--db", url, "--sandbox", "local", "--headless",
                  "--json", cwd=example)  # fmt: skip
    assert run.returncode == 5, run.stderr  # git push asks a person: WAITING_APPROVAL
    run_id = json.loads(run.stdout.splitlines()[-1])["run_id"]
    with open_store(url, readonly=True) as store:  # `tether approvals` reads this (tests/kernel)
        waiting = pending(store)
    assert [p.run_id for p in waiting] == [run_id]
    deny = _tether("deny", waiting[0].approval_id, "--reason", "no pushing", "--db", url, cwd=tmp_path)
    assert deny.returncode == 0, deny.stderr
    resumed = _tether("resume", run_id, "--db", url, "--sandbox", "local", "--headless", "--json", cwd=example)
    assert resumed.returncode == 0 and json.loads(resumed.stdout.splitlines()[-1])["status"] == "COMPLETE"

    verify = _tether("log", "verify", run_id, "--db", url, "--json", cwd=tmp_path)
    assert verify.returncode == 0, verify.stderr
    shown = _tether("show", run_id, "--db", url, cwd=tmp_path)
    assert shown.returncode == 0 and "COMPLETE" in shown.stdout and "no pushing" in shown.stdout
    assert not (example / ".tether" / "tether.db").exists()  # nothing went to a SQLite file on the side
