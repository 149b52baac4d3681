"""The effectful shell: performs the step the functional core chose, and logs it.

``Runtime.drive`` is the turn loop of DESIGN.md in one place::

    step = next_step(state)            # pure: tether.kernel.steps
    perform(step)                      # call the model | decide | stage approval | execute | verify | finish
    append outcome as events           # the store is the only writer; the fold moves state on

Every effect is bracketed by events: ``action.started`` is durable before a tool
runs, ``action.completed`` after, so a crash in between is visible on resume.

While it drives, the runtime stages what it appends (folded into its state at once) and writes the staged
events in one transaction where that matters: with the first durable kind (before an effect, a human or
the end), before a model call or a sensor run, before anything reads the log, and when the drive returns —
two commits and one fsync per tool step (docs/store.md, "Commits per step").

The runtime holds no list of the run's events: each event, as it lands, moves on the folds that hold what the
next step needs (the run state and control fold, the model's transcript, the provenance index, the last test
baseline), so a step costs the same at step 5,000 as at step 50. The few consumers of the whole history
(verification, compaction, the closing) read it back from the store a page at a time
(:meth:`Runtime.whole_log`), so the log is never in memory whole.
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from tether.canonical import content_hash
from tether.control.fold import RunFold
from tether.control.loop import HumanRequired, control_state, observe, stop_reason
from tether.envelope.schema import ContextSettings, Effect, Envelope, Price, Rule, ToolContract, Trust
from tether.envelope.trust import trust_of
from tether.errors import InputError, ProviderError, RuntimeFailure, SandboxUnavailable
from tether.events.chain import GENESIS
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionFailed,
    ActionInvalid,
    ActionStarted,
    ApprovalDenied,
    ApprovalExpired,
    ApprovalMismatch,
    ApprovalRequested,
    BudgetExceeded,
    Checkpoint,
    ContextFull,
    ModelFailed,
    ModelRetried,
    ModelUnaffordable,
    RunFinished,
    RunStarted,
    SandboxFailed,
)
from tether.events.kinds_baseline import SuiteBaseline
from tether.events.kinds_context import ContextCompacted
from tether.events.kinds_control import ReviewerCalled
from tether.events.kinds_delegate import DelegateStarted
from tether.events.kinds_mcp import McpFailed, McpStarted
from tether.events.kinds_verify import PreflightCompleted
from tether.events.payload import Payload, fresh
from tether.events.protocol import Store
from tether.events.store import Batch, Event, Head
from tether.events.stream import PagedLog, stream
from tether.models.base import Message, Model, ToolSpec, Usage
from tether.models.catalog import split_provider
from tether.models.pricing import cost_usd, price_for
from tether.models.retry import complete_with_retries
from tether.models.tokens import counter_for
from tether.models.window import (
    MIN_OUTPUT_TOKENS,
    OutputBudget,
    budget_for,
    estimate_tokens,
    learned_window,
    limits_for,
    output_budget,
)
from tether.policy.decide import decide
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.policy.provenance import Provenance
from tether.review.completion import claim_event, judge_completion, no_op_check
from tether.review.execution import review_gate_event
from tether.review.model_reviewer import CHECK as REVIEWER_CHECK
from tether.review.model_reviewer import REPORT, model_review, review_messages
from tether.review.reviewer import ReviewFinding, review
from tether.review.test_integrity import source_findings, surface_findings
from tether.sandbox.base import Sandbox
from tether.sandbox.broker import Broker
from tether.sandbox.bwrap import for_call, take_egress
from tether.sandbox.environment import mask, passed_values
from tether.sandbox.held import held, warmed
from tether.snapshot import Manifest, SnapshotError
from tether.state import Action, RunState
from tether.tools.context import Delegation, ToolContext
from tether.tools.contract import Tool, ToolArgsError
from tether.tools.result import ToolResult
from tether.tools.shell import bash, run_tests
from tether.verify.cascade import cascade_events, completion_verdict, run_cascade
from tether.verify.changes import WorkspaceDiff, run_diff, snapshot_check, unexplained, window_changes, windows
from tether.verify.preflight import run_preflight
from tether.verify.testsurface import changes, read_bytes

from .approvals import ApprovalAnswer, ApprovalRequest, Approver, answer_payload
from .budgets import CallCap, cap_call
from .compaction import (
    Cut,
    Summary,
    digest,
    invariants,
    over,
    plan_cut,
    render_diff,
    settings_of,
    summary_request,
    untrusted_in,
)
from .context import Transcript, compacted_text, kept_result
from .knowledge import remembered
from .manifest import Counted, Manifests, delta
from .outcome import CLOSING_KINDS, OutputContract, closing
from .snapshots import Snapshots, start_manifest
from .step import CallModel, Decide, Execute, ExpireApproval, Finish, StageApproval, Step, Verify, Wait
from .steps import next_step
from .turn import counted_usage, failed, fresh_ids, requested, responded, window_setting
from .undo import rollback_receipt

if TYPE_CHECKING:
    from tether.tools.mcp import Started

EventSink = Callable[[Event], None]
# Synced to disk before anything else happens: what precedes an effect or a human, and the run's ends.
DURABLE_KINDS = frozenset(k.KIND for k in (RunStarted, ActionStarted, ApprovalRequested, DelegateStarted, RunFinished))
_OVERFLOWS = frozenset((ModelRetried.KIND, ModelFailed.KIND))  # kept by `_take`: a window a provider stated
#: The built-in tools whose only effect is their one sandbox command (nothing in tether's own process before it): their
#: command starts while ``action.started`` is written and synced, and begins only after (docs/step-cost.md).
COMMAND_TOOLS = (bash, run_tests)
#: Runs a child run for a parent's ``delegate`` call (:class:`tether.kernel.delegation.Delegator`).
DelegateFn = Callable[["Runtime", str, Delegation], ToolResult]


class Runtime:
    """Drives one run. Build it with :func:`tether.kernel.session.start` or ``resume``."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        env: Envelope,
        workspace: Path,
        model: Model,
        tools: dict[str, Tool],
        sandbox: Sandbox | None,
        *,
        sandbox_error: SandboxUnavailable | None = None,
        plan: dict[str, Any] | None = None,
        approver: Approver | None = None,
        on_event: EventSink | None = None,
        reviewer: Model | None = None,
        sleep: Callable[[float], None] = time.sleep,
        prices: Mapping[str, Price] | None = None,
        delegator: DelegateFn | None = None,
    ) -> None:
        self.store, self.run_id, self.env, self.workspace = store, run_id, env, workspace
        self.delegator = delegator
        self.model, self.tools, self.sandbox, self.sandbox_error = model, tools, sandbox, sandbox_error
        self.plan, self.approver, self.on_event, self.sleep = plan, approver, on_event, sleep
        self.reviewer = reviewer
        self.prices = env.pricing if prices is None else prices  # overrides of the built-in model table
        self.fold = RunFold()  # the control layer's fold of the log
        self.state: RunState = self.fold.state  # the run state it folds: what ``next_step`` reads
        self._stop: tuple[Event | None, HumanRequired | None] | None = None  # control_stop(): of which control.changed
        self.transcript = Transcript(env, plan)  # the model's view of the run
        self.provenance = Provenance(env)  # where each value in an untrusted output was first seen
        self.head: Head = (-1, GENESIS)  # the last event staged or written
        self._batch: Batch | None = None  # staged: in the state, not yet in the store
        self._batching = False
        self.suite_baseline: SuiteBaseline | None = None  # the latest test-integrity baseline
        self._first: dict[str, Any] | None = None  # run.started's payload (its --context-window)
        self._overflows: list[dict[str, Any]] = []  # model.retried / model.failed payloads: a window a provider stated
        for e in stream(store, run_id):  # a page at a time: a resumed long run is never read whole
            self._take(e)
        self._gate: tuple[tuple[Event | None, tuple[str, ...]], Gate] | None = None
        self._manifests: Manifests | None = None
        self._specs: tuple[tuple[ToolContract, ...], tuple[ToolSpec, ...]] | None = None  # tool_specs()
        self._recorded: Counted | None = None  # the last recorded call's prompt, in this driver
        self.snapshots = Snapshots(store, workspace, self.state.baseline)
        environment = env.environment
        self.passed = passed_values(os.environ, environment.env_allow)
        self.broker = Broker(environment, store.redact_also, workspace=workspace)
        self.broker.learn()  # before anything this driver appends: what an earlier process saw is redacted too

    # ---- the loop --------------------------------------------------------------------------

    def begin(self, task: str, first: Sequence[Payload], parent_run: str | None = None) -> None:
        """Create the run with its first events and this driver's lease, in one transaction."""
        self.store.create_run(task, first, run_id=self.run_id, parent_run=parent_run, lease=True)
        for e in self.store.events(self.run_id):
            self._take(e)
            self.head = e.head
            if self.on_event is not None:
                self.on_event(e)

    def drive(self, *, steps: int | None = None) -> OutputContract:
        """Walk the run until it finishes or waits, holding its lease (one driver per run) throughout.

        ``steps`` bounds how many steps this call performs: a Temporal activity performs one
        (:mod:`tether.distributed`), so that a retried activity repeats at most one step, which the log
        already tells apart (a completed action is not re-run; an ambiguous one ends NEEDS_INPUT).
        """
        if not self.store.holds(self.run_id):
            self.store.acquire(self.run_id)
        try:
            with self.batched():
                going = not self.state.finished and self.state.stop is None
                if going and self.sandbox is None:
                    err = self.sandbox_error or SandboxUnavailable("no sandbox")
                    self.append(SandboxFailed(error=str(err), fix=err.fix))
                elif going and self.state.preflight_ok is not True and not self.state.actions:
                    self.preflight()
                # A drive of one step (a Temporal activity) would start a shell for a step it never takes.
                warm = warmed(self.sandbox) if steps is None else nullcontext()
                with self.mcp_servers(going and self.sandbox is not None), warm:
                    performed = 0
                    while (step := next_step(self.state, self.env, self.now(), self.control_stop())) is not None:
                        if isinstance(step, Wait) or (steps is not None and performed >= steps):
                            break
                        self.perform(step)
                        performed += 1
        finally:
            self.store.release(self.run_id)
        return OutputContract.from_state(self.state)

    @contextmanager
    def mcp_servers(self, going: bool) -> Iterator[None]:
        """The envelope's MCP servers, for as long as this drive lasts: started, their declared tools offered
        (each start recorded, ``mcp.started`` or ``mcp.failed``), then stopped and their tools withdrawn."""
        if not (going and self.env.mcp_servers):
            yield
            return
        from tether.tools.mcp import McpServers, McpTool  # the MCP SDK: ~0.7 s to import, only for runs that use it

        servers = McpServers(self.env, self.workspace, self.sandbox)
        self.flush()  # before starting servers: a crash while they start keeps what was recorded
        try:
            tools, reports = servers.open()
            if reports:
                self.append_many([_mcp_event(r) for r in reports])
            self.tools = {**self.tools, **tools}
            yield
        finally:
            servers.close()
            self.tools = {name: t for name, t in self.tools.items() if not isinstance(t, McpTool)}

    def perform(self, step: Step) -> None:
        match step:
            case CallModel():
                self.call_model(step)
            case Decide():
                self.decide(step)
            case StageApproval():
                self.stage_approval(step)
            case ExpireApproval():
                self.expire_approval(step)
            case Execute():
                self.execute(step)
            case Verify():
                self.verify(step)
            case Finish():
                self.finish(step)

    # ---- effects ---------------------------------------------------------------------------

    def call_model(self, step: CallModel) -> None:
        specs = self.tool_specs()
        fitted = self.fit_call(step.turn, specs)
        if fitted is None:  # nothing is sent: why is on record
            return
        prompt, budget, cap = fitted
        kept, new = delta(self._recorded, prompt)
        self.append(fresh(requested(step.turn, self.model.name, prompt, budget, cap, kept, new)))  # built, untouched
        self._recorded = prompt
        self.flush()  # a crash during a long model call must not lose the last step's receipts
        retry = self.env.retry
        try:
            response, attempts = complete_with_retries(
                self.model,
                prompt.messages,
                specs,
                max_tokens=cap.max_tokens,
                max_attempts=retry.max_attempts,
                backoff_s=retry.backoff_s,
                backoff_max_s=retry.backoff_max_s,
                sleep=self.sleep,
                on_retry=lambda attempt, err, max_tokens: self.log_retry(step.turn, attempt, err, max_tokens),
                time_left=self.wall_left,
            )
        except ProviderError as e:
            self.append(failed(step.turn, self.model.name, e, window_setting(self.model)))
            return
        calls = fresh_ids(step.turn, response.tool_calls, self.state.actions)  # the run's ids, looked up, not copied
        usage = counted_usage(response, budget.prompt_tokens)
        cost = cost_usd(self.model.name, usage, self.prices)
        # a turn is recorded whole or not at all
        self.append_many(responded(step.turn, self.model.name, response, calls, usage, cost, attempts, cap.max_tokens))

    def fit_call(self, turn: int, specs: Sequence[ToolSpec]) -> tuple[Counted, OutputBudget, CallCap] | None:
        """The prompt and what the call may spend: compacted first if it is over the window's threshold, its
        output capped by the window's room and by the budgets left. None, with the stop recorded, when not even a
        minimal call fits (the window: ``context.full``; the money or tokens left: ``model.unaffordable``)."""
        agent = self.env.agent
        limits = limits_for(
            self.model.name, self.prices, window=self.context_window(), max_output=agent.max_output_tokens
        )
        prompt = self.prompt(specs)
        settings = settings_of(agent.context)
        window = limits.window
        if window and over(prompt.total, window, settings) and self.compact(turn, prompt, window, settings):
            prompt = self.prompt(specs)
        budget = output_budget(limits, prompt.total)
        if budget.problem:
            self.append(ContextFull(turn=turn, problem=budget.problem, window_setting=window_setting(self.model)))
            return None
        cap = cap_call(budget.max_tokens, budget.prompt_tokens, price_for(self.model.name, self.prices), self.state)
        if cap.short is not None:
            b = cap.short
            self.append(ModelUnaffordable(turn=turn, budget=b.budget, used=b.used, limit=b.limit, reason=cap.reason))
            return None
        return prompt, budget, cap

    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The tools as the model is told about them, built again only when a tool's contract changed (the
        tools are re-read at each step: a resumed or extended run may add or drop some)."""
        contracts = tuple([t.contract for t in self.tools.values()])  # a list: one call, not one per tool
        cached = self._specs
        if cached is None or cached[0] != contracts:  # identity first, then a frozen contract's fields
            cached = self._specs = (contracts, tuple(ToolSpec(c.name, c.purpose, c.input_schema) for c in contracts))
        return cached[1]

    def prompt(self, specs: Sequence[ToolSpec]) -> Counted:
        """The messages of the next call, rebuilt from the log, with their manifest and token counts."""
        if self._manifests is None:  # tiktoken loads its encoding once, on the first call that needs it
            self._manifests = Manifests(counter_for(self.model.name))
        return self._manifests.count(self.transcript, specs)

    def compact(self, turn: int, prompt: Counted, window: int, settings: ContextSettings) -> bool:
        """Replace older turns with a summary (the model's, else the digest) and the invariant block; log it."""
        assert self._manifests is not None
        with self.whole_log() as log:
            return self._compact(log, turn, prompt, window, settings)

    def _compact(
        self, log: Sequence[Event], turn: int, prompt: Counted, window: int, settings: ContextSettings
    ) -> bool:
        assert self._manifests is not None
        counter = self._manifests.counter
        kept = invariants(log, render_diff(self.run_diff()))
        cut = plan_cut(self.transcript, prompt, window, settings, settings.summary_tokens + counter.count(kept))
        if cut is None:
            return False
        summary = self.summarise(cut, settings)
        third_party = [
            n for n, t in self.tools.items() if trust_of(self.env.tool(n) or t.contract, self.env) is Trust.UNTRUSTED
        ]
        span = log[cut.first_seq : cut.last_seq + 1]  # seq = index; the turns the prompt held: one read
        text = summary.text or digest(span, cut.first_seq, cut.last_seq, third_party)
        fields: dict[str, Any] = {
            "first_seq": cut.first_seq,
            "last_seq": cut.last_seq,
            "summary": text,
            "invariants": kept,
            "untrusted": untrusted_in(span, cut.first_seq, cut.last_seq, third_party),
        }
        turns = self.transcript.compacted_turns + sum(1 for m in cut.covered if m.role == "assistant")
        message = counter.message(Message("user", compacted_text({**fields, "method": summary.method}, turns)))
        covered = sum(r.tokens for r in prompt.records[2 : 2 + len(cut.covered)])
        self.append(
            ContextCompacted(
                turn=turn,
                method=summary.method,
                before_tokens=prompt.total,
                after_tokens=prompt.total - covered + message,
                counter=counter.name,
                fallback=summary.fallback,
                model=summary.model,
                input_tokens=summary.usage.input_tokens,
                output_tokens=summary.usage.output_tokens,
                cost_usd=cost_usd(self.model.name, summary.usage, self.prices) if summary.model else 0.0,
                **fields,
            )
        )
        return True

    def summarise(self, cut: Cut, settings: ContextSettings) -> Summary:
        """The model's summary of the cut turns, or why there is none (then the digest is used)."""
        if settings.summary == "digest":
            return Summary.none("the envelope asks for the digest (agent.context.summary: digest)")
        if split_provider(self.model.name)[0] == "scripted":
            return Summary.none("a scripted model's script holds no summaries")
        messages = summary_request(cut.covered)
        assert self._manifests is not None
        asked = sum(self._manifests.counter.message(m) for m in messages)
        cap = cap_call(settings.summary_tokens, asked, price_for(self.model.name, self.prices), self.state)
        if cap.short is not None:
            return Summary.none(f"the budget does not allow a summary call: {cap.reason}")
        self.flush()  # before a model call
        try:
            response = self.model.complete(messages, [], max_tokens=cap.max_tokens)
        except ProviderError as e:
            return Summary.none(f"the model could not summarise: {e}")
        usage = response.usage
        if not usage.reported:
            usage = Usage(asked, estimate_tokens(response.text), reported=False)
        if not response.text.strip():
            return Summary("", "digest", "the model's summary was empty", self.model.name, usage)
        return Summary(response.text.strip(), "model", "", self.model.name, usage)

    def run_diff(self) -> WorkspaceDiff:
        """The run's changes from its baseline snapshot to the latest one (read from the store's blobs)."""
        try:
            latest = self.snapshots.latest or self.snapshots.take()
            return run_diff(self.snapshots.baseline(), latest, self.store, str(self.workspace))
        except SnapshotError as e:
            return WorkspaceDiff(False, str(e))

    def context_window(self) -> int | None:
        """The run's window (``--context-window``, else the envelope's), or a smaller one a provider stated in an
        overflow during this run; None: the model table's."""
        stated = learned_window(self._overflows)
        chosen = self._first.get("context_window") if self._first else None  # run --context-window
        known = [w for w in (chosen or self.env.agent.context_window, stated) if w]
        return min(known) if known else None

    def wall_left(self) -> float | None:
        """Seconds left of ``budgets.wall_s`` (None: no limit): a model call's retries wait no longer than that."""
        limit = self.state.limits.get("wall_s")
        return None if limit is None else float(limit) - self.state.wall_used(self.now())

    def log_retry(self, turn: int, attempt: int, err: ProviderError, max_tokens: int) -> None:
        self.append(
            ModelRetried(
                turn=turn,
                model=self.model.name,
                attempt=attempt,
                error=str(err),
                status=err.status,
                failure=err.failure,
                max_tokens=max_tokens,
                window=getattr(err, "window", None),
            ),
        )
        self.flush()  # the retry's model call comes next

    def decide(self, step: Decide) -> None:
        action = self.state.actions[step.call_id]
        tool = self.tools.get(action.tool)
        if tool is None:
            self.append(
                ActionInvalid(
                    call_id=action.call_id,
                    tool=action.tool,
                    error=f"unknown tool {action.tool!r}; available: {sorted(self.tools)}",
                ),
            )
            return
        try:
            tool.validate(action.args)
        except ToolArgsError as e:
            self.append(ActionInvalid(call_id=action.call_id, tool=action.tool, error=str(e)))
            return
        contract = self.env.tool(action.tool) or tool.contract
        ruling = decide(action, contract, self.gate, self.state, self.fold, self.env, self.provenance)
        review = [] if ruling.review is None else [review_gate_event(action.call_id, contract.name, ruling.review)]
        self.append_many([*review, fresh(ActionDecided(call_id=action.call_id, **ruling.decision.to_dict()))])
        if ruling.decision.verdict is Verdict.DENY:
            self.observe()  # a run of denials is itself something the control layer must see

    def gate(self) -> Gate:
        """The gate for the current control state and run rules (rebuilt only when they change).

        Keyed by the fold's latest ``control.changed`` itself (the control state is a function of it alone), not
        by the state worked out from it at every decision (issue 18): a new event of the same state rebuilds an
        equal gate."""
        last = self.fold.last_control
        rules = tuple(r["rule"] for r in self.state.run_rules)
        kept = self._gate
        if kept is None or kept[0][0] is not last or kept[0][1] != rules:
            gate = Gate(self.env, self.workspace, control=control_state(self.fold), run_rules=self.run_rules())
            kept = self._gate = ((last, rules), gate)
        return kept[1]

    def stage_approval(self, step: StageApproval) -> None:
        action = self.state.actions[step.call_id]
        tool = self.tools[action.tool]
        approval_id = "ap-" + uuid.uuid4().hex[:8]
        try:
            preview = tool.preview(action.args, self.tool_context(tool))
        except Exception as e:  # a preview that cannot be built still needs a human
            preview = f"(no preview: {e})\n{action.tool} {action.args}"
        preview += tainted_note(action.taints)
        expires = self.now() + timedelta(seconds=self.env.approvals.timeout_s)
        self.append(
            ApprovalRequested(
                approval_id=approval_id,
                call_id=action.call_id,
                tool=action.tool,
                args_hash=action.args_hash,
                preview=preview,
                reason=action.reason,
                expires_at=expires.timestamp(),
            ),
        )
        if self.approver is not None:
            request = ApprovalRequest(
                approval_id, self.run_id, action.call_id, action.tool, action.args, preview, action.reason
            )
            self.answer(request, self.approver(request))

    def answer(self, request: ApprovalRequest, answer: ApprovalAnswer) -> None:
        item = answer_payload(request, answer)
        if item is not None:
            self.append(item)
        if isinstance(item, ApprovalDenied):  # the reason a human gave may state a fact worth remembering
            self.remember()

    def remember(self) -> None:
        """Store what the run's user has stated so far in the project's memory (``memory.remember``); log the new."""
        self.flush()  # remembered reads the log
        told = remembered(self.store, self.run_id, self.env)
        if told is not None:
            self.append(told)

    def expire_approval(self, step: ExpireApproval) -> None:
        outcome = self.env.approvals.on_timeout
        self.append(ApprovalExpired(approval_id=step.approval_id, outcome=outcome))

    def execute(self, step: Execute) -> None:
        action = self.state.actions[step.call_id]
        tool = self.tools[action.tool]
        contract = self.env.tool(action.tool) or tool.contract
        if action.approval_id is not None and content_hash(action.args) != action.args_hash:
            self.append(ApprovalMismatch(approval_id=action.approval_id, call_id=action.call_id))
            return
        self.back_off(step)
        # durable: written and synced before the effect, in any case. A command's process starts first (held), and
        # action.started is recorded (built, chained, folded) and written while it starts: by the held sandbox before
        # letting the command go, or by settle when no command took it (see record_started).
        command = tool in COMMAND_TOOLS
        if command:
            commit = Commit(partial(self.record_started, action, step.attempt, contract))
        else:
            self.append_many([started(action, step.attempt, contract)])
            commit = Commit(self.flush)
        before = self.window_start(action.call_id)
        began = time.monotonic()
        ctx: ToolContext | None = None
        try:
            ctx = self.tool_context(tool, call_id=action.call_id)  # a secret that cannot be read fails the call
            result = tool.invoke(action.args, held_context(ctx, commit) if command else ctx)
        except RuntimeFailure as e:
            commit.settle()  # first: a commit that failed is the error, whatever the tool made of it
            egress = take_egress(ctx.sandbox) if ctx is not None else []
            self.append_many([*egress, runtime_failed(action, step.attempt, e)])
            return
        commit.settle()
        receipt, completed = self.completion(action, contract, result, before, began)
        # One transaction: the call's connection attempts are in the log before its result is.
        self.append_many([*take_egress(ctx.sandbox), *receipt, completed])
        self.observe()

    def record_started(self, action: Action, attempt: int, contract: ToolContract) -> None:
        """A command tool's ``action.started``, recorded and written (synced) with what is staged before it: the
        commit a held command waits for. Run once its process has started, so that the event's building, chaining
        and folding overlap the process's start instead of delaying it (issue 18); nothing of the command runs
        before this returns, and if it raises the command never begins (``Commit``)."""
        self.append_many([started(action, attempt, contract)], write=False)
        self.flush()

    def back_off(self, step: Execute) -> None:
        """Before a retried attempt (not one started before a crash): the envelope's backoff, doubling."""
        if step.attempt > 1 and not step.why.startswith("started before"):
            self.sleep(min(self.env.retry.backoff_max_s, self.env.retry.backoff_s * 2 ** (step.attempt - 2)))

    def completion(
        self, action: Action, contract: ToolContract, result: ToolResult, before: Manifest | None, began: float
    ) -> tuple[list[Payload], ActionCompleted]:
        """What a call that returned records: its rollback receipt (if the workspace was snapshotted around it)
        and ``action.completed``, its result masked, redacted and cut, with what the snapshot saw change."""
        # What the command was handed never reaches the log: env_allow values masked, secrets redacted here
        # (the store would too, but kept_result cuts the output first, and could cut a value in two).
        redact = self.store.redactor.value
        payload = redact(mask(result.to_dict(), self.passed))
        payload["effects"] = effects = [e.value for e in contract.effects]
        observed, problems = self.window(before, effects, result.changed_files)
        whole = payload["content"] if result.whole is None else redact(mask({"w": result.whole}, self.passed))["w"]
        if observed and Effect.EXEC in contract.effects:  # a command's changes are the snapshot's to tell
            whole += "\nchanged files: " + ", ".join(observed[:50]) + (" ..." if len(observed) > 50 else "")
        payload.update(kept_result(whole, self.store.put_blob))
        after = self.snapshots.latest if observed is not None else None
        receipt = None if before is None or after is None else rollback_receipt(action.call_id, before, after)
        completed = ActionCompleted(
            call_id=action.call_id,
            tool=action.tool,
            ok=result.ok,
            result=payload,
            changed_files=sorted({*result.changed_files, *(observed or ())}),
            observed_files=observed,
            unexplained=problems,
            duration_s=round(time.monotonic() - began, 6),
        )
        return ([] if receipt is None else [receipt]), completed

    def preflight(self) -> None:
        """Before the first model call: can this run be verified? Records the test-integrity baseline."""
        assert self.sandbox is not None
        pf = run_preflight(self.env, self.workspace, self.sandbox)
        for data in pf.blobs.values():
            self.store.put_blob(data)
        items: list[Payload] = [pf.baseline] if pf.baseline is not None else []
        self.append_many([*items, *take_egress(self.sandbox), PreflightCompleted(ok=pf.ok, checks=pf.checks)])

    def test_baseline(self) -> SuiteBaseline | None:
        return self.suite_baseline

    def blob(self, h: str) -> bytes | None:
        try:
            return self.store.get_blob(h)
        except InputError:
            return None

    def integrity_findings(self, baseline: SuiteBaseline | None, diff: WorkspaceDiff) -> list[ReviewFinding]:
        """Test-surface changes since the baseline, and source lines special-casing a test's literals."""
        if baseline is None:
            return []
        findings = surface_findings(self.env, self.plan, changes(baseline.surface, self.workspace, self.blob))
        tests = {p: b for p, h in baseline.surface.items() if (b := self.blob(h)) is not None}
        added = {f.path: {n for n, _ in f.added} for f in diff.files if f.added}
        sources = {p: b for p in added if (b := read_bytes(self.workspace, p)) is not None}
        return findings + source_findings(sources, added, tests)

    def verify(self, step: Verify) -> None:
        """A completion claim meets the evidence: the snapshot check, the sensor cascade, then the reviewer pass.

        The final snapshot is compared with the baseline (what the run changed) and with the one after
        the last action (a change since then was made by no action); nothing here runs git on the host.
        """
        with self.whole_log() as log:
            self._verify(step, log)

    def _verify(self, step: Verify, log: PagedLog) -> None:
        action = self.state.actions[step.call_id]
        summary = str(action.result.get("data", {}).get("claim", ""))
        self.append(claim_event(step.call_id, summary))
        assert self.sandbox is not None
        test_baseline = self.test_baseline()
        last = self.snapshots.latest
        final = self.checkpoint("verify", f"completion claim {step.call_id}")
        late = window_changes(last, final)[0] if last is not None and final is not None else []
        try:
            baseline = self.snapshots.baseline()
            diff = run_diff(baseline, final, self.store, str(self.workspace))
        except SnapshotError as e:
            baseline, diff = None, WorkspaceDiff(False, str(e))
        check = snapshot_check(diff, windows(log.only({ActionCompleted.KIND})), late)
        changed = sorted({*self.state.changed_files, *diff.paths})
        self.flush()  # the claim and its checkpoint are in the log before the sensors run
        cascade = run_cascade(
            self.env,
            self.workspace,
            changed,
            self.sandbox,
            diff,
            baseline=baseline,
            blobs=self.store,
            test_baseline=test_baseline,
        )
        results = [check, *cascade]
        egress = take_egress(self.sandbox)  # what the sensors' commands asked the proxy for
        self.append_many([*egress, *cascade_events(results, self.env, trigger="completion", changed_files=changed)])
        accepted, _ = completion_verdict(results, self.env)
        findings = self.integrity_findings(test_baseline, diff)
        findings += review(self.env, diff, log) if accepted else []
        if accepted and self.reviewer is not None:
            findings += self.ask_reviewer(self.reviewer, diff, log)
        no_op = no_op_check(self.env, results, changed, self.state.external_used, step.call_id)
        if no_op is not None:
            self.append(no_op)
        self.append_many(judge_completion(log, self.env, findings, step.call_id, no_op))
        self.observe()

    def ask_reviewer(self, reviewer: Model, diff: WorkspaceDiff, log: Sequence[Event]) -> list[ReviewFinding]:
        """The optional model reviewer, its output capped by the budgets like any model call, its use recorded."""
        messages = review_messages(self.env, self.plan, diff, log)
        agent = self.env.agent
        budget = budget_for(
            reviewer.name,
            messages,
            [REPORT],
            self.prices,
            window=agent.context_window,
            max_output=agent.max_output_tokens,
        )
        wanted = max(budget.max_tokens, MIN_OUTPUT_TOKENS)
        price = price_for(reviewer.name, self.prices)
        cap = cap_call(wanted, budget.prompt_tokens, price, self.state)
        called = ReviewerCalled(
            model=reviewer.name,
            max_tokens=cap.max_tokens,
            prompt_tokens_est=budget.prompt_tokens,
            capped_by=cap.capped_by,
        )
        if cap.short is not None:  # fail closed: a configured reviewer that cannot be paid for is a blocking finding
            self.append(called.model_copy(update={"unaffordable": cap.reason}))
            return [
                ReviewFinding(
                    "reviewer", "medium", f"the model reviewer was not asked: {cap.reason}", check=REVIEWER_CHECK
                )
            ]
        self.flush()  # before a model call
        findings, usage = model_review(reviewer, messages, cap.max_tokens)
        cost = cost_usd(reviewer.name, usage, self.prices)
        self.append(
            called.model_copy(
                update={"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens, "cost_usd": cost}
            )
        )
        return findings

    def finish(self, step: Finish) -> None:
        """End the run as ``next_step`` decided: a checkpoint, the budget breach if one is why, ``run.finished``."""
        self.checkpoint(f"finish:{step.status}", step.reason)
        self.snapshots.close()  # the workspace watch (a later snapshot walks everything and re-arms it)
        if step.breach:  # before the closing: the breach is the run's last error
            b = step.breach
            self.append(BudgetExceeded(budget=b.budget, used=float(b.used), limit=float(b.limit)))
        with self.whole_log() as log:
            self.append(closing(self.state, log.only(CLOSING_KINDS), step))  # no other event is parsed

    # ---- snapshots -------------------------------------------------------------------------

    def snapshot(self, *, full: bool = False) -> Manifest | None:
        try:
            return self.snapshots.take(full=full)
        except SnapshotError:
            return None

    def window(
        self, before: Manifest | None, effects: Sequence[str], reported: Sequence[str]
    ) -> tuple[list[str] | None, list[str]]:
        """What changed during one action (None: unknown), and how its receipt disagrees with that."""
        after = self.snapshot() if before is not None else None
        if before is None or after is None:
            return None, [": the workspace could not be snapshotted around this action"]
        observed, unreadable = window_changes(before, after)
        return observed, unexplained(effects, reported, observed, after) + [f"{p}: unreadable" for p in unreadable]

    def window_start(self, call_id: str) -> Manifest | None:
        """Where an action's snapshot window begins: the latest snapshot; for a delegate call run again after a
        crash, the workspace its child started from (what changed since is the child's, told by its own log)."""
        child = self.state.children.get(call_id)
        if child is not None:
            try:
                return start_manifest(self.store, child.child_run)
            except SnapshotError:
                pass  # the child was never created: the window starts now, before it is
        return self.snapshots.latest or self.snapshot()

    def checkpoint(self, label: str, note: str) -> Manifest | None:
        """A snapshot recorded in the log (its manifest as a blob): for the verdict, and for undo and fork later."""
        m = self.snapshot(full=True)  # a whole walk: the verdict does not rest on the watch alone
        if m is None:
            self.append(Checkpoint(label=label, note=f"{note} (the workspace could not be snapshotted)"))
            return None
        h = self.snapshots.record(m)
        self.append(
            Checkpoint(label=label, snapshot=h, files=len(m.entries), unreadable=sorted(m.errors), note=note),
        )
        return m

    # ---- plumbing --------------------------------------------------------------------------

    def observe(self) -> None:
        """Let the control layer derive beliefs, diagnostics and control state from the new receipts."""
        new = observe(self.fold, self.env)
        if new:
            self.append_many(new)

    def append(self, item: Payload) -> Event:
        return self.append_many([item])[0]

    def append_many(self, items: Sequence[Payload], *, write: bool = True) -> list[Event]:
        """Record ``items`` as one whole: folded into the state now, written now unless a drive is batching.

        A durable kind (:data:`DURABLE_KINDS`) is written, and synced, before this returns — unless ``write`` is
        False: then the caller flushes before the effect the durable kind precedes (``execute``'s :class:`Commit`).
        """
        durable = False
        for item in items:  # a loop, not any() over a generator: one Python call fewer per event (issue 18)
            if item.KIND in DURABLE_KINDS:
                durable = True
                break
        batch = self._batch or Batch(self.run_id, self.head)
        events = batch.add(self.store.redactor, items, durable=durable)
        self._batch = batch
        if events:
            self._take_all(events)
        if write and (batch.durable or not self._batching):
            self.flush()
        return events

    def flush(self) -> None:
        """Write the staged events in one transaction (compare-and-append on the head they extend, lease
        checked). If that fails they stay staged, so every later flush fails the same way and nothing that
        needs them written (an effect, a human, the end) can happen; the log holds none of them."""
        batch = self._batch
        if batch is None:
            return
        self.store.append_batch(batch)
        self._batch = None
        if self.on_event is not None:  # once written: a sink may read the store
            for e in batch.events:
                self.on_event(e)

    @contextmanager
    def batched(self) -> Iterator[None]:
        """Within: appends are staged and written at the points that need it, at the latest on the way out
        (also when it raises: what was recorded before the error is kept, as one transaction)."""
        self._batching = True
        try:
            yield
        finally:
            self._batching = False
            self.flush()

    def _take(self, e: Event) -> None:
        """One event of the log moves every fold this driver holds on; the event itself is not kept."""
        self.fold.add(e)  # the control fold, and the run state it folds
        self.transcript.add(e)
        self.provenance.add(e)
        self.head = (e.seq, e.hash)  # Event.head, without its frame (8 events a step)
        if self._first is None:
            self._first = e.payload
        kind = e.kind
        if kind == SuiteBaseline.KIND:
            self.suite_baseline = e.data_as(SuiteBaseline)
        elif kind in _OVERFLOWS:
            self._overflows.append(e.payload)

    def _take_all(self, events: list[Event]) -> None:
        """:meth:`_take` for a batch (not empty): each fold takes the whole batch in one call, in the events' order
        (the folds read none of each other's state), and the head moves once, to the last event's."""
        self.fold.add_all(events)
        self.transcript.add_all(events)
        self.provenance.add_all(events)
        last = events[-1]
        self.head = (last.seq, last.hash)
        if self._first is None:
            self._first = events[0].payload
        for e in events:
            kind = e.kind
            if kind == SuiteBaseline.KIND:
                self.suite_baseline = e.data_as(SuiteBaseline)
            elif kind in _OVERFLOWS:
                self._overflows.append(e.payload)

    @contextmanager
    def whole_log(self) -> Iterator[PagedLog]:
        """The run's whole log for the rare consumers of the whole history (verification, compaction, the
        closing): a view that reads the store a page at a time on each pass, the staged events (not yet
        written) after the written ones, so it is current after this driver's appends, as a list kept current
        would be; the log is never held in memory whole."""
        yield PagedLog(self.store, self.run_id, self._written)

    def _written(self) -> tuple[int, list[Event]]:
        """The last written seq, and the events staged after it."""
        batch = self._batch
        return (batch.base[0], batch.events) if batch is not None else (self.head[0], [])

    def control_stop(self) -> HumanRequired | None:
        """Whether the control layer says the run must stop (``next_step``'s ``control_stop``).

        Asked before every step (three times a step): the answer is a function of the fold's latest
        ``control.changed`` alone (:func:`stop_reason`), so it is worked out again only when that event is another
        one, told apart by identity (issue 18: nine Python calls a step fewer)."""
        last = self.fold.last_control
        known = self._stop
        if known is None or known[0] is not last:
            known = self._stop = (last, stop_reason(self.fold))
        return known[1]

    def run_rules(self) -> list[Rule]:
        return [
            Rule(id=f"run:{r['approval_id']}", rule=r["rule"], reason=f"approved for this run by {r['by']}")
            for r in self.state.run_rules
        ]

    def tool_context(self, tool: Tool, call_id: str | None = None) -> ToolContext:
        """Where and how a call of ``tool`` runs. For the call ``call_id`` (not for a preview, which only describes
        it), the sandbox carries the tool's secrets (the broker) and the proxy holds them to their hosts."""
        declared = self.env.tool(tool.contract.name)
        timeout = (declared.timeout_s if declared else None) or tool.contract.timeout_s or 30
        assert self.sandbox is not None
        sandbox = self.sandbox
        if call_id is not None:
            carried = self.broker.secrets_for(tool.contract.name)
            sandbox = self.broker.sandbox_for(sandbox, tool.contract.name)
            sandbox = for_call(sandbox, call_id, [(s.name, s.hosts) for s in carried])
        delegate = partial(self.delegator, self, call_id) if call_id is not None and self.delegator else None
        return ToolContext(
            self.workspace, sandbox, self.env, float(timeout), stored_result=self.stored_result, delegate=delegate
        )

    def stored_result(self, call_id: str) -> str | None:
        """The whole text of a shortened result of this run's call ``call_id`` (never another run's blob)."""
        action = self.state.actions.get(call_id)  # its result: the latest completion's
        blob = action.result.get("blob") if action is not None else None
        data = self.blob(blob) if isinstance(blob, str) else None
        return data.decode("utf-8", "replace") if data is not None else None

    @staticmethod
    def now() -> datetime:
        return datetime.now(UTC)


class Commit:
    """The write (``flush``) that must precede a call's effect, run once: by a held sandbox once the call's command
    has started and before it may begin (:mod:`tether.sandbox.held`), or by :meth:`settle` when no command took it.

    A tool makes an exception of its sandbox's into a failed result; :meth:`settle` raises the write's own error
    again, so a write that failed (a moved head, a lost lease, a full disk) surfaces as it would have before."""

    def __init__(self, write: Callable[[], None]) -> None:
        self._write = write
        self._done = False
        self._error: BaseException | None = None

    def __call__(self) -> None:
        if self._done:
            return
        self._done = True
        try:
            self._write()
        except BaseException as e:
            self._error = e
            raise

    def settle(self) -> None:
        """After the call: write now if no command did; raise the write's error if it failed."""
        self()
        if self._error is not None:
            raise self._error


def held_context(ctx: ToolContext, commit: Commit) -> ToolContext:
    """``ctx`` with its sandbox holding the call's command until ``commit`` has run; where the sandbox cannot hold
    one, ``commit`` runs now, before the call, as for any tool."""
    sandbox = held(ctx.sandbox, commit)
    if sandbox is None:
        commit()
        return ctx
    return ctx.on(sandbox)


def started(action: Action, attempt: int, contract: ToolContract) -> ActionStarted:
    """``action.started`` for an attempt at ``action``: on disk before the call's effect."""
    return fresh(
        ActionStarted(
            call_id=action.call_id,
            tool=action.tool,
            args_hash=action.args_hash,
            attempt=attempt,
            idempotent=contract.retry_safe,
        )
    )


def runtime_failed(action: Action, attempt: int, e: RuntimeFailure) -> ActionFailed:
    """``action.failed`` for an attempt the runtime could not carry out (the sandbox, a secret, the commit)."""
    return ActionFailed(
        call_id=action.call_id,
        tool=action.tool,
        error=str(e),
        failure_class="runtime",
        attempt=attempt,
        dependency=isinstance(e, SandboxUnavailable),
        fix=getattr(e, "fix", ""),
    )


def _mcp_event(r: Started) -> Payload:
    transport: Literal["stdio", "streamable-http"] = "stdio" if r.transport == "stdio" else "streamable-http"
    if r.error is not None:
        return McpFailed(server=r.server, transport=transport, error=r.error)
    return McpStarted(
        server=r.server,
        transport=transport,
        sandbox=r.sandbox,
        offered=r.offered,
        not_listed=r.not_listed,
        undeclared=r.undeclared,
        refused=r.refused,
    )


__all__ = ["Runtime"]


def tainted_note(taints: Sequence[dict[str, Any]]) -> str:
    """The values from untrusted output that made the decider ask about a call (its decision's ``taints``), for
    the approval preview."""
    if not taints:
        return ""
    lines = [
        f"- args.{t['arg']}: {t['kind']} {t['value']!r}, first seen in untrusted output of {t['source_tool']} "
        f"(event {t['source_seq']})"
        for t in taints
    ]
    return (
        "\n\nValues from untrusted output in this call (not in the task, the plan or the user's messages):\n"
        + "\n".join(lines)
    )
