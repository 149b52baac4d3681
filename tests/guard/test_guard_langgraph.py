"""LangGraph run offline (a fake chat model) with tether gating its ToolNode: ALLOW, DENY, ASK as an interrupt."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command
from typer.testing import CliRunner

from tether.cli.main import app
from tether.events import EventStore
from tether.guard import BudgetStop, GuardError
from tether.guard.langgraph import LangGraphGate
from tether.state import RunState
from tether.status import ActionStatus, RunStatus

Ran = dict[str, list[dict[str, Any]]]


def calls(*items: tuple[str, dict[str, Any]], prefix: str = "call") -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": n, "args": a, "id": f"{prefix}{i}"} for i, (n, a) in enumerate(items)]
    )


def build(gate: LangGraphGate, script: list[AIMessage]) -> tuple[Any, Ran]:
    """A two-node agent: a scripted fake model and the gated ToolNode; ``ran`` counts real executions."""
    ran: Ran = {"get_weather": [], "send_email": [], "delete_records": []}

    @tool
    def get_weather(city: str) -> str:
        """Look up the weather of a city."""
        ran["get_weather"].append({"city": city})
        return f"sunny in {city}"

    @tool
    def send_email(to: str, body: str) -> str:
        """Send an email."""
        ran["send_email"].append({"to": to, "body": body})
        return f"sent to {to}"

    @tool
    def delete_records(table: str) -> str:
        """Delete records from a table."""
        ran["delete_records"].append({"table": table})
        return f"deleted {table}"

    model = GenericFakeChatModel(messages=iter([*script, AIMessage(content="all done")]))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", gate.tool_node([get_weather, send_email, delete_records]))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver()), ran


@pytest.fixture
def gate(store: EventStore, guarded: Path) -> Iterator[LangGraphGate]:
    yield LangGraphGate(store, guarded)


def config(thread: str = "t1") -> dict[str, Any]:
    return {"configurable": {"thread_id": thread}}


def tool_messages(result: dict[str, Any]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in result["messages"] if isinstance(m, ToolMessage)}


def test_allowed_calls_run_denied_ones_do_not_and_the_model_reads_the_rule(
    gate: LangGraphGate, store: EventStore
) -> None:
    graph, ran = build(gate, [calls(("get_weather", {"city": "Paris"}), ("delete_records", {"table": "customers"}))])
    result = graph.invoke({"messages": [HumanMessage("weather, then clean up")]}, config())
    msgs = tool_messages(result)
    assert msgs["call0"].content == "sunny in Paris" and msgs["call0"].status == "success"
    assert msgs["call1"].status == "error" and "keep-customers" in str(msgs["call1"].content)
    assert ran["delete_records"] == [] and ran["get_weather"] == [{"city": "Paris"}]
    run_id = gate.guard(config()).run_id
    state = RunState.from_events(store.events(run_id))
    assert state.actions["call0"].status is ActionStatus.COMPLETED
    assert state.actions["call1"].status is ActionStatus.DENIED
    assert store.verify(run_id) == len(store.events(run_id))


def test_ask_pauses_the_graph_and_the_resume_value_is_the_humans_answer(gate: LangGraphGate, store: EventStore) -> None:
    graph, ran = build(gate, [calls(("send_email", {"to": "team@example.com", "body": "sunny"}))])
    paused = graph.invoke({"messages": [HumanMessage("tell the team")]}, config())
    (pending,) = paused["__interrupt__"]
    assert pending.value["rule"] == "email-needs-human" and pending.value["tool"] == "send_email"
    assert ran["send_email"] == []
    approval = pending.value["approval_id"]
    assert RunState.from_events(store.events(pending.value["run_id"])).status is RunStatus.WAITING_APPROVAL
    done = graph.invoke(Command(resume={"approval_id": approval, "choice": "once", "by": "alice"}), config())
    assert tool_messages(done)["call0"].content == "sent to team@example.com"
    assert ran["send_email"] == [{"to": "team@example.com", "body": "sunny"}]
    granted = [e for e in store.events(pending.value["run_id"]) if e.kind == "approval.granted"]
    assert [e.payload["by"] for e in granted] == ["alice"]


def test_a_human_deny_reaches_the_model_with_the_reason(gate: LangGraphGate) -> None:
    graph, ran = build(gate, [calls(("send_email", {"to": "all@example.com", "body": "x"}))])
    paused = graph.invoke({"messages": [HumanMessage("tell everyone")]}, config())
    approval = paused["__interrupt__"][0].value["approval_id"]
    done = graph.invoke(Command(resume={approval: {"choice": "deny", "reason": "not to everyone"}}), config())
    msg = tool_messages(done)["call0"]
    assert msg.status == "error" and "not to everyone" in str(msg.content) and "approval:denied" in str(msg.content)
    assert ran["send_email"] == []


def test_an_answer_given_with_tether_approve_while_paused_is_the_one_applied(
    gate: LangGraphGate, store: EventStore
) -> None:
    graph, ran = build(gate, [calls(("send_email", {"to": "team@example.com", "body": "x"}))])
    paused = graph.invoke({"messages": [HumanMessage("tell the team")]}, config())
    approval = paused["__interrupt__"][0].value["approval_id"]
    result = CliRunner().invoke(app, ["deny", "--db", str(store.path), approval, "--reason", "from the CLI"])
    assert result.exit_code == 0, result.output
    done = graph.invoke(Command(resume="approve"), config())  # the later, in-graph "yes" does not overturn it
    assert "from the CLI" in str(tool_messages(done)["call0"].content)
    assert ran["send_email"] == []


@pytest.mark.parametrize(
    "reply",
    [{"approval_id": "ap-someoneelse", "choice": "once"}, "maybe", 1, {"choice": "sure"}, ""],
    ids=["other-approval", "maybe", "number", "bad-choice", "empty"],
)
def test_a_resume_value_that_is_no_answer_runs_nothing_and_leaves_the_approval_pending(
    gate: LangGraphGate, store: EventStore, reply: object
) -> None:
    graph, ran = build(gate, [calls(("send_email", {"to": "team@example.com", "body": "x"}))])
    paused = graph.invoke({"messages": [HumanMessage("tell the team")]}, config())
    value = paused["__interrupt__"][0].value
    done = graph.invoke(Command(resume=reply), config())
    msg = tool_messages(done)["call0"]
    assert msg.status == "error" and "approval:unanswered" in str(msg.content)
    assert ran["send_email"] == []
    assert value["approval_id"] in RunState.from_events(store.events(value["run_id"])).pending_approvals


def test_a_resume_that_re_executes_the_node_does_not_run_a_finished_call_twice(gate: LangGraphGate) -> None:
    both = calls(("get_weather", {"city": "Oslo"}), ("send_email", {"to": "team@example.com", "body": "x"}))
    graph, ran = build(gate, [both])
    paused = graph.invoke({"messages": [HumanMessage("weather and email")]}, config())
    approval = paused["__interrupt__"][0].value["approval_id"]
    done = graph.invoke(Command(resume={approval: "once"}), config())
    assert ran["get_weather"] == [{"city": "Oslo"}]  # once, though LangGraph ran the tools node twice
    assert tool_messages(done)["call0"].content == "sunny in Oslo"
    assert len(ran["send_email"]) == 1


def test_several_approvals_in_one_turn_are_asked_in_proposal_order_and_each_answer_binds_to_its_own(
    gate: LangGraphGate, store: EventStore
) -> None:
    two = calls(("send_email", {"to": "a@example.com", "body": "x"}), ("delete_records", {"table": "tmp"}))
    graph, ran = build(gate, [two])
    first = graph.invoke({"messages": [HumanMessage("two risky things")]}, config())["__interrupt__"][0].value
    assert first["tool"] == "send_email"
    second = graph.invoke(Command(resume=True), config())["__interrupt__"][0].value  # yes to what was shown
    assert second["tool"] == "delete_records" and second["approval_id"] != first["approval_id"]
    assert ran["send_email"] == [{"to": "a@example.com", "body": "x"}]
    done = graph.invoke(Command(resume={"choice": "deny", "reason": "keep tmp"}), config())
    msgs = tool_messages(done)
    assert msgs["call0"].content == "sent to a@example.com" and "keep tmp" in str(msgs["call1"].content)
    assert len(ran["send_email"]) == 1 and ran["delete_records"] == []  # the node ran three times, the email once
    state = RunState.from_events(store.events(first["run_id"]))
    assert state.actions["call0"].approved_by and state.actions["call1"].status is ActionStatus.DENIED


def test_an_approval_answered_with_the_cli_still_takes_its_turn(gate: LangGraphGate, store: EventStore) -> None:
    two = calls(("send_email", {"to": "a@example.com", "body": "x"}), ("delete_records", {"table": "tmp"}))
    graph, ran = build(gate, [two])
    first = graph.invoke({"messages": [HumanMessage("two")]}, config())["__interrupt__"][0].value
    run_id = first["run_id"]
    for approval in list(RunState.from_events(store.events(run_id)).pending_approvals):
        assert CliRunner().invoke(app, ["approve", "--db", str(store.path), approval]).exit_code == 0
    result = graph.invoke(Command(resume="ignored: answered already"), config())
    while "__interrupt__" in result:
        assert result["__interrupt__"][0].value["answered"] is True
        result = graph.invoke(Command(resume="go on"), config())
    assert len(ran["send_email"]) == 1 and len(ran["delete_records"]) == 1


def test_threads_are_separate_sessions_and_a_graph_without_a_thread_is_refused(
    gate: LangGraphGate, store: EventStore
) -> None:
    for thread in ("alpha", "beta"):  # one gate serves every thread of the graph
        graph, _ = build(gate, [calls(("get_weather", {"city": "Rome"}))])
        graph.invoke({"messages": [HumanMessage("a")]}, config(thread))
    assert gate.guard(config("alpha")).run_id != gate.guard(config("beta")).run_id
    assert len(store.runs()) == 2
    with pytest.raises(GuardError, match="thread_id"):
        gate.guard({"configurable": {}})


def test_the_async_graph_is_gated_the_same_way(gate: LangGraphGate) -> None:
    graph, ran = build(gate, [calls(("get_weather", {"city": "Lima"}), ("delete_records", {"table": "customers"}))])
    result = asyncio.run(graph.ainvoke({"messages": [HumanMessage("go")]}, config("async")))
    msgs = tool_messages(result)
    assert msgs["call0"].content == "sunny in Lima" and "keep-customers" in str(msgs["call1"].content)
    assert ran["delete_records"] == []


def test_a_tool_that_raises_is_a_failed_receipt(store: EventStore, guarded: Path) -> None:
    gate = LangGraphGate(store, guarded)

    @tool
    def get_weather(city: str) -> str:
        """Look up the weather of a city."""
        raise ConnectionError("weather service down")

    model = GenericFakeChatModel(messages=iter([calls(("get_weather", {"city": "Bern"})), AIMessage(content="ok")]))
    builder = StateGraph(MessagesState)
    builder.add_node("agent", lambda s: {"messages": [model.invoke(s["messages"])]})
    builder.add_node("tools", gate.tool_node([get_weather], handle_tool_errors=True))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    builder.compile(checkpointer=InMemorySaver()).invoke({"messages": [HumanMessage("x")]}, config())
    guard = gate.guard(config())
    action = guard.refresh().actions["call0"]
    assert action.status is ActionStatus.COMPLETED and action.ok is False
    assert "weather service down" in guard.output(action)


def test_the_example_runs_offline_and_its_log_verifies(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example's main(), in this process (the framework is imported already: no second start-up)."""
    db = tmp_path / "example.db"
    path = Path(__file__).resolve().parents[2] / "examples" / "langgraph_agent.py"
    spec = importlib.util.spec_from_file_location("langgraph_agent", path)
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    assert example.main(["--db", str(db), "--answer", "once"]) == 0
    out = capsys.readouterr().out
    assert "rule email-needs-human" in out and "send_email      success" in out
    assert "tether denied delete_records (keep-customers)" in out
    with EventStore.open(db) as s:
        (run,) = s.runs()
        assert s.verify(run.run_id) == len(s.events(run.run_id))


def test_past_the_tool_call_budget_the_graph_raises_budget_stop(store: EventStore, guarded: Path) -> None:
    doc = yaml.safe_load(guarded.read_text())
    doc["budgets"]["tool_calls"] = 1
    guarded.write_text(yaml.safe_dump(doc))
    compiled = CliRunner().invoke(app, ["compile", str(guarded.with_name("plan.yaml")), "-o", str(guarded)])
    assert compiled.exit_code == 0, compiled.output
    graph, ran = build(
        LangGraphGate(store, guarded),
        [calls(("get_weather", {"city": "Oslo"})), calls(("get_weather", {"city": "Rome"}), prefix="b")],
    )
    with pytest.raises(BudgetStop, match=r"budgets\.tool_calls exhausted: used 1 of 1"):
        graph.invoke({"messages": [HumanMessage("weather twice")]}, config())
    assert ran["get_weather"] == [{"city": "Oslo"}], "the call past the budget never ran"
    (info,) = store.runs()
    assert RunState.from_events(store.events(info.run_id)).status is RunStatus.BUDGET_STOP
