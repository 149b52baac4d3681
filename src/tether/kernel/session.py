"""Starting and resuming runs: wiring an envelope, a model, tools and a sandbox to the runtime.

Nothing runs on an envelope that fails strict validation. On resume the envelope,
model and workspace are those recorded in ``run.started`` — the contract the run
began under — not whatever the files on disk say today.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tether.envelope.load import load_envelope, load_plan
from tether.envelope.risks import workspace_risk
from tether.envelope.schema import Envelope, Price, split_mcp_tool
from tether.envelope.strict import Accepted
from tether.errors import EnvelopeInvalid, InputError, Problem, SandboxUnavailable
from tether.events.kinds import Checkpoint, RunContinued, RunForked, RunStarted
from tether.events.kinds_delegate import DelegateStarted
from tether.events.kinds_kernel import ContextSection, SkillsBound
from tether.events.payload import Payload
from tether.events.protocol import Store, has_run
from tether.events.store import new_run_id
from tether.events.stream import stream
from tether.models.base import Model
from tether.models.catalog import run_catalog
from tether.models.registry import load_model
from tether.policy.strict import strict_check
from tether.sandbox.base import Sandbox
from tether.sandbox.factory import make_sandbox
from tether.skills import Skill
from tether.snapshot import SnapshotError, skipped_dirs
from tether.state import RunState
from tether.status import RunStatus
from tether.tools.contract import Tool
from tether.tools.registry import resolve_tools
from tether.tools.skill import LOAD_SKILL, load_skill_tool

from .approvals import Approver, whoami
from .continuation import FINAL, Request, ResumeRefused, continuation, effective_envelope, refuse_imported
from .delegation import Delegator, child_model
from .knowledge import bound_skills, carried_plan, recall_events, skill_events
from .runtime import EventSink, Runtime


@dataclass
class Options:
    """How to run: everything here is a choice of the caller, not of the contract."""

    model: Model | str | None = None
    base_url: str | None = None
    workspace: Path | None = None
    sandbox: str | None = None  # override the envelope's backend: bwrap | local
    tools: Sequence[Tool] = ()
    approver: Approver | None = None
    on_event: EventSink | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    review_model: bool = True  # False: no second-model review (a replay: the recording holds no reviewer answers)
    context_window: int | None = None
    """The model's window for this run (``tether run --context-window``), over the envelope's and the table's."""
    sections: Sequence[ContextSection] = ()
    """Extra labelled sections of the system message (bound skills, memory), logged right after ``run.started``."""
    continue_plan: bool = False
    """Start from the task list of the latest earlier run on the same workspace (``tether run --continue-plan``)."""
    run_id: str | None = None
    """The new run's id (default: a fresh one). A schedule's firing derives it from its trigger, so that one
    trigger names one run: the store refuses a second run of the same id. A task graph records it before the run
    exists, so a retried node finds its run."""
    origin: Sequence[Payload] = ()
    """Events that say why the run exists (a schedule's firing), logged right after ``run.started``."""
    trust_imported: bool = False
    """The operator has read an imported run's envelope and lets it drive here (``--trust-imported``;
    :func:`tether.kernel.continuation.refuse_imported`)."""


@dataclass(frozen=True)
class Loaded:
    envelope: Envelope
    base_dir: Path
    path: Path | None
    accepted: tuple[Accepted, ...] = ()
    """Risky settings the envelope accepts by acknowledgement (recorded in ``run.started``)."""
    prices: dict[str, Price] = field(default_factory=dict)
    """Model table overrides (the price file, then ``pricing``), read once and recorded in ``run.started``."""


def load_checked(envelope: Envelope | str | Path, base_dir: Path | None = None) -> Loaded:
    """Load and strictly validate. A path gets every check; an in-memory envelope all but the plan binding."""
    if isinstance(envelope, Envelope):
        base = base_dir or Path.cwd()
        problems, accepted = strict_check(envelope, base / "<in-memory>.yaml")
        problems = [p for p in problems if not p.path.startswith("$.plan")]
        problems = [p for p in problems if p.path != "$.contract_hash" or envelope.contract_hash]
        path = None
    else:
        path = Path(envelope).resolve()
        envelope = load_envelope(path)
        problems, accepted = strict_check(envelope, path)
        base = path.parent
    if problems:
        raise EnvelopeInvalid(problems)
    return Loaded(envelope, base, path, tuple(accepted), run_catalog(envelope, base))


def sandbox_for(
    env: Envelope, workspace: Path, override: str | None
) -> tuple[Sandbox | None, SandboxUnavailable | None]:
    """The envelope's sandbox on ``workspace`` (``override``: another backend), or why it cannot start."""
    spec = env.environment.sandbox
    if override:
        spec = spec.model_copy(update={"backend": override})
    try:
        environment = env.environment
        return make_sandbox(
            spec,
            workspace,
            env_allow=environment.env_allow,
            deny=environment.filesystem.deny if environment.filesystem else (),
            secrets=[s.name for s in environment.secrets or ()],
            network=environment.network,
        ), None
    except SandboxUnavailable as e:
        return None, e


def _model(spec: Model | str | None, env: Envelope, base_dir: Path, base_url: str | None) -> Model:
    if spec is None:
        spec = env.agent.model
    if isinstance(spec, str):
        agent = env.agent
        return load_model(
            spec,
            base_dir=base_dir,
            base_url=base_url,
            timeout_s=agent.request_timeout_s,
            profile=agent.provider_profile,
        )
    return spec


def start(store: Store, envelope: Envelope | str | Path, task: str, options: Options) -> Runtime:
    return start_checked(store, load_checked(envelope), task, options)


def start_checked(store: Store, loaded: Loaded, task: str, options: Options) -> Runtime:
    """A new run of an envelope already loaded and checked (a schedule narrows its budgets first)."""
    env = loaded.envelope
    workspace = (options.workspace or loaded.base_dir / env.environment.workspace).resolve()
    if not workspace.is_dir():
        raise InputError(f"workspace {workspace} does not exist ($.environment.workspace or --workspace)")
    risky = workspace_risk(workspace, "--workspace")  # the envelope's own was checked; an override is not
    if risky is not None:
        raise EnvelopeInvalid([Problem(risky.path, risky.found, risky.safer)])
    return begin(store, loaded, task, workspace, options, plan_of(loaded))


def begin(
    store: Store,
    loaded: Loaded,
    task: str,
    workspace: Path,
    options: Options,
    plan: dict[str, Any] | None,
    *,
    replay_of: str | None = None,
    child_of: DelegateStarted | None = None,
    parent_run: str | None = None,
) -> Runtime:
    """Create a run of a checked envelope on ``workspace``: its start snapshot, then ``run.started``.

    ``start`` calls it for a new run; replay for the re-execution of a recorded one (``replay_of``); a
    parent's delegation for a child run (``child_of``, in run ``parent_run``), under the id it recorded.
    """
    known = _known(store, loaded, task, workspace, options, replay_of)
    run_id = child_of.child_run if child_of is not None else options.run_id or new_run_id()
    runtime = _runtime(store, run_id, loaded, workspace, options.model, options, plan, bound_skills(known))
    start = _start_checkpoint(runtime, workspace)  # before the agent's first action
    started = _run_started(loaded, runtime, task, workspace, options, replay_of, child_of, parent_run)
    runtime.begin(task, [started, *options.origin, start, *known, *options.sections], parent_run=parent_run)
    if replay_of is None:
        runtime.remember()
    return runtime


def _known(
    store: Store, loaded: Loaded, task: str, workspace: Path, options: Options, replay_of: str | None
) -> list[Payload]:
    """What a new run starts knowing: the skills that match its task, what earlier runs learnt (not in a replay:
    it re-executes, it does not learn) and, asked for, the task list of the latest earlier run on the workspace."""
    return [
        *skill_events(loaded.envelope, loaded.base_dir, workspace, task),
        *(recall_events(store.path, loaded.envelope) if replay_of is None else []),
        *(carried_plan(store, workspace) if options.continue_plan else []),
    ]


def _start_checkpoint(runtime: Runtime, workspace: Path) -> Checkpoint:
    """The ``start`` checkpoint: what the run starts from, read by tether, never by git (or why there is none)."""
    try:
        snap_hash, baseline = runtime.snapshots.take_baseline()
        return Checkpoint(
            label="start",
            snapshot=snap_hash,
            files=len(baseline.entries),
            unreadable=sorted(baseline.errors),
            skipped=skipped_dirs(workspace),
            note="baseline before any action",
        )
    except SnapshotError as e:
        return Checkpoint(label="start", note=f"no baseline: the workspace could not be snapshotted: {e}")


def _run_started(
    loaded: Loaded,
    runtime: Runtime,
    task: str,
    workspace: Path,
    options: Options,
    replay_of: str | None,
    child_of: DelegateStarted | None,
    parent_run: str | None,
) -> RunStarted:
    """The run's first event: its task, the contract it runs under (envelope, plan, budgets, prices, what it
    acknowledged), its model, workspace and sandbox, and whose replay or child it is."""
    env, sandbox = loaded.envelope, runtime.sandbox
    return RunStarted(
        task=task,
        envelope_path=str(loaded.path or ""),
        envelope=env.model_dump(mode="json"),
        plan=runtime.plan,
        plan_hash=env.plan.hash,
        contract_hash=env.contract_hash,
        model=runtime.model.name,
        workspace=str(workspace),
        budgets=env.budgets.model_dump(),
        max_external=env.outputs.max_external,
        sandbox=getattr(sandbox, "name", None) or "unavailable",
        sandbox_fallback=getattr(sandbox, "fallback_reason", None),
        acknowledged=[a.to_dict() for a in loaded.accepted],
        prices={name: p.model_dump(exclude_none=True) for name, p in loaded.prices.items()},
        replay_of=replay_of,
        context_window=options.context_window,
        parent_run=parent_run,
        parent_call=child_of.call_id if child_of is not None else None,
    )


def resume(store: Store, run_id: str, options: Options, request: Request | None = None) -> Runtime:
    """Take the run's lease, verify its log (chain and anchor), rebuild the run from it and record who continues it.

    ``request`` is what the person continuing supplies (a note, raised budgets, more attempts;
    :mod:`tether.kernel.continuation` says which stop needs what); a run that cannot go on as asked is
    refused with :class:`ResumeRefused` before anything is appended. A second driver stops here with
    :class:`RunLeased`; a broken log with :class:`LogCorrupt`. The lease is held until the runtime's
    ``drive`` ends (or the store closes).
    """
    info = store.run(run_id)
    store.acquire(info.run_id)
    try:
        return _resume(store, info.run_id, options, request or Request(by=whoami()))
    except BaseException:
        store.release(info.run_id)
        raise


def _resume(store: Store, run_id: str, options: Options, request: Request) -> Runtime:
    info = store.run(run_id)
    store.verify_run(info.run_id)
    state = RunState.from_events(stream(store, info.run_id))  # a page at a time: a long run is never read whole
    if state.status is RunStatus.NEW:
        raise ResumeRefused(f"run {info.run_id}: {FINAL[RunStatus.NEW]}")
    refuse_imported(store.imported(info.run_id), state, "resume", trust=options.trust_imported)
    started = Envelope.model_validate(state.envelope)
    continued = continuation(
        state, effective_envelope(started, state.raised, state.extra_refusals), request, Runtime.now()
    )
    runtime = attach(store, info.run_id, options, continued)
    runtime.append(continued)
    runtime.remember()
    return runtime


def attach(store: Store, run_id: str, options: Options, continued: RunContinued | None = None) -> Runtime:
    """A runtime for a run as its log stands: the contract, plan, prices, model and workspace it recorded.

    The envelope and plan are those the run began under (``run.started``) or a fork's replacement
    (``run.forked``), never the files as they are today, with every raise of its continuations (and of
    ``continued``, about to be appended) applied. Resume and fork continue from here.
    """
    state = RunState.from_events(stream(store, run_id))  # the log a page at a time, never whole
    started = store.events(run_id, upto=0)[0].payload  # run.started is seq 0
    path, plan = started["envelope_path"], started.get("plan")
    for e in stream(store, run_id, kinds={RunForked.KIND}):
        if e.payload.get("envelope") is not None:
            path, plan = e.payload["envelope_path"], e.payload.get("plan")
    raised = {**state.raised, **(continued.budgets if continued else {})}
    extra = state.extra_refusals + (continued.attempts if continued else 0)
    env = effective_envelope(Envelope.model_validate(state.envelope), raised, extra)
    prices = recorded_prices(started, env)
    loaded = Loaded(env, Path(path).parent if path else Path.cwd(), Path(path) if path else None, prices=prices)
    workspace, model = Path(state.workspace), options.model or state.model
    skills = bound_skills(list(stream(store, run_id, kinds={SkillsBound.KIND})))
    return _runtime(store, run_id, loaded, workspace, model, options, plan, skills)


def recorded_prices(started: Mapping[str, Any], env: Envelope) -> dict[str, Price]:
    """The model table overrides a run began with (``run.started``), not the price file as it is today."""
    recorded = started.get("prices")
    return {n: Price.model_validate(p) for n, p in recorded.items()} if recorded is not None else dict(env.pricing)


def _runtime(
    store: Store,
    run_id: str,
    loaded: Loaded,
    workspace: Path,
    model: Model | str | None,
    options: Options,
    plan: dict[str, Any] | None,
    bound: Sequence[Skill] = (),
) -> Runtime:
    """Everything a run needs, wired: the model, the tools the envelope allows, the sandbox, the plan.

    ``load_skill``, when the envelope declares it, is the run's own: it loads only the skills ``bound``.
    """
    env = loaded.envelope
    tools = list(options.tools)
    if env.tool(LOAD_SKILL) is not None and all(t.name != LOAD_SKILL for t in tools):
        tools.append(load_skill_tool(bound))
    sandbox, sandbox_error = sandbox_for(env, workspace, options.sandbox)
    return Runtime(
        store,
        run_id,
        env,
        workspace,
        _model(model, env, loaded.base_dir, options.base_url),
        resolve_tools(env, tools),
        sandbox,
        sandbox_error=sandbox_error,
        plan=plan,
        approver=options.approver,
        on_event=options.on_event,
        reviewer=_reviewer(env, loaded.base_dir) if options.review_model else None,
        prices=loaded.prices,
        delegator=Delegator(partial(_child, loaded=loaded, options=options)),
    )


def _child(
    parent: Runtime, started: DelegateStarted, envelope: Callable[[], Envelope], *, loaded: Loaded, options: Options
) -> Runtime:
    """The child run a parent's ``delegate.started`` names: resumed when it exists, else created under that id.

    It runs as its parent does — same store, workspace, sandbox backend, extra tools, approver and event sink —
    with the model :func:`child_model` gives for the call, and its own lease (``drive`` takes and releases it).
    """
    backend = getattr(parent.sandbox, "name", None)
    extra = [t for t in parent.tools.values() if split_mcp_tool(t.name) is None and t.name != LOAD_SKILL]
    child_options = dataclasses.replace(
        options,
        model=child_model(parent.model, started.call_id),
        workspace=parent.workspace,
        sandbox=backend if backend in ("bwrap", "local") else options.sandbox,
        tools=extra,
        approver=parent.approver,
        on_event=parent.on_event,
        sections=(),
        continue_plan=False,
        run_id=None,  # the child's id is the one delegate.started recorded
        origin=(),  # why the parent exists (a schedule's firing) is not the child's story
    )
    store = parent.store
    if has_run(store, started.child_run):
        if RunState.from_events(store.events(started.child_run)).finished:
            store.verify_run(started.child_run)
            return attach(store, started.child_run, child_options)
        why = f"resumed by its parent {parent.run_id} ({started.call_id})"
        return resume(store, started.child_run, child_options, Request(by=whoami(), reason=why))
    child = Loaded(envelope(), loaded.base_dir, loaded.path, prices=dict(parent.prices))
    return begin(
        store,
        child,
        started.task,
        parent.workspace,
        child_options,
        parent.plan,
        child_of=started,
        parent_run=parent.run_id,
    )


def _reviewer(env: Envelope, base_dir: Path) -> Model | None:
    spec = env.verification.reviewer_model
    return load_model(spec, base_dir=base_dir, timeout_s=env.agent.request_timeout_s) if spec else None


def plan_of(loaded: Loaded) -> dict[str, Any] | None:
    if loaded.path is None:
        return None
    try:
        return load_plan((loaded.path.parent / loaded.envelope.plan.path).resolve()).model_dump(mode="json")
    except InputError:
        return None
