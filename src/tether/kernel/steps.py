"""The functional core: what happens next is a pure function of the run's state.

``next_step`` reads a :class:`RunState` (the fold of the log), the envelope and the
clock, and names one step. It performs nothing: the runtime performs the step and
appends its outcome as events, and the fold moves on. Because of this, resuming a
run after a crash is the same code path as continuing one: fold the log, ask again.

Order of precedence (the first that applies wins):

1. an action started but never completed (a crash) — re-run if idempotent, else NEEDS_INPUT;
2. pending approvals — expire the overdue, otherwise wait for a human;
3. the control layer says stop (NO_PROGRESS, NEEDS_INPUT) — or BUDGET_STOP if a budget is why;
4. the current turn's actions, in proposal order — decide, stage approval, retry, execute;
5. completion claims — verify; accepted completes, persistent refusal is VERIFY_FAILED;
6. the model's own termination — refusal/error stop, repeated silence is NO_PROGRESS;
7. budgets — BUDGET_STOP before a model call that would exceed them;
8. otherwise, call the model.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tether.envelope.schema import Envelope, OnFailure
from tether.state import Action, RunState
from tether.status import ActionStatus, ClaimStatus, RunStatus

from .budgets import Breach, breach

MAX_TEXT_ONLY_TURNS = 3
TRANSIENT_FAILURES = frozenset({"timeout", "sandbox_error"})


@dataclass(frozen=True)
class CallModel:
    turn: int


@dataclass(frozen=True)
class Decide:
    call_id: str


@dataclass(frozen=True)
class StageApproval:
    call_id: str


@dataclass(frozen=True)
class ExpireApproval:
    approval_id: str


@dataclass(frozen=True)
class Execute:
    call_id: str
    attempt: int
    why: str = ""


@dataclass(frozen=True)
class Verify:
    call_id: str


@dataclass(frozen=True)
class Wait:
    status: RunStatus
    reason: str


@dataclass(frozen=True)
class Finish:
    status: RunStatus
    reason: str
    next_action: str = ""
    breach: Breach | None = None


Step = CallModel | Decide | StageApproval | ExpireApproval | Execute | Verify | Wait | Finish


def next_step(
    state: RunState, env: Envelope, now: datetime, control_stop: tuple[RunStatus, str] | None = None
) -> Step | None:
    if state.finished:
        return None

    for a in state.open_actions:
        contract = env.tool(a.tool)
        if contract is not None and contract.idempotent:
            return Execute(a.call_id, a.attempts + 1, why="started before a crash; idempotent, so re-run")
        return Finish(
            RunStatus.NEEDS_INPUT,
            f"action {a.call_id} ({a.tool} {a.args}) started but has no completion: its side effect is "
            "ambiguous and the tool is not idempotent, so tether will not run it again",
            next_action=f"check whether {a.tool} took effect in the workspace, then start a new run or fork",
        )

    for approval_id, req in state.pending_approvals.items():
        if now.timestamp() > float(req["expires_at"]):
            return ExpireApproval(approval_id)
    if state.pending_approvals:
        ids = ", ".join(state.pending_approvals)
        return Wait(RunStatus.WAITING_APPROVAL, f"waiting for a human: tether approve|deny {ids}")

    if control_stop is not None:
        over = breach(state, now, before="action") or breach(state, now, before="model")
        if over is not None:  # the more specific reason: a budget, not a judgement
            return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over)
        return Finish(control_stop[0], control_stop[1], next_action="review the log with tether show, then resume")

    for a in state.actions.values():  # insertion order is proposal order
        step = _action_step(a, state, env, now)
        if step is not None:
            return step

    for call_id, status in state.claims.items():
        if status is ClaimStatus.PENDING:
            return Verify(call_id)
        if status is ClaimStatus.ACCEPTED:
            outcome = RunStatus.COMPLETE if state.changed_files else RunStatus.NO_OP
            return Finish(outcome, "completion claimed and every required sensor passed")
    if state.refusals > env.verification.max_refusals:
        return Finish(
            RunStatus.VERIFY_FAILED,
            f"completion was claimed {state.refusals} times and refused each time by verification",
            next_action="read the refused claims' diagnostics in tether show; fix and resume, or raise max_refusals",
        )

    if state.raw_stop_reason == "script_exhausted":
        return Finish(
            RunStatus.NEEDS_INPUT, "the scripted model has no more turns", "extend the trajectory or use a model"
        )
    if state.termination == "refusal":
        return Finish(
            RunStatus.NEEDS_INPUT, f"the model refused: {state.last_text[:200]}", "rephrase the task or change model"
        )
    if state.termination == "error":
        return Finish(RunStatus.NEEDS_INPUT, "the model reported an error", "check the provider and resume")
    if state.text_only_turns >= MAX_TEXT_ONLY_TURNS:
        return Finish(
            RunStatus.NO_PROGRESS,
            f"the model answered {state.text_only_turns} turns in a row without an action or a finish claim",
            next_action="a prose answer completes nothing: give the agent a clearer task, or resume",
        )

    if state.used.turns >= env.agent.max_turns:
        cap = Breach("turns", state.used.turns, env.agent.max_turns, setting="agent.max_turns")
        return Finish(RunStatus.BUDGET_STOP, cap.reason, breach=cap)
    over = breach(state, now, before="model")
    if over is not None:
        return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over)
    return CallModel(state.used.turns)


def after_model_failure(failure: str, error: str, *, attempts: int, status: int | None, window_setting: str) -> Finish:
    """How a model call that produced no turn ends the run: each kind of failure, its own status and advice.

    A context overflow is the user's setting to change (NEEDS_INPUT), never "check your key";
    an outage, a rejection or an unreadable answer is a dependency that may come back
    (BLOCKED_DEPENDENCY, resumable).
    """
    tried = f"after {attempts} attempt{'' if attempts == 1 else 's'}"
    if failure == "context_overflow":
        return context_full(f"the provider said the request does not fit ({tried}): {error}", window_setting)
    if failure == "malformed":
        return Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            f"the model provider's answer could not be read ({tried}): {error}",
            "check that the server speaks the provider's API; set agent.provider_profile (docs/providers.md), "
            "then `tether resume` the run",
        )
    if failure == "outage":
        return Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            f"the model provider failed {tried}: {error}",
            "check that the provider or local server is up (after a timeout: raise agent.request_timeout_s), "
            "then `tether resume` the run",
        )
    fix = (
        "check the API key and its permissions"
        if status in (401, 403)
        else "check the model name and the request limits the server accepts (agent.provider_profile)"
    )
    return Finish(
        RunStatus.BLOCKED_DEPENDENCY, f"the model provider rejected the request: {error}", f"{fix}, then resume"
    )


def context_full(problem: str, window_setting: str) -> Finish:
    """The conversation no longer fits the model's window: the settings that change that, by name."""
    return Finish(
        RunStatus.NEEDS_INPUT,
        f"context window full: {problem}",
        "give the model more room: raise agent.context_window together with the server's own context size "
        f"({window_setting}), lower agent.max_output_tokens, or use a model with a larger window; then start a "
        "new run (tether does not compact a conversation yet)",
    )


def _action_step(a: Action, state: RunState, env: Envelope, now: datetime) -> Step | None:
    if a.status is ActionStatus.PROPOSED:
        return Decide(a.call_id)
    if a.status is ActionStatus.WAITING and a.approval_id is None:
        return StageApproval(a.call_id)
    if a.status is ActionStatus.DECIDED:
        over = breach(state, now, before="action")
        if over is not None:
            return Finish(RunStatus.BUDGET_STOP, over.reason, breach=over)
        return Execute(a.call_id, a.attempts + 1)
    if a.status is ActionStatus.COMPLETED and a.ok is False:
        if _retryable(a, env):
            return Execute(a.call_id, a.attempts + 1, why=f"retry after {a.failure_class}")
        contract = env.tool(a.tool)
        if contract is not None and contract.on_failure == OnFailure.STOP:
            return Finish(RunStatus.NEEDS_INPUT, f"{a.tool} failed ({a.failure_class}) and its contract says stop")
    return None


def _retryable(a: Action, env: Envelope) -> bool:
    """Only idempotent tools whose contract asks for retries, on transient failures, within max_attempts."""
    contract = env.tool(a.tool)
    return (
        contract is not None
        and contract.idempotent is True
        and contract.on_failure == OnFailure.RETRY
        and a.failure_class in TRANSIENT_FAILURES
        and a.attempts < env.retry.max_attempts
    )
