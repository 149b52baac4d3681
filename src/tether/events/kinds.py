"""Event kinds of the run itself: lifecycle, model calls, actions, approvals, budgets.

The kinds of one governed call (the run's start, the action proposed, decided, started, completed, failed) are
defined in ``kinds_calls``, which ``tether.events`` imports, and named here too; this module is one of the
registry's later ones (``payload.LATER``): a hook session, which never writes the others, does not build them.

Appending an unknown kind or a payload that does not validate fails loudly, so the log never holds
a shape the fold cannot read. To add a kind: define a payload model in the kind module of its layer
and ``register`` it (see docs/log.md); verification and control kinds live in ``kinds_control`` and
``kinds_verify``; the model request, rollback and undo kinds in ``kinds_kernel``.
"""

from typing import Any, Literal

from tether.plain import Field, field_validator
from tether.status import TERMINAL, WAITING, RunStatus

# named here as ever: defined with the kinds a hook session writes (kinds_calls)
from .kinds_calls import AcceptedRisk as AcceptedRisk
from .kinds_calls import ActionCompleted as ActionCompleted
from .kinds_calls import ActionDecided as ActionDecided
from .kinds_calls import ActionFailed as ActionFailed
from .kinds_calls import ActionProposed as ActionProposed
from .kinds_calls import ActionStarted as ActionStarted
from .kinds_calls import RuleHit as RuleHit
from .kinds_calls import RunStarted as RunStarted
from .kinds_calls import TaintHit as TaintHit
from .payload import Payload, new_dict, new_list, register

# ---- run lifecycle -------------------------------------------------------------------------


@register("run.resumed")
class RunResumed(Payload):
    reason: str = ""


@register("run.forked")
class RunForked(Payload):
    """The first event of a fork: the run goes on from another run's log at ``at_seq``.

    The parent's events up to ``at_seq`` are this run's prefix, shared and never copied: this event's
    ``prev_hash`` is ``parent_hash``, so verifying the fork re-verifies the parent's prefix too. What the
    fork changes for its continuation — the workspace (materialised at ``at_seq`` in a new directory), the
    envelope, the model — is recorded here; the fold reads it like a second ``run.started``.
    """

    parent_run: str
    at_seq: int = Field(ge=0)
    parent_hash: str
    workspace: str
    snapshot: str | None = Field(None, description="Manifest blob of the workspace as materialised at at_seq.")
    envelope_path: str = ""
    envelope: dict[str, Any] | None = Field(None, description="A replacement envelope (--envelope); None keeps it.")
    plan: dict[str, Any] | None = None
    plan_hash: str = ""
    contract_hash: str = ""
    model: str = Field("", description="A replacement model (--model); empty keeps the parent's.")
    by: str = ""


@register("run.continued")
class RunContinued(Payload):
    """Someone continued the run (``tether resume``): who, from which status, why, and what they changed.

    Every resume writes one (``run.resumed`` is read in older logs). What it changes is part of the
    record, not of the envelope: raised budgets (with the limits they replace), more completion
    attempts, a note the model is shown, and the interrupted actions the human answered for.
    """

    by: str
    from_status: RunStatus
    reason: str
    note: str | None = Field(None, description="A human message the model sees before its next turn.")
    budgets: dict[str, float] = Field(default_factory=new_dict, description="Raised limits: budget name -> new limit.")
    before: dict[str, float | None] = Field(default_factory=new_dict, description="The limits the raised ones replace.")
    attempts: int = Field(0, ge=0, description="More completion refusals allowed before VERIFY_FAILED.")
    resolved: list[str] = Field(
        default_factory=new_list,
        description="Actions started without a completion whose outcome the human answered for.",
    )


@register("run.waiting")
class RunWaiting(Payload):
    """The run paused durably (waiting for a human or input)."""

    status: RunStatus
    reason: str

    @field_validator("status")
    @classmethod
    def _waiting(cls, v: RunStatus) -> RunStatus:
        if v not in WAITING:
            raise ValueError(f"a run waits only in {sorted(WAITING)}, not {v}")
        return v


@register("run.finished")
class RunFinished(Payload):
    status: RunStatus
    result: str = ""
    evidence: list[str] = Field(default_factory=new_list)
    unknowns: list[str] = Field(default_factory=new_list)
    next_action: str = ""
    last_error: str | None = None

    @field_validator("status")
    @classmethod
    def _terminal(cls, v: RunStatus) -> RunStatus:
        if v not in TERMINAL:
            raise ValueError(f"a run finishes only in {sorted(TERMINAL)}, not {v}")
        return v


@register("sandbox.failed")
class SandboxFailed(Payload):
    """The run's required sandbox cannot start: the run stops BLOCKED_DEPENDENCY (resumable)."""

    error: str
    fix: str = ""


@register("run.checkpoint")
class Checkpoint(Payload):
    """A recovery point: the state a resume or fork can start from.

    ``snapshot`` is the blob hash of the workspace manifest (``tether.snapshot``) taken at this point;
    the ``start`` checkpoint's is the run's baseline. ``git_head`` is only read from logs written
    before tether kept its own snapshots (no host-side git runs any more).
    """

    label: str
    snapshot: str | None = None
    files: int | None = Field(None, description="Paths in the snapshot.")
    unreadable: list[str] = Field(default_factory=new_list, description="Paths the snapshot could not read.")
    skipped: list[str] = Field(
        default_factory=new_list, description="Root directories left out by name (.git, caches); rebuilt empty."
    )
    git_head: str | None = None
    note: str = ""


# ---- model ---------------------------------------------------------------------------------


class ToolCallData(Payload):
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=new_dict)


@register("model.responded")
class ModelResponded(Payload):
    turn: int
    model: str
    text: str = ""
    tool_calls: list[ToolCallData] = Field(default_factory=new_list)
    termination: str
    raw_stop_reason: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    attempts: int = 1
    usage_reported: bool = Field(True, description="False: the provider gave no usage; the tokens are an estimate.")


ModelFailure = Literal["outage", "rejected", "malformed", "context_overflow"]


@register("model.retried")
class ModelRetried(Payload):
    """A failed attempt that will be retried: an outage after a backoff, an overflow once with less output."""

    turn: int
    model: str
    attempt: int
    error: str
    status: int | None = None
    failure: ModelFailure = "outage"
    max_tokens: int | None = Field(None, description="The output budget of the next attempt.")
    window: int | None = Field(None, description="The context window the provider stated, if it did.")


@register("model.failed")
class ModelFailed(Payload):
    """A model call that produced no usable turn, after ``attempts`` requests in all."""

    turn: int
    model: str
    error: str
    transient: bool = False
    status: int | None = None
    attempts: int = 1
    failure: ModelFailure = "outage"
    window: int | None = None
    window_setting: str = Field("", description="Where the model's window is set, named in a context-full finish.")


@register("model.context_full")
class ContextFull(Payload):
    """The next model call cannot fit the window: it was not sent, and the run stops (NEEDS_INPUT)."""

    turn: int
    problem: str
    window_setting: str = ""


@register("model.unaffordable")
class ModelUnaffordable(Payload):
    """The next model call's worst case does not fit what is left of a budget: it was not sent (BUDGET_STOP)."""

    turn: int
    budget: str = Field(description="The budget that cannot pay: usd or tokens.")
    used: float
    limit: float
    reason: str


# ---- actions -------------------------------------------------------------------------------


@register("action.invalid")
class ActionInvalid(Payload):
    """Arguments failed the tool's schema (or the tool is unknown); the model is told."""

    call_id: str
    tool: str
    error: str


# ---- approvals -----------------------------------------------------------------------------


@register("approval.requested")
class ApprovalRequested(Payload):
    approval_id: str
    call_id: str
    tool: str
    args_hash: str
    preview: str
    reason: str
    expires_at: float


@register("approval.granted")
class ApprovalGranted(Payload):
    approval_id: str
    by: str
    scope: str = "once"  # once | run
    rule: str | None = None


@register("approval.denied")
class ApprovalDenied(Payload):
    approval_id: str
    by: str
    reason: str


@register("approval.expired")
class ApprovalExpired(Payload):
    approval_id: str
    outcome: str


@register("approval.mismatch")
class ApprovalMismatch(Payload):
    """An approved call's arguments no longer hash to what the human approved: it does not run."""

    approval_id: str
    call_id: str


# ---- budgets -------------------------------------------------------------------------------


@register("budget.exceeded")
class BudgetExceeded(Payload):
    budget: str
    used: float
    limit: float
