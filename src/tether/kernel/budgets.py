"""Budget checks: pure functions of state and the clock, and the cap on one model call's output."""

from __future__ import annotations

import math

from tether.clock import datetime
from tether.envelope.schema import Price
from tether.records import dataclass
from tether.state import RunState


@dataclass(frozen=True)
class Breach:
    """A budget spent: how much was used against which limit, and the setting to raise."""

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


@dataclass(frozen=True)
class CallCap:
    """The output budget of one model call once the money and token budgets have had their say.

    ``max_tokens`` is what may be sent; ``capped_by`` names the budget that lowered it (None: the window or
    the model's own limit decided); ``worst_case_usd`` is what the call costs at most (None: no price known).
    ``short`` is set when not even a minimal call fits: then nothing is sent.
    """

    max_tokens: int
    capped_by: str | None = None
    worst_case_usd: float | None = None
    short: Breach | None = None
    reason: str = ""


def cap_call(max_tokens: int, prompt_tokens: int, price: Price | None, state: RunState) -> CallCap:
    """Cap ``max_tokens`` so that the call's worst case fits what is left of ``budgets.tokens`` and ``budgets.usd``.

    Worst case: the (estimated) prompt at the input price plus every allowed output token at the output price,
    and the prompt plus the output against the token budget. A model without a price is capped by tokens only
    (its cost is recorded as 0; ``tether.models.pricing.price_known`` says so). Below
    :data:`~tether.models.window.MIN_OUTPUT_TOKENS` (or the model's own smaller limit) no useful reply fits.
    """
    # Here: a hook's decision path needs no model adapter. `import … as`, not `from … import`, which for a module
    # that is not a package looks up its `__path__`: an AttributeError made and cleared at every call (issue 18).
    import tether.models.window as window

    rooms: dict[str, int] = {}
    used, left = state.usage(), state.budget_left()
    if left["tokens"] is not None:
        rooms["tokens"] = math.floor(left["tokens"]) - prompt_tokens
    usd_left = left["usd"]
    if usd_left is not None and price is not None:
        input_usd = prompt_tokens * price.input_per_mtok / 1e6
        per_output = price.output_per_mtok / 1e6
        if per_output > 0:
            rooms["usd"] = math.floor((usd_left - input_usd) / per_output)
        elif input_usd > usd_left:
            rooms["usd"] = -1
    capped_by = min((n for n in rooms if rooms[n] < max_tokens), key=lambda n: rooms[n], default=None)
    sent = max_tokens if capped_by is None else rooms[capped_by]
    minimal = min(window.MIN_OUTPUT_TOKENS, max_tokens)
    worst = None if price is None else _usd(prompt_tokens, max(sent, minimal), price)
    if sent >= minimal:
        return CallCap(sent, capped_by, worst)
    assert capped_by is not None
    limit = float(state.limits[capped_by] or 0)
    need = worst if capped_by == "usd" and worst is not None else prompt_tokens + minimal
    what = f"${need:.6f}" if capped_by == "usd" else f"{need} tokens"
    reason = (
        f"budgets.{capped_by} cannot pay for another model call: {left[capped_by]:g} of {limit:g} left, and the "
        f"prompt (~{prompt_tokens} tokens, estimated) with the smallest useful reply ({minimal} tokens) needs "
        f"up to {what}"
    )
    return CallCap(0, capped_by, worst, Breach(capped_by, used[capped_by], limit), reason)


def _usd(prompt_tokens: int, output_tokens: int, price: Price) -> float:
    return (prompt_tokens * price.input_per_mtok + output_tokens * price.output_per_mtok) / 1e6
