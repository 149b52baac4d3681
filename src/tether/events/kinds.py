"""Event kinds of the run itself: lifecycle, model calls, actions, approvals, budgets.

Appending an unknown kind or a payload that does not validate fails loudly, so the log never holds
a shape the fold cannot read. To add a kind: define a payload model in the kind module of its layer
and ``register`` it (see docs/log.md); verification and control kinds live in ``kinds_control`` and
``kinds_verify``; the model request, rollback and undo kinds in ``kinds_kernel``.
"""

from typing import Any, Literal

from pydantic import Field, field_validator

from tether.status import TERMINAL, WAITING, RunStatus

from .payload import Payload, new_dict, new_list, register

# ---- run lifecycle -------------------------------------------------------------------------


class AcceptedRisk(Payload):
    """A risky setting the envelope accepts by a named acknowledgement (see docs/envelope.md)."""

    risk: str
    path: str
    found: str
    reason: str


@register("run.started")
class RunStarted(Payload):
    task: str
    envelope_path: str = ""
    envelope: dict[str, Any] = Field(default_factory=new_dict, description="The full envelope, for resume.")
    plan: dict[str, Any] | None = Field(None, description="The intent plan the model is shown, for resume.")
    plan_hash: str = ""
    contract_hash: str = ""
    model: str = ""
    workspace: str = ""
    budgets: dict[str, float | int | None] = Field(default_factory=new_dict)
    max_external: int | None = None
    sandbox: str = ""
    sandbox_fallback: str | None = Field(None, description="Why the sandbox is not the one the envelope asked for.")
    acknowledged: list[AcceptedRisk] = Field(default_factory=new_list, description="Risks accepted by acknowledgement.")
    prices: dict[str, dict[str, float | int]] | None = Field(
        None,
        description="Model table overrides the run uses (prices and limits: the envelope's price file, then its "
        "pricing), read at start; a resume and a replay use these, not the files as they are later.",
    )
    replay_of: str | None = Field(None, description="The run this one re-executes (tether replay).")
    context_window: int | None = Field(
        None,
        ge=1,
        description="--context-window: the model's window for this run, over the envelope's and the table's.",
    )
    parent_run: str | None = Field(None, description="The run whose delegate call started this one (a child run).")
    parent_call: str | None = Field(None, description="That delegate call's id in the parent's log.")


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


@register("action.proposed")
class ActionProposed(Payload):
    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=new_dict)
    args_hash: str
    turn: int


@register("action.invalid")
class ActionInvalid(Payload):
    """Arguments failed the tool's schema (or the tool is unknown); the model is told."""

    call_id: str
    tool: str
    error: str


class RuleHit(Payload):
    id: str
    verdict: str
    reason: str


class TaintHit(Payload):
    """A value in a call's argument that first appeared in untrusted output, and the event that brought it."""

    arg: str
    kind: str
    value: str
    source_seq: int
    source_tool: str


@register("action.decided")
class ActionDecided(Payload):
    call_id: str
    verdict: str
    deciding_rule: str
    reason: str
    rules: list[RuleHit] = Field(default_factory=new_list)
    taints: list[TaintHit] = Field(
        default_factory=new_list, description="Values from untrusted output in the arguments (docs/trust.md)."
    )


@register("action.started")
class ActionStarted(Payload):
    call_id: str
    tool: str
    args_hash: str
    attempt: int = 1
    idempotent: bool = False


@register("action.completed")
class ActionCompleted(Payload):
    call_id: str
    tool: str
    ok: bool
    result: dict[str, Any] = Field(default_factory=new_dict)
    changed_files: list[str] = Field(
        default_factory=new_list, description="What the receipt reported and the snapshot saw change, together."
    )
    observed_files: list[str] | None = Field(
        None, description="Paths the workspace snapshot saw change during this action (None: not snapshotted)."
    )
    unexplained: list[str] = Field(
        default_factory=new_list, description="How the receipt and the snapshot disagree (tether.verify.changes)."
    )
    undo: dict[str, Any] | None = Field(
        None, description="Read from old logs only: file tools' undo records, replaced by action.rollback receipts."
    )
    duration_s: float = 0.0


@register("action.failed")
class ActionFailed(Payload):
    call_id: str
    tool: str
    error: str
    failure_class: str
    retryable: bool = False
    attempt: int = 1
    dependency: bool = Field(False, description="The sandbox could not run it: BLOCKED_DEPENDENCY, resumable.")
    fix: str = ""


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
