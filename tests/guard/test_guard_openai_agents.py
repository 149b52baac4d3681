"""The OpenAI Agents SDK run offline (its ScriptedModel) with tether gating its function tools."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml
from agents import Agent, FunctionTool, RunConfig, Runner, function_tool
from agents.exceptions import UserError
from agents.testing import ScriptedModel, assistant_message, function_call
from typer.testing import CliRunner

from tether.cli.main import app
from tether.events import EventStore
from tether.guard import BudgetStop, Guard, GuardError
from tether.guard.openai_agents import FRAMEWORK, approve, gate_tools, pending, reject, settle
from tether.policy.decision import Verdict
from tether.state import RunState
from tether.status import ActionStatus

OFFLINE = RunConfig(tracing_disabled=True)  # nothing leaves the machine: no trace export


class Tools:
    """The three tools of examples/guarded, counting what really ran."""

    def __init__(self) -> None:
        self.ran: dict[str, list[dict[str, Any]]] = {"get_weather": [], "send_email": [], "delete_records": []}

        @function_tool
        def get_weather(city: str) -> str:
            """Look up the weather of a city."""
            self.ran["get_weather"].append({"city": city})
            return f"sunny in {city}"

        @function_tool
        def send_email(to: str, body: str) -> str:
            """Send an email."""
            self.ran["send_email"].append({"to": to, "body": body})
            return f"sent to {to}"

        @function_tool
        def delete_records(table: str) -> str:
            """Delete records from a table."""
            self.ran["delete_records"].append({"table": table})
            return f"deleted {table}"

        self.all = [get_weather, send_email, delete_records]


def agent_for(guard: Guard, tools: Tools, *turns: list[Any]) -> Agent[Any]:
    model = ScriptedModel([*turns, [assistant_message("done")]])
    return Agent(name="assistant", instructions="help", tools=list(gate_tools(guard, tools.all)), model=model)


def run(agent: Agent[Any], input: Any) -> Any:
    return asyncio.run(Runner.run(agent, input, run_config=OFFLINE))


def outputs(result: Any) -> dict[str, str]:
    return {i.raw_item["call_id"]: str(i.output) for i in result.new_items if i.type == "tool_call_output_item"}


@pytest.fixture
def guard(store: EventStore, guarded: Path) -> Guard:
    return Guard.open(store, guarded, "conversation-1", framework=FRAMEWORK)


def test_allowed_calls_run_and_a_denied_one_reaches_the_model_as_the_rule(guard: Guard, store: EventStore) -> None:
    tools = Tools()
    turn = [
        function_call("get_weather", {"city": "Paris"}, call_id="c1"),
        function_call("delete_records", {"table": "customers"}, call_id="c2"),
    ]
    result = run(agent_for(guard, tools, turn), "weather, then clean up")
    assert result.final_output == "done" and not result.interruptions
    out = outputs(result)
    assert out["c1"] == "sunny in Paris"
    assert out["c2"].startswith("tether denied delete_records (keep-customers)")
    assert tools.ran["delete_records"] == []
    state = RunState.from_events(store.events(guard.run_id))
    assert state.actions["c1"].status is ActionStatus.COMPLETED
    assert state.actions["c2"].status is ActionStatus.DENIED
    assert store.verify(guard.run_id) == len(store.events(guard.run_id))


def test_ask_interrupts_the_run_and_approve_records_the_human_in_both(guard: Guard, store: EventStore) -> None:
    tools = Tools()
    agent = agent_for(
        guard, tools, [function_call("send_email", {"to": "team@example.com", "body": "x"}, call_id="e1")]
    )
    result = run(agent, "tell the team")
    (item,) = result.interruptions
    asked = pending(guard, item)
    assert (asked.verdict, asked.rule) == (Verdict.ASK, "email-needs-human") and asked.approval_id
    assert tools.ran["send_email"] == []
    state = result.to_state()
    assert approve(guard, state, item, by="alice").allowed
    done = asyncio.run(Runner.run(agent, state, run_config=OFFLINE))
    assert outputs(done)["e1"] == "sent to team@example.com" and done.final_output == "done"
    assert tools.ran["send_email"] == [{"to": "team@example.com", "body": "x"}]
    a = RunState.from_events(store.events(guard.run_id)).actions["e1"]
    assert a.approved_by == "alice" and a.status is ActionStatus.COMPLETED


def test_reject_tells_the_model_the_reason_and_runs_nothing(guard: Guard) -> None:
    tools = Tools()
    agent = agent_for(guard, tools, [function_call("send_email", {"to": "all@example.com", "body": "x"}, call_id="e1")])
    result = run(agent, "tell everyone")
    state = result.to_state()
    reject(guard, state, result.interruptions[0], by="bob", reason="not to everyone")
    done = asyncio.run(Runner.run(agent, state, run_config=OFFLINE))
    assert "not to everyone" in outputs(done)["e1"] and tools.ran["send_email"] == []


def test_an_answer_given_with_the_cli_is_carried_into_the_sdk_state(guard: Guard, store: EventStore) -> None:
    tools = Tools()
    turn = [
        function_call("send_email", {"to": "a@example.com", "body": "x"}, call_id="e1"),
        function_call("send_email", {"to": "b@example.com", "body": "y"}, call_id="e2"),
    ]
    agent = agent_for(guard, tools, turn)
    result = run(agent, "two emails")
    assert len(result.interruptions) == 2
    first = pending(guard, result.interruptions[0]).approval_id or ""
    second = pending(guard, result.interruptions[1]).approval_id or ""
    cli = CliRunner()
    assert cli.invoke(app, ["approve", "--db", str(store.path), first]).exit_code == 0
    assert cli.invoke(app, ["deny", "--db", str(store.path), second, "--reason", "wrong list"]).exit_code == 0
    state = result.to_state()
    assert settle(guard, state, result.interruptions) == []
    done = asyncio.run(Runner.run(agent, state, run_config=OFFLINE))
    assert outputs(done)["e1"] == "sent to a@example.com" and "wrong list" in outputs(done)["e2"]
    assert tools.ran["send_email"] == [{"to": "a@example.com", "body": "x"}]


def test_a_call_the_sdk_approved_on_its_own_is_recorded_as_such(guard: Guard, store: EventStore) -> None:
    tools = Tools()
    agent = agent_for(guard, tools, [function_call("send_email", {"to": "t@example.com", "body": "x"}, call_id="e1")])
    result = run(agent, "tell the team")
    state = result.to_state()
    state.approve(result.interruptions[0])  # the program used the SDK directly, not tether's approve()
    asyncio.run(Runner.run(agent, state, run_config=OFFLINE))
    a = RunState.from_events(store.events(guard.run_id)).actions["e1"]
    assert a.status is ActionStatus.COMPLETED and "Agents SDK" in (a.approved_by or "")


def test_an_undeclared_tool_and_a_non_function_tool(guard: Guard) -> None:
    @function_tool
    def rm(path: str) -> str:
        """Remove a path."""
        raise AssertionError("must not run")

    model = ScriptedModel([[function_call("rm", {"path": "/"}, call_id="r1")], [assistant_message("ok")]])
    agent = Agent(name="a", tools=list(gate_tools(guard, [rm])), model=model)
    result = run(agent, "remove it")
    assert "envelope:undeclared-tool" in outputs(result)["r1"]
    with pytest.raises(GuardError, match="function tools"):
        gate_tools(guard, [object()])  # type: ignore[list-item]
    assert isinstance(gate_tools(guard, [rm])[0], FunctionTool)


def test_the_example_runs_offline_and_its_log_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example's main(), in this process (the framework is imported already: no second start-up)."""
    db = tmp_path / "example.db"
    path = Path(__file__).resolve().parents[2] / "examples" / "openai_agents_agent.py"
    spec = importlib.util.spec_from_file_location("openai_agents_agent", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.main(["--db", str(db), "--answer", "once"]) == 0
    out = capsys.readouterr().out
    assert "rule email-needs-human" in out and "email to team@example.com sent" in out
    assert "tether denied delete_records (keep-customers)" in out
    with EventStore.open(db) as s:
        (info,) = s.runs()
        assert s.verify(info.run_id) == len(s.events(info.run_id))


def test_past_the_tool_call_budget_the_run_raises_with_budget_stop_as_its_cause(
    store: EventStore, guarded: Path
) -> None:
    doc = yaml.safe_load(guarded.read_text())
    doc["budgets"]["tool_calls"] = 1
    guarded.write_text(yaml.safe_dump(doc))
    compiled = CliRunner().invoke(app, ["compile", str(guarded.with_name("plan.yaml")), "-o", str(guarded)])
    assert compiled.exit_code == 0, compiled.output
    guard = Guard.open(store, guarded, "conversation-b", framework=FRAMEWORK)
    tools = Tools()
    first = [function_call("get_weather", {"city": "Oslo"}, call_id="c1")]
    second = [function_call("get_weather", {"city": "Rome"}, call_id="c2")]
    with pytest.raises(UserError) as stopped:  # the SDK wraps what a tool raises; the cause is tether's
        run(agent_for(guard, tools, first, second), "weather twice")
    assert isinstance(stopped.value.__cause__, BudgetStop)
    assert "budgets.tool_calls exhausted: used 1 of 1" in str(stopped.value.__cause__)
    assert tools.ran["get_weather"] == [{"city": "Oslo"}], "the call past the budget never ran"
    assert guard.refresh().status.name == "BUDGET_STOP"


def test_a_call_that_already_ran_gives_its_output_again_from_the_log_and_does_not_run_twice(
    store: EventStore, guarded: Path
) -> None:
    """A resumed process meets a call the log says completed: the SDK gets the output the receipt kept, read from the
    log (the fold keeps no output: state.py ``KEPT_KEYS``), and the tool does not run again."""
    before = Guard.open(store, guarded, "conversation-2", framework=FRAMEWORK)
    ok = before.check("get_weather", {"city": "Oslo"}, "w1")
    before.run_call(ok.call_id, lambda: "sunny in Oslo, said the first process")
    tools = Tools()
    resumed = Guard.open(store, guarded, "conversation-2", framework=FRAMEWORK)
    done = run(agent_for(resumed, tools, [function_call("get_weather", {"city": "Oslo"}, call_id="w1")]), "weather")
    assert outputs(done)["w1"] == "sunny in Oslo, said the first process" and tools.ran["get_weather"] == []
    assert resumed.refresh().actions["w1"].result == {}
