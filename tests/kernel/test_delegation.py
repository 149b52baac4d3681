"""Delegation end to end: a parent run hands a sub-task to a child run under a narrowed envelope.

Real runs of the bugfix example (scripted model, local sandbox, real SQLite): the child is linked both ways,
its receipt comes back to the parent, its spend is charged to the parent, a refused narrowing names the
widening, and a crash mid-delegation resumes the same child.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from runkit import FINISH, FIX, write_script
from typer.testing import CliRunner

from tether import EventStore, Harness
from tether.cli.main import app
from tether.envelope import compile_envelope
from tether.events.kinds import ApprovalRequested
from tether.events.kinds_delegate import DelegateFinished, DelegateStarted
from tether.state import RunState
from tether.tools.delegate import delegate

CHILD_TOOLS = ["read_file", "edit_file", "run_tests"]
READ = {"name": "read_file", "args": {"path": "src/stats/core.py"}}
CHILD = {"turns": [{"tool_calls": [READ, FIX]}, {"tool_calls": [FINISH]}]}


def delegation(child: dict[str, Any] | None = CHILD, **args: Any) -> dict[str, Any]:
    call: dict[str, Any] = {
        "name": "delegate",
        "args": {"task": "fix median() for even-length input", "tools": CHILD_TOOLS, "write": ["src/stats/**"], **args},
    }
    if child is not None:
        call["child"] = child
    return call


def delegating(bugfix: Path, turns: list[dict[str, Any]], budgets: dict[str, Any] | None = None) -> Path:
    """The bugfix envelope with the delegate tool (allowed by a rule) and ``turns`` as its trajectory."""
    path = bugfix / "envelope.yaml"
    data = yaml.safe_load(path.read_text())
    data["tools"].append(delegate.contract.model_dump(mode="json", exclude_none=True))
    data["permissions"]["allow"].append({"id": "allow-delegate", "rule": "delegate", "reason": "sub-tasks"})
    data["budgets"].update(budgets or {})
    # Syntax and policy (and the always-required snapshot check) verify each completion; the tests sensor's
    # baseline would add seconds to every run, parent and child, and is not what is under test here.
    data["verification"]["sensors"] = [{"name": "syntax", "required": True}, {"name": "policy", "required": True}]
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    compile_envelope(bugfix / "plan.yaml", path)
    write_script(bugfix, turns)
    return path


def events(db: Path, run_id: str) -> list[Any]:
    """The run's log, once its chain (and anchor) verify."""
    with EventStore.open(db) as store:
        store.verify_run(run_id)
        return store.events(run_id)


def show(run_id: str, db: Path, *more: str) -> str:
    result = CliRunner().invoke(app, ["show", run_id, "--db", str(db), *more])
    assert result.exit_code in (0, 1, 5), result.output
    return result.output


def only(found: list[Any], kind: type[Any]) -> Any:
    (e,) = [e for e in found if e.kind == kind.KIND]
    return e.data_as(kind)


@pytest.mark.parametrize("sandbox", ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def test_a_child_fixes_the_bug_and_its_receipt_and_spend_come_back(bugfix: Path, sandbox: str) -> None:
    env = delegating(bugfix, [{"tool_calls": [delegation(budget_share=0.5)]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    contract = Harness(env, db=db, sandbox=sandbox).run("fix the median, by delegating")
    assert contract.status == "COMPLETE"
    parent = events(db, contract.run_id)
    started, finished = only(parent, DelegateStarted), only(parent, DelegateFinished)
    assert started.tools == [*CHILD_TOOLS, "finish"] and started.write == ["src/stats/**"]
    assert started.budgets["usd"] == pytest.approx(1.0) and started.budgets["turns"] == 15
    assert finished.status == "COMPLETE" and finished.summary == "fixed median" and finished.evidence
    child = events(db, started.child_run)
    assert child[0].payload["sandbox"] == sandbox  # the parent's backend
    assert child[0].payload["parent_run"] == contract.run_id and child[0].payload["parent_call"] == started.call_id
    assert child[0].payload["envelope"]["budgets"]["usd"] == pytest.approx(1.0)
    child_state = RunState.from_events(child)
    assert child_state.status == "COMPLETE" and child_state.changed_files == ["src/stats/core.py"]
    # The child's spend is the parent's: its turns and tool calls count against the parent's budgets.
    state = RunState.from_events(parent)
    assert finished.spend["turns"] == child_state.used.turns == 2
    assert state.usage()["turns"] == state.used.turns + 2
    assert state.usage()["tool_calls"] == state.used.tool_calls + child_state.used.tool_calls == 2 + 3
    # The child's change is in the parent's receipt of the call, and so in what the parent's verification judged.
    (call,) = [e for e in parent if e.kind == "action.completed" and e.payload["tool"] == "delegate"]
    assert call.payload["changed_files"] == ["src/stats/core.py"] and call.payload["result"]["ok"] is True
    # `tether show` of the parent lists its child; of the child, names its parent.
    assert f"delegated to child run {started.child_run}" in show(contract.run_id, db)
    assert f"delegated by run {contract.run_id}" in show(started.child_run, db)
    assert json.loads(show(started.child_run, db, "--json"))["parent_run"] == contract.run_id


def test_a_child_asking_for_more_than_the_parent_is_refused_naming_it(bugfix: Path) -> None:
    wider = delegation(tools=[*CHILD_TOOLS, "http_get"], write=["tests/**"], network=["pypi.org"])
    env = delegating(bugfix, [{"tool_calls": [wider]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    contract = Harness(env, db=db, sandbox="local").run("delegate too much")
    parent = events(db, contract.run_id)
    assert not [e for e in parent if e.kind == DelegateStarted.KIND]  # nothing was started
    (done,) = [e for e in parent if e.kind == "action.completed" and e.payload["tool"] == "delegate"]
    result = done.payload["result"]
    assert result["ok"] is False and result["failure_class"] == "widening"
    named = {w["path"]: w for w in result["data"]["widenings"]}
    assert set(named) == {"$.tools['http_get']", "$.environment.filesystem.write[0]", "$.environment.network.allow[0]"}
    assert named["$.environment.network.allow[0]"]["parent"] == "only the hosts []"
    assert "http_get" in result["content"]
    with EventStore.open(db) as store:
        assert [r.run_id for r in store.runs()] == [contract.run_id]


def test_children_exhausting_the_budget_stop_the_parent(bugfix: Path) -> None:
    """Each child costs turns; once they have used the parent's, the parent stops BUDGET_STOP."""
    child = {"turns": [{"tool_calls": [READ]}] * 4}
    turns = [{"tool_calls": [delegation(child=child, budget_share=1.0)]} for _ in range(4)]
    env = delegating(bugfix, turns, budgets={"turns": 6})
    db = bugfix / "t.db"
    contract = Harness(env, db=db, sandbox="local").run("delegate until the budget is gone")
    assert contract.status == "BUDGET_STOP" and "budgets.turns" in contract.result
    state = RunState.from_events(events(db, contract.run_id))
    charged = sum(s["turns"] for s in state.delegated.values())
    assert charged >= 4 and state.used.turns + charged >= 6
    first = only(events(db, contract.run_id)[:40], DelegateStarted)
    assert first.budgets["turns"] == 5  # all the parent had left after its own first turn, never more


KILLER = """
import os, signal, sys
from tether import Harness

envelope, db = sys.argv[1:3]

def hook(event):
    if event.kind == "action.completed" and event.payload["tool"] == "edit_file":
        os.kill(os.getpid(), signal.SIGKILL)  # inside the child, mid-delegation: no cleanup, no flush

Harness(envelope, db=db, sandbox="local", on_event=hook).run("fix the median, by delegating")
"""


@pytest.mark.slow
def test_a_crash_mid_delegation_resumes_the_same_child(bugfix: Path) -> None:
    env = delegating(bugfix, [{"tool_calls": [delegation()]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(env), str(db)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -9, proc.stderr
    with EventStore.open(db) as store:
        runs = {r.run_id: r for r in store.runs()}
    assert len(runs) == 2
    (parent,) = [r for r in runs.values() if r.parent_run is None]
    resumed = Harness(env, db=db, sandbox="local").resume(parent.run_id)
    assert resumed.status == "COMPLETE", resumed.result
    with EventStore.open(db) as store:
        assert len(store.runs()) == 2  # the same child, resumed: no second one
    log = events(db, parent.run_id)
    started, finished = only(log, DelegateStarted), only(log, DelegateFinished)
    assert finished.child_run == started.child_run and finished.status == "COMPLETE"
    child = events(db, started.child_run)  # both chains verify
    assert sum(1 for e in child if e.kind == "action.completed" and e.payload["tool"] == "edit_file") == 1
    assert RunState.from_events(child).status == "COMPLETE"


def test_a_parent_with_nothing_left_starts_no_child(bugfix: Path) -> None:
    """The delegate call is the parent's last tool call: a child could be granted none, so none is started."""
    env = delegating(bugfix, [{"tool_calls": [delegation()]}], budgets={"tool_calls": 1})
    db = bugfix / "t.db"
    contract = Harness(env, db=db, sandbox="local").run("delegate with nothing left")
    parent = events(db, contract.run_id)
    (done,) = [e for e in parent if e.kind == "action.completed" and e.payload["tool"] == "delegate"]
    assert done.payload["result"]["failure_class"] == "budget"
    assert "budgets.tool_calls is exhausted" in done.payload["result"]["content"]
    assert not [e for e in parent if e.kind == DelegateStarted.KIND]


def test_delegation_asks_by_default_and_a_waiting_child_is_charged_its_whole_budgets(bugfix: Path) -> None:
    push = {"name": "bash", "args": {"command": "git push origin main"}}  # the coding profile asks for a push
    child = {"turns": [{"tool_calls": [push]}]}
    env = delegating(bugfix, [{"tool_calls": [delegation(child=child, tools=["bash"])]}, {"tool_calls": [FINISH]}])
    # Without the allow rule the gate asks a human, and the preview shows the envelope the child would get.
    data = yaml.safe_load(env.read_text())
    data["permissions"]["allow"] = [r for r in data["permissions"]["allow"] if r["id"] != "allow-delegate"]
    env.write_text(yaml.safe_dump(data, sort_keys=False))
    compile_envelope(bugfix / "plan.yaml", env)
    db = bugfix / "t.db"
    harness = Harness(env, db=db, sandbox="local")
    waiting = harness.run("delegate a push")
    assert waiting.status == "WAITING_APPROVAL"
    asked = only(events(db, waiting.run_id), ApprovalRequested)
    assert asked.tool == "delegate" and "tools: bash, finish" in asked.preview and "a 0.5 share" in asked.preview
    # Approved; the child then waits for its own push approval, which nobody answers here.
    harness.approve(asked.approval_id)
    returned = harness.resume(waiting.run_id)
    log = events(db, waiting.run_id)
    finished = only(log, DelegateFinished)
    assert finished.status == "WAITING_APPROVAL" and finished.reserved
    granted = only(log, DelegateStarted).budgets
    assert finished.spend == {name: float(granted[name]) for name in ("usd", "tokens", "turns", "tool_calls")}
    assert returned.status in ("COMPLETE", "NEEDS_INPUT", "VERIFY_FAILED")  # the parent went on without it


def test_a_childs_spend_is_charged_once_per_call_whatever_the_log_repeats(tmp_path: Path) -> None:
    """The fold charges a delegate call's receipt once: a repeated delegate.finished (a retry) does not double it."""
    from tether.events.kinds import RunStarted

    receipt = DelegateFinished(
        call_id="call_0_0",
        child_run="child",
        status="COMPLETE",  # type: ignore[arg-type]
        spend={"usd": 0.5, "tokens": 100, "turns": 2, "tool_calls": 3},
    )
    with EventStore.open(tmp_path / "t.db") as store:
        run = store.create_run("t", [RunStarted(task="t", budgets={"turns": 10})])
        store.append_many(run, [receipt, receipt.model_copy(update={"spend": {**receipt.spend, "turns": 4}})])
        state = RunState.from_events(store.events(run))
    used = state.usage()
    assert (used["turns"], used["tool_calls"], used["usd"]) == (4, 3, 0.5)  # the latest receipt, once
