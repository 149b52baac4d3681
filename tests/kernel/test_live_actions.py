"""RunState's live calls: what ``next_step`` scans stays bounded however many calls the run has made."""

from __future__ import annotations

from tether.events.kinds import ActionCompleted, ActionDecided, ActionProposed, ActionStarted
from tether.events.payload import Payload
from tether.events.store import Event
from tether.state import RunState
from tether.status import ActionStatus


def _feed(state: RunState, items: list[Payload]) -> None:
    for item in items:
        state.apply(Event.of("r", state.last_seq + 1, "2026-01-01T00:00:00+00:00", item))


def _call(i: int, ok: bool) -> list[Payload]:
    cid = f"c{i}"
    return [
        ActionProposed(call_id=cid, tool="bash", args={"command": f"true {i}"}, args_hash=f"h{i}", turn=i),
        ActionDecided(call_id=cid, verdict="ALLOW", deciding_rule="r", reason="ok"),
        ActionStarted(call_id=cid, tool="bash", args_hash=f"h{i}", attempt=1, idempotent=False),
        ActionCompleted(call_id=cid, tool="bash", ok=ok, result={"content": ""}, changed_files=[], duration_s=0.0),
    ]


def test_calls_done_for_good_leave_the_live_set() -> None:
    state = RunState()
    for i in range(2000):
        _feed(state, _call(i, ok=True))
    assert len(state.actions) == 2000 and state.live_actions == []
    _feed(state, _call(2000, ok=False)[:2])  # proposed and allowed: the next step is about it
    assert [a.call_id for a in state.live_actions] == ["c2000"]
    _feed(state, _call(2000, ok=False)[2:])  # it failed: a retry or a stop may still be about it
    assert [(a.call_id, a.status) for a in state.live_actions] == [("c2000", ActionStatus.COMPLETED)]
