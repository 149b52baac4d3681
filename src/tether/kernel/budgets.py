"""Budget checks: a pure function of state and the clock."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tether.state import RunState


@dataclass(frozen=True)
class Breach:
    budget: str
    used: float
    limit: float
    setting: str = ""  # the envelope field to raise; default budgets.<budget>

    @property
    def field(self) -> str:
        return self.setting or f"budgets.{self.budget}"

    @property
    def reason(self) -> str:
        return f"{self.field} exhausted: used {self.used:g} of {self.limit:g}"


def breach(state: RunState, now: datetime, *, before: str) -> Breach | None:
    """The first budget that forbids the next model call (``before="model"``) or action (``"action"``).

    A model call needs a turn left and tokens/usd/wall time not yet exhausted; an action
    needs a tool call left (``tool_calls`` counts executed actions) and time and money left.
    """
    used = state.usage(now)
    checks = ("turns", "tokens", "usd", "wall_s") if before == "model" else ("tool_calls", "usd", "wall_s")
    for name in checks:
        limit = state.limits.get(name)
        if limit is None:
            continue
        if used[name] >= limit:
            return Breach(name, used[name], float(limit))
    return None
