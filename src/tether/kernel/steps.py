"""The functional core: what happens next is a pure function of the run's state.

``next_step`` reads a :class:`RunState` (the fold of the log), the envelope and the
clock, and names one step (:mod:`tether.kernel.step`). It performs nothing: the runtime
performs the step and appends its outcome as events, and the fold moves on. Because of
this, resuming a run after a crash is the same code path as continuing one: fold the log,
ask again. It is also the only place a run's final status is decided: the runtime records
facts, and only a ``Finish`` named here ends a run.

The rules, in order (the first that names a step wins; :data:`RULES`):

1. a recorded stop — a fact the runtime logged that a run cannot go on from (:mod:`.stops`);
2. an action started but never completed (a crash) — re-run if idempotent (a read-only tool is, unless its
   contract says otherwise), else NEEDS_INPUT;
3. pending approvals — expire the overdue, otherwise wait for a human;
4. told to stop — verification refused past ``max_refusals`` (VERIFY_FAILED), or the control
   layer set HUMAN_REQUIRED (NO_PROGRESS, NEEDS_INPUT); BUDGET_STOP instead if a budget is also why;
5. the current turn's actions, in proposal order — decide, stage approval, retry, execute;
6. completion claims — verify; an accepted one completes: NO_OP when no file changed, no external output
   ran and the ``outputs.no_op`` check held, else COMPLETE;
7. the model's own termination — refusal/error stop, repeated silence is NO_PROGRESS;
8. budgets — BUDGET_STOP before a model call that would exceed them;
9. otherwise, call the model.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from tether.control.loop import HumanRequired
from tether.envelope.schema import Envelope, OnFailure
from tether.state import Action, RunState
from tether.status import ActionStatus, ClaimStatus, RunStatus

from .budgets import Breach, breach
from .step import (
    CallModel,
    Decide,
    Execute,
    ExpireApproval,
    Finish,
    StageApproval,
    Step,
    Verify,
    Wait,
)
from .stops import finish_after

MAX_TEXT_ONLY_TURNS = 3
TRANSIENT_FAILURES = frozenset({"timeout", "sandbox_error"})


class Situation:
    """What every rule reads: the folded run, its envelope, the clock and the control layer's stop, if any.

    A plain slotted class, not a frozen dataclass: one is made for each ``next_step`` (three a step), and a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__`` (issue 18). No rule assigns to it."""

    __slots__ = ("control_stop", "env", "now", "state")

    def __init__(self, state: RunState, env: Envelope, now: datetime, control_stop: HumanRequired | None) -> None:
        self.state, self.env, self.now, self.control_stop = state, env, now, control_stop


def next_step(state: RunState, env: Envelope, now: datetime, control_stop: HumanRequired | None = None) -> Step | None:
    """The one step to take next, or None once the run has finished (see the module docstring)."""
    if state.finished:
        return None
    here = Situation(state, env, now, control_stop)
    for rule in RULES:
        step = rule(here)
        if step is not None:
            return step
    return CallModel(state.used.turns)


# ---- the rules, in order ------------------------------------------------------------------------


def recorded_stop(s: Situation) -> Step | None:
    return finish_after(s.state.stop) if s.state.stop is not None else None


def interrupted_action(s: Situation) -> Step | None:
    for a in s.state.open_actions:
        contract = s.env.tool(a.tool)
        if contract is not None and contract.retry_safe:
            return Execute(a.call_id, a.attempts + 1, why="started before a crash; idempotent, so re-run")
        return Finish(
            RunStatus.NEEDS_INPUT,
            f"action {a.call_id} ({a.tool} {a.args}) started but has no completion: its side effect is "
            "ambiguous and the tool is not idempotent, so tether will not run it again",
            next_action=f"check whether {a.tool} took effect in the workspace, then say what you found",
        )
    return None


def approvals(s: Situation) -> Step | None:
    pending = s.state.pending_approvals
    for approval_id, req in pending.items():
        if s.now.timestamp() > float(req["expires_at"]):
            return ExpireApproval(approval_id)
    if pending:
        return Wait(RunStatus.WAITING_APPROVAL, f"waiting for a human: tether approve|deny {', '.join(pending)}")
    return None


def told_to_stop(s: Situation) -> Step | None:
    """Verification has refused too often, or the control layer says stop: a budget, if one is also why, wins."""
    stop = verification_exhausted(s.state, s.env)
    if stop is None and s.control_stop is not None and s.state.continued_seq <= s.control_stop.seq:
        stop = human_required(s.control_stop)  # unless a person continued the run after the control layer said so
    if stop is None:
        return None
    over = breach(s.state, s.now, before="action") or breach(s.state, s.now, before="model")
    if over is not None:  # the more specific reason: a budget, not a judgement
        return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over)
    return Finish(stop[0], stop[1], next_action="review the log with `tether show`")


def verification_exhausted(state: RunState, env: Envelope) -> tuple[RunStatus, str] | None:
    """VERIFY_FAILED: the latest claim was refused, and refusals are past ``max_refusals``.

    The envelope's limit as the runtime holds it (raised by ``tether resume --attempts``), not the one the
    refusal recorded: a continued run goes on past the refusal that stopped it.
    """
    refused = state.last_refusal
    limit = env.verification.max_refusals
    if refused is None or refused.refusals <= limit:
        return None
    why = "; ".join(refused.reasons) or "verification failed"
    return (
        RunStatus.VERIFY_FAILED,
        f"completion was claimed {refused.refusals} times and refused each time (limit {limit} refusals): {why}",
    )


def human_required(stop: HumanRequired) -> tuple[RunStatus, str]:
    """The control layer stops the run: NO_PROGRESS when the agent kept failing the same way, else NEEDS_INPUT."""
    if stop.no_progress:
        return RunStatus.NO_PROGRESS, f"the recovery ladder reached escalate_human without progress: {stop.reason}"
    return RunStatus.NEEDS_INPUT, f"a human must decide how to continue: {stop.reason}"


def turn_actions(s: Situation) -> Step | None:
    for a in s.state.live_actions:  # proposal order; a call done for good names no step (RunState._live)
        step = _action_step(a, s)
        if step is not None:
            return step
    return None


def claims(s: Situation) -> Step | None:
    for call_id, status in s.state.claims.items():
        if status is ClaimStatus.PENDING:
            return Verify(call_id)
        if status is ClaimStatus.ACCEPTED:
            return Finish(_outcome(s.state, call_id), "completion claimed and every required sensor passed")
    return None


def model_ended(s: Situation) -> Step | None:
    state = s.state
    if state.raw_stop_reason == "script_exhausted":
        return Finish(
            RunStatus.NEEDS_INPUT, "the scripted model has no more turns", "extend the trajectory or use a model"
        )
    if state.termination == "refusal":
        reason = f"the model refused: {state.last_text[:200]}"
        return Finish(RunStatus.NEEDS_INPUT, reason, "rephrase the task or change model")
    if state.termination == "error":
        return Finish(RunStatus.NEEDS_INPUT, "the model reported an error", "check the provider")
    if state.unmeant_calls:
        reason = (
            f"the provider ended a reply with stop reason {state.raw_stop_reason!r}, which does not say its tool calls "
            "are meant: none was run"
        )
        return Finish(RunStatus.NEEDS_INPUT, reason, "check the provider's log for why it stopped, then resume")
    if state.text_only_turns >= MAX_TEXT_ONLY_TURNS:
        return Finish(
            RunStatus.NO_PROGRESS,
            f"the model answered {state.text_only_turns} turns in a row without an action or a finish claim",
            next_action="a prose answer completes nothing: give the agent a clearer task",
        )
    return None


def budgets(s: Situation) -> Step | None:
    used, cap = s.state.used.turns, s.env.agent.max_turns
    over = Breach("turns", used, cap, setting="agent.max_turns") if used >= cap else None
    over = over or breach(s.state, s.now, before="model")
    return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over) if over is not None else None


#: The rules :func:`next_step` asks, in this order.
RULES: tuple[Callable[[Situation], Step | None], ...] = (
    recorded_stop,
    interrupted_action,
    approvals,
    told_to_stop,
    turn_actions,
    claims,
    model_ended,
    budgets,
)


def _outcome(state: RunState, claim: str) -> RunStatus:
    """NO_OP only when nothing changed, nothing went out, and the recorded ``outputs.no_op`` check held."""
    nothing = not state.changed_files and not state.external_used
    return RunStatus.NO_OP if nothing and state.no_op_holds.get(claim) else RunStatus.COMPLETE


def _action_step(a: Action, s: Situation) -> Step | None:
    if a.status is ActionStatus.PROPOSED:
        return Decide(a.call_id)
    if a.status is ActionStatus.WAITING and a.approval_id is None:
        return StageApproval(a.call_id)
    if a.status is ActionStatus.DECIDED:
        over = breach(s.state, s.now, before="action")
        if over is not None:
            return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over)
        return Execute(a.call_id, a.attempts + 1)
    if a.status is ActionStatus.COMPLETED and a.ok is False and a.call_id not in s.state.settled:
        if _retryable(a, s.env):
            return Execute(a.call_id, a.attempts + 1, why=f"retry after {a.failure_class}")
        contract = s.env.tool(a.tool)
        if contract is not None and contract.on_failure == OnFailure.STOP:
            return Finish(RunStatus.NEEDS_INPUT, f"{a.tool} failed ({a.failure_class}) and its contract says stop")
    return None


def _retryable(a: Action, env: Envelope) -> bool:
    """Only idempotent tools whose contract asks for retries, on transient failures, within max_attempts."""
    contract = env.tool(a.tool)
    return (
        contract is not None
        and contract.retry_safe
        and contract.on_failure == OnFailure.RETRY
        and a.failure_class in TRANSIENT_FAILURES
        and a.attempts < env.retry.max_attempts
    )


__all__ = [
    "RULES",
    "CallModel",
    "Decide",
    "Execute",
    "ExpireApproval",
    "Finish",
    "StageApproval",
    "Step",
    "Verify",
    "Wait",
    "next_step",
]
