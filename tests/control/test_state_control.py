"""What the gate and the execution review read of the control layer, kept by the run state.

A hook's PreToolUse decides without the control layer's fold (it does not import ``tether.control``): the control
state, whether recovery waits for a person and the trailing run of refused reviews come from ``RunState``
(``control``, ``awaiting_human``, ``review_refusals``). These tests fold logs that move each of them and compare,
at every prefix, with the control layer's own answers and with a from-scratch reading of the log.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from control_helpers import Run, envelope
from oracle import last
from test_incremental import trajectory

from tether.control import control_state, fold
from tether.control.fold import folded
from tether.envelope.schema import Effect, ToolContract
from tether.events.store import Event
from tether.review.execution import consecutive_failures, review_action
from tether.state import RunState
from tether.status import ControlState, RunStatus


def reference(events: list[Event]) -> tuple[ControlState, bool, int]:
    """The three facts read from the whole log, as the control layer defines them."""
    changed = last(events, "control.changed")
    state = ControlState(changed.payload["state"]) if changed else ControlState.NORMAL
    switched = last(events, "recovery.switched")
    continued = last(events, "run.continued")
    awaiting = (
        switched is not None
        and switched.payload["strategy"] == "escalate_human"
        and switched.seq > (continued.seq if continued else -1)
    )
    refusals = 0
    for e in events:
        if e.kind == "review.gate":
            refusals = 0 if e.payload["ok"] else refusals + 1
    return state, awaiting, refusals


def prefixes(events: list[Event]) -> Iterator[list[Event]]:
    for k in range(1, len(events) + 1):
        yield events[:k]


def switched(strategy: str) -> tuple[str, dict[str, Any]]:
    return ("recovery.switched", {"previous": "minimal_fix", "strategy": strategy, "reason": "r", "guidance": "g"})


def changed(previous: str, state: str) -> tuple[str, dict[str, Any]]:
    return (
        "control.changed",
        {"previous": previous, "state": state, "tier": "warning", "reason": "r", "dimension": "d"},
    )


def gate(ok: bool) -> tuple[str, dict[str, Any]]:
    return ("review.gate", {"call_id": "c", "tool": "write_file", "ok": ok, "risk": "LOW", "reasons": []})


CONTINUED = ("run.continued", {"by": "ann", "from_status": RunStatus.NO_PROGRESS.value, "reason": "go on"})


def hostile_tail(run: Run) -> None:
    """Each fact moved and moved back: an escalation answered, escalated again, then left for another strategy;
    refusals in a row, broken by a pass; every control state in turn, and one repeated."""
    run.append([gate(False), gate(False), switched("escalate_human"), changed("NORMAL", "HUMAN_REQUIRED")])
    run.append([CONTINUED, gate(False), switched("escalate_human"), gate(True), gate(False)])
    run.append([changed("HUMAN_REQUIRED", "BLOCKED"), changed("BLOCKED", "CAUTIOUS"), switched("minimal_fix")])
    run.append([switched("escalate_human"), changed("CAUTIOUS", "CAUTIOUS"), changed("CAUTIOUS", "NORMAL")])
    run.append([CONTINUED, switched("escalate_human")])


def test_run_state_keeps_what_the_gate_reads_of_the_control_layer_at_every_prefix(tmp_path: Path) -> None:
    run = Run(tmp_path, envelope(budgets={"tool_calls": 200, "turns": 100, "usd": 5.0}))
    trajectory(run)
    hostile_tail(run)
    log = run.events
    seen: set[tuple[ControlState, bool, int]] = set()
    fold.clear()
    for events in prefixes(log):
        state = RunState.from_events(events)
        want = reference(events)
        assert (state.control, state.awaiting_human, state.review_refusals) == want, f"at seq {events[-1].seq}"
        assert state.control == control_state(events)
        f = folded(events)
        assert (f.awaiting_human, f.review_refusals) == (state.awaiting_human, state.review_refusals)
        assert consecutive_failures(events) == state.review_refusals
        seen.add(want)
    assert {s for s, _, _ in seen} == set(ControlState)  # every control state was met
    assert {a for _, a, _ in seen} == {True, False} and max(r for _, _, r in seen) >= 3


def test_the_review_reads_the_same_from_the_state_as_from_the_fold(tmp_path: Path) -> None:
    """``review_action`` with the run state (the decider's call; no fold for a call that writes nothing) equals
    the review from the control layer's fold, for every kind of effect, at every prefix."""
    run = Run(tmp_path, envelope(budgets={"tool_calls": 200, "turns": 100, "usd": 5.0}))
    trajectory(run)
    hostile_tail(run)
    refused = 0
    for events in prefixes(run.events):
        state = RunState.from_events(events)
        for effects in ([Effect.EXEC], [Effect.NETWORK], [Effect.WRITE], [Effect.READ, Effect.WRITE], [Effect.READ]):
            contract = ToolContract(name="t", purpose="p", effects=effects)
            for args in ({"path": "src/calc.py"}, {"path": "tests/test_calc.py"}, {"command": "make"}):
                fold.clear()
                with_state = review_action(contract, args, events, run.env, state)
                fold.clear()
                assert with_state == review_action(contract, args, events, run.env), (events[-1].seq, effects, args)
                refused += "recovery has escalated" in " ".join(with_state.reasons)
    assert refused > 0  # the escalation refused calls somewhere along the log
