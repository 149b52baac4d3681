"""RunState = fold(events): the state contract of a run.

Everything the kernel needs to decide the next step is here, and all of it is
derived from the log alone: run the fold over the same events and you get the
same state, in this process or after a crash. ``apply`` is the only place an
event changes state: one small handler per payload type (``_HANDLERS``); kinds
without a handler leave state unchanged.
"""

from __future__ import annotations

from sys import intern

from tether.clock import datetime
from tether.envelope.schema import EXTERNAL_OUTPUT_EFFECTS
from tether.events.bulk import gc_paused
from tether.events.kinds_calls import (
    ActionCompleted,
    ActionDecided,
    ActionFailed,
    ActionProposed,
    ActionStarted,
    ReviewGate,
    RunStarted,
)
from tether.events.payload import REGISTRY
from tether.events.store import Event
from tether.records import dataclass, field
from tether.status import ActionStatus, ClaimStatus, ControlState, RunStatus
from tether.typeless import cast

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:  # a hook session never writes these kinds: their modules are the registry's later ones
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

    from tether.events.kinds import (
        ActionInvalid,
        ApprovalDenied,
        ApprovalExpired,
        ApprovalGranted,
        ApprovalMismatch,
        ApprovalRequested,
        BudgetExceeded,
        Checkpoint,
        ContextFull,
        ModelFailed,
        ModelResponded,
        ModelUnaffordable,
        RunContinued,
        RunFinished,
        RunForked,
        RunResumed,
        RunWaiting,
        SandboxFailed,
    )
    from tether.events.kinds_context import ContextCompacted
    from tether.events.kinds_control import (
        BeliefRecorded,
        CompletionAccepted,
        CompletionRefused,
        ControlChanged,
        NoOpChecked,
        RecoverySwitched,
        ReviewerCalled,
    )
    from tether.events.kinds_delegate import DelegateFinished, DelegateStarted
    from tether.events.kinds_guard import SessionEnded
    from tether.events.kinds_knowledge import PlanCarried
    from tether.events.kinds_verify import PreflightCompleted

    #: Facts the runtime records that a run cannot go on from; ``next_step`` turns the pending one into a finish.
    StopFact = (
        SandboxFailed
        | ContextFull
        | ModelUnaffordable
        | ModelFailed
        | ApprovalExpired
        | ApprovalMismatch
        | ActionFailed
        | PreflightCompleted
        | SessionEnded
    )

#: ``run.started``'s ``sandbox`` of a run whose tools another program runs: ``external: <program>``.
EXTERNAL = "external"


def external_driver(sandbox: str) -> str:
    """The program that drives a governed run and runs its tools (``claude-code``, ``langgraph``), or ``""``
    for a run of tether's own loop. Runs recorded before the program was named say only ``external``."""
    if sandbox == EXTERNAL:
        return "an external program"
    head, sep, name = sandbox.partition(":")
    return name.strip() if sep and head == EXTERNAL else ""


#: The recovery strategy that hands the run to a person (the last rung of ``control.recovery.LADDER``).
ESCALATE_HUMAN = "escalate_human"

#: The tool an agent of tether's own loop keeps its plan with (control/planning.py): its calls change the plan.
PLAN_TOOL = "plan"
#: The belief on which tests fail (control/beliefs.py): a write's review refuses to edit a test file it names.
FAILING_TESTS = "tests.failing"

#: The kinds a run's status depends on: those whose handlers set ``status`` or the pending approvals, and
#: the proposals the approvals name. Folding only these gives the full fold's ``status`` and
#: ``pending_approvals`` (``tether runs``, ``tether approvals``) without parsing the rest of the log.
STATUS_KINDS = frozenset(
    {
        "run.started",
        "run.resumed",
        "run.continued",
        "run.forked",
        "run.waiting",
        "run.finished",
        "action.proposed",
        "approval.requested",
        "approval.granted",
        "approval.denied",
        "approval.expired",
    }
)

#: Statuses after which no step is about a call any more (``_live``); a completed call joins them once it ran ok
#: or a person continued past its failure.
DONE = frozenset({ActionStatus.INVALID, ActionStatus.DENIED, ActionStatus.FAILED})

#: What a gate verdict makes of the action it decides.
VERDICT_STATUS = {"ALLOW": ActionStatus.DECIDED, "ASK": ActionStatus.WAITING, "DENY": ActionStatus.DENIED}


@dataclass(slots=True)
class Action:
    """One proposed tool call and everything that happened to it (slots: one is held per call for the whole run)."""

    call_id: str
    tool: str
    args: dict[str, Any]  # as proposed; a file write that completed well without its text (kept_args)
    args_hash: str
    turn: int
    seq: int  # its action.proposed's
    verdict: str | None = None
    reason: str = ""
    deciding_rule: str = ""
    status: ActionStatus = ActionStatus.PROPOSED
    attempts: int = 0
    ok: bool | None = None
    result: dict[str, Any] = field(default_factory=dict)  # the latest completion's, as kept_result keeps it
    completed_seq: int = -1  # the seq of that completion: its whole result is read from the log (Guard.output)
    settled_seq: int = -1  # the seq of its first completion or failure: what was in flight when (hooks/preimage.py)
    error: str = ""
    failure_class: str | None = None
    approval_id: str | None = None
    approved_by: str | None = None
    taints: Sequence[dict[str, Any]] = ()  # why the decider asked: untrusted values in its args (() when none)


#: The one tool whose result's ``data`` a reader of the run state reads: the finish call's claim (the runtime's
#: verification, the outcome). Every other ``data`` (a command's cwd, exit code, stdout and stderr, sizes...)
#: is read from the log's ``action.completed`` by those who show it, never from the fold.
KEEPS_DATA = frozenset({"finish"})


#: What the fold keeps of any other call's result: for an output too long to show, its blob and size
#: (``stored_result``, the ``read_result`` tool). Not the content the model was shown: every receipt's, up to 64 KiB
#: (a Read's file, an Edit's whole original), was held per call for the whole session, twice in a hook session's fold
#: checkpoint (the gate's run state and the control layer's), ~90 % of its bytes; the one reader of a past call's
#: content (a framework adapter handing a call that already ran its output again) reads it from the call's
#: completion in the log (``Action.completed_seq``, ``Guard.output``). ``ok`` and ``failure_class`` are the action's
#: own fields; ``effects`` and ``changed_files`` are read from the log's ``action.completed`` by those who use them
#: (the fold, undo, replay).
KEPT_KEYS = ("blob", "chars")


#: The tools whose calls write a file's text, and the arguments that hold it: a Write's content, an Edit's strings, a
#: MultiEdit's edits, a patch (hooks/calls.py maps every agent's file tools onto these two).
WRITES = frozenset({"write_file", "edit_file"})
WRITTEN = frozenset({"content", "old", "new", "edits", "patch"})


def kept_args(tool: str, args: dict[str, Any]) -> dict[str, Any]:
    """What the fold keeps of a call's arguments once it completed well: a file write's without the text it wrote
    (``WRITTEN``: its path and options stay), any other call's whole. That text (a Write's: the whole file) was held
    per call for the whole run, twice in a hook session's fold checkpoint (the gate's run state and the control
    layer's). A call that completed well never runs again (a failed one may be retried with its arguments:
    kernel/steps.py), so only readers of the past want the text, and they read it from the call's
    ``action.proposed`` (:func:`proposed_args`): a stop's test-integrity check, a receipt judged after it ran."""
    if tool not in WRITES:
        return args
    return {k: v for k, v in args.items() if k not in WRITTEN}


def proposed_args(events: Sequence[Event], a: Action) -> dict[str, Any]:
    """``a``'s arguments as proposed, whole, read from its ``action.proposed`` in ``events`` (the run's log, in which an
    event's index is its seq)."""
    return dict(_event_of(events, a, a.seq, ActionProposed.KIND, "proposal").payload["args"])


def completed_output(events: Sequence[Event], a: Action) -> str:
    """What ``a`` gave back as its latest receipt keeps it, read from that ``action.completed`` in ``events`` (the fold
    keeps no output: ``KEPT_KEYS``); "" for a call with no completion."""
    if a.completed_seq < 0:
        return ""
    done = _event_of(events, a, a.completed_seq, ActionCompleted.KIND, "completion")
    return str(done.payload.get("result", {}).get("content", ""))


def _event_of(events: Sequence[Event], a: Action, seq: int, kind: str, what: str) -> Event:
    """The event at ``seq``, which must be ``a``'s ``kind``: :class:`LogCorrupt` when it is not."""
    e = events[seq]
    if e.kind != kind or e.payload.get("call_id") != a.call_id:
        from tether.errors import LogCorrupt

        raise LogCorrupt(e.run_id, seq, f"the event at the {what} of call {a.call_id} is not that {what}")
    return e


def kept_result(tool: str, result: dict[str, Any]) -> dict[str, Any]:
    """What the fold keeps of a completed call's result (issue 18: held per step for the whole run): the finish
    call's whole result (its claim, in ``data``), and of any other call only ``KEPT_KEYS``, so every reader of
    ``Action.result`` gets the answer it got before."""
    if tool in KEEPS_DATA:
        return result
    return {k: result[k] for k in KEPT_KEYS if k in result}


@dataclass
class Usage:
    """What a run has used so far, against its budgets."""

    turns: int = 0
    tokens: int = 0
    usd: float = 0.0
    tool_calls: int = 0
    wall_s: float = 0.0


@dataclass
class RunState:
    """A run as its log says it is: ``RunState.from_events(store.events(run_id))``; what ``next_step`` reads."""

    run_id: str = ""
    task: str = ""
    status: RunStatus = RunStatus.NEW
    attempt: int = 0
    envelope: dict[str, Any] = field(default_factory=dict)
    plan_hash: str = ""
    contract_hash: str = ""
    model: str = ""
    workspace: str = ""
    driver: str = ""  # the program that drives a governed run (external_driver); "" for tether's own loop
    parent_run: str | None = None  # the run that delegated this one (docs/delegation.md)
    limits: dict[str, float | int | None] = field(default_factory=dict)
    used: Usage = field(default_factory=Usage)
    actions: dict[str, Action] = field(default_factory=dict)
    # (tool, args hash) -> the calls proposed with them, in proposal order: an identical call's earlier
    # denials are looked up here (policy/decide.py ``denied_before``), not found by scanning every call.
    # A tuple, not a list: nearly every key has one call, and a tuple of one is half a list's size (issue 18).
    same_calls: dict[tuple[str, str], tuple[Action, ...]] = field(default_factory=dict, repr=False, compare=False)
    pending_approvals: dict[str, dict[str, Any]] = field(default_factory=dict)
    run_rules: list[dict[str, Any]] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)
    last_error: str | None = None
    next_action: str = ""
    result: str = ""
    termination: str | None = None
    max_external: int | None = None
    external_used: int = 0  # external outputs executed (outputs.max_external counts these), one per call
    external_calls: list[str] = field(default_factory=list)  # their call ids
    recovery_point: dict[str, Any] | None = None
    baseline: str | None = None  # blob hash of the workspace manifest taken before the first action
    preflight_ok: bool | None = None  # None: pre-flight has not run
    claims: dict[str, ClaimStatus] = field(default_factory=dict)  # finish call_id -> its claim
    no_op_holds: dict[str, bool] = field(default_factory=dict)  # finish call_id -> its outputs.no_op check
    refusals: int = 0
    last_refusal: CompletionRefused | None = None  # the latest refusal, unless a claim was accepted since
    stop: StopFact | None = None  # a recorded fact that ends the run, until run.finished consumes it
    ended_by: StopFact | None = None  # the fact the latest run.finished consumed (what a resume must answer)
    raised: dict[str, float] = field(default_factory=dict)  # budgets raised by continuations: name -> new limit
    extra_refusals: int = 0  # completion refusals allowed beyond verification.max_refusals, by continuations
    continued_seq: int = -1  # the latest run.continued: control-layer stops older than it were answered
    # What the gate and the execution review read of the control layer's events, kept here so that deciding a call
    # needs no fold of the control layer (a hook's PreToolUse does not import it; ``control.fold`` reads these too):
    control: ControlState = ControlState.NORMAL  # the state the latest control.changed set (NORMAL before any)
    escalated_seq: int = -1  # the latest recovery.switched when it escalated to a person ("escalate_human"), else -1
    review_refusals: int = 0  # the trailing run of refused review.gate events (review.execution's escalation)
    # What a write's review reads of the plan and the beliefs (review/execution.py), so that a write's PreToolUse needs
    # no fold of the control layer either (late in a worked session its checkpointed fold, tried in a child and
    # loaded, cost a cold Edit ~15 ms more than a Read): whether the plan may hold a task, and the latest belief on
    # the failing tests, its value and the receipts it cites (None: none recorded).
    planned: bool = False  # a plan call completed, or a plan carried: the plan may hold a task (none else makes one)
    failing_tests: Any = None
    failing_cites: list[str] = field(default_factory=list)
    settled: set[str] = field(default_factory=set)  # failed calls a person continued past: they stop nothing now
    text_only_turns: int = 0
    last_text: str = ""
    raw_stop_reason: str | None = None
    unmeant_calls: bool = False  # the latest reply's calls came under a stop word that does not say they are meant
    changed_files: list[str] = field(default_factory=list)
    children: dict[str, DelegateStarted] = field(default_factory=dict)  # delegate call id -> the child it started
    children_done: dict[str, DelegateFinished] = field(default_factory=dict)  # delegate call id -> its outcome
    delegated: dict[str, dict[str, float]] = field(default_factory=dict)  # delegate call id -> what it is charged
    last_seq: int = -1
    head_hash: str = ""
    _active_since: datetime | None = None
    # The calls a step may still be about (``next_step`` reads only these), in proposal order: every action
    # but those done for good (ran ok, denied, invalid, failed to run, or failed and continued past).
    # Kept as each event lands, so a step costs O(live calls), not O(every call of the run).
    _live: dict[str, Action] = field(default_factory=dict, repr=False, compare=False)
    # (status, tool) -> the calls now in that status, by call id, kept by ``_settle`` (which every status change
    # passes through): a governed session's count of calls let through (guard/session.py ``spent``) and the
    # decider's external calls committed (policy/decide.py ``external_limit``) read these, not every call.
    calls_by: dict[tuple[ActionStatus, str], dict[str, Action]] = field(default_factory=dict, repr=False, compare=False)
    _filed: dict[str, tuple[ActionStatus, str]] = field(default_factory=dict, repr=False, compare=False)
    _keys: dict[tuple[ActionStatus, str], tuple[ActionStatus, str]] = field(
        default_factory=dict, repr=False, compare=False
    )  # one (status, tool) tuple each, shared by every call ``_filed`` under it (issue 18)

    @classmethod
    def from_events(cls, events: Iterable[Event]) -> RunState:
        state = cls()
        with gc_paused():
            for e in events:
                state.apply(e)
        return state

    @property
    def finished(self) -> bool:
        return self.status.terminal

    @property
    def awaiting_human(self) -> bool:
        """Recovery escalated to a person, and no one has continued the run since."""
        return self.escalated_seq > self.continued_seq

    @property
    def open_actions(self) -> list[Action]:
        """Started with no completion: ambiguous side effects after a crash."""
        return [a for a in self._live.values() if a.status is ActionStatus.STARTED]

    @property
    def live_actions(self) -> list[Action]:
        """The calls a step may still be about, in proposal order (see ``_live``); ``next_step`` reads these."""
        return list(self._live.values())

    def calls_in(self, statuses: Iterable[ActionStatus], tool: str | None = None) -> int:
        """How many calls are now in one of ``statuses`` (of ``tool`` only, when given): from ``calls_by``."""
        wanted = frozenset(statuses)
        return sum(len(ids) for (st, t), ids in self.calls_by.items() if st in wanted and tool in (None, t))

    def _file(self, a: Action) -> None:
        """File ``a`` under its current (status, tool) in ``calls_by``, out of where it was (a call id proposed
        again replaces the earlier action of that id, as ``actions`` does)."""
        key = (a.status, a.tool)
        key = self._keys.setdefault(key, key)
        was = self._filed.get(a.call_id)
        if was is not None:
            if was == key and self.calls_by[was].get(a.call_id) is a:
                return
            bucket = self.calls_by[was]
            bucket.pop(a.call_id, None)
            if not bucket:
                del self.calls_by[was]
        self._filed[a.call_id] = key
        self.calls_by.setdefault(key, {})[a.call_id] = a

    def _settle(self, a: Action) -> None:
        """Take ``a`` out of the live calls once its status says no step will ever be about it again (and file
        it under its status in ``calls_by``)."""
        self._file(a)
        done = a.status in DONE or (a.status is ActionStatus.COMPLETED and (a.ok or a.call_id in self.settled))
        if done:
            self._live.pop(a.call_id, None)
        elif a.call_id not in self._live:  # a call some event brought back: in its place among the others
            self._live[a.call_id] = a
            if next(reversed(self.actions)) != a.call_id:
                self._live = {k: x for k, x in self.actions.items() if k in self._live}

    def usage(self, now: datetime | None = None) -> dict[str, float]:
        """What the run has used, by budget name, its children's spend included; wall time counts up to ``now``
        when given (a child's wall time is the parent's own: the parent waits while its child runs)."""
        u = self.used
        wall = self.wall_used(now) if now is not None else u.wall_s
        own = {"turns": u.turns, "tokens": u.tokens, "usd": u.usd, "tool_calls": u.tool_calls, "wall_s": wall}
        for spend in self.delegated.values():
            for name, value in spend.items():
                if name in own and name != "wall_s":
                    own[name] += value
        return own

    def budget_left(self, now: datetime | None = None) -> dict[str, float | None]:
        """What each budget has left; wall time counted up to ``now`` when given, as :meth:`usage` counts it."""
        return {
            name: None if (limit := self.limits.get(name)) is None else float(limit) - float(value)
            for name, value in self.usage(now).items()
        }

    def wall_used(self, now: datetime) -> float:
        """Active wall time: paused stretches (waiting for a human) do not count."""
        extra = (now - self._active_since).total_seconds() if self._active_since else 0.0
        return self.used.wall_s + max(0.0, extra)

    # ---- the fold --------------------------------------------------------------------------

    def apply(self, e: Event) -> None:
        """Take in one event: the handler of its payload type, if any, changes the state.

        Only handled kinds are parsed (``e.data``, cached on the event). A kind that is not registered
        at all is a log tether did not write, and fails closed (:class:`~tether.errors.LogCorrupt`).
        """
        self.last_seq, self.head_hash = e.seq, e.hash
        handler = _BY_KIND.get(e.kind)  # one dict lookup per event; a handled kind is registered
        if handler is not None:
            handler(self, e, e.data)
        elif (looks := _BY_EVENT.get(e.kind)) is not None:
            looks(self, e)
        elif not dict.__contains__(REGISTRY, e.kind) and e.kind not in REGISTRY:  # loaded, or load: no frame
            _ = e.data  # raises LogCorrupt naming the seq and the kind

    def _run_started(self, e: Event, p: RunStarted) -> None:
        self.run_id, self.task, self.status, self.attempt = e.run_id, p.task, RunStatus.RUNNING, 1
        self.envelope = p.envelope
        self.plan_hash, self.contract_hash = p.plan_hash, p.contract_hash
        self.model, self.workspace = p.model, p.workspace
        self.driver = external_driver(p.sandbox)
        self.parent_run = p.parent_run
        self.limits = dict(p.budgets)
        self.max_external = p.max_external
        self._active_since = datetime.fromisoformat(e.ts)

    def _run_forked(self, e: Event, p: RunForked) -> None:
        """A fork goes on from the parent's state at the fork point, in its own workspace, as its own run."""
        self.run_id, self.workspace = e.run_id, p.workspace
        if p.envelope is not None:
            self.envelope, self.plan_hash, self.contract_hash = p.envelope, p.plan_hash, p.contract_hash
            self.limits = dict(p.envelope.get("budgets") or self.limits)
            self.max_external = (p.envelope.get("outputs") or {}).get("max_external", self.max_external)
        self.model = p.model or self.model
        self.attempt += 1
        self.status = RunStatus.WAITING_APPROVAL if self.pending_approvals else RunStatus.RUNNING
        self._active_since = datetime.fromisoformat(e.ts)

    def _run_resumed(self, e: Event, p: RunResumed | RunContinued) -> None:
        self.attempt += 1
        if not self.pending_approvals:
            self.status = RunStatus.RUNNING
        self._active_since = datetime.fromisoformat(e.ts)

    def _run_continued(self, e: Event, p: RunContinued) -> None:
        """A person continued the run: what stopped it is answered, and the limits they raised apply."""
        self._run_resumed(e, p)  # as a run.resumed (which reads nothing of its payload)
        if self.status.terminal:
            self.status = RunStatus.WAITING_APPROVAL if self.pending_approvals else RunStatus.RUNNING
        self.continued_seq = e.seq
        self.limits.update(p.budgets)
        self.raised.update(p.budgets)
        self.extra_refusals += p.attempts
        self.termination = self.raw_stop_reason = None  # the model's refusal or error was answered
        self.unmeant_calls = False
        self.text_only_turns = 0
        for a in self.actions.values():
            if a.call_id in p.resolved and a.status is ActionStatus.STARTED:
                a.status, a.ok, a.error = ActionStatus.FAILED, False, "outcome unknown: started, never completed"
            if a.ok is False:
                self.settled.add(a.call_id)
            self._settle(a)

    def _run_waiting(self, e: Event, p: RunWaiting) -> None:
        self.status, self.next_action = p.status, p.reason
        self._pause(e)

    def _run_finished(self, e: Event, p: RunFinished) -> None:
        self.status, self.result = p.status, p.result
        self.evidence, self.unknowns = list(p.evidence), list(p.unknowns)
        self.next_action, self.last_error = p.next_action, p.last_error
        self.ended_by, self.stop = self.stop, None
        self._pause(e)

    def _stopped(
        self, e: Event, p: SandboxFailed | ContextFull | ModelUnaffordable | ApprovalMismatch | SessionEnded
    ) -> None:
        """A fact the run cannot go on from; ``next_step`` turns it into the finish."""
        self.stop = p

    def _checkpoint(self, e: Event, p: Checkpoint) -> None:
        self.recovery_point = {"seq": e.seq, **e.payload}
        if self.baseline is None:
            self.baseline = p.snapshot

    def _model_responded(self, e: Event, p: ModelResponded) -> None:
        self.used.turns += 1
        self.used.tokens += p.input_tokens + p.output_tokens
        self.used.usd += p.cost_usd
        self.termination = p.termination
        self.last_text = p.text
        self.raw_stop_reason = p.raw_stop_reason
        # Calls under an unknown stop word are not run (kernel.turn.UNMEANT_CALL) and stop the run; a log written
        # before that rule recorded a reply with no stop word as "unknown" too, and ran its calls: not one of these.
        self.unmeant_calls = p.termination == "unknown" and bool(p.tool_calls) and p.raw_stop_reason is not None
        acted = p.tool_calls and p.termination != "truncated"  # a cut-off reply's calls do not run
        self.text_only_turns = 0 if acted else self.text_only_turns + 1

    def _reviewer_called(self, e: Event, p: ReviewerCalled) -> None:
        """The model reviewer's call is money and tokens like any other (not a turn)."""
        self.used.tokens += p.input_tokens + p.output_tokens
        self.used.usd += p.cost_usd

    def _context_compacted(self, e: Event, p: ContextCompacted) -> None:
        """A compaction's summary call is money and tokens like any other (not a turn)."""
        self.used.tokens += p.input_tokens + p.output_tokens
        self.used.usd += p.cost_usd

    def _model_failed(self, e: Event, p: ModelFailed) -> None:
        self.last_error = p.error
        self.stop = p

    def _action_proposed(self, e: Event, p: ActionProposed) -> None:
        tool = intern(p.tool)  # one string for every call of a tool, not one per call (issue 18)
        a = self.actions[p.call_id] = Action(p.call_id, tool, p.args, p.args_hash, p.turn, e.seq)
        key = (tool, p.args_hash)
        self.same_calls[key] = (*self.same_calls.get(key, ()), a)
        self._settle(a)

    def _action_invalid(self, e: Event, p: ActionInvalid) -> None:
        a = self.actions.get(p.call_id)
        if a:
            a.status, a.error, a.ok = ActionStatus.INVALID, p.error, False
            self._settle(a)

    def _action_decided(self, e: Event, p: ActionDecided) -> None:
        a = self.actions[p.call_id]
        # A rule's id and reason repeat call after call: one string each, not one per call (issue 18).
        a.verdict, a.reason, a.deciding_rule = intern(p.verdict), intern(p.reason), intern(p.deciding_rule)
        a.status = VERDICT_STATUS[p.verdict]
        a.taints = [t.model_dump(mode="json") for t in p.taints] if p.taints else ()
        self._settle(a)

    def _approval_requested(self, e: Event, p: ApprovalRequested) -> None:
        self.pending_approvals[p.approval_id] = dict(e.payload)
        self.actions[p.call_id].approval_id = p.approval_id
        self.status = RunStatus.WAITING_APPROVAL

    def _approval_granted(self, e: Event, p: ApprovalGranted) -> None:
        req = self.pending_approvals.pop(p.approval_id, None)
        if req is not None:
            a = self.actions[req["call_id"]]
            a.status, a.approved_by = ActionStatus.DECIDED, p.by
            self._settle(a)
            if p.scope == "run" and p.rule:
                self.run_rules.append({"rule": p.rule, "by": p.by, "approval_id": p.approval_id})

    def _approval_denied(self, e: Event, p: ApprovalDenied) -> None:
        self._refused(p.approval_id, p.reason or "approval expired (None)")

    def _approval_expired(self, e: Event, p: ApprovalExpired) -> None:
        self._refused(p.approval_id, f"approval expired ({p.outcome})")
        if p.outcome == "stop":
            self.stop = p

    def _refused(self, approval_id: str, reason: str) -> None:
        """A pending approval denied or expired: its call is denied, for ``reason``."""
        req = self.pending_approvals.pop(approval_id, None)
        if req is not None:
            a = self.actions[req["call_id"]]
            a.status = ActionStatus.DENIED
            a.reason = reason
            self._settle(a)

    def _action_started(self, e: Event, p: ActionStarted) -> None:
        a = self.actions[p.call_id]
        a.status, a.attempts = ActionStatus.STARTED, p.attempt
        if p.attempt == 1:
            self.used.tool_calls += 1
        self._settle(a)

    def _action_completed(self, e: Event, p: ActionCompleted) -> None:
        a = self.actions[p.call_id]
        a.status, a.ok, a.result = ActionStatus.COMPLETED, p.ok, kept_result(a.tool, p.result)
        a.completed_seq = e.seq
        a.settled_seq = e.seq if a.settled_seq < 0 else a.settled_seq
        if p.ok:
            a.args = kept_args(a.tool, a.args)
        a.failure_class = p.result.get("failure_class")
        self._settle(a)
        self.evidence.append(e.id)
        for f in p.changed_files:
            if f not in self.changed_files:
                self.changed_files.append(f)
        if a.tool == "finish" and p.ok:
            self.claims[a.call_id] = ClaimStatus.PENDING
        elif PLAN_TOOL in (a.tool, p.tool):  # the plan fold reads the completion's tool (control/receipts.py)
            self.planned = True
        if not EXTERNAL_OUTPUT_EFFECTS.isdisjoint(p.result.get("effects", [])) and a.call_id not in self.external_calls:
            self.external_calls.append(a.call_id)  # once per call, whatever its retries
            self.external_used += 1

    def _action_failed(self, e: Event, p: ActionFailed) -> None:
        a = self.actions[p.call_id]
        a.status, a.ok, a.error, a.failure_class = ActionStatus.FAILED, False, p.error, p.failure_class
        a.settled_seq = e.seq if a.settled_seq < 0 else a.settled_seq
        self._settle(a)
        self.last_error = p.error
        self.stop = p

    def _completion_accepted(self, e: Event, p: CompletionAccepted) -> None:
        self.claims[p.call_id] = ClaimStatus.ACCEPTED
        self.last_refusal = None

    def _completion_refused(self, e: Event, p: CompletionRefused) -> None:
        self.claims[p.call_id] = ClaimStatus.REFUSED
        self.refusals = p.refusals
        self.last_refusal = p

    def _no_op_checked(self, e: Event, p: NoOpChecked) -> None:
        self.no_op_holds[p.call_id] = p.holds

    def _preflight(self, e: Event, p: PreflightCompleted) -> None:
        self.preflight_ok = p.ok
        if not p.ok:
            self.stop = p

    def _delegate_started(self, e: Event, p: DelegateStarted) -> None:
        self.children[p.call_id] = p

    def _delegate_finished(self, e: Event, p: DelegateFinished) -> None:
        """A child's spend is the parent's: charged once per delegate call, whatever the retries."""
        self.delegated[p.call_id] = dict(p.spend)
        self.children_done[p.call_id] = p

    def _control_changed(self, e: Event, p: ControlChanged) -> None:
        self.control = ControlState(p.state)

    def _recovery_switched(self, e: Event, p: RecoverySwitched) -> None:
        self.escalated_seq = e.seq if p.strategy == ESCALATE_HUMAN else -1

    def _review_gate(self, e: Event, p: ReviewGate) -> None:
        self.review_refusals = 0 if p.ok else self.review_refusals + 1

    def _belief(self, e: Event) -> None:
        """The latest belief on the failing tests, as the control layer's beliefs keep it. Its payload's key read
        first: a belief on anything else (a Read's receipt gives one) builds no model, nor imports the control
        kinds' module (``events/kinds_control.py``: ~0.8 ms of a cold hook call that folds one)."""
        if e.payload.get("key") == FAILING_TESTS:
            p = cast("BeliefRecorded", e.data)  # its model, checked as it is built: an unfit one is refused
            self.failing_tests, self.failing_cites = p.value, list(p.cites)

    def _planned(self, e: Event, p: PlanCarried) -> None:
        self.planned = True

    def _budget_exceeded(self, e: Event, p: BudgetExceeded) -> None:
        self.last_error = f"budget {p.budget} exceeded: used {p.used} of {p.limit}"

    def _pause(self, e: Event) -> None:
        if self._active_since is not None:
            ts = datetime.fromisoformat(e.ts)
            self.used.wall_s += max(0.0, (ts - self._active_since).total_seconds())
            self._active_since = None


#: The fold's one table: which kinds change the run state, and how (each handler takes its kind's payload). Kinds
#: not here leave it unchanged. Keyed by the kind's string, not its class: a process folds a log without building
#: the payload classes of kinds it never reads (a hook session's: payload.LATER); ``apply`` does one dict lookup.
_BY_KIND: dict[str, Callable[[RunState, Event, Any], None]] = {
    "run.started": RunState._run_started,  # RunStarted
    "run.resumed": RunState._run_resumed,  # RunResumed
    "run.forked": RunState._run_forked,  # RunForked
    "run.continued": RunState._run_continued,  # RunContinued
    "run.waiting": RunState._run_waiting,  # RunWaiting
    "run.finished": RunState._run_finished,  # RunFinished
    "run.checkpoint": RunState._checkpoint,  # Checkpoint
    "model.responded": RunState._model_responded,  # ModelResponded
    "model.failed": RunState._model_failed,  # ModelFailed
    "review.model_called": RunState._reviewer_called,  # ReviewerCalled
    "context.compacted": RunState._context_compacted,  # ContextCompacted
    "action.proposed": RunState._action_proposed,  # ActionProposed
    "action.invalid": RunState._action_invalid,  # ActionInvalid
    "action.decided": RunState._action_decided,  # ActionDecided
    "approval.requested": RunState._approval_requested,  # ApprovalRequested
    "approval.granted": RunState._approval_granted,  # ApprovalGranted
    "approval.denied": RunState._approval_denied,  # ApprovalDenied
    "approval.expired": RunState._approval_expired,  # ApprovalExpired
    "action.started": RunState._action_started,  # ActionStarted
    "action.completed": RunState._action_completed,  # ActionCompleted
    "action.failed": RunState._action_failed,  # ActionFailed
    "completion.accepted": RunState._completion_accepted,  # CompletionAccepted
    "completion.refused": RunState._completion_refused,  # CompletionRefused
    "noop.checked": RunState._no_op_checked,  # NoOpChecked
    "preflight.completed": RunState._preflight,  # PreflightCompleted
    "budget.exceeded": RunState._budget_exceeded,  # BudgetExceeded
    "delegate.started": RunState._delegate_started,  # DelegateStarted
    "delegate.finished": RunState._delegate_finished,  # DelegateFinished
    "sandbox.failed": RunState._stopped,  # SandboxFailed
    "model.context_full": RunState._stopped,  # ContextFull
    "model.unaffordable": RunState._stopped,  # ModelUnaffordable
    "approval.mismatch": RunState._stopped,  # ApprovalMismatch
    "session.ended": RunState._stopped,  # SessionEnded
    "control.changed": RunState._control_changed,  # ControlChanged
    "recovery.switched": RunState._recovery_switched,  # RecoverySwitched
    "review.gate": RunState._review_gate,  # ReviewGate
    "plan.carried": RunState._planned,  # PlanCarried
}
#: Kinds whose handler looks at the event before it builds the payload's model, when it needs it at all.
_BY_EVENT: dict[str, Callable[[RunState, Event], None]] = {"belief.recorded": RunState._belief}
