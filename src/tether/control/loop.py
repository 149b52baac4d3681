"""The control loop's pure entry points: ``observe``, ``control_state``, ``guidance``, ``stop_reason``.

``observe(events, envelope)`` returns the NEW events to append, in stages, each stage
seeing the previous stages' output (as if already appended)::

    1. beliefs and contradictions   from receipts after the last observed one (tether.control.beliefs)
    2. plan and hypotheses          when their fold changed (planning, hypotheses)
    -- stages 3-5 run only when the log holds input newer than the control layer's last output --
    3. stuck patterns               not yet reported for their streak (stuck)
    4. diagnostics                  when any dimension changed (diagnostics)
    5. resolution                   control.changed when (state, recovery) changed; recovery.switched
                                    when the resolver tags a new strategy (resolver, recovery)

Calling it again on the log that includes its own output adds nothing.

Every entry point reads the run's incremental fold (:mod:`tether.control.fold`), so a kernel step
costs O(new events); there is no second, from-scratch path in the package. The same stages composed
from the whole log are a test oracle (``tests/control/oracle.py``) that the fold must equal.
"""

from __future__ import annotations

from tether.envelope.schema import Envelope
from tether.events.kinds_calls import DiagnosticsComputed, ReviewGate
from tether.events.payload import Payload, fresh
from tether.events.store import Event
from tether.records import dataclass
from tether.status import ControlState
from tether.typeless import cast

from .beliefs import BeliefView
from .diagnostics import (
    BEHAVIOURAL,
    Diagnostics,
    assemble,
    budget_headroom,
    consistency_score,
    contradiction_weight,
    freshness_score,
    verification_score,
)
from .fold import History, RunFold, folded
from .hypotheses import hypothesis_updates
from .planning import plan_update
from .recovery import budget_left, guidance_text
from .resolver import Resolution, ResolverInput, resolve
from .stuck import new_stuck as new_stuck_events

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    # later kind modules (payload.LATER): read by their kind's string, imported where one is made
    from tether.events.kinds_control import (
        CompletionRefused,
        ContradictionDetected,
        ControlChanged,
        PlanUpdated,
        ReviewFindingRecorded,
    )


class _Work:
    """This call's pending output, as synthetic events continuing the log (what it will look like)."""

    def __init__(self, last: Event | None) -> None:
        self.events: list[Event] = []  # only the pending ones; the fold holds the log
        self.last = last
        self.out: list[Payload] = []

    def add(self, items: Sequence[Payload]) -> None:
        for item in items:
            last = self.last
            self.last = Event.of(
                last.run_id if last else "", (last.seq + 1) if last else 0, last.ts if last else "", item
            )
            self.events.append(self.last)
            self.out.append(item)


def _control_of(fold: RunFold) -> ControlChanged | None:
    return cast("ControlChanged", fold.last_control.data) if fold.last_control is not None else None


def _state_of(last: ControlChanged | None) -> ControlState:
    return ControlState(last.state) if last else ControlState.NORMAL


def control_state(events: History) -> ControlState:
    """Fold: the state set by the latest ``control.changed`` (NORMAL before any)."""
    return _state_of(_control_of(folded(events)))


def observe(events: History, envelope: Envelope) -> list[Payload]:
    """The new events for the log (see the module docstring), stage by stage, from the run's fold
    plus this call's pending events."""
    fold = folded(events)
    work = _Work(fold.last)
    work.add(fold.derive())
    work.add(plan_update(fold.rated_plan(envelope), fold.last_plan_updated, fold.plan_revisions))
    beliefs = fold.belief_view(work.events)
    work.add(hypothesis_updates(fold.hypotheses.hypotheses, fold.last_hypothesis, beliefs))

    if fold.last_input is None or fold.last_input.seq <= fold.marker_seq:
        return work.out
    through = fold.last_input.id

    used = fold.usage()
    stuck = fold.stuck()
    work.add(new_stuck_events(stuck, fold.stuck_reported))

    diags = _diagnostics(fold, work.events, envelope, beliefs, used)
    last_diag = fold.last_diagnostics
    if last_diag is None or last_diag.data_as(DiagnosticsComputed).dimensions != diags.values:
        work.add([fresh(DiagnosticsComputed(dimensions=diags.values, notes=diags.notes, through=through))])

    revisions = fold.plan_revisions + sum(1 for e in work.events if e.kind == "plan.updated")
    ok, note, left = budget_left(revisions, envelope, used)
    open_sb, total_sb = fold.unresolved_system_breaking(work.events)
    res = resolve(
        ResolverInput(
            dimensions=diags.values,
            critical=envelope.control.critical,
            warning=envelope.control.warning,
            system_breaking=open_sb,
            system_breaking_total=total_sb,
            stuck=[s.pattern for s in stuck],
            strategy=fold.strategy,
            attempts_in_strategy=fold.window.attempts,
            recovery_budget_ok=ok,
            recovery_budget_note=note,
        )
    )
    work.add(resolution_events(res, fold.strategy, _control_of(fold), left, through))
    return work.out


def resolution_events(
    res: Resolution, strategy: str, last_change: ControlChanged | None, left: dict[str, float], through: str
) -> list[Payload]:
    """Stage 5: ``recovery.switched`` and ``control.changed`` when the resolution changes them."""
    out: list[Payload] = []
    previous = _state_of(last_change)
    last_recovery = last_change.recovery if last_change else None
    switch = res.recovery is not None and res.recovery != strategy
    change = res.state != previous or (res.recovery is not None and res.recovery != last_recovery)
    if not (switch or change):
        return out
    from tether.events.kinds_control import ControlChanged, RecoverySwitched  # here: most calls change nothing

    if switch:
        assert res.recovery is not None
        out.append(
            RecoverySwitched(
                previous=strategy,
                strategy=res.recovery,
                reason=res.reason,
                guidance=guidance_text(res.recovery, res.reason),
                budget=left,
                through=through,
            )
        )
    if change:
        out.append(
            ControlChanged(
                previous=previous.value,
                state=res.state.value,
                tier=res.tier,
                reason=res.reason,
                dimension=res.dimension,
                recovery=res.recovery,
                through=through,
            )
        )
    return out


def _diagnostics(
    fold: RunFold, pending: Sequence[Event], envelope: Envelope, beliefs: BeliefView, used: dict[str, float]
) -> Diagnostics:
    """``diagnostics.compute`` of the folded log plus ``pending`` (whose contradictions are in the window)."""
    w = fold.window
    contradictions = [
        *w.contradictions,
        *(contradiction_weight(e) for e in pending if e.kind == "contradiction.detected"),
    ]
    return assemble(
        {
            "progress_rate": fold.progress(),
            "failure_recurrence": w.failures.score(),
            "oscillation": w.flips.score(),
            "verification_strength": verification_score(fold.latest_sensor),
            "belief_consistency": consistency_score(contradictions),
            "belief_freshness": freshness_score(beliefs, fold.lv.epoch),
            "evidence_support": fold.evidence(),
            "budget_headroom": budget_headroom([], envelope, used),
        }
    )


STATE_NOTES = {
    ControlState.CAUTIOUS: "actions with effects beyond read need a human's approval until the run recovers",
    ControlState.BLOCKED: "only read-only actions will run until the run recovers",
    ControlState.HUMAN_REQUIRED: "the run is stopping for a human",
}


def guidance(events: Sequence[Event]) -> str | None:
    """Text for the next model turn: what the control layer said since the model last spoke, or None."""
    start = next((e.seq for e in reversed(events) if e.kind == "model.responded"), -1)
    parts: list[str] = []
    for e in events:
        say = _SAY.get(e.kind) if e.seq > start else None
        line = say(e.data) if say is not None else None
        if line:
            parts.append(line)
    return "\n\n".join(parts) if parts else None


def _refused(p: CompletionRefused) -> str:
    lines = [f"Your completion claim was refused ({p.refusals} of {p.max_refusals} allowed refusals):"]
    lines += [f"- {r}" for r in p.reasons]
    for d in p.diagnostics[:10]:
        where = f"{d.file}:{d.line}" if d.line is not None else d.file
        lines.append(f"  {where}: {d.message}" if where else f"  {d.message}")
    return "\n".join(lines)


def _control_changed(p: ControlChanged) -> str | None:
    if p.state == p.previous:
        return None
    note = STATE_NOTES.get(ControlState(p.state), "normal operation resumes")
    return f"Control state {p.previous} -> {p.state}: {p.reason}. {note.capitalize()}."


def _contradiction(p: ContradictionDetected) -> str | None:
    if p.severity not in ("high", "system_breaking"):
        return None
    return f"Contradiction ({p.severity}): {p.explanation}. Re-observe before acting on it."


def _finding(p: ReviewFindingRecorded) -> str | None:
    if p.severity not in ("medium", "high"):
        return None
    where = f" ({p.file})" if p.file else ""
    return f"Reviewer ({p.view}, {p.severity}){where}: {p.message}"


def _gate(p: ReviewGate) -> str | None:
    return None if p.ok else f"Execution review refused {p.tool} ({p.risk} risk): " + "; ".join(p.reasons)


def _plan(p: PlanUpdated) -> str | None:
    return "Plan changes refused or reopened:\n" + "\n".join(f"- {r}" for r in p.rejected) if p.rejected else None


#: What the model is told about each kind of control event (the others say nothing to it), by the kind's string.
_SAY: dict[str, Callable[[Any], str | None]] = {
    "completion.refused": _refused,
    "control.changed": _control_changed,
    "recovery.switched": lambda p: p.guidance,
    "stuck.detected": lambda p: f"You appear stuck ({p.pattern}): {p.detail}. Do something different.",
    "contradiction.detected": _contradiction,
    "review.finding": _finding,
    ReviewGate.KIND: _gate,
    "plan.updated": _plan,
}


@dataclass(frozen=True)
class HumanRequired:
    """The resolver set HUMAN_REQUIRED: the run must stop for a person (the kernel names the status).

    ``no_progress``: the escalation came from how the agent behaves (a behavioural dimension or a stuck
    pattern: it kept failing the same way), not from a question only a person can answer.
    """

    reason: str
    no_progress: bool
    seq: int = -1  # the control.changed that said so: a person who continued the run after it has answered it


def stop_reason(events: History) -> HumanRequired | None:
    """Whether the control layer says the run must stop, and why; None while it may go on."""
    fold = folded(events)
    last = _control_of(fold)
    if last is None or fold.last_control is None or _state_of(last) != ControlState.HUMAN_REQUIRED:
        return None
    return HumanRequired(last.reason, last.dimension in BEHAVIOURAL or last.dimension == "stuck", fold.last_control.seq)
