"""How a recorded fact ends a run: one pure function from the fact's payload to the :class:`Finish`.

The runtime never ends a run itself. When something happens that a run cannot go on from — the sandbox
will not start, the model call failed beyond retries, the conversation no longer fits the window, the
budgets cannot pay for the next call, an approval expired and the envelope says stop, what would run is
not what was approved, a tool could not run at all, the pre-flight failed — the runtime records that
*fact* as an event. The fold keeps it as the run's pending stop (``RunState.stop``) until a
``run.finished`` consumes it, and ``next_step`` turns it into a ``Finish`` here. So a crash between the
fact and the finish resumes to the same finish.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.events.kinds import (
    ActionFailed,
    ApprovalExpired,
    ApprovalMismatch,
    ContextFull,
    ModelFailed,
    ModelUnaffordable,
    SandboxFailed,
)
from tether.events.kinds_guard import SessionEnded
from tether.events.kinds_verify import PreflightCompleted
from tether.status import RunStatus

from .budgets import Breach
from .step import Finish

if TYPE_CHECKING:
    from tether.state import StopFact


def finish_after(fact: StopFact) -> Finish:
    """The finish a recorded fact calls for: its status, its reason in plain words, and what to do next."""
    match fact:
        case SandboxFailed():
            return Finish(RunStatus.BLOCKED_DEPENDENCY, f"the required sandbox cannot start: {fact.error}", fact.fix)
        case ContextFull():
            return context_full(fact.problem, fact.window_setting)
        case ModelFailed():
            return after_model_failure(fact)
        case ModelUnaffordable():
            advice = f"raise budgets.{fact.budget} (or use a cheaper model)"
            return Finish(RunStatus.BUDGET_STOP, fact.reason, advice, Breach(fact.budget, fact.used, fact.limit))
        case ApprovalExpired():
            return Finish(RunStatus.NEEDS_INPUT, f"approval {fact.approval_id} expired and the envelope says stop")
        case ApprovalMismatch():
            return Finish(RunStatus.BLOCKED_PERMISSION, f"arguments of {fact.call_id} no longer match the approval")
        case ActionFailed():
            status = RunStatus.BLOCKED_DEPENDENCY if fact.dependency else RunStatus.NEEDS_INPUT
            return Finish(status, f"{fact.tool} could not run: {fact.error}", fact.fix)
        case PreflightCompleted():
            return after_preflight(fact)
        case SessionEnded():
            return session_ended(fact)


#: What ends a governed session, and the status each ending gives its run.
SESSION_ENDS = {
    "verified": RunStatus.COMPLETE,
    "closed": RunStatus.COMPLETE,
    "unverified": RunStatus.VERIFY_FAILED,
    "abandoned": RunStatus.NEEDS_INPUT,
    "budget": RunStatus.BUDGET_STOP,
}


def session_ended(fact: SessionEnded) -> Finish:
    """A governed session is over (:class:`~tether.events.kinds_guard.SessionEnded`): its ending names the status."""
    if fact.how == "budget" and fact.budget is not None:
        spent = Breach(fact.budget, fact.used or 0.0, fact.limit or 0.0)
        return Finish(RunStatus.BUDGET_STOP, fact.reason, f"raise {spent.field} and start a new session", spent)
    return Finish(SESSION_ENDS[fact.how], fact.reason)


def after_model_failure(fact: ModelFailed) -> Finish:
    """How a model call that produced no turn ends the run: each kind of failure, its own status and advice.

    A context overflow is the user's setting to change (NEEDS_INPUT), never "check your key";
    an outage, a rejection or an unreadable answer is a dependency that may come back
    (BLOCKED_DEPENDENCY, resumable).
    """
    tried = f"after {fact.attempts} attempt{'' if fact.attempts == 1 else 's'}"
    if fact.failure == "context_overflow":
        return context_full(f"the provider said the request does not fit ({tried}): {fact.error}", fact.window_setting)
    if fact.failure == "malformed":
        return Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            f"the model provider's answer could not be read ({tried}): {fact.error}",
            "check that the server speaks the provider's API; set agent.provider_profile (docs/providers.md)",
        )
    if fact.failure == "outage":
        return Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            f"the model provider failed {tried}: {fact.error}",
            "check that the provider or local server is up (after a timeout: raise agent.request_timeout_s)",
        )
    fix = (
        "check the API key and its permissions"
        if fact.status in (401, 403)
        else "check the model name and the request limits the server accepts (agent.provider_profile)"
    )
    reason = f"the model provider rejected the request: {fact.error}"
    return Finish(RunStatus.BLOCKED_DEPENDENCY, reason, fix)


def context_full(problem: str, window_setting: str) -> Finish:
    """The conversation no longer fits the model's window: the settings that change that, by name."""
    return Finish(
        RunStatus.NEEDS_INPUT,
        f"context window full: {problem}",
        "give the model more room: raise agent.context_window together with the server's own context size "
        f"({window_setting or WINDOW_SETTING}), lower agent.max_output_tokens, or use a model with a larger "
        "window; then start a new run (what is left after compaction did not fit: docs/context.md)",
    )


def after_preflight(fact: PreflightCompleted) -> Finish:
    """A failed pre-flight: BLOCKED_DEPENDENCY when any failed check is a missing dependency, else NEEDS_INPUT."""
    failed = [c for c in fact.checks if not c.ok]
    blocked = any(c.status == RunStatus.BLOCKED_DEPENDENCY for c in failed)
    reason = "pre-flight failed: " + "; ".join(f"{c.name}: {c.detail}" for c in failed)
    fix = "; ".join(c.fix for c in failed if c.fix)
    return Finish(RunStatus.BLOCKED_DEPENDENCY if blocked else RunStatus.NEEDS_INPUT, reason, fix)


#: How a model's window is named when its profile does not say (the runtime records the profile's name).
WINDOW_SETTING = "the server's context size"
