"""Tables derived from a run's log for `tether show`: tool reliability, plan, hypotheses, budgets."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from tether.control.beliefs import tool_reliability
from tether.events.store import Event
from tether.state import RunState

#: What a governed session's program spends where tether does not see it: its own model calls (a hook, a framework's
#: tool wrapper and the MCP gateway see tool calls only). Not shown for such a run: a 0 there would be made up.
UNSEEN = frozenset({"turns", "tokens", "usd"})


def summarize(events: Sequence[Event]) -> dict[str, list[dict[str, Any]]]:
    """``tether show --verbose``'s tables (and ``--json``'s ``summary``). The budgets' used wall time runs to the log's
    last event (it read 0 for an open run: only closed stretches were counted)."""
    state = RunState.from_events(events)
    reliability = [
        {"tool": tool, "calls": s["calls"], "success_rate": s["success_rate"], "failures": s["failures"] or "-"}
        for tool, s in tool_reliability(events).items()
    ]
    plan: list[dict[str, Any]] = next((e.payload["tasks"] for e in reversed(events) if e.kind == "plan.updated"), [])
    tasks = [{"task": t["id"], "status": t["status"], "risk": t["risk"], "title": t["title"]} for t in plan]
    hypotheses: dict[str, dict[str, Any]] = {}
    for e in events:
        if e.kind == "hypothesis.recorded":
            p = e.payload
            hypotheses[p["id"]] = {
                "id": p["id"],
                "score": p["score"],
                "acted_on": p["acted_on"],
                "statement": p["statement"][:80],
            }
    if state.driver:  # a governed session: its budgets as the guard counts them
        from tether.guard.session import counted

        state = counted(state)
    until = datetime.fromisoformat(events[-1].ts) if events else None  # wall time as the log says: to its last event
    left = state.budget_left(until)
    budget = [
        {"budget": k, "used": round(v, 4) if isinstance(v, float) else v, "left": left.get(k)}
        for k, v in state.usage(until).items()
        if not (state.driver and k in UNSEEN)
    ]
    return {"tool reliability": reliability, "plan": tasks, "hypotheses": list(hypotheses.values()), "budgets": budget}
