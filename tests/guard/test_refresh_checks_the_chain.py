"""A resident guard (the hooks' daemon keeps one a session) checks what it folds after it was opened.

``Guard.open`` folds the events its audit verified; every later call folds what others appended since in
``Guard.refresh``, with no audit in between. The attack: a writer of the database (the agent, from a process it
started) appends a row behind the daemon's back — straight into the SQLite file, the triggers dropped — that
decides a denied call ALLOW again, and moves the run's head to it. Before, the daemon folded the row as it read it:
the same call asked again was ALLOW, and the daemon's own next write chained after the forged row. Now each event
``refresh`` reads must chain, from its contents, after the head the guard holds (the next seq, the previous hash),
or :class:`LogCorrupt`: a lazy forger's hash column, a row chained to a rewritten one, a gap. A real second writer
(another process appending through its own store) is folded as before.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pgkit import Postgres

from tether.canonical import canonical_json
from tether.errors import LogCorrupt
from tether.events import EventStore
from tether.events.chain import event_hash
from tether.guard import Guard
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict

RM = {"command": "rm -rf ~"}
ALLOWED = {"call_id": "c1", "verdict": "ALLOW", "deciding_rule": "coding:allow-read-only", "reason": "forged"}


def _opened(store: EventStore, ws: Path) -> Guard:
    return Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)


@pytest.fixture
def resident(store: EventStore, tmp_path: Path) -> tuple[Guard, EventStore, Path]:
    """A guard held open (as the daemon holds it) whose call c1 (``rm -rf ~``) was denied; its store, workspace."""
    ws = tmp_path / "ws"
    ws.mkdir()
    g = _opened(store, ws)
    assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY
    g.check("bash", {"command": "ls"}, call_id="l1")
    return g, store, ws


def _head(path: Path, run_id: str) -> tuple[int, str]:
    conn = sqlite3.connect(path)
    try:
        seq, h = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run_id,)).fetchone()
    finally:
        conn.close()
    return int(seq), str(h)


def _plant(path: Path, run_id: str, seq: int, payload: dict[str, str], prev: str, *, hashed: str = "") -> str:
    """Insert an ``action.decided`` row at ``seq`` straight into the file and move the run's head to it. Its hash
    column is ``hashed`` when given (a lazy forger), else the row's contents chained after ``prev``."""
    ts, kind, text = "2026-01-01T00:00:00.000000+00:00", "action.decided", canonical_json(payload)
    h = hashed or event_hash(prev, run_id, seq, ts, kind, text)
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute(
        "INSERT INTO events (run_id, seq, ts, kind, payload, hash) VALUES (?,?,?,?,?,?)",
        (run_id, seq, ts, kind, text, bytes.fromhex(h)),
    )
    conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, h, run_id))
    conn.commit()
    conn.close()
    return h


def _asked_again(g: Guard) -> None:
    try:
        again = g.check("bash", RM, call_id="c1")
    except LogCorrupt:
        return  # refused: the row does not chain after what the guard holds
    assert again.verdict is Verdict.DENY, f"governed from a row folded unchecked: {again}"


def test_a_row_whose_hash_is_not_its_contents_is_refused(resident: tuple[Guard, EventStore, Path]) -> None:
    g, store, _ = resident
    seq, _h = _head(store.path, g.run_id)
    _plant(store.path, g.run_id, seq + 1, ALLOWED, "", hashed="ab" * 32)
    _asked_again(g)


def test_a_row_chained_after_a_rewritten_head_is_refused(resident: tuple[Guard, EventStore, Path]) -> None:
    """The forger rewrites the guard's last event (its hash recomputed) and chains a row after it: the chain in the
    file holds, but not after the head the guard folded."""
    g, store, _ = resident
    seq, held = _head(store.path, g.run_id)
    conn = sqlite3.connect(store.path)
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    conn.execute("DELETE FROM events WHERE run_id=? AND seq=?", (g.run_id, seq))
    conn.commit()
    conn.close()
    before = store.events(g.run_id, after=seq - 2, upto=seq - 1)[0].hash
    rewritten = _plant(store.path, g.run_id, seq, {"call_id": "l1", "verdict": "ALLOW"} | ALLOWED, before)
    assert rewritten != held
    _plant(store.path, g.run_id, seq + 1, ALLOWED, rewritten)
    assert store.verify(g.run_id) == seq + 2  # the file's own chain holds
    _asked_again(g)


def test_a_row_past_a_gap_is_refused(resident: tuple[Guard, EventStore, Path]) -> None:
    """A row two past the guard's head, chained to the head's hash (its seq skips one): its contents hash, but it is
    not the next event."""
    g, store, _ = resident
    seq, held = _head(store.path, g.run_id)
    _plant(store.path, g.run_id, seq + 2, ALLOWED, held)
    _asked_again(g)


def test_a_second_writer_is_folded_as_before(resident: tuple[Guard, EventStore, Path], tmp_path: Path) -> None:
    """Another process appends to the session through its own store (its own guard, as a cold hook call does): the
    resident guard folds its events and decides on them."""
    g, store, ws = resident
    code = (
        "import sys, json; from pathlib import Path\n"
        "from tether.events import EventStore\n"
        "from tether.guard import Guard\n"
        "from tether.hooks.calls import hook_envelope\n"
        "s = EventStore.open(Path(sys.argv[1]))\n"
        "g = Guard.open(s, hook_envelope(), 's1', framework='test', workspace=Path(sys.argv[2]), strict=False)\n"
        "print(json.dumps(g.check('bash', {'command': 'ls two'}, call_id='w2').verdict.name))\n"
        "s.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(store.path), str(ws)], capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout) == "ALLOW"
    state = g.refresh()
    assert "w2" in state.actions
    assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY
    assert g.check("bash", {"command": "ls three"}, call_id="l3").verdict is Verdict.ALLOW
    assert store.verify(g.run_id) == len(g.events)


def test_a_row_planted_between_the_audit_and_the_fold_is_refused(
    resident: tuple[Guard, EventStore, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A guard opened again (a cold hook call): a row appended after ``verify_run`` and before the fold's read is past
    what the audit verified, so it is held to the chain after the audit's head instead."""
    g, store, ws = resident
    real_verify = store.verify_run

    def verify_then_plant(rid: str, *a: Any, **kw: Any) -> Any:
        audit = real_verify(rid, *a, **kw)
        _plant(store.path, g.run_id, audit.head[0] + 1, ALLOWED, "", hashed="cd" * 32)
        return audit

    monkeypatch.setattr(store, "verify_run", verify_then_plant)
    try:
        opened = _opened(store, ws)
    except LogCorrupt:
        return
    _asked_again(opened)


@pytest.mark.postgres
def test_a_row_inserted_by_the_stores_own_role_is_refused_on_postgres(postgres: Postgres, tmp_path: Path) -> None:
    """PostgreSQL: the application role the hooks connect as may insert into the log (it is append-only, not
    insert-proof), so whoever holds its URL plants a row with no superuser and no trigger dropped; the head is the
    last row. The resident guard reads it as any appended event: it must chain."""
    import psycopg

    from tether.events import open_store

    url = postgres.tether_store()
    ws = tmp_path / "ws"
    ws.mkdir()
    with open_store(url, local=tmp_path) as store:
        g = Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
        assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY
        seq = g.events[-1].seq
        text = canonical_json(ALLOWED)
        with psycopg.connect(url, autocommit=True) as app:  # the role the store itself connects as
            app.execute(
                "INSERT INTO events (run_id, seq, ts, kind, payload, hash) VALUES (%s,%s,%s,%s,%s,%s)",
                (g.run_id, seq + 1, "2026-01-01T00:00:00.000000+00:00", "action.decided", text, b"\xab" * 32),
            )
        _asked_again(g)
