"""The read path: rows parsed once from their JSON text, the collector paused in bulk, status from a few kinds.

The fail-closed reading of bad payloads (consistent rewrites, damaged rows) is attacked in
tests/test_event_payloads.py and tests/test_log_hygiene.py; here the shortcuts are held to the long way.
"""

from __future__ import annotations

import gc
import inspect
import sqlite3
import threading
from pathlib import Path

import pytest

from tether.canonical import canonical_json
from tether.errors import LogCorrupt
from tether.events import kinds as k
from tether.events.bulk import gc_paused
from tether.events.chain import event_hash
from tether.events.payload import Payload, parse
from tether.events.store import Event, EventStore
from tether.state import _BY_KIND, STATUS_KINDS, RunState
from tether.status import RunStatus


def _proposed(call: str) -> k.ActionProposed:
    return k.ActionProposed(call_id=call, tool="bash", args={"cmd": call}, args_hash="h" + call, turn=1)


def _asked(approval: str, call: str) -> k.ApprovalRequested:
    return k.ApprovalRequested(
        approval_id=approval, call_id=call, tool="bash", args_hash="h" + call, preview="", reason="", expires_at=0
    )


#: A run that waits, is answered, resumed with an approval still open, resumed again, waits again, finishes.
LIFE: list[Payload] = [
    k.RunStarted(task="t"),
    k.ModelResponded(turn=1, model="m", termination="tool_request"),
    _proposed("c1"),
    _proposed("c2"),
    k.ActionDecided(call_id="c1", verdict="ASK", deciding_rule="r", reason="why"),
    _asked("a1", "c1"),
    _asked("a2", "c2"),
    k.ApprovalGranted(approval_id="a1", by="ann"),
    k.RunResumed(reason="x"),
    k.ApprovalDenied(approval_id="a2", by="bob", reason="no"),
    k.RunResumed(reason="y"),
    k.ActionStarted(call_id="c1", tool="bash", args_hash="hc1"),
    k.ActionCompleted(call_id="c1", tool="bash", ok=True),
    _proposed("c3"),
    _asked("a3", "c3"),
    k.ApprovalExpired(approval_id="a3", outcome="deny"),
    k.RunResumed(reason="z"),
    k.RunWaiting(status=RunStatus.WAITING_APPROVAL, reason="for a human"),
    k.RunResumed(reason="answered"),
    k.RunFinished(status=RunStatus.COMPLETE),
]


def test_the_status_kinds_give_the_full_folds_status_and_approvals_at_every_prefix() -> None:
    events = [Event.of("r", i, "2026-01-01T00:00:00+00:00", p) for i, p in enumerate(LIFE)]
    seen = set()
    for n in range(len(events) + 1):
        full = RunState.from_events(events[:n])
        part = RunState.from_events(e for e in events[:n] if e.kind in STATUS_KINDS)
        assert (part.status, part.pending_approvals) == (full.status, full.pending_approvals), n
        seen.add(full.status)
    assert {RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.COMPLETE} <= seen


def test_every_handler_that_sets_status_or_approvals_is_a_status_kind() -> None:
    """A new handler that changes the status must join STATUS_KINDS, or `tether runs` would miss it."""
    for kind, handler in _BY_KIND.items():
        source = inspect.getsource(handler)
        if "self.status" in source or "self.pending_approvals" in source:
            assert kind in STATUS_KINDS, f"{kind}: {handler.__name__} sets the status"


def test_a_stored_row_parses_from_its_text_as_its_dict_would(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t", LIFE)
    read = store.events(run)
    assert [e.data for e in read] == LIFE
    for e, p in zip(read, LIFE, strict=True):
        assert e.payload == p.model_dump(mode="json") and parse(e.kind, e.payload) == e.data
    assert read == store.events(run)  # equal by their rows
    only = store.events(run, kinds={"run.resumed", "run.finished"})
    assert [e.seq for e in only] == [i for i, p in enumerate(LIFE) if p.KIND in ("run.resumed", "run.finished")]
    with pytest.raises(AttributeError, match="immutable"):
        read[0].seq = 7  # type: ignore[misc]


def _forge(db: Path, run: str, kind: str, body: str) -> int:
    conn = sqlite3.connect(db)
    seq, prev = conn.execute("SELECT head_seq, head_hash FROM runs WHERE run_id=?", (run,)).fetchone()
    seq += 1
    ts = "2026-01-01T00:00:00.000000+00:00"
    h = event_hash(prev, run, seq, ts, kind, body)
    conn.execute("INSERT INTO events VALUES (?,?,?,?,?,?)", (run, seq, ts, kind, body, bytes.fromhex(h)))
    conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq, h, run))
    conn.commit()
    conn.close()
    return int(seq)


@pytest.mark.parametrize(
    ("kind", "body", "reason"),
    [
        ("model.requested", '{"turn": 1, "model": "m", "turn": "one"}', "field turn"),  # a duplicate key: last wins
        ("model.requested", '{"turn": 1e400, "model": "m"}', "field turn"),
        ("model.requested", '{"turn": 1, "model": "\\ud800"}', None),  # a lone surrogate: text JSON allows
        ("run.finished", '{"status": "COMPLETE", "result": 1}', "field result"),
        ("action.proposed", "[1, 2]", "not a JSON object"),
        ("action.proposed", '"{}"', "not a JSON object"),
        ("run.resumed", '{"reason": "x"} trailing', "not a JSON object"),
    ],
)
def test_a_hostile_row_reads_as_json_reads_it_or_fails_naming_the_seq(
    tmp_path: Path, kind: str, body: str, reason: str | None
) -> None:
    """Rows the chain accepts (rewritten consistently) but tether never wrote: the JSON validator and the dict
    path agree, or reading fails closed naming the seq; never a half-read event."""
    db = tmp_path / "t.db"
    store = EventStore.open(db)
    run = store.create_run("t", [k.RunStarted(task="t")])
    seq = _forge(db, run, kind, body)
    try:
        event = store.events(run)[-1]
        data = event.data
    except LogCorrupt as e:
        assert e.seq == seq and reason is not None and reason in e.reason, e
        return
    assert reason is None and data == parse(kind, event.payload)
    assert canonical_json(event.payload) != body  # tether would have written it canonically


def test_the_collector_pause_nests_across_threads_and_leaves_a_switched_off_collector_off() -> None:
    assert gc.isenabled()
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        with gc_paused():
            started.set()
            release.wait(5)

    t = threading.Thread(target=hold)
    t.start()
    started.wait(5)
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's pause is still on
    release.set()
    t.join()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("a fold that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
