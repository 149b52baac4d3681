"""The recovery ladder, its guidance to the model and the recovery budget.

Strategies in a fixed, escalating order; the run never steps back down::

    direct_edit -> trace_execution -> broaden_search -> reimplement -> minimal_fix -> escalate_human

The recovery budget is checked before every switch. A switch needs:

- fewer than ``control.recovery.plan_revisions`` plan revisions so far,
- when the envelope sets them: at least ``control.recovery.min_tool_calls`` tool calls and ``min_turns`` turns
  left, and at least ``min_share`` of the usd and wall-time budgets left (envelope, with defaults).

If the budget does not allow another strategy, the next step is ``escalate_human``.
"""

from __future__ import annotations

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.typeless import cast

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

    from tether.events.kinds_control import RecoverySwitched  # a later kind module: read by its kind's string
    from tether.state import RunState

LADDER: tuple[str, ...] = (
    "direct_edit",
    "trace_execution",
    "broaden_search",
    "reimplement",
    "minimal_fix",
    "escalate_human",
)

GUIDANCE: dict[str, tuple[str, list[str], str]] = {
    "direct_edit": ("Edit the code you believe is wrong and verify.", [], "the checks pass"),
    "trace_execution": (
        "Stop editing. Find out what the code actually does before changing it again.",
        [
            "Re-run the failing check and read the full failure (file, line, message).",
            "Read the code on the failing path, following calls from the test into the source.",
            "Record a hypothesis (hypothesis tool) naming the file and the test it explains.",
            "Make one edit only when the hypothesis predicts the failure; then run the tests.",
        ],
        "a recorded hypothesis explains the failure and one edit based on it was verified",
    ),
    "broaden_search": (
        "The problem is probably not where you have been looking.",
        [
            "Search the workspace for every definition and use of the failing symbol.",
            "Check callers, configuration, fixtures and data files, not only the function you edited.",
            "List at least two alternative explanations as hypotheses before editing.",
        ],
        "you have found code you had not read before that explains the failure",
    ),
    "reimplement": (
        "Patching has not converged. Rewrite the smallest unit that is failing from its specification.",
        [
            "Write down (in the plan) what the unit must do, from its tests and callers.",
            "Replace its body in one edit rather than patching line by line.",
            "Run the scoped tests for that unit, then the full suite.",
        ],
        "the unit's tests pass",
    ),
    "minimal_fix": (
        "Budget or attempts are running out. Make the smallest change that could make the checks pass.",
        [
            "Revert unrelated or speculative edits.",
            "Change as few lines as possible; do not refactor; do not edit tests.",
            "Verify once, then finish or report what remains.",
        ],
        "the checks pass, or you report precisely what is still failing",
    ),
    "escalate_human": (
        "Automatic recovery is exhausted. A human must decide how to continue.",
        ["Do not make further changes.", "Summarise what was tried, what failed and what you believe the cause is."],
        "a human responds",
    ),
}


def guidance_text(strategy: str, reason: str) -> str:
    goal, steps, exit_when = GUIDANCE[strategy]
    rung = LADDER.index(strategy) + 1
    lines = [f"Recovery strategy: {strategy} (step {rung} of {len(LADDER)}).", f"Why: {reason}", f"Goal: {goal}"]
    if steps:
        lines.append("Do:")
        lines += [f"  {i}. {s}" for i, s in enumerate(steps, start=1)]
    lines.append(f"Done when: {exit_when}.")
    return "\n".join(lines)


def current_strategy(events: Sequence[Event]) -> str:
    for e in reversed(events):
        if e.kind == "recovery.switched":
            return cast("RecoverySwitched", e.data).strategy
    return LADDER[0]


def next_strategy(current: str, *, skip_to: str | None = None) -> str:
    i = LADDER.index(current)
    nxt = LADDER[min(i + 1, len(LADDER) - 1)]
    if skip_to is not None and LADDER.index(skip_to) > LADDER.index(nxt):
        return skip_to
    return nxt


def usage(events: Sequence[Event]) -> dict[str, float]:
    """What the run has used so far: the same fold and counters the kernel's budget checks use."""
    from tether.state import RunState

    return usage_of(RunState.from_events(events), events[-1].ts if events else "")


def usage_of(state: RunState, last_ts: str) -> dict[str, float]:
    """:func:`usage` from the run's folded state and the time of its last event (``RunState.usage``)."""
    from tether.clock import datetime  # here, and _datetime's: a cold Write's review reads the fold, not its usage

    return state.usage(datetime.fromisoformat(last_ts) if last_ts else None)


def budget_check(
    events: Sequence[Event], envelope: Envelope, used: dict[str, float] | None = None
) -> tuple[bool, str, dict[str, float]]:
    """(may switch?, why not, what is left) — checked before every switch; ``used`` as from :func:`usage`."""
    used = used if used is not None else usage(events)
    return budget_left(sum(1 for e in events if e.kind == "plan.updated"), envelope, used)


def budget_left(revisions: int, envelope: Envelope, used: dict[str, float]) -> tuple[bool, str, dict[str, float]]:
    """:func:`budget_check` for a log holding ``revisions`` plan revisions, having used ``used``."""
    b, r = envelope.budgets, envelope.control.recovery
    left: dict[str, float] = {}
    problems: list[str] = []
    left["plan_revisions"] = float(r.plan_revisions - revisions)
    if revisions >= r.plan_revisions:
        problems.append(f"{revisions} plan revisions (limit {r.plan_revisions})")
    if b.tool_calls is not None:
        left["tool_calls"] = b.tool_calls - used["tool_calls"]
        if left["tool_calls"] < r.min_tool_calls:
            problems.append(f"{left['tool_calls']:g} tool calls left (a strategy needs {r.min_tool_calls})")
    if b.turns is not None:
        left["turns"] = b.turns - used["turns"]
        if left["turns"] < r.min_turns:
            problems.append(f"{left['turns']:g} turns left (a strategy needs {r.min_turns})")
    for name, limit in (("usd", b.usd), ("wall_s", b.wall_s)):
        if limit is not None:
            left[name] = round(limit - used[name], 6)
            if limit > 0 and left[name] < r.min_share * limit:
                problems.append(f"{name}: {left[name]:g} of {limit:g} left (a strategy needs {r.min_share:.0%})")
    return (not problems, "; ".join(problems), left)
