"""Execution review: an action is checked before it runs against the task, the beliefs and the output contract.

Refusals (``ok=False``):

- a write outside the envelope's write set or on its deny list;
- a write when the output contract does not allow patches (``outputs.allowed_types``);
- a write while the plan has tasks but none ACTIVE, or outside every ACTIVE task's ``files``;
- editing a test file that the current beliefs say is failing (change the code, not the test);
- any effect beyond read once recovery has escalated to a human.

The risk rating (``tether.control.risk``) is reported either way. The decider
(:mod:`tether.policy.decide`) composes this review with the gate, and asks a human instead of
refusing after ``ESCALATE_AFTER`` consecutive refusals (see :func:`consecutive_failures`).
"""

from __future__ import annotations

import os

from tether.envelope.schema import Effect, Envelope, ToolContract
from tether.events.kinds_calls import ReviewGate
from tether.events.payload import fresh
from tether.records import dataclass, field
from tether.state import FAILING_TESTS

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from tether.control.fold import History
    from tether.state import RunState

ESCALATE_AFTER = 2


@dataclass(frozen=True)
class ReviewResult:
    """The execution review of a call: whether it passes, its risk, and why."""

    ok: bool
    risk: str
    reasons: list[str] = field(default_factory=list)

    def to_payload(self, call_id: str, tool: str) -> ReviewGate:
        return fresh(ReviewGate(call_id=call_id, tool=tool, ok=self.ok, risk=self.risk, reasons=self.reasons))


def review_action(
    tool_contract: ToolContract,
    args: Mapping[str, Any],
    events: History,
    envelope: Envelope,
    state: RunState | None = None,
) -> ReviewResult:
    """``state``: the run state of ``events`` when the caller holds it (the decider does). A call is then reviewed
    without the control layer's fold: whether recovery waits for a person, the failing tests and whether there is a
    plan are the run state's (``RunState.awaiting_human``, ``failing_tests``, ``planned``), so a hook's PreToolUse of
    a command, or of a write where no plan was made, does not import the control layer."""
    # Imported here: the decider imports this module for every call, and a read is never reviewed.
    import tether.control.risk as risk_of  # `import … as`: see budgets.cap_call

    effects = list(tool_contract.effects)
    risk, risk_reasons = risk_of.rate_action(effects, args, envelope)
    problems: list[str] = []
    if any([e != Effect.READ for e in effects]) and _awaiting_human(events, state):  # a list: see rate_action
        problems.append("recovery has escalated to a human; only read-only actions until they respond")
    if Effect.WRITE in effects:  # the paths only a write's problems read (a command's review needs none)
        problems += _write_problems(risk_of.action_paths(args), events, envelope, state)
    return ReviewResult(not problems, risk, problems + [r for r in risk_reasons if r not in problems])


def _awaiting_human(events: History, state: RunState | None) -> bool:
    if state is not None:
        return state.awaiting_human
    from tether.control.fold import folded  # see review_action

    return folded(events).awaiting_human


def _write_problems(paths: list[str], events: History, envelope: Envelope, state: RunState | None) -> list[str]:
    """Why a write to ``paths`` is refused: the write set, the output contract, the plan's active task and the
    failing tests the beliefs name (the run state's, ``state``, when given; else the control layer's fold's)."""
    from tether.control.risk import is_test_path, rate_path

    problems: list[str] = []
    for p in paths:
        _, why = rate_path(p, envelope)
        if "outside the write set" in why or "deny list" in why:
            problems.append(why)
    if "patch" not in envelope.outputs.allowed_types:
        problems.append(f"the output contract allows {envelope.outputs.allowed_types}, not patches")
    if state is None or state.planned:
        problems += _plan_problems(paths, events, envelope)
    if state is not None:
        value, cites, root = state.failing_tests, state.failing_cites, state.workspace
    else:
        from tether.control.fold import folded  # see review_action

        fold = folded(events)
        belief = fold.belief_view(()).get(FAILING_TESTS)
        value, cites = (None, []) if belief is None else (belief.value, list(belief.cites))
        root = fold.state.workspace
    if value:
        failing_files = {str(t).split("::")[0] for t in value}
        for p in paths:
            if is_test_path(p) and _relative(p, root) in failing_files:
                problems.append(f"{p} holds failing tests ({', '.join(cites)}); fix the code under test, not the test")
    return problems


def _relative(path: str, root: str) -> str:
    """``path`` as the tests' ids name their files: relative to the workspace ``root`` when it is an absolute path in
    it (a hook's calls name files absolutely; pytest's ids, relatively), else as it is."""
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if rel != ".." and not rel.startswith("../"):
            return rel
    return path


def _plan_problems(paths: list[str], events: History, envelope: Envelope) -> list[str]:
    """Why the plan refuses a write to ``paths``: tasks but none ACTIVE, or a path outside every ACTIVE task's
    files (the control layer's fold's plan)."""
    from tether.control.fold import folded  # see review_action

    problems: list[str] = []
    plan = folded(events).rated_plan(envelope)
    if plan.tasks:
        active = plan.active()
        if not active:
            problems.append("the plan has no ACTIVE task; mark the task this change belongs to ACTIVE first")
        else:
            scoped = [g for t in active for g in t.files]
            if scoped and paths:
                import pathspec

                spec = pathspec.PathSpec.from_lines("gitignore", scoped)
                outside = [p for p in paths if not spec.match_file(p)]
                if outside:
                    ids = ", ".join(t.id for t in active)
                    problems.append(f"{', '.join(outside)} is outside the files of the active task ({ids})")
    return problems


def review_gate_event(call_id: str, tool: str, result: ReviewResult) -> ReviewGate:
    return result.to_payload(call_id, tool)


def consecutive_failures(events: History) -> int:
    """Trailing run of refused ``review.gate`` events; the decider escalates at ``ESCALATE_AFTER``."""
    from tether.control.fold import folded  # see review_action

    return folded(events).review_refusals
