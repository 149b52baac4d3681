"""Event kinds of one governed tool call: the run's start, the call proposed, decided (the execution review's
gate), started, completed or failed, and the diagnostics the control layer computes after it; and the two
kinds every governed session's calls write besides: ``session.opened`` (its second event) and ``hook.received``
(each hook call).

What a hook session writes and folds to decide a call: ``tether.events`` imports this module and no other kind
module, so a hook deciding one call in a fresh process builds these models and not the ~45 of the kinds it never
reads (``payload.LATER``: the registry imports those the first time it is asked for one; ``session.ended``,
``hook.stop`` and ``hook.bypassed`` among them, written when a session stops or a refused call ran anyway).
``kinds``, ``kinds_control``, ``kinds_guard`` and ``kinds_hooks`` import their names from here, so
``from tether.events.kinds import ActionCompleted`` (or ``kinds_hooks import HookReceived``) reads as it always
did. The literal types the control layer names (``Risk``, ``StuckPattern``, …) live here too: a fold that names
one need not build ``kinds_control``.
"""

from tether.plain import Any, Field, Literal  # typing's Any and Literal, or a plain process's stand-ins

from .payload import Payload, new_dict, new_list, register

SensorName = Literal["snapshot", "syntax", "lint", "types", "scoped_tests", "tests", "policy"]
SensorOutcome = Literal["PASS", "FAIL", "SKIPPED", "ERROR"]
Severity = Literal["low", "medium", "high", "system_breaking"]
ControlStateName = Literal["NORMAL", "CAUTIOUS", "BLOCKED", "HUMAN_REQUIRED"]
Strategy = Literal["direct_edit", "trace_execution", "broaden_search", "reimplement", "minimal_fix", "escalate_human"]
Risk = Literal["LOW", "MEDIUM", "HIGH"]
StuckPattern = Literal["repeated_action", "repeated_error", "alternation", "no_action"]
BeliefKind = Literal["tests_failing", "build_state", "file_exists", "file_changed", "command_available", "sensor"]

# ---- the run and its calls -----------------------------------------------------------------


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


@register("action.proposed")
class ActionProposed(Payload):
    call_id: str
    tool: str
    args: dict[str, Any] = Field(default_factory=new_dict)
    args_hash: str
    turn: int


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
    duration_s: float | None = Field(
        0.0, description="Seconds the tool ran; None: the program that ran it did not say (a hook receipt without one)."
    )


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


# ---- after a call: the control layer's diagnostics, the execution review ----------------------


@register("diagnostics.computed")
class DiagnosticsComputed(Payload):
    dimensions: dict[str, float] = Field(description="Each in [0, 1]; 1 is healthy.")
    notes: dict[str, str] = Field(default_factory=new_dict, description="How each value was reached.")
    through: str = Field(description="Id of the last event these diagnostics considered.")


@register("review.gate")
class ReviewGate(Payload):
    call_id: str
    tool: str
    ok: bool
    risk: Risk
    reasons: list[str] = Field(default_factory=new_list)


# ---- a governed session and its hook calls (kinds_guard, kinds_hooks: see there) -------------


@register("session.opened")
class SessionOpened(Payload):
    framework: str = Field(description="The program whose tool calls this run gates: langgraph, openai-agents, ...")
    session: str = Field(description="The program's own id of the session (thread id, conversation id).")
    by: str = Field("", description="The user the session was opened as.")


Agent = Literal["claude-code", "codex"]


@register("hook.received")
class HookReceived(Payload):
    agent: Agent
    event: str = Field(description="The hook event name (PreToolUse, Stop, UserPromptSubmit, ...).")
    session_id: str
    cwd: str = ""
    detail: dict[str, Any] = Field(default_factory=new_dict, description="The event's own fields tether keeps.")
