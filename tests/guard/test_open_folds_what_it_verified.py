"""Guard.open folds the events its audit verified, not rows read again after it.

The attack: someone who can write the database (the agent, from a process it started) rewrites an old event while
a hook process opens the session: the original is in place while ``verify_run`` reads the log, the forged row (the
stored hash left as it was) when the guard reads the events it folds, the original put back after. The audit
passes, and under an anchor key nothing signed ever shows the rewrite, yet the session was governed from the
forged row: a DENY of a call turned ALLOW answers the same call asked again ALLOW. The same with a fold checkpoint:
the events after it, read apart from the audit, and the ones before it, read later on demand (``guard.log.Log``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.errors import LogCorrupt
from tether.events import EventStore
from tether.guard import Guard
from tether.guard.log import Log
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict

RM = {"command": "rm -rf ~"}


def _opened(store: EventStore, ws: Path, **kw: Any) -> Guard:
    return Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False, **kw)


def _payload(store: EventStore, run_id: str, seq: int) -> str:
    conn = sqlite3.connect(store.path)
    try:
        (payload,) = conn.execute("SELECT payload FROM events WHERE run_id=? AND seq=?", (run_id, seq)).fetchone()
    finally:
        conn.close()
    return str(payload)


def _rewrite(store: EventStore, run_id: str, seq: int, payload: str) -> None:
    conn = sqlite3.connect(store.path)  # file access: the triggers dropped, the stored hash left as it was
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("UPDATE events SET payload=? WHERE run_id=? AND seq=?", (payload, run_id, seq))
    conn.commit()
    conn.close()


@pytest.fixture
def denied(tmp_path: Path) -> Iterator[tuple[EventStore, Path, str, int, str]]:
    """A session whose call c1 (``rm -rf ~``) was denied: its store, workspace, run, the decision's seq and the
    decision forged to ALLOW."""
    ws = tmp_path / "ws"
    ws.mkdir()
    store = EventStore.open(tmp_path / "tether.db")
    try:
        g = _opened(store, ws)
        assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY
        for i in range(3):
            g.check("bash", {"command": f"ls {i}"}, call_id=f"l{i}")
        seq = next(e.seq for e in store.events(g.run_id, kinds={"action.decided"}))
        original = _payload(store, g.run_id, seq)
        forged = original.replace('"verdict":"DENY"}', '"verdict":"ALLOW"}', 1).replace('"DENY"', '"ALLOW"')
        assert forged != original
        yield store, ws, g.run_id, seq, forged
    finally:
        store.close()


def _forged_after_audit(store: EventStore, monkeypatch: pytest.MonkeyPatch, run_id: str, seq: int, forged: str) -> None:
    real_verify = store.verify_run

    def verify_then_forge(rid: str, *a: Any, **kw: Any) -> Any:
        audit = real_verify(rid, *a, **kw)  # the original is verified
        _rewrite(store, run_id, seq, forged)  # then the writer puts the forged row in, for the fold's read
        return audit

    monkeypatch.setattr(store, "verify_run", verify_then_forge)


def test_an_event_forged_only_while_the_fold_reads_it_is_refused(
    denied: tuple[EventStore, Path, str, int, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, ws, run_id, seq, forged = denied
    _forged_after_audit(store, monkeypatch, run_id, seq, forged)
    try:
        opened = _opened(store, ws)
    except LogCorrupt:
        return  # refused: the events folded are not the ones verified
    again = opened.check("bash", RM, call_id="c1")
    assert again.verdict is Verdict.DENY, f"governed from a forged decision: {again}"


def test_an_event_forged_before_a_checkpoint_read_on_demand_is_refused(
    denied: tuple[EventStore, Path, str, int, str],
) -> None:
    """A restored guard's log reads the events before its checkpoint only when asked (a stop's checks): that read,
    too, is of rows the audit no longer covers."""
    store, ws, run_id, seq, forged = denied
    opened = _opened(store, ws)
    upto = len(opened.events)
    tail = store.events(run_id, after=upto - 2)
    log = Log(store, run_id, upto - 1, tail)
    _rewrite(store, run_id, seq, forged)
    with pytest.raises(LogCorrupt):
        list(log)


def test_an_intact_session_folds_as_before(denied: tuple[EventStore, Path, str, int, str]) -> None:
    store, ws, run_id, _, _ = denied
    again = _opened(store, ws)
    assert again.check("bash", RM, call_id="c1").verdict is Verdict.DENY
    whole = store.events(run_id)
    log = Log(store, run_id, len(whole) - 1, whole[-1:])
    assert [e.hash for e in log] == [e.hash for e in whole]
