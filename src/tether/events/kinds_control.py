"""Event kinds for verification, beliefs and control (issue 5).

Every layer of the control loop is visible in the log as one of these kinds:

- ``sensor.result`` / ``verify.completed``      the verification cascade (tether.verify)
- ``completion.claimed|refused|accepted``        a completion claim and what evidence made of it
- ``belief.recorded`` / ``contradiction.detected`` the world model (tether.control.beliefs)
- ``diagnostics.computed``                       the dimensions the resolver reads
- ``control.changed``                            the resolver's decision (the only writer of control state)
- ``recovery.switched`` / ``stuck.detected``     the recovery ladder and stuck patterns
- ``review.finding`` / ``review.gate``           the reviewer pass and the execution review
- ``plan.updated`` / ``hypothesis.recorded``     the model's plan and hypotheses, folded from its tool calls
"""

from tether.plain import Any, Field, Literal  # typing's, or a plain process's stand-ins: a cold receipt imports these

# named here as ever: defined with the kinds a hook session writes (kinds_calls)
from .kinds_calls import BeliefKind as BeliefKind
from .kinds_calls import ControlStateName as ControlStateName
from .kinds_calls import DiagnosticsComputed as DiagnosticsComputed
from .kinds_calls import ReviewGate as ReviewGate
from .kinds_calls import Risk as Risk
from .kinds_calls import SensorName as SensorName
from .kinds_calls import SensorOutcome as SensorOutcome
from .kinds_calls import Severity as Severity
from .kinds_calls import Strategy as Strategy
from .kinds_calls import StuckPattern as StuckPattern
from .payload import Payload, new_dict, new_list, register


class DiagnosticData(Payload):
    """One structured problem a sensor found: where and what (never a raw dump)."""

    file: str
    line: int | None = None
    message: str
    code: str | None = None


# ---- verification --------------------------------------------------------------------------


@register("sensor.result")
class SensorResultEvent(Payload):
    sensor: SensorName
    result: SensorOutcome
    required: bool = False
    summary: str = ""
    diagnostics: list[DiagnosticData] = Field(default_factory=new_list)
    duration_s: float = 0.0
    trigger: str = Field("", description="Why the cascade ran: 'action', 'completion', ... (free text).")
    tool: str = Field("", description="The binary that ran, with its version.")


@register("verify.completed")
class VerifyCompleted(Payload):
    trigger: str = ""
    results: dict[str, SensorOutcome] = Field(default_factory=new_dict, description="sensor -> outcome, cascade order.")
    changed_files: list[str] = Field(default_factory=new_list)
    accepted: bool = Field(description="Would a completion claim be accepted on this state?")
    reasons: list[str] = Field(default_factory=new_list)


# ---- completion ----------------------------------------------------------------------------


@register("completion.refused")
class CompletionRefused(Payload):
    call_id: str = ""
    reasons: list[str]
    refusals: int = Field(description="Refused claims so far in this run, this one included.")
    max_refusals: int
    diagnostics: list[DiagnosticData] = Field(default_factory=new_list)


@register("completion.accepted")
class CompletionAccepted(Payload):
    call_id: str = ""
    evidence: list[str] = Field(default_factory=new_list, description="Event ids of the passing sensor results.")


# ---- world model ---------------------------------------------------------------------------


class NoOpClause(Payload):
    clause: str
    holds: bool
    detail: str = Field(description="The evidence: a sensor's outcome, or why the clause cannot hold.")


@register("noop.checked")
class NoOpChecked(Payload):
    """Why "nothing to do" is (or is not) the right answer: a claim that changed no file and sent nothing out,
    judged by the envelope's ``outputs.no_op`` condition on the untouched workspace (``tether.envelope.noop``).
    Recorded before the claim is judged; a NO_OP finish rests on one that holds."""

    call_id: str
    condition: str
    holds: bool
    clauses: list[NoOpClause] = Field(default_factory=new_list)
    changed_files: int = Field(0, description="Files the run changed (receipts and snapshot): zero for a no-op.")
    external_outputs: int = Field(0, description="External outputs the run executed: zero for a no-op.")


@register("belief.recorded")
class BeliefRecorded(Payload):
    key: str = Field(description="What the belief is about, e.g. 'tests.failing', 'file:src/a.py'.")
    kind: BeliefKind
    value: Any
    generation: int = Field(ge=1, description="Increases by one with every observation in the run.")
    epoch: int = Field(0, ge=0, description="Workspace-changing actions before the observation.")
    cites: list[str] = Field(min_length=1, description="Event ids of the receipts this belief derives from.")
    confidence: float = Field(1.0, ge=0, le=1, description="Observed reliability of the source tool.")


@register("contradiction.detected")
class ContradictionDetected(Payload):
    key: str
    severity: Severity
    previous: Any
    observed: Any
    explanation: str
    cites: list[str] = Field(default_factory=new_list)


# ---- diagnostics and control ---------------------------------------------------------------


@register("control.changed")
class ControlChanged(Payload):
    previous: ControlStateName
    state: ControlStateName
    tier: Literal["contradiction", "critical", "warning", "normal"]
    reason: str
    dimension: str | None = None
    recovery: Strategy | None = None
    through: str = ""


@register("recovery.switched")
class RecoverySwitched(Payload):
    previous: Strategy
    strategy: Strategy
    reason: str
    guidance: str
    budget: dict[str, float] = Field(default_factory=new_dict, description="Recovery budget left when switching.")
    through: str = ""


@register("stuck.detected")
class StuckDetected(Payload):
    pattern: StuckPattern
    detail: str
    count: int
    cites: list[str] = Field(default_factory=new_list)


# ---- review, plan, hypotheses --------------------------------------------------------------


@register("review.finding")
class ReviewFindingRecorded(Payload):
    view: Literal["implementer", "reviewer", "adversarial"]
    severity: Literal["low", "medium", "high"]
    check: str
    message: str
    file: str | None = None
    detail: str = Field("", description="Supporting evidence, e.g. the unified diff of a changed test file.")


@register("review.model_called")
class ReviewerCalled(Payload):
    """The optional model reviewer was asked (its tokens and cost count against the run's budgets), or could
    not be paid for (``max_tokens`` 0, ``unaffordable`` says why; the claim is then refused)."""

    model: str
    max_tokens: int
    prompt_tokens_est: int = 0
    capped_by: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unaffordable: str = ""


class TaskData(Payload):
    id: str
    title: str = ""
    status: Literal["PENDING", "ACTIVE", "VERIFYING", "COMPLETE", "FAILED", "BLOCKED"] = "PENDING"
    depends_on: list[str] = Field(default_factory=new_list)
    files: list[str] = Field(default_factory=new_list)
    risk: Risk = "LOW"


@register("plan.updated")
class PlanUpdated(Payload):
    tasks: list[TaskData]
    rejected: list[str] = Field(default_factory=new_list, description="Requested changes the state machine refused.")
    revision: int = Field(ge=1)
    cites: list[str] = Field(default_factory=new_list)


@register("hypothesis.recorded")
class HypothesisRecorded(Payload):
    id: str
    statement: str
    files: list[str] = Field(default_factory=new_list)
    tests: list[str] = Field(default_factory=new_list)
    acted_on: bool = False
    score: float = Field(ge=0, le=1)
    support: list[str] = Field(default_factory=new_list)
    refute: list[str] = Field(default_factory=new_list)
    cites: list[str] = Field(default_factory=new_list)
