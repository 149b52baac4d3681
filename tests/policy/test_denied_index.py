"""The repeat-denial layer finds an identical call's earlier denial through the state's index of identical calls
(``RunState.same_calls``), so it costs the identical calls, not every call of the run — and finds the same."""

from __future__ import annotations

from tether.canonical import content_hash
from tether.events.store import Event
from tether.policy.decide import denied_before
from tether.state import RunState

TS = "2026-01-01T00:00:00+00:00"


def proposed(seq: int, call: str, command: str) -> Event:
    args = {"command": command}
    payload = {"call_id": call, "tool": "bash", "args": args, "args_hash": content_hash(args), "turn": seq}
    return Event("r", seq, TS, "action.proposed", payload)


def decided(seq: int, call: str, verdict: str, rule: str) -> Event:
    payload = {"call_id": call, "verdict": verdict, "deciding_rule": rule, "reason": f"{rule} says so"}
    return Event("r", seq, TS, "action.decided", payload)


def test_the_earlier_denial_among_many_other_calls_is_found_and_only_identical_calls_are_indexed() -> None:
    events = [Event("r", 0, TS, "run.started", {"task": "t"})]
    for i in range(1, 500):
        events += [proposed(2 * i - 1, f"c{i}", f"echo {i}"), decided(2 * i, f"c{i}", "ALLOW", "allow:echo")]
    events += [proposed(1001, "push1", "git push"), decided(1002, "push1", "DENY", "coding:deny-push")]
    events += [proposed(1003, "push2", "git push")]
    state = RunState.from_events(events)
    again = state.actions["push2"]
    found = denied_before(state, again)
    assert found is not None and found.call_id == "push1" and "coding:deny-push" in found.reason
    assert [a.call_id for a in state.same_calls[("bash", again.args_hash)]] == ["push1", "push2"]
    assert denied_before(state, state.actions["c7"]) is None  # allowed before: no repeat denial


def test_a_call_denied_after_it_was_indexed_is_seen_denied() -> None:
    """The index holds the actions themselves: a denial that lands later (a human's) is what the lookup sees."""
    events = [Event("r", 0, TS, "run.started", {"task": "t"}), proposed(1, "a", "make deploy")]
    events += [decided(2, "a", "ASK", "ask:deploy")]
    events += [
        Event(
            "r",
            3,
            "",
            "approval.requested",
            {
                "approval_id": "ap1",
                "call_id": "a",
                "tool": "bash",
                "args_hash": "h",
                "preview": "p",
                "reason": "r",
                "expires_at": 0.0,
            },
        )
    ]
    events += [proposed(4, "b", "make deploy")]
    state = RunState.from_events(events)
    assert denied_before(state, state.actions["b"]) is None  # still waiting for a human
    state.apply(Event("r", 5, TS, "approval.denied", {"approval_id": "ap1", "by": "ann", "reason": "not today"}))
    found = denied_before(state, state.actions["b"])
    assert found is not None and found.call_id == "a" and found.reason == "not today"
