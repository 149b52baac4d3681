"""An OpenAI Agents SDK agent whose function tools tether gates: ALLOW runs, DENY is refused with its rule,
ASK pauses the run through the SDK's own approval mechanism.

Runs offline: the model is the SDK's ScriptedModel, scripted to call three tools in one turn, and tracing
is off. Give the Agent a real model (``model="gpt-..."``) and the gate works the same.

    python examples/openai_agents_agent.py                   # asks you on the terminal when tether asks
    python examples/openai_agents_agent.py --answer once     # or answers for you: once | deny
    tether show --db .tether/guarded.db openai-agents        # the conversation's run
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from tether.events import EventStore
from tether.guard import Guard
from tether.guard.openai_agents import FRAMEWORK, approve, gate_tools, pending, reject

HERE = Path(__file__).resolve().parent
ENVELOPE = HERE / "guarded" / "envelope.yaml"  # declares the three tools below, their effects and rules


@function_tool
def get_weather(city: str) -> str:
    """Look up the weather of a city."""
    return f"sunny, 21 °C in {city}"


@function_tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    return f"email to {to} sent ({len(body)} characters)"


@function_tool
def delete_records(table: str) -> str:
    """Delete records from a table of the customer database."""
    return f"all rows of {table} deleted"


def scripted_model() -> ScriptedModel:
    turn = [
        function_call("get_weather", {"city": "Lisbon"}, call_id="call_weather"),
        function_call("send_email", {"to": "team@example.com", "body": "Sunny in Lisbon."}, call_id="call_email"),
        function_call("delete_records", {"table": "customers"}, call_id="call_delete"),
    ]
    return ScriptedModel([turn, [assistant_message("Done: I looked up the weather and told the team.")]])


def ask(guard: Guard, item: Any, answer: str | None) -> str:
    asked = pending(guard, item)
    print(f"\ntether asks: {item.tool_name} {item.arguments}\n  rule {asked.rule}: {asked.reason}")
    if answer is None and sys.stdin.isatty():
        answer = input("  approve? [once/deny] ").strip() or "deny"
    answer = answer or "deny"  # nobody to ask: fail closed
    print(f"  answer: {answer}")
    return answer


async def converse(guard: Guard, answer: str | None) -> Any:
    agent = Agent(
        name="assistant",
        instructions="Answer with the weather and tell the team.",
        tools=list(gate_tools(guard, [get_weather, send_email, delete_records])),
        model=scripted_model(),
    )
    offline = RunConfig(tracing_disabled=True)
    result = await Runner.run(agent, "Weather in Lisbon, tell the team, clean up.", run_config=offline)
    while result.interruptions:  # tether asked: the SDK paused the run until a human answers
        state = result.to_state()
        for item in result.interruptions:
            if ask(guard, item, answer) == "once":
                approve(guard, state, item)
            else:
                reject(guard, state, item, reason="the person at the terminal said no")
        result = await Runner.run(agent, state, run_config=offline)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--db", type=Path, default=HERE / "guarded" / ".tether" / "guarded.db")
    parser.add_argument("--conversation", default="example-conversation")
    parser.add_argument("--answer", choices=["once", "deny"], help="answer tether's questions with this")
    args = parser.parse_args(argv)
    with EventStore.open(args.db) as store:
        guard = Guard.open(store, ENVELOPE, args.conversation, framework=FRAMEWORK, task="weather report for the team")
        result = asyncio.run(converse(guard, args.answer))
        print()
        for item in result.new_items:
            if item.type == "tool_call_output_item":
                print(f"{item.raw_item['call_id']:14} {item.output}")
        print(f"\nmodel: {result.final_output}")
        print(f"log:   tether show --db {args.db} {guard.run_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
