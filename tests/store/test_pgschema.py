"""``tether/pg2``: the PostgreSQL twin of the SQLite store's ``tether/3`` (the hash as 32 bytes, no stored
``prev_hash``), and the migration of a ``tether/pg1`` schema in place by the tables' owner: atomic (an injected
error and a SIGKILLed migrator leave pg1), refused with a plain message to the insert-only role, and every
event, fork and signed checkpoint reading and verifying as before."""

from __future__ import annotations

import itertools
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pgkit import OWNER, Postgres

from tether.errors import InputError, LogCorrupt, NotATetherDatabase
from tether.events import open_store
from tether.events import pgstore as pgstore_module
from tether.events.anchor import AnchorKey, Signer
from tether.events.chain import GENESIS
from tether.events.kinds import RunForked
from tether.events.pgstore import PgStore, init

pytestmark = pytest.mark.postgres
psycopg = pytest.importorskip("psycopg")
STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


def req(i: int) -> tuple[str, dict[str, object]]:
    return "model.requested", {"turn": i, "model": "x"}


def owner_url(url: str) -> str:
    return url.replace("tether_app@", f"{OWNER}@")


def columns(url: str) -> dict[str, str]:
    with psycopg.connect(owner_url(url), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = 'events'"
        ).fetchall()
        tag = conn.execute("SELECT value FROM tether_meta WHERE key='schema'").fetchone()[0]
    return {"schema": tag, **dict(rows)}


def everything(url: str, tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    with open_store(url, readonly=True, local=tmp_path) as store:
        return {info.run_id: [e.to_dict() for e in store.events(info.run_id)] for info in store.runs()}


def downgrade(url: str, tmp_path: Path) -> None:
    """Rewrite a pg2 schema as the pg1 code made it: prev_hash and hash as 64 hex characters each."""
    with open_store(url, readonly=True, local=tmp_path) as store:
        prev = {(r[0], r[1]): r[5] for info in store.runs() for r in store.rows(info.run_id)}
    with psycopg.connect(owner_url(url), autocommit=True) as conn, conn.transaction():
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        conn.execute("ALTER TABLE events ADD COLUMN prev_hash text")
        conn.execute("ALTER TABLE events ALTER COLUMN hash TYPE text USING encode(hash, 'hex')")
        for (run, seq), p in prev.items():
            conn.execute("UPDATE events SET prev_hash=%s WHERE run_id=%s AND seq=%s", (p, run, seq))
        conn.execute("ALTER TABLE events ALTER COLUMN prev_hash SET NOT NULL")
        conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
        conn.execute("UPDATE tether_meta SET value='tether/pg1' WHERE key='schema'")


PG1 = {"schema": "tether/pg1", "prev_hash": "text", "hash": "text"}
PG2 = {"schema": "tether/pg2", "hash": "bytea"}


def has(found: dict[str, str], expected: dict[str, str]) -> bool:
    return all(found.get(k) == v for k, v in expected.items()) and ("prev_hash" in found) == ("prev_hash" in expected)


@pytest.fixture
def url(postgres: Postgres) -> str:
    return postgres.tether_store()


@pytest.fixture
def signer(tmp_path: Path) -> Signer:
    return Signer(AnchorKey.generate(tmp_path / "key" / "anchor.key"), tmp_path / "anchors.jsonl", every=2)


def runs_with_a_fork(url: str, tmp_path: Path, signer: Signer | None = None) -> tuple[str, str, str]:
    with open_store(url, signer=signer, local=tmp_path) as store:
        parent = store.create_run("t", [STARTED])
        store.append_many(parent, [req(i) for i in range(5)])
        at = store.events(parent)[3]
        child = store.create_fork("f", RunForked(parent_run=parent, at_seq=3, parent_hash=at.hash, workspace="/w"))
        store.append(child, *req(9))
        at = store.events(child)[2]
        grandchild = store.create_fork("g", RunForked(parent_run=child, at_seq=2, parent_hash=at.hash, workspace="/g"))
    return parent, child, grandchild


def test_a_row_keeps_its_hash_as_bytes_and_readers_see_both_hashes(url: str, tmp_path: Path) -> None:
    runs = runs_with_a_fork(url, tmp_path)
    assert has(columns(url), PG2)
    with open_store(url, local=tmp_path) as store:
        for run in runs:
            every = store.events(run)
            assert every[0].prev_hash == GENESIS and store.verify(run) == len(every)
            assert all(e.prev_hash == p.hash for p, e in itertools.pairwise(every))
            by_seq = {e.seq: e for e in every}
            for e in store.events(run, kinds={"run.forked", "model.requested"}):
                assert e.prev_hash == by_seq[e.seq - 1].hash
            for after in range(-1, len(every)):
                assert [e.to_dict() for e in store.events(run, after=after)] == [
                    e.to_dict() for e in every[after + 1 :]
                ]


@pytest.mark.parametrize("value", [b"\x00" * 32, b"short", "text"])
def test_a_hash_rewritten_by_the_owner_is_caught(postgres: Postgres, url: str, tmp_path: Path, value: object) -> None:
    parent, _, _ = runs_with_a_fork(url, tmp_path)
    with psycopg.connect(owner_url(url), autocommit=True) as conn:
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        if value == "text":  # the right hash as its 64 characters' bytes: not what tether writes
            conn.execute(
                "UPDATE events SET hash=convert_to(encode(hash, 'hex'), 'UTF8') WHERE run_id=%s AND seq=2", (parent,)
            )
        else:
            conn.execute("UPDATE events SET hash=%s WHERE run_id=%s AND seq=2", (value, parent))
    with open_store(url, readonly=True, local=tmp_path) as store, pytest.raises(LogCorrupt) as info:
        store.verify(parent)
    assert info.value.seq == 2


def test_a_pg1_schema_is_migrated_by_its_owner_and_verifies_as_before(url: str, tmp_path: Path, signer: Signer) -> None:
    runs = runs_with_a_fork(url, tmp_path, signer)
    before = everything(url, tmp_path)
    downgrade(url, tmp_path)
    assert has(columns(url), PG1)
    for readonly in (False, True):  # the insert-only role cannot migrate: told how, nothing changed
        with pytest.raises(NotATetherDatabase, match=r"older schema; migrate it .* `tether db init URL` as the role"):
            open_store(url, readonly=readonly, local=tmp_path)
    assert has(columns(url), PG1)
    assert "migrated the tether schema to tether/pg2" in init(owner_url(url), app_role="tether_app")
    assert has(columns(url), PG2) and everything(url, tmp_path) == before
    with open_store(url, signer=signer, local=tmp_path) as store:
        checked = [store.verify_run(run).anchor.checkpoints for run in runs]  # each checkpoint matches its event
        assert checked[0] >= 2
        store.append(runs[0], *req(7))
        assert store.verify(runs[0]) == 7


def test_the_owner_opening_a_pg1_schema_migrates_it(url: str, tmp_path: Path) -> None:
    runs = runs_with_a_fork(url, tmp_path)
    before = everything(url, tmp_path)
    downgrade(url, tmp_path)
    with open_store(owner_url(url), local=tmp_path) as store:
        assert all(store.verify(run) == len(before[run]) for run in runs)
    assert has(columns(url), PG2) and everything(url, tmp_path) == before


def test_a_tampered_pg1_log_still_fails_after_the_migration(url: str, tmp_path: Path) -> None:
    parent, _, _ = runs_with_a_fork(url, tmp_path)
    downgrade(url, tmp_path)
    with psycopg.connect(owner_url(url), autocommit=True) as conn:
        conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
        conn.execute('UPDATE events SET payload=\'{"model":"x","turn":8}\' WHERE run_id=%s AND seq=2', (parent,))
        conn.execute("UPDATE events SET hash=upper(hash) WHERE run_id=%s AND seq=4", (parent,))
        conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")
    init(owner_url(url))
    with open_store(url, readonly=True, local=tmp_path) as store, pytest.raises(LogCorrupt) as info:
        store.verify(parent)
    assert info.value.seq == 2 and has(columns(url), PG2)
    with psycopg.connect(owner_url(url), autocommit=True) as conn:  # the upper-case hash was kept, as its bytes
        assert conn.execute("SELECT length(hash) FROM events WHERE run_id=%s AND seq=4", (parent,)).fetchone() == (64,)


def test_a_failure_mid_migration_leaves_pg1(url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = runs_with_a_fork(url, tmp_path)
    before = everything(url, tmp_path)
    downgrade(url, tmp_path)
    failing = [pgstore_module.MIGRATE[0], "SELECT 1/0", *pgstore_module.MIGRATE[1:]]
    monkeypatch.setattr(pgstore_module, "MIGRATE", failing)
    with pytest.raises(InputError, match="division by zero"):
        init(owner_url(url))
    assert has(columns(url), PG1)
    monkeypatch.undo()
    init(owner_url(url))
    assert has(columns(url), PG2) and everything(url, tmp_path) == before
    with open_store(url, local=tmp_path) as store:
        assert [store.verify(run) for run in runs] == [len(before[run]) for run in runs]


KILLED_MIDWAY = textwrap.dedent(
    """
    import sys, time
    import psycopg
    from tether.events import pgstore
    with psycopg.connect(sys.argv[1], autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (pgstore.SCHEMA_LOCK,))
        conn.execute(pgstore.MIGRATE[0])  # the table rewritten, the tag not yet: then killed
        print("inside", flush=True)
        time.sleep(600)
    """
)


def test_a_migrator_killed_mid_migration_leaves_pg1(url: str, tmp_path: Path) -> None:
    runs = runs_with_a_fork(url, tmp_path)
    before = everything(url, tmp_path)
    downgrade(url, tmp_path)
    child = subprocess.Popen([sys.executable, "-c", KILLED_MIDWAY, owner_url(url)], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "inside"
        child.send_signal(signal.SIGKILL)
    finally:
        child.kill()
        child.wait()
    assert has(columns(url), PG1)  # waits for the lock: the server rolled the dead connection's work back
    init(owner_url(url))
    assert has(columns(url), PG2) and everything(url, tmp_path) == before
    with open_store(url, local=tmp_path) as store:
        assert [store.verify(run) for run in runs] == [len(before[run]) for run in runs]


def test_a_schema_of_a_newer_tether_is_refused_saying_so(url: str, tmp_path: Path) -> None:
    with psycopg.connect(owner_url(url), autocommit=True) as conn:
        conn.execute("UPDATE tether_meta SET value='tether/pg3' WHERE key='schema'")
    for readonly in (False, True):
        with pytest.raises(NotATetherDatabase, match="'tether/pg3'; expected tether/pg2, written by a newer tether"):
            open_store(url, readonly=readonly, local=tmp_path)


def test_adopt_refuses_rows_whose_prev_hash_was_edited(url: str, tmp_path: Path) -> None:
    parent, _, _ = runs_with_a_fork(url, tmp_path)
    with open_store(url, local=tmp_path) as store:
        assert isinstance(store, PgStore)
        rows = store.rows(parent)
        info = store.run(parent)
    rows[3] = (*rows[3][:5], "1" * 64, rows[3][6])
    schema = url.rsplit("%3D", 1)[1]
    fresh = f"{schema}_b"
    with psycopg.connect(owner_url(url), autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {fresh}")
    init(owner_url(url).replace(schema, fresh), app_role="tether_app")
    with open_store(url.replace(schema, fresh), local=tmp_path) as other:
        with pytest.raises(LogCorrupt, match="prev_hash"):
            other.adopt([info], rows, [], origin="a test")
        assert other.runs() == []
