"""The one decider: repeat denial, the gate, and the execution review, composed in that order.

Each layer is attacked on its own: a repeat that must not reach the gate, a denial that must not
stick (it came from the run's condition), a gate that cannot be built, a review that refuses an
allowed write and escalates to a human when refusals repeat. The log is a real SQLite event store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tether.canonical import content_hash
from tether.envelope.schema import (
    Effect,
    Envelope,
    Environment,
    Filesystem,
    Outputs,
    Permissions,
    PlanRef,
    Rule,
    ToolContract,
)
from tether.events.store import Event, EventStore
from tether.policy.decide import Ruling, decide
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.state import RunState

TOOLS = [
    ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC]),
    ToolContract(name="read_file", purpose="read", effects=[Effect.READ]),
    ToolContract(name="write_file", purpose="write", effects=[Effect.WRITE]),
    ToolContract(name="post", purpose="http post", effects=[Effect.NETWORK, Effect.PUBLISHED]),
    ToolContract(name="pay", purpose="money", effects=[Effect.FINANCIAL]),
]


def envelope(
    *,
    deny: list[Rule] | None = None,
    allow: list[Rule] | None = None,
    outputs: list[str] | None = None,
    max_external: int | None = None,
) -> Envelope:
    return Envelope(
        plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=Filesystem(read=["**"], write=["src/**"], deny=[])),
        tools=TOOLS,
        permissions=Permissions.model_validate({"profile": "coding", "deny": deny or [], "allow": allow or []}),
        outputs=Outputs(allowed_types=outputs or ["patch", "report"], max_external=max_external),
    )


class Log:
    """A run's log in a real store, with the proposals and decisions a kernel would have written."""

    def __init__(self, tmp_path: Path, env: Envelope) -> None:
        self.env, self.ws = env, tmp_path / "ws"
        (self.ws / "src").mkdir(parents=True)
        self.store = EventStore.open(tmp_path / "t.db")
        self.run_id = self.store.create_run("task")
        self.store.append(self.run_id, "run.started", {"task": "task"})
        self.n = 0
        self.gates_built = 0

    @property
    def events(self) -> list[Event]:
        return self.store.events(self.run_id)

    def propose(self, tool: str, args: dict[str, Any]) -> str:
        self.n += 1
        call = f"c{self.n}"
        payload = {"call_id": call, "tool": tool, "args": args, "args_hash": content_hash(args), "turn": 1}
        self.store.append(self.run_id, "action.proposed", payload)
        return call

    def record(self, call: str, verdict: str, rule: str, reason: str = "because") -> None:
        payload = {"call_id": call, "verdict": verdict, "deciding_rule": rule, "reason": reason}
        self.store.append(self.run_id, "action.decided", payload)

    def gate(self) -> Gate:
        self.gates_built += 1
        return Gate(self.env, self.ws)

    def decide(self, call: str, gate: Any = None) -> Ruling:
        state = RunState.from_events(self.events)
        action = state.actions[call]
        contract = self.env.tool(action.tool)
        assert contract is not None
        return decide(action, contract, gate or self.gate, state, self.events, self.env)


def test_an_identical_call_denied_by_a_rule_is_denied_again_without_the_gate(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    first = log.propose("bash", {"command": "git push"})
    log.record(first, "DENY", "coding:deny-push", "pushing is not allowed")
    again = log.propose("bash", {"command": "git push"})
    ruling = log.decide(again)
    d = ruling.decision
    assert (d.verdict, d.deciding_rule) == (Verdict.DENY, "kernel:denied-before")
    assert first in d.reason and "pushing is not allowed" in d.reason
    assert log.gates_built == 0 and ruling.review is None


def test_a_different_argument_is_not_a_repeat(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    first = log.propose("bash", {"command": "git push"})
    log.record(first, "DENY", "coding:deny-push")
    other = log.propose("bash", {"command": "ls"})  # same tool, other arguments
    other_tool = log.propose("read_file", {"command": "git push"})  # same arguments, other tool
    assert log.decide(other).decision.verdict is Verdict.ALLOW
    assert log.decide(other_tool).decision.deciding_rule != "kernel:denied-before"


@pytest.mark.parametrize("rule", ["control:blocked", "review:gate", "kernel:denied-before"])
def test_a_denial_from_the_run_condition_does_not_stick(tmp_path: Path, rule: str) -> None:
    log = Log(tmp_path, envelope())
    first = log.propose("bash", {"command": "ls"})
    log.record(first, "DENY", rule)
    again = log.propose("bash", {"command": "ls"})
    assert log.decide(again).decision.verdict is Verdict.ALLOW  # the run recovered: the gate decides afresh


def test_a_denial_by_a_human_sticks_even_from_a_transient_rule(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    first = log.propose("bash", {"command": "ls"})
    log.record(first, "ASK", "control:cautious")
    log.store.append_many(
        log.run_id,
        [
            ("approval.requested", _request("ap-1", first)),
            ("approval.denied", {"approval_id": "ap-1", "by": "ann", "reason": "not now"}),
        ],
    )
    again = log.propose("bash", {"command": "ls"})
    assert log.decide(again).decision.deciding_rule == "kernel:denied-before"


def test_a_later_call_is_never_the_earlier_one(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    first = log.propose("bash", {"command": "ls"})
    second = log.propose("bash", {"command": "ls"})
    log.record(second, "DENY", "user:no-ls")  # decided out of order: only EARLIER denials count
    assert log.decide(first).decision.verdict is Verdict.ALLOW


def test_a_gate_that_cannot_be_built_asks_a_human(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    call = log.propose("bash", {"command": "ls"})

    def broken() -> Gate:
        raise ValueError("run rule does not compile")

    d = log.decide(call, broken).decision
    assert (d.verdict, d.deciding_rule) == (Verdict.ASK, "gate:error")
    assert "ValueError: run rule does not compile" in d.reason


def test_the_review_does_not_run_on_reads_or_on_what_the_gate_did_not_allow(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(outputs=["report"], deny=[Rule(id="no-rm", rule="bash(rm:*)")]))
    read = log.propose("read_file", {"path": "src/a.py"})
    denied = log.propose("bash", {"command": "rm -f src/a.py"})
    asked = log.propose("bash", {"command": "git push"})
    assert log.decide(read).review is None and log.decide(read).decision.verdict is Verdict.ALLOW
    assert log.decide(denied).review is None and log.decide(denied).decision.deciding_rule == "no-rm"
    assert log.decide(asked).decision.verdict is Verdict.ASK and log.decide(asked).review is None


def test_an_allowed_write_the_review_refuses_is_denied_then_escalated(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(outputs=["report"]))  # the output contract allows no patches
    call = log.propose("write_file", {"path": "src/a.py", "content": "x = 2\n"})
    first = log.decide(call)
    assert first.review is not None and not first.review.ok
    d = first.decision
    assert (d.verdict, d.deciding_rule) == (Verdict.DENY, "review:gate") and "not patches" in d.reason
    assert d.matches[0].verdict is Verdict.ALLOW  # the gate's allow is kept: the log shows both opinions
    assert d.matches[-1].id == "review:gate"

    log.store.append(log.run_id, "review.gate", first.review.to_payload(call, "write_file"))
    log.record(call, "DENY", "review:gate")
    retry = log.propose("write_file", {"path": "src/a.py", "content": "x = 2\n"})  # not a repeat: transient
    second = log.decide(retry).decision
    assert (second.verdict, second.deciding_rule) == (Verdict.ASK, "review:escalate")
    assert "2 consecutive review failures: a human decides" in second.reason


def test_a_passing_review_keeps_the_gate_decision(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope())
    call = log.propose("write_file", {"path": "src/a.py", "content": "x = 2\n"})
    ruling = log.decide(call)
    assert ruling.review is not None and ruling.review.ok
    assert ruling.decision == Gate(log.env, log.ws).decide("write_file", {"path": "src/a.py", "content": "x = 2\n"})


ALLOW_OUT = [Rule(id="allow-post", rule="post"), Rule(id="allow-pay", rule="pay")]


def test_max_external_zero_denies_an_external_tool_an_allow_rule_allows(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(allow=ALLOW_OUT, max_external=0))
    call = log.propose("post", {"url": "http://127.0.0.1/x"})
    d = log.decide(call).decision
    assert (d.verdict, d.deciding_rule) == (Verdict.DENY, "outputs:max-external")
    assert "outputs.max_external is 0" in d.reason and "network, published" in d.reason
    assert log.gates_built == 0  # decided before the gate: no human is asked about a call that cannot run
    assert log.decide(log.propose("bash", {"command": "ls"})).decision.verdict is Verdict.ALLOW  # not external


def test_max_external_counts_executed_and_in_flight_calls(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(allow=ALLOW_OUT, max_external=2))
    done = log.propose("post", {"n": 1})
    log.record(done, "ALLOW", "allow-post")
    log.store.append(log.run_id, "action.started", {"call_id": done, "tool": "post", "args_hash": "h"})
    log.store.append(
        log.run_id,
        "action.completed",
        {"call_id": done, "tool": "post", "ok": False, "result": {"effects": ["network", "published"]}},
    )  # a failed call still went out: it counts
    waiting = log.propose("pay", {"amount": 1})
    log.record(waiting, "ASK", "approval:financial")  # allowed once a human says yes: counts
    third = log.propose("post", {"n": 3})
    d = log.decide(third).decision
    assert (d.verdict, d.deciding_rule) == (Verdict.DENY, "outputs:max-external")
    assert "has 2 external output(s)" in d.reason
    assert RunState.from_events(log.events).external_used == 1  # executed ones only


def test_two_external_calls_in_one_turn_cannot_both_slip_under_the_limit(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(allow=ALLOW_OUT, max_external=1))
    first, second = log.propose("post", {"n": 1}), log.propose("post", {"n": 2})
    assert log.decide(first).decision.verdict is Verdict.ALLOW
    log.record(first, "ALLOW", "allow-post")
    assert log.decide(second).decision.deciding_rule == "outputs:max-external"


def test_a_denied_external_call_does_not_use_up_the_limit(tmp_path: Path) -> None:
    log = Log(tmp_path, envelope(allow=ALLOW_OUT, max_external=1))
    first = log.propose("post", {"n": 1})
    log.record(first, "DENY", "user:no")
    assert log.decide(log.propose("post", {"n": 2})).decision.verdict is Verdict.ALLOW


def _request(approval_id: str, call: str) -> dict[str, Any]:
    args = {"command": "ls"}
    return {
        "approval_id": approval_id,
        "call_id": call,
        "tool": "bash",
        "args_hash": content_hash(args),
        "preview": "ls",
        "reason": "cautious",
        "expires_at": 4e9,
    }
