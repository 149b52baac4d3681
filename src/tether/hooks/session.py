"""One hook call, handled: the session's run, the decision, the record.

Each agent session is one hash-chained run, ``<agent>-<session id>``, in the project's store (``--db``,
``$TETHER_DB``, else ``<workspace>/.tether/tether.db``). The workspace is fixed when the run starts (the
project directory the agent names, else its first ``cwd``); so is the envelope (``--envelope``,
``$TETHER_ENVELOPE``, else ``<workspace>/.tether/envelope.yaml``, else :func:`~tether.hooks.calls.hook_envelope`).
An envelope whose contract hash differs from the one the run started with is refused: the session's decisions
are bound to one contract.

* ``PreToolUse``: the call becomes ``action.proposed``; the one decider (:func:`tether.policy.decide.decide`)
  rules; ``action.decided`` names the rule. A Codex ASK stages an approval (``tether approve`` answers it) and
  the identical call, retried, is allowed once by that answer.
* ``PostToolUse`` / ``PostToolUseFailure``: the receipt (``action.completed`` / ``action.failed``).
* ``Stop``: the envelope's required sensors run in the sandbox on the workspace, and the test-integrity
  checks (:mod:`tether.hooks.integrity`) compare the tests with the baseline taken when the run was created;
  when they do not accept, the stop is blocked with their reasons, at most :data:`MAX_STOP_BLOCKS` times in a
  row (then the agent may stop, and the user is told it stopped without evidence) — Claude Code's
  ``stop_hook_active`` alone would let the second stop through unchecked.
* every call, whatever its event, is first a ``hook.received``.

The run is never finished here (only the kernel's ``next_step`` ends runs): a hook session stays RUNNING.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

from tether.canonical import content_hash, sha256_hex
from tether.envelope.hashing import contract_hash
from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.events.anchor import Signer
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionFailed,
    ActionProposed,
    ApprovalRequested,
    RunStarted,
)
from tether.events.kinds_hooks import HookReceived, HookStop
from tether.events.payload import Payload
from tether.events.store import Event, EventStore
from tether.policy.decide import decide
from tether.policy.decision import Decision, RuleMatch, Verdict
from tether.policy.gate import Gate
from tether.policy.provenance import Provenance
from tether.review.execution import review_gate_event
from tether.state import Action, RunState
from tether.status import ActionStatus

from .calls import Call, CallError, hook_envelope, tether_calls
from .integrity import findings, take_baseline
from .wire import Outcome

T = TypeVar("T")
MAX_STOP_BLOCKS = 3
BLOCKING = ("medium", "high")  # a finding of these severities refuses a stop, as it refuses a completion claim
RESULT_CHARS = 4000  # of a tool's response kept in the receipt
APPROVAL_TTL_S = 24 * 3600.0
ENVELOPE_NAME = Path(".tether") / "envelope.yaml"
DB_NAME = Path(".tether") / "tether.db"


@dataclass(frozen=True)
class Settings:
    """Where the hook finds its envelope and store; the client resolves them from its flags and environment."""

    agent: str
    envelope: Path | None = None
    db: Path | None = None
    project: Path | None = None  # $CLAUDE_PROJECT_DIR


@dataclass
class Log:
    """A run's events as this process has read them, and what is folded from them as they arrive.

    A resident process (the daemon) keeps one per run, so a call pays for the events appended since the last
    one, not for the whole session again: the state, the turn count and the provenance index grow with it.
    """

    events: list[Event] = field(default_factory=list)
    state: RunState = field(default_factory=RunState)
    turns: int = 0  # the user's prompts: tool calls after the n-th prompt belong to turn n
    provenance: Provenance | None = None

    def take(self, new: Iterable[Event]) -> None:
        for e in new:
            self.state.apply(e)
            if e.kind == HookReceived.KIND and e.payload.get("event") == "UserPromptSubmit":
                self.turns += 1
            self.events.append(e)

    def indexed(self, env: Envelope) -> Provenance:
        """The provenance index fed up to the last event (built once, then fed only what is new)."""
        if self.provenance is None:
            self.provenance = Provenance(env)
        return self.provenance.feed(self.events)


@dataclass
class Session:
    """The run of one agent session, loaded for one hook call."""

    store: EventStore
    run_id: str
    env: Envelope
    contract: str  # the envelope's contract hash
    workspace: Path
    log: Log

    def append(self, items: Sequence[Payload]) -> None:
        self.log.take(self.store.append_many(self.run_id, list(items)))

    @property
    def events(self) -> list[Event]:
        return self.log.events

    @property
    def state(self) -> RunState:
        return self.log.state


def run_id_for(agent: str, session_id: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]", "", session_id)[:80]
    return f"{agent}-{safe if safe == session_id else sha256_hex(session_id)[:32]}"


#: What a resident process (the daemon) keeps between calls: open stores, parsed envelopes, built gates.
#: Keys carry what would make an entry stale (an envelope file's mtime and size; a contract's hash).
_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 256


def cached(key: tuple[Any, ...], make: Callable[[], T]) -> T:
    with _CACHE_LOCK:
        if key in _CACHE:
            return cast(T, _CACHE[key])
    value = make()
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()  # rare (many projects); the stores it held are closed when collected
        return cast(T, _CACHE.setdefault(key, value))


def envelope_for(settings: Settings, workspace: Path) -> tuple[Envelope, str, str]:
    """The envelope, its contract hash and where it came from (see the module docstring for the order)."""
    path = settings.envelope
    if path is None and (workspace / ENVELOPE_NAME).is_file():
        path = workspace / ENVELOPE_NAME
    if path is None:
        return *cached(("envelope",), lambda: _hashed(hook_envelope())), "(built-in hooks envelope)"
    st = path.stat()
    found = path
    key = ("envelope", str(path), st.st_mtime_ns, st.st_size)
    return *cached(key, lambda: _hashed(load_envelope(found))), str(path)


def _hashed(env: Envelope) -> tuple[Envelope, str]:
    return env, contract_hash(env)


def gate_for(session: Session) -> Gate:
    env, workspace = session.env, session.workspace
    return cached(("gate", session.contract, str(workspace)), lambda: Gate(env, workspace))


def open_session(settings: Settings, data: dict[str, Any]) -> Session:
    """The session's store and run (created, with ``run.started``, on its first hook call)."""
    workspace = (settings.project or Path(str(data["cwd"]))).resolve()
    db = settings.db or workspace / DB_NAME
    inode = db.stat().st_ino if db.exists() else None  # a database removed and made anew is opened anew
    store = cached(("store", str(db), inode), lambda: EventStore.open(db, create=True, signer=Signer.configured()))
    run_id = run_id_for(settings.agent, str(data["session_id"]))
    log = _read(store, run_id)
    if log.events:
        started = log.events[0].data_as(RunStarted)
        workspace = Path(started.workspace)
    env, contract, source = envelope_for(settings, workspace)
    if not log.events:
        first = RunStarted(
            task=f"{settings.agent} session {data['session_id']}",
            envelope_path=source,
            envelope=env.model_dump(mode="json"),
            plan_hash=env.plan.hash,
            contract_hash=contract,
            model=str(data.get("model") or settings.agent),
            workspace=str(workspace),
            budgets=env.budgets.model_dump(),
            max_external=env.outputs.max_external,
            sandbox=env.environment.sandbox.backend,
        )
        try:
            store.create_run(first.task, [first, take_baseline(store, workspace)], run_id=run_id)
        except Exception:
            if not _exists(store, run_id):  # not a racing first call that created it a moment earlier
                raise
        log = _read(store, run_id)
        started = log.events[0].data_as(RunStarted)
    if started.contract_hash != contract:
        raise EnvelopeChanged(
            f"the envelope ({source}) is not the one this session's run started with "
            f"({started.contract_hash[:19]}…, now {contract[:19]}…); start a new session to use it"
        )
    return Session(store, run_id, env, contract, workspace, log)


def _read(store: EventStore, run_id: str) -> Log:
    """The run's log: what this process has read before, then only what was appended since."""
    log: Log = cached(("log", store, run_id), Log)  # keyed by the store object: a new database, a new log
    if not log.events and not _exists(store, run_id):
        return log
    log.take(store.events(run_id, after=log.events[-1].seq if log.events else -1))
    return log


class EnvelopeChanged(RuntimeError):
    """The session's envelope was changed after its run started."""


def _exists(store: EventStore, run_id: str) -> bool:
    try:
        return store.run(run_id).run_id == run_id  # run() also accepts a prefix: only an exact hit counts
    except Exception:
        return False


def received(agent: str, data: dict[str, Any]) -> HookReceived:
    keep = ("tool_name", "tool_use_id", "prompt", "source", "reason", "stop_hook_active", "permission_mode", "turn_id")
    detail = {k: data[k] for k in keep if k in data}
    if isinstance(detail.get("prompt"), str):
        detail["prompt"] = detail["prompt"][:RESULT_CHARS]
    return HookReceived(
        agent=agent,
        event=str(data["hook_event_name"]),
        session_id=str(data["session_id"]),
        cwd=str(data["cwd"]),
        detail=detail,
    )


def handle(settings: Settings, data: dict[str, Any]) -> Outcome:
    """Answer one hook call (``data`` has passed :func:`tether.hooks.wire.parse`).

    Calls of one session are answered one at a time in a process (the daemon serves several at once), so
    each decision reads the log its predecessor wrote.
    """
    with cached(("session", settings.agent, str(data["session_id"])), threading.Lock):
        return _handle(settings, data)


def _handle(settings: Settings, data: dict[str, Any]) -> Outcome:
    session = open_session(settings, data)
    event = str(data["hook_event_name"])
    head: list[Payload] = [received(settings.agent, data)]
    if event == "PreToolUse":
        return pre_tool_use(session, settings.agent, data, head)
    if event in ("PostToolUse", "PostToolUseFailure"):
        session.append([*head, *receipt(session, settings.agent, data, failed=event == "PostToolUseFailure")])
        return Outcome("PASS")
    if event in ("Stop", "SubagentStop"):
        session.append(head)
        return stop(session)
    session.append(head)
    return Outcome("PASS")


# -- PreToolUse ------------------------------------------------------------------------------------


def pre_tool_use(session: Session, agent: str, data: dict[str, Any], head: Sequence[Payload]) -> Outcome:
    call_id = str(data.get("tool_use_id") or f"hook-{len(session.events)}")
    try:
        calls = tether_calls(agent, str(data["tool_name"]), data["tool_input"], str(data["cwd"]))
    except CallError as e:
        calls, problem = [], str(e)
    if not calls:
        bad = Call(str(data["tool_name"]), dict(data["tool_input"]))
        proposed = _proposed(call_id, bad, session.log.turns)
        decided = ActionDecided(call_id=call_id, verdict="DENY", deciding_rule="hook:malformed-call", reason=problem)
        session.append([*head, proposed, decided])
        return Outcome("DENY", problem, "hook:malformed-call")
    rulings = [
        _decide_one(session, agent, call_id if i == 0 else f"{call_id}#{i}", c, head if i == 0 else [])
        for i, c in enumerate(calls)
    ]
    return max(rulings, key=lambda o: ("ALLOW", "ASK", "DENY").index(o.verdict))


def _proposed(call_id: str, call: Call, turn: int) -> ActionProposed:
    return ActionProposed(call_id=call_id, tool=call.tool, args=call.args, args_hash=content_hash(call.args), turn=turn)


def _decide_one(session: Session, agent: str, call_id: str, call: Call, head: Sequence[Payload]) -> Outcome:
    """Propose, decide and record one call in a single transaction (one fsync per tool call)."""
    proposed = _proposed(call_id, call, session.log.turns)
    state = session.state
    seq = (session.events[-1].seq if session.events else -1) + len(head) + 1
    action = Action(call_id, proposed.tool, proposed.args, proposed.args_hash, proposed.turn, seq)
    granted = approved_before(state, action.tool, action.args_hash, call_id) if agent == "codex" else None
    contract = session.env.tool(call.tool)
    if granted is not None:
        reason = f"a human approved this exact call ({granted})"
        decision = Decision(
            Verdict.ALLOW, "human:approved", reason, (RuleMatch("human:approved", Verdict.ALLOW, reason),)
        )
        review: list[Payload] = []
    elif contract is None:
        reason = f"tool {call.tool!r} is not in the envelope (declare a contract named {call.tool!r} to govern it)"
        decision = Decision(
            Verdict.DENY, "default:unknown-tool", reason, (RuleMatch("default:unknown-tool", Verdict.DENY, reason),)
        )
        review = []
    else:
        gate = gate_for(session)
        index = session.log.indexed(session.env)
        ruling = decide(action, contract, lambda: gate, state, session.events, session.env, index)
        decision = ruling.decision
        review = [] if ruling.review is None else [review_gate_event(call_id, contract.name, ruling.review)]
    items: list[Payload] = [*head, proposed, *review, ActionDecided(call_id=call_id, **decision.to_dict())]
    approval = ""
    if decision.verdict is Verdict.ASK and agent == "codex":  # Claude Code asks its user itself
        approval = "ap-" + sha256_hex(f"{session.run_id}/{call_id}")[:8]
        items.append(_approval(session, approval, call_id, call, decision.reason))
    session.append(items)
    return Outcome(decision.verdict.name, decision.reason, decision.deciding_rule, approve=approval)


def _approval(session: Session, approval_id: str, call_id: str, call: Call, reason: str) -> ApprovalRequested:
    preview = call.args.get("command") or call.args.get("path") or str(call.args)[:500]
    return ApprovalRequested(
        approval_id=approval_id,
        call_id=call_id,
        tool=call.tool,
        args_hash=content_hash(call.args),
        preview=str(preview),
        reason=reason,
        expires_at=time.time() + APPROVAL_TTL_S,
    )


def approved_before(state: RunState, tool: str, args_hash: str, call_id: str) -> str | None:
    """An approval a human granted to an identical earlier call that no later call has used yet."""
    same = [a for a in state.actions.values() if (a.tool, a.args_hash) == (tool, args_hash) and a.call_id != call_id]
    for a in sorted(same, key=lambda a: a.seq):
        if a.approval_id and a.approved_by and a.status is ActionStatus.DECIDED:
            used = any(b.seq > a.seq and b.deciding_rule == "human:approved" for b in same)
            if not used:
                return f"{a.approval_id} by {a.approved_by}"
    return None


# -- PostToolUse -----------------------------------------------------------------------------------


def receipt(session: Session, agent: str, data: dict[str, Any], *, failed: bool) -> list[Payload]:
    """The receipt of a call the agent ran (its proposal first, when tether never saw one)."""
    call_id = str(data.get("tool_use_id") or f"hook-{len(session.events)}")
    state = session.state
    items: list[Payload] = []
    action = state.actions.get(call_id)
    if action is None:
        try:
            call = tether_calls(agent, str(data["tool_name"]), data["tool_input"], str(data["cwd"]))[0]
        except CallError:
            call = Call(str(data["tool_name"]), dict(data["tool_input"]))
        items.append(_proposed(call_id, call, session.log.turns))
        tool = call.tool
    else:
        tool = action.tool
    if failed:
        error = str(data.get("error") or data.get("error_message") or "the tool failed")[:RESULT_CHARS]
        return [*items, ActionFailed(call_id=call_id, tool=tool, error=error, failure_class="tool_error")]
    text = json.dumps(data.get("tool_response"), default=str)
    result = {"response": text[:RESULT_CHARS], "bytes": len(text), "truncated": len(text) > RESULT_CHARS}
    return [*items, ActionCompleted(call_id=call_id, tool=tool, ok=True, result=result)]


# -- Stop --------------------------------------------------------------------------------------------


def blocks_in_row(events: Sequence[Event]) -> int:
    """Stops blocked since the last prompt or the last stop let through."""
    n = 0
    for e in reversed(events):
        if e.kind == HookStop.KIND:
            if not e.payload.get("blocked"):
                break
            n += 1
        elif e.kind == HookReceived.KIND and e.payload.get("event") == "UserPromptSubmit":
            break
    return n


def changed_files(session: Session) -> list[str]:
    """Workspace-relative paths the session's completed file tools wrote."""
    out = set()
    for a in session.state.actions.values():
        path = a.args.get("path")
        if a.status is ActionStatus.COMPLETED and a.tool in ("write_file", "edit_file") and isinstance(path, str):
            p = Path(path)
            rel = (
                p.resolve().relative_to(session.workspace)
                if p.is_absolute() and p.resolve().is_relative_to(session.workspace)
                else p
            )
            out.add(str(rel))
    return sorted(out)


def stop(session: Session) -> Outcome:
    """The required sensors and the test-integrity checks decide whether the agent may stop."""
    from tether.verify.cascade import cascade_events, planned_sensors

    env = session.env
    items: list[Payload] = []
    reasons: list[str] = []
    notes = ["the envelope requires no sensor"]
    if any(required for _, required in planned_sensors(env)):
        results, reasons = sensors(session)
        changed = changed_files(session)
        items = cascade_events(results, env, trigger="stop", changed_files=changed) if results else []
        notes = []
    rule = "verify:required" if reasons else "verify:test-integrity"
    found = findings(session.store, env, session.workspace, session.events, list(session.state.actions.values()))
    items += [f.to_payload() for f in found]
    reasons += [f.message for f in found if f.severity in BLOCKING]
    notes += [f.message for f in found if f.severity not in BLOCKING]
    if not reasons:
        session.append([*items, HookStop(blocked=False, accepted=True, reasons=notes)])
        return Outcome("PASS")
    in_row = blocks_in_row(session.events) + 1
    if in_row > MAX_STOP_BLOCKS:
        session.append([*items, HookStop(blocked=False, accepted=False, reasons=reasons, blocks_in_row=in_row - 1)])
        note = f"tether: the agent stopped without evidence after {MAX_STOP_BLOCKS} refused stops: " + "; ".join(
            reasons
        )
        return Outcome("PASS", note=note)
    session.append([*items, HookStop(blocked=True, accepted=False, reasons=reasons, blocks_in_row=in_row)])
    why = "; ".join(reasons)
    return Outcome("BLOCK", f"the required checks do not accept this stop: {why}. Fix it, then stop again.", rule)


def sensors(session: Session) -> tuple[list[Any], list[str]]:
    """Run the cascade in the envelope's sandbox; a sandbox that cannot start is a reason not to stop."""
    from tether.errors import SandboxUnavailable
    from tether.sandbox.factory import make_sandbox
    from tether.verify.cascade import completion_verdict, run_cascade
    from tether.verify.changes import WorkspaceDiff

    env = session.env
    environment = env.environment
    try:
        box = make_sandbox(
            environment.sandbox,
            session.workspace,
            env_allow=environment.env_allow,
            deny=environment.filesystem.deny if environment.filesystem else (),
            secrets=[s.name for s in environment.secrets or ()],
        )
    except SandboxUnavailable as e:
        return [], [f"the sandbox cannot start: {e}"]
    diff = WorkspaceDiff(False, "a hook session keeps no workspace snapshot")
    results = run_cascade(env, session.workspace, changed_files(session), box, diff)
    return results, completion_verdict(results, env)[1]
