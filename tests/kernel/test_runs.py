"""End-to-end runs through the real loop: gate, sandbox, SQLite log, sensors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from runkit import FINISH, FIX, FinishedDemo, recompile, tether, write_script

from tether import EventStore, Harness, RunState, ToolResult, tool
from tether.errors import EnvelopeInvalid
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest


def kinds(db: Path, run_id: str) -> list[str]:
    with EventStore.open(db) as store:
        return [e.kind for e in store.events(run_id)]


def events(db: Path, run_id: str) -> list[dict]:  # type: ignore[type-arg]
    with EventStore.open(db) as store:
        return [e.to_dict() for e in store.events(run_id)]


def test_demo_completes_with_denial_and_declined_approval(finished_demo: FinishedDemo) -> None:
    lines = finished_demo.lines
    contract = lines[-1]
    assert contract["kind"] == "output_contract" and contract["status"] == "COMPLETE"
    decided = [e["payload"] for e in lines if e.get("kind") == "action.decided"]
    deny = next(d for d in decided if d["verdict"] == "DENY")
    assert deny["deciding_rule"] and deny["reason"]
    assert any(d["verdict"] == "ASK" for d in decided)
    denied = [e["payload"] for e in lines if e.get("kind") == "approval.denied"]
    assert denied and denied[0]["by"] == "demo-approver"
    sensors = {e["payload"]["sensor"]: e["payload"]["result"] for e in lines if e.get("kind") == "sensor.result"}
    assert sensors["tests"] == "PASS"
    # The wrong edit was seen failing before the fix passed: evidence, not the model's word.
    results = [
        e["payload"] for e in lines if e.get("kind") == "action.completed" and e["payload"]["tool"] == "run_tests"
    ]
    assert [r["ok"] for r in results] == [False, False, True]
    assert tether("log", "verify", "--all", "--db", str(finished_demo.db)).returncode == 0


def test_headless_approval_deny_then_resume(bugfix: Path) -> None:
    write_script(
        bugfix,
        [
            {"tool_calls": [FIX]},
            {"tool_calls": [{"name": "bash", "args": {"command": "git push origin main"}}]},
            {"tool_calls": [FINISH]},
        ],
    )
    db = bugfix / "t.db"
    run = tether(
        "run",
        "fix it",
        "--envelope",
        str(bugfix / "envelope.yaml"),
        "--db",
        str(db),
        "--sandbox",
        "local",
        "--headless",
        "--json",
    )
    assert run.returncode == 5, run.stdout + run.stderr
    contract = json.loads(run.stdout.splitlines()[-1])
    assert contract["status"] == "WAITING_APPROVAL"
    pending = json.loads(tether("approvals", "--db", str(db), "--json", check=True).stdout)
    assert len(pending) == 1 and "git push origin main" in pending[0]["preview"]
    tether("deny", pending[0]["approval_id"], "--reason", "not today", "--by", "alice", "--db", str(db), check=True)
    resumed = tether("resume", contract["run_id"], "--db", str(db), "--sandbox", "local", "--json")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert json.loads(resumed.stdout.splitlines()[-1])["status"] == "COMPLETE"
    log = events(db, contract["run_id"])
    assert log[0]["payload"]["plan"]["goal"].startswith("Make tests/test_stats.py pass")  # resume shows this plan
    denial = next(e["payload"] for e in log if e["kind"] == "approval.denied")
    assert denial == {"approval_id": pending[0]["approval_id"], "by": "alice", "reason": "not today"}
    assert not any(e["kind"] == "action.started" and "push" in json.dumps(e) for e in log)
    assert tether("show", contract["run_id"], "--db", str(db)).returncode == 0


def test_approve_for_run_adds_a_recorded_rule(bugfix: Path) -> None:
    push = {"name": "bash", "args": {"command": "git push origin main"}}
    write_script(
        bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [push]}, {"tool_calls": [push]}, {"tool_calls": [FINISH]}]
    )
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("run", "bob")

    harness = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local", approver=approver)
    contract = harness.run("fix it")
    assert contract.status == "COMPLETE"
    assert len(asked) == 1  # the second identical push was allowed by the run-scoped rule
    with EventStore.open(bugfix / "t.db") as store:
        state = RunState.from_events(store.events(contract.run_id))
    assert state.run_rules[0]["rule"] == "bash(git push origin main)"
    pushes = [a for a in state.actions.values() if a.tool == "bash"]
    assert [a.deciding_rule for a in pushes][1].startswith("run:")


def test_invalid_arguments_and_unknown_tools_are_told_to_the_model(bugfix: Path) -> None:
    write_script(
        bugfix,
        [
            {"tool_calls": [{"name": "read_file", "args": {"paht": "x"}}, {"name": "teleport", "args": {}}]},
            {"tool_calls": [FIX]},
            {"tool_calls": [FINISH]},
        ],
    )
    contract = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix it")
    assert contract.status == "COMPLETE"
    log = events(bugfix / "t.db", contract.run_id)
    invalid = [e["payload"] for e in log if e["kind"] == "action.invalid"]
    assert [i["tool"] for i in invalid] == ["read_file", "teleport"]
    assert "paht" in invalid[0]["error"] or "path" in invalid[0]["error"]


def test_false_completion_is_refused_then_verify_failed(bugfix: Path) -> None:
    write_script(bugfix, [{"text": "Done!", "tool_calls": [FINISH]}] * 4)
    contract = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix it")
    assert contract.status == "VERIFY_FAILED"
    seen = kinds(bugfix / "t.db", contract.run_id)
    assert seen.count("completion.refused") == 3 and "completion.accepted" not in seen


def test_budget_stop_is_clean(bugfix: Path) -> None:
    env = bugfix / "envelope.yaml"
    env.write_text(env.read_text().replace("tool_calls: 60", "tool_calls: 2"))
    recompile(env)
    write_script(bugfix, [{"tool_calls": [{"name": "list_dir", "args": {}}] * 3}, {"tool_calls": [FINISH]}])
    contract = Harness(env, db=bugfix / "t.db", sandbox="local").run("look around")
    assert contract.status == "BUDGET_STOP"
    log = events(bugfix / "t.db", contract.run_id)
    assert [e["kind"] for e in log][-3:] == ["run.checkpoint", "budget.exceeded", "run.finished"]
    assert sum(1 for e in log if e["kind"] == "action.completed") == 2
    assert any("not executed" in u for u in contract.unknowns)
    assert "budgets.tool_calls" in contract.next_action


def test_a_denied_call_is_never_retried_as_is(bugfix: Path) -> None:
    push = {"name": "bash", "args": {"command": "git push origin main"}}
    write_script(
        bugfix, [{"tool_calls": [push]}, {"tool_calls": [push]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    )
    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("deny", "carol", "no pushing")

    contract = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local", approver=approver).run("fix")
    assert contract.status == "COMPLETE"
    assert len(asked) == 1  # the human is not asked twice for the same call
    decided = [e["payload"] for e in events(bugfix / "t.db", contract.run_id) if e["kind"] == "action.decided"]
    assert [d["deciding_rule"] for d in decided][:2] == ["coding:ask-git-push", "kernel:denied-before"]
    assert "no pushing" in decided[1]["reason"]


def test_a_run_blocked_by_its_provider_resumes_once_the_provider_is_back(bugfix: Path) -> None:
    from tether import FunctionModel, Message, ModelResponse, ToolSpec, call, reply
    from tether.errors import ProviderError

    up = {"ok": False}
    turns = [[call(FIX["name"], **FIX["args"])], [call(FINISH["name"], **FINISH["args"])]]

    def provider(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        if not up["ok"]:
            raise ProviderError("401 invalid key", transient=False, status=401)
        done = sum(1 for m in messages if m.role == "assistant")
        return reply(calls=turns[done])

    harness = Harness(bugfix / "envelope.yaml", model=FunctionModel(provider), db=bugfix / "t.db", sandbox="local")
    first = harness.run("fix it")
    assert first.status == "BLOCKED_DEPENDENCY" and first.last_error and "401" in first.last_error
    up["ok"] = True
    second = harness.resume(first.run_id)
    assert second.status == "COMPLETE"
    assert "model.failed" in kinds(bugfix / "t.db", first.run_id)


def test_transient_failures_of_an_idempotent_tool_are_retried_within_max_attempts(bugfix: Path) -> None:
    calls: list[int] = []

    @tool(effects=["read"], idempotent=True, on_failure="retry", timeout_s=5)
    def weather(station: str) -> ToolResult:
        """Read a flaky sensor."""
        calls.append(1)
        if len(calls) < 3:
            return ToolResult.failure("timeout", f"{station} did not answer")
        return ToolResult(ok=True, content=f"{station}: 12C")

    env = bugfix / "envelope.yaml"
    contract = "  - name: weather\n    purpose: Read a flaky sensor.\n    effects: [read]\n"
    contract += "    timeout_s: 5\n    idempotent: true\n    on_failure: retry\n"
    env.write_text(env.read_text().replace("\npermissions:", "\n" + contract + "\npermissions:", 1))
    recompile(env)
    write_script(
        bugfix,
        [
            {"tool_calls": [{"name": "weather", "args": {"station": "north"}}]},
            {"tool_calls": [FIX]},
            {"tool_calls": [FINISH]},
        ],
    )
    result = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[weather]).run("check the weather, then fix")
    assert result.status == "COMPLETE"
    log = events(bugfix / "t.db", result.run_id)
    attempts = [
        e["payload"]["attempt"] for e in log if e["kind"] == "action.started" and e["payload"]["tool"] == "weather"
    ]
    assert attempts == [1, 2, 3] and len(calls) == 3  # max_attempts is 3: never a fourth


def test_bad_input_to_run_commands_is_one_clear_paragraph(bugfix: Path, tmp_path: Path) -> None:
    db = str(bugfix / "t.db")
    env = bugfix / "envelope.yaml"
    env.write_text(env.read_text().replace("usd: 2.0", "usd: 3.0"))  # edited after compiling
    cases = [
        (("run", "x", "--envelope", str(env), "--db", db), 2, "$.contract_hash"),
        (("run", "x", "--envelope", str(tmp_path / "nope.yaml"), "--db", db), 2, "nope.yaml: file not found"),
        (("resume", "no-such-run", "--db", db), 2, "no run 'no-such-run'"),
        (("approve", "ap-nope", "--db", db), 2, "no pending approval"),
        (("show", "x", "--db", str(tmp_path / "missing.db")), 2, "missing.db"),
    ]
    EventStore.open(bugfix / "t.db").close()
    for args, code, text in cases:
        proc = tether(*args)
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        assert text in proc.stderr and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_in_memory_envelope_and_async_api(bugfix: Path) -> None:
    import asyncio

    from tether import FunctionModel, Message, ModelResponse, ToolSpec, call, load_envelope, reply

    turns = [[call(FIX["name"], **FIX["args"])], [call(FINISH["name"], **FINISH["args"])]]

    def agent(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        done = sum(1 for m in messages if m.role == "assistant")
        return reply(calls=turns[done])

    envelope = load_envelope(bugfix / "envelope.yaml")
    harness = Harness(
        envelope, model=FunctionModel(agent), workspace=bugfix / "project", db=bugfix / "t.db", sandbox="local"
    )
    contract = asyncio.run(harness.arun("fix it"))
    assert contract.status == "COMPLETE"
    tampered = envelope.model_copy(update={"tool_execution_owner": "model"})
    with pytest.raises(EnvelopeInvalid, match="tool_execution_owner"):  # strict validation in memory too
        Harness(tampered, model=FunctionModel(agent), workspace=bugfix / "project")
