"""The functional core: next_step is a pure function of folded state."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tether.control.loop import HumanRequired
from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.events.store import EventStore
from tether.kernel.steps import (
    CallModel,
    Decide,
    Execute,
    ExpireApproval,
    Finish,
    StageApproval,
    Verify,
    Wait,
    next_step,
)
from tether.state import RunState

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix" / "envelope.yaml"
NOW = datetime.now(UTC)


@pytest.fixture
def env() -> Envelope:
    return load_envelope(EXAMPLE)


class Log:
    """A real SQLite log that tests write events into, then fold."""

    def __init__(self, tmp: Path, env: Envelope) -> None:
        self.store = EventStore.open(tmp / "t.db")
        self.run = self.store.create_run("t")
        self.add("run.started", task="t", envelope=env.model_dump(mode="json"), budgets=env.budgets.model_dump())

    def add(self, kind: str, **payload: Any) -> None:
        self.store.append(self.run, kind, payload)

    def state(self) -> RunState:
        return RunState.from_events(self.store.events(self.run))

    def turn(self, turn: int, *calls: tuple[str, str, dict[str, Any]], text: str = "") -> None:
        self.add(
            "model.responded",
            turn=turn,
            model="m",
            text=text,
            termination="tool_request" if calls else "complete",
            tool_calls=[{"id": c, "name": n, "args": a} for c, n, a in calls],
            input_tokens=10,
            output_tokens=5,
        )
        for c, n, a in calls:
            self.add("action.proposed", call_id=c, tool=n, args=a, args_hash="h", turn=turn)


def test_fresh_run_calls_model(tmp_path: Path, env: Envelope) -> None:
    assert next_step(Log(tmp_path, env).state(), env, NOW) == CallModel(0)


def test_proposal_is_decided_then_executed(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.turn(0, ("c1", "bash", {"command": "ls"}))
    assert next_step(log.state(), env, NOW) == Decide("c1")
    log.add("action.decided", call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok")
    assert next_step(log.state(), env, NOW) == Execute("c1", 1)
    log.add("action.started", call_id="c1", tool="bash", args_hash="h")
    log.add("action.completed", call_id="c1", tool="bash", ok=True)
    assert next_step(log.state(), env, NOW) == CallModel(1)


def test_ask_stages_approval_and_waits_until_answered(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.turn(0, ("c1", "bash", {"command": "git push"}))
    log.add("action.decided", call_id="c1", verdict="ASK", deciding_rule="coding:ask-git-push", reason="publishes")
    assert next_step(log.state(), env, NOW) == StageApproval("c1")
    log.add(
        "approval.requested",
        approval_id="a1",
        call_id="c1",
        tool="bash",
        args_hash="h",
        preview="git push",
        reason="publishes",
        expires_at=NOW.timestamp() + 60,
    )
    assert isinstance(next_step(log.state(), env, NOW), Wait)
    later = datetime.fromtimestamp(NOW.timestamp() + 120, UTC)
    assert next_step(log.state(), env, later) == ExpireApproval("a1")
    log.add("approval.denied", approval_id="a1", by="alice", reason="no")
    assert next_step(log.state(), env, NOW) == CallModel(1)


def test_crash_between_start_and_completion(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.turn(0, ("c1", "run_tests", {}), ("c2", "bash", {"command": "make deploy"}))
    for c in ("c1", "c2"):
        log.add("action.decided", call_id=c, verdict="ALLOW", deciding_rule="r", reason="ok")
    log.add("action.started", call_id="c1", tool="run_tests", args_hash="h")
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Execute) and step.call_id == "c1" and step.attempt == 2  # idempotent: re-run
    log.add("action.completed", call_id="c1", tool="run_tests", ok=True)
    log.add("action.started", call_id="c2", tool="bash", args_hash="h")
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Finish) and step.status == "NEEDS_INPUT" and "c2" in step.reason  # never twice


def test_a_read_only_tool_is_idempotent_unless_its_contract_says_otherwise(tmp_path: Path, env: Envelope) -> None:
    """The example declares read_file with effects [read] and no idempotent: a crash inside it is re-run."""
    assert env.tool("read_file") is not None and env.tool("read_file").idempotent is None  # type: ignore[union-attr]
    log = Log(tmp_path, env)
    log.turn(0, ("c1", "read_file", {"path": "src/stats/core.py"}))
    log.add("action.decided", call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok")
    log.add("action.started", call_id="c1", tool="read_file", args_hash="h")
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Execute) and step.attempt == 2 and "idempotent" in step.why
    stated = env.model_copy(
        update={
            "tools": [t.model_copy(update={"idempotent": False}) if t.name == "read_file" else t for t in env.tools]
        }
    )
    step = next_step(log.state(), stated, NOW)
    assert isinstance(step, Finish) and step.status == "NEEDS_INPUT"  # an explicit "not idempotent" is obeyed
    writer = next(t for t in env.tools if t.name == "edit_file").model_copy(update={"idempotent": None})
    assert not writer.retry_safe  # a tool that writes must say so itself


def test_finish_claim_is_verified_not_trusted(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.turn(0, ("f", "finish", {"summary": "done"}))
    log.add("action.decided", call_id="f", verdict="ALLOW", deciding_rule="r", reason="ok")
    log.add("action.started", call_id="f", tool="finish", args_hash="h")
    log.add("action.completed", call_id="f", tool="finish", ok=True, result={"data": {"claim": "done"}})
    assert next_step(log.state(), env, NOW) == Verify("f")
    log.add("completion.refused", call_id="f", reasons=["tests FAILED"], refusals=1, max_refusals=2)
    assert next_step(log.state(), env, NOW) == CallModel(1)


def test_refusals_past_the_limit_end_verify_failed(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.add(
        "completion.refused",
        call_id="x",
        reasons=["no"],
        refusals=env.verification.max_refusals + 1,
        max_refusals=env.verification.max_refusals,
    )
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Finish) and step.status == "VERIFY_FAILED"


def test_prose_never_completes(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    for turn in range(3):
        assert next_step(log.state(), env, NOW) == CallModel(turn)
        log.turn(turn, text="All done, the bug is fixed!")
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Finish) and step.status == "NO_PROGRESS"


def test_budget_stop_before_model_call(tmp_path: Path, env: Envelope) -> None:
    tight = env.model_copy(update={"budgets": env.budgets.model_copy(update={"tokens": 15})})
    log = Log(tmp_path, tight)
    log.turn(0, text="thinking")
    step = next_step(log.state(), tight, NOW)
    assert (
        isinstance(step, Finish)
        and step.status == "BUDGET_STOP"
        and step.breach is not None
        and step.breach.budget == "tokens"
    )


def test_tool_call_budget_checked_before_action(tmp_path: Path, env: Envelope) -> None:
    tight = env.model_copy(update={"budgets": env.budgets.model_copy(update={"tool_calls": 1})})
    log = Log(tmp_path, tight)
    log.turn(0, ("c1", "list_dir", {}), ("c2", "list_dir", {}))
    for c in ("c1", "c2"):
        log.add("action.decided", call_id=c, verdict="ALLOW", deciding_rule="r", reason="ok")
    assert next_step(log.state(), tight, NOW) == Execute("c1", 1)
    log.add("action.started", call_id="c1", tool="list_dir", args_hash="h")
    log.add("action.completed", call_id="c1", tool="list_dir", ok=True)
    step = next_step(log.state(), tight, NOW)
    assert isinstance(step, Finish) and step.breach is not None and step.breach.budget == "tool_calls"


def test_control_stop_wins_over_more_work(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    step = next_step(log.state(), env, NOW, control_stop=HumanRequired("same failure 3 times", no_progress=True))
    reason = "the recovery ladder reached escalate_human without progress: same failure 3 times"
    assert step == Finish("NO_PROGRESS", reason, next_action=step.next_action)  # type: ignore[union-attr]
    asked = next_step(log.state(), env, NOW, control_stop=HumanRequired("which API?", no_progress=False))
    assert asked == Finish(
        "NEEDS_INPUT", "a human must decide how to continue: which API?", next_action=step.next_action
    )  # type: ignore[union-attr]
