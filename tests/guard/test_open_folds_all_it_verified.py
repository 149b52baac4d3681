"""Guard.open folds every event its audit verified: a log cut short between the audit and the fold is refused.

The attack (the one guard/session.py's ``unverified`` check answers for a rewritten row, here for rows taken away):
the audit verifies the whole log — under an anchor key, its signed checkpoints too — then a writer of the database
deletes the last events and moves the run's head back before the guard reads the events it folds. Every event
folded is one the audit verified, so the row-by-row check passes, yet the session is governed from a log without
its end: a session that was closed (every later call refused, ``run:finished``) is open again and a call is ALLOW,
and the guard's next write chains after the cut, over the signed history.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tether.errors import LogCorrupt
from tether.events import EventStore
from tether.guard import Guard
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict

LS = {"command": "ls"}


def _opened(store: EventStore, ws: Path) -> Guard:
    return Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)


def _cut(path: Path, run_id: str, keep: int) -> None:
    """Delete the run's events from seq ``keep`` on and move its head back to the one before (file access)."""
    conn = sqlite3.connect(path)
    conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
    conn.execute("DELETE FROM events WHERE run_id=? AND seq>=?", (run_id, keep))
    (h,) = conn.execute("SELECT lower(hex(hash)) FROM events WHERE run_id=? AND seq=?", (run_id, keep - 1)).fetchone()
    conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (keep - 1, h, run_id))
    conn.commit()
    conn.close()


def test_a_log_cut_short_after_its_audit_is_refused(
    store: EventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    g = _opened(store, ws)
    assert g.check("bash", LS, call_id="l1").verdict is Verdict.ALLOW
    open_until = len(g.events)
    g.close("done")
    assert g.check("bash", LS, call_id="l2").rule == "run:finished"
    real_verify = store.verify_run

    def verify_then_cut(rid: str, *a: Any, **kw: Any) -> Any:
        audit = real_verify(rid, *a, **kw)  # the whole log, its end included, is verified
        _cut(store.path, rid, open_until)  # then its end is taken away, for the fold's read
        return audit

    monkeypatch.setattr(store, "verify_run", verify_then_cut)
    try:
        opened = _opened(store, ws)
    except LogCorrupt:
        return  # refused: the fold is not the log the audit verified
    again = opened.check("bash", LS, call_id="l3")
    assert again.rule == "run:finished", f"governed from a log without its end: {again}"


def test_a_log_that_grew_after_its_audit_opens(store: EventStore, tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    g = _opened(store, ws)
    g.check("bash", LS, call_id="l1")
    again = _opened(store, ws)
    assert again.check("bash", LS, call_id="l1").verdict is Verdict.ALLOW
    assert len(again.events) == store.verify(again.run_id)
