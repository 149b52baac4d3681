"""Tables derived from a run's log for `tether show`: tool reliability, plan, budget use."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from tether.events.store import Event
from tether.state import RunState


def summarize(events: Sequence[Event]) -> dict[str, list[dict[str, Any]]]:
    state = RunState.from_events(events)
    per_tool: dict[str, list[bool]] = defaultdict(list)
    failures: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for a in state.actions.values():
        if a.ok is not None and a.status in ("completed", "failed"):
            per_tool[a.tool].append(bool(a.ok))
            if not a.ok:
                failures[a.tool][a.failure_class or "unknown"] += 1
    reliability = [
        {"tool": t, "calls": len(v), "success_rate": f"{sum(v) / len(v):.2f}",
         "failures": dict(failures[t]) or "-"}
        for t, v in sorted(per_tool.items())
    ]
    plan = next((e.payload["tasks"] for e in reversed(events) if e.kind == "plan.updated"), [])
    tasks = [{"task": t["id"], "status": t["status"], "risk": t["risk"], "title": t["title"]} for t in plan]
    left = state.budget_left()
    budget = [{"budget": k, "used": round(v, 4) if isinstance(v, float) else v, "left": left.get(k)}
              for k, v in vars(state.used).items()]
    return {"tool reliability": reliability, "plan": tasks, "budgets": budget}
