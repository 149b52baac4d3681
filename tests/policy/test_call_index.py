"""The fold's index of calls by (status, tool) gives the answers the scans over every call gave.

A governed session's decision used to scan all its calls three times: the count of calls let through
(``budgets.tool_calls``), the external calls committed (``outputs.max_external``) and a retried call's granted
approval (Codex). Each is now a lookup in what the fold keeps as events land (``RunState.calls_by``,
``RunState.same_calls``). Here random histories — calls proposed (ids reused too), decided every way, asked,
answered, expired, started, completed, failed, invalid, continued past — are folded, and at every prefix the
indexed answer is compared with the old scan, kept below as the oracle.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.canonical import content_hash
from tether.envelope.schema import Effect, Envelope, Outputs, PlanRef, ToolContract
from tether.events.store import Event
from tether.guard.session import LET_THROUGH, Guard, spent
from tether.policy.decide import COMMITTED, external_limit
from tether.state import Action, RunState
from tether.status import ActionStatus

TS = "2026-01-01T00:00:00+00:00"
TOOLS = ["bash", "post", "pay", "read_file", "mystery"]  # "mystery": not declared by the envelope
ARGS = [{"command": "a"}, {"command": "b"}, {"url": "x"}]


def envelope(max_external: int | None) -> Envelope:
    return Envelope(
        plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
        tools=[
            ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC]),
            ToolContract(name="read_file", purpose="read", effects=[Effect.READ]),
            ToolContract(name="post", purpose="http post", effects=[Effect.NETWORK, Effect.PUBLISHED]),
            ToolContract(name="pay", purpose="money", effects=[Effect.FINANCIAL]),
        ],
        outputs=Outputs(max_external=max_external),
    )


# ---- the scans the index replaced (the oracle) ----------------------------------------------------------


def let_through_scan(state: RunState) -> int:
    return sum(1 for a in state.actions.values() if a.status in LET_THROUGH)


def committed_scan(action: Action, state: RunState, env: Envelope) -> int:
    """The external outputs the old scan counted against ``outputs.max_external`` for ``action``."""
    committed = set(state.external_calls)
    for other in state.actions.values():
        c = env.tool(other.tool)
        if other.call_id != action.call_id and other.status in COMMITTED and c is not None and c.external_output:
            committed.add(other.call_id)
    return len(committed)


def same_limit(action: Action, state: RunState, env: Envelope) -> bool:
    contract = env.tool(action.tool)
    assert contract is not None
    said, limit = external_limit(action, contract, state, env), env.outputs.max_external
    if limit is None or not contract.external_output:
        return said is None
    n = committed_scan(action, state, env)
    return said is None if n < limit else said is not None and f"the run has {n} external output(s)" in said


def granted_before_scan(state: RunState, tool: str, args_hash: str, call_id: str) -> str | None:
    same = [a for a in state.actions.values() if (a.tool, a.args_hash) == (tool, args_hash) and a.call_id != call_id]
    for a in sorted(same, key=lambda a: a.seq):
        taken = any(b.seq > a.seq and b.deciding_rule == "approval:granted" for b in same)
        if a.approval_id and a.approved_by and a.status is ActionStatus.DECIDED and not taken:
            return f"{a.approval_id} by {a.approved_by}"
    return None


# ---- random histories ---------------------------------------------------------------------------------

OPS = st.tuples(
    st.sampled_from(
        [
            *("propose", "propose", "decide", "ask", "ask", "grant", "grant", "grant", "deny", "expire"),
            *("start", "complete", "fail", "invalid", "continue", "retry", "retry"),
        ]
    ),
    st.integers(0, 11),  # which call (an existing one; "propose" may reuse an id)
    st.sampled_from(TOOLS),
    st.integers(0, len(ARGS) - 1),
    st.sampled_from(["ALLOW", "ASK", "DENY"]),
    st.sampled_from(["allow:x", "approval:granted", "coding:deny", "kernel:denied-before", "ask:y"]),
    st.booleans(),
)


def history(ops: list[tuple[Any, ...]]) -> list[Event]:
    events = [Event("r", 0, TS, "run.started", {"task": "t", "max_external": 2})]
    calls: list[tuple[str, str, str]] = []  # (call id, tool, args hash) of each proposal
    approvals: dict[str, str] = {}  # approval id -> call id

    def add(kind: str, payload: dict[str, Any]) -> None:
        events.append(Event("r", len(events), TS, kind, payload))

    for op, which, tool, arg, verdict, rule, ok in ops:
        if op == "propose" or not calls:
            reuse = calls and which % 4 == 0
            call_id = calls[which % len(calls)][0] if reuse else f"c{len(calls)}"
            args = ARGS[arg]
            calls.append((call_id, tool, content_hash(args)))
            payload = {"call_id": call_id, "tool": tool, "args": args, "args_hash": content_hash(args), "turn": 0}
            add("action.proposed", payload)
            continue
        call_id, tool, args_hash = calls[which % len(calls)]
        if op == "retry":  # Codex retrying a call under a new id, let through on the earlier call's grant
            new = f"c{len(calls)}"
            calls.append((new, tool, args_hash))
            args = next(e.payload["args"] for e in events if e.payload.get("args_hash") == args_hash)
            add("action.proposed", {"call_id": new, "tool": tool, "args": args, "args_hash": args_hash, "turn": 0})
            decided = {"call_id": new, "verdict": "ALLOW", "deciding_rule": "approval:granted", "reason": "r"}
            add("action.decided", decided)
            continue
        if op == "decide":
            add("action.decided", {"call_id": call_id, "verdict": verdict, "deciding_rule": rule, "reason": "r"})
        elif op == "ask":
            add("action.decided", {"call_id": call_id, "verdict": "ASK", "deciding_rule": "ask:y", "reason": "r"})
            ap = f"ap{len(events)}"
            approvals[ap] = call_id
            add(
                "approval.requested",
                {
                    "approval_id": ap,
                    "call_id": call_id,
                    "tool": tool,
                    "args_hash": args_hash,
                    "preview": "p",
                    "reason": "r",
                    "expires_at": 0.0,
                },
            )
        elif op in ("grant", "deny", "expire") and approvals:
            ap = sorted(approvals)[which % len(approvals)]
            if op == "grant":
                add("approval.granted", {"approval_id": ap, "by": "ann"})
            elif op == "deny":
                add("approval.denied", {"approval_id": ap, "by": "ann", "reason": "no"})
            else:
                add("approval.expired", {"approval_id": ap, "outcome": "deny"})
        elif op == "start":
            add("action.started", {"call_id": call_id, "tool": tool, "args_hash": args_hash, "attempt": 1 + ok})
        elif op == "complete":
            effects = ["network", "published"] if tool == "post" else []
            add("action.completed", {"call_id": call_id, "tool": tool, "ok": ok, "result": {"effects": effects}})
        elif op == "fail":
            add("action.failed", {"call_id": call_id, "tool": tool, "error": "e", "failure_class": "tool_error"})
        elif op == "invalid":
            add("action.invalid", {"call_id": call_id, "tool": tool, "error": "e"})
        elif op == "continue":
            resolved = [call_id] if ok else []
            add("run.continued", {"by": "ann", "from_status": "NEEDS_INPUT", "reason": "go on", "resolved": resolved})
    return events


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(OPS, min_size=1, max_size=40), st.sampled_from([None, 1, 2, 3]))
def test_the_indexed_answers_equal_the_scans_at_every_prefix_of_a_random_history(
    ops: list[tuple[Any, ...]], max_external: int | None
) -> None:
    env = envelope(max_external)
    events = history(ops)
    state = RunState()
    for e in events:
        state.apply(e)
        assert state.calls_in(LET_THROUGH) == let_through_scan(state)
        assert sum(len(ids) for ids in state.calls_by.values()) == len(state.actions)
        for status in ActionStatus:
            assert state.calls_in([status]) == sum(1 for a in state.actions.values() if a.status is status)
        probes = list(state.actions.values()) + [Action("fresh", t, {}, "h", 0, e.seq + 1) for t in TOOLS]
        for a in probes:
            if env.tool(a.tool) is not None:
                assert same_limit(a, state, env)
            for other in probes:
                key = (other.tool, other.args_hash, a.call_id)
                assert Guard._granted_before(state, *key) == granted_before_scan(state, *key)


def test_the_budget_of_calls_let_through_reads_the_index() -> None:
    """``spent`` (the guard's tool_calls budget) counts through the index what the scan counted."""
    from datetime import UTC, datetime

    ops = [("propose", 1, "bash", i % 3, "ALLOW", "allow:x", True) for i in range(6)]  # 1: no id reused
    ops += [("decide", i, "bash", 0, "ALLOW", "allow:x", True) for i in range(6)]
    events = history(ops)
    events[0] = Event("r", 0, TS, "run.started", {"task": "t", "budgets": {"tool_calls": 6}})
    state = RunState.from_events(events)
    assert state.calls_in(LET_THROUGH) == let_through_scan(state) == 6
    over = spent(state, datetime.now(UTC))
    assert over is not None and over.budget == "tool_calls"
