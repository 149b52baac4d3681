"""Tables derived from a run's log for `tether show`: tool reliability, plan, hypotheses, budgets."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.control.beliefs import tool_reliability
from tether.events.store import Event
from tether.state import RunState


def summarize(events: Sequence[Event]) -> dict[str, list[dict[str, Any]]]:
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
    left = state.budget_left()
    budget = [
        {"budget": k, "used": round(v, 4) if isinstance(v, float) else v, "left": left.get(k)}
        for k, v in state.usage().items()
    ]
    return {"tool reliability": reliability, "plan": tasks, "hypotheses": list(hypotheses.values()), "budgets": budget}
