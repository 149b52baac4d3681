"""A LangGraph agent whose tools tether gates: ALLOW runs, DENY is refused with its rule, ASK pauses the graph.

Runs offline: the model is LangChain's fake chat model, scripted to call three tools in one turn. Swap in
any chat model (``init_chat_model(...).bind_tools(TOOLS)``) and the gate works the same.

    python examples/langgraph_agent.py                      # asks you on the terminal when tether asks
    python examples/langgraph_agent.py --answer once        # or answers for you: once | run | deny
    tether show --db .tether/guarded.db langgraph           # the session's run: every call, rule and receipt
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import tools_condition
from langgraph.types import Command

from tether.events import EventStore
from tether.guard.langgraph import LangGraphGate

HERE = Path(__file__).resolve().parent
ENVELOPE = HERE / "guarded" / "envelope.yaml"  # declares the three tools below, their effects and rules


@tool
def get_weather(city: str) -> str:
    """Look up the weather of a city."""
    return f"sunny, 21 °C in {city}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"email to {to} sent ({len(body)} characters)"


@tool
def delete_records(table: str) -> str:
    """Delete records from a table of the customer database."""
    return f"all rows of {table} deleted"


TOOLS = [get_weather, send_email, delete_records]
SCRIPT = [
    AIMessage(
        content="",
        tool_calls=[
            {"name": "get_weather", "args": {"city": "Lisbon"}, "id": "call_weather"},
            {"name": "send_email", "args": {"to": "team@example.com", "body": "Sunny in Lisbon."}, "id": "call_email"},
            {"name": "delete_records", "args": {"table": "customers"}, "id": "call_delete"},
        ],
    ),
    AIMessage(content="Done: I looked up the weather and told the team."),
]


def build(gate: LangGraphGate) -> Any:
    model = GenericFakeChatModel(messages=iter(SCRIPT))

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", gate.tool_node(TOOLS))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())  # interrupts need a checkpointer


def ask(pending: dict[str, Any], answer: str | None) -> str:
    print(f"\ntether asks: {pending['tool']} {pending['args']}\n  rule {pending['rule']}: {pending['reason']}")
    if answer is None and sys.stdin.isatty():
        answer = input("  approve? [once/run/deny] ").strip() or "deny"
    answer = answer or "deny"  # nobody to ask: fail closed
    print(f"  answer: {answer}")
    return answer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=HERE / "guarded" / ".tether" / "guarded.db")
    parser.add_argument("--thread", default="example-thread")
    parser.add_argument("--answer", choices=["once", "run", "deny"], help="answer tether's questions with this")
    args = parser.parse_args(argv)
    with EventStore.open(args.db) as store:
        gate = LangGraphGate(store, ENVELOPE, task="weather report for the team")
        graph = build(gate)
        config = {"configurable": {"thread_id": args.thread}}
        result = graph.invoke({"messages": [HumanMessage("Weather in Lisbon, tell the team, clean up.")]}, config)
        while "__interrupt__" in result:  # tether asked: the graph is paused until a human answers
            pending = result["__interrupt__"][0].value
            result = graph.invoke(Command(resume=ask(pending, args.answer)), config)
        print()
        for m in result["messages"]:
            if isinstance(m, ToolMessage):
                print(f"{m.name:15} {m.status:8} {m.content}")
        print(f"\nmodel: {result['messages'][-1].content}")
        run_id = gate.guard(config).run_id
        print(f"log:   tether show --db {args.db} {run_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
