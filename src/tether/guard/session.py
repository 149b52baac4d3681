"""A governed session: tether's gate, approvals and log in front of tools that another program runs.

An agent built on LangGraph, the OpenAI Agents SDK or a hook of Claude Code runs its own loop and its
own tools. :class:`Guard` gives that program what tether's own loop has, for one of its sessions:

- **one run per session.** :meth:`Guard.open` creates the run the first time a session is seen and
  finds it again after (its id is derived from the framework and the session id), so every process
  that serves the session writes to the same hash-chained log; ``tether show``, ``log verify``,
  ``approvals`` and the console work on it like on any run.
- **the one decider.** :meth:`Guard.check` records the proposal and puts it through
  :func:`tether.policy.decide.decide` with the envelope's tool contract: ALLOW, ASK or DENY, naming the
  deciding rule. A tool the envelope does not declare is refused (fail closed). An ASK stages a pending
  approval bound to the hash of the arguments, which ``tether approve|deny``, the console or
  :meth:`Guard.answer` answers; checking the same call again reads the answer.
- **receipts.** :meth:`Guard.started` (durable before the tool runs) and :meth:`Guard.completed` record
  what the program's tool did, so a crash in between is visible, and the control layer observes the
  receipts as in tether's loop (its control state then bounds the gate).

What the program runs is its own business: tether does not sandbox a foreign tool, it decides whether
the program may run it and records what came back. Several processes may serve one session at once:
every write names the head of the log it read (``expect``) and is retried on a fresh read when someone
else wrote first, so no decision rests on a stale log.

The run ends only in :func:`tether.kernel.steps.next_step`: the guard asks it whenever a fact it records
can end the run (an approval that expired with ``on_timeout: stop``). A session's run otherwise stays
open, as long as the session lives; a later :meth:`Guard.open` of the same session continues it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypeVar

from tether.canonical import content_hash
from tether.control.loop import control_state, observe
from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope, Rule
from tether.errors import HeadMoved, InputError, RuntimeFailure
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionInvalid,
    ActionProposed,
    ActionStarted,
    ApprovalExpired,
    ApprovalRequested,
    RunResumed,
    RunStarted,
)
from tether.events.kinds_guard import SessionOpened
from tether.events.payload import Payload
from tether.events.protocol import Store
from tether.events.store import Event
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest, answer_payload, whoami
from tether.kernel.outcome import closing
from tether.kernel.session import load_checked
from tether.kernel.step import Finish
from tether.kernel.steps import next_step
from tether.policy.decide import decide
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.review.execution import review_gate_event
from tether.state import Action, RunState
from tether.status import ActionStatus, ControlState, RunStatus

#: How often a write is retried on a fresh read when another writer moved the log's head first.
WRITE_ATTEMPTS = 20
#: What of a tool's output the log keeps (the head and the tail; the total length is recorded).
OUTPUT_CAP = 32 * 1024
#: The longest argument preview an approval shows.
PREVIEW_CAP = 4000

T = TypeVar("T")


class GuardError(InputError):
    """The program asked for something the session's log does not allow (a receipt for a call never allowed,
    an answer to an approval that is not pending, a session opened with another envelope)."""


@dataclass(frozen=True)
class Answer:
    """The verdict on one call, as the program must act on it.

    ``rule`` is the deciding rule (``kernel:denied-before``, an envelope rule id, ``approval:granted`` …)
    and ``reason`` says why in plain words. ``approval_id`` names the approval the call was asked under:
    pending while the verdict is ASK, answered (or expired) once it is not.
    """

    verdict: Verdict
    rule: str
    reason: str
    call_id: str
    run_id: str
    tool: str
    approval_id: str | None = None

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW

    @property
    def approve_command(self) -> str:
        """The command that answers this call's pending approval (empty when nothing is pending)."""
        return f"tether approve {self.approval_id}" if self.approval_id and self.verdict is Verdict.ASK else ""

    def message(self) -> str:
        """One line for the model or the person: what was decided, by which rule, and what to do."""
        if self.verdict is Verdict.ALLOW:
            return f"tether allowed {self.tool} ({self.rule}): {self.reason}"
        if self.verdict is Verdict.ASK:
            how = f"; a human must approve it: {self.approve_command} (or deny it)" if self.approval_id else ""
            return f"tether needs a human to approve {self.tool} ({self.rule}): {self.reason}{how}"
        return f"tether denied {self.tool} ({self.rule}): {self.reason}"


def session_run_id(framework: str, session: str) -> str:
    """The run id of a framework's session: readable, stable, and distinct per (framework, session)."""
    slug = re.sub(r"[^a-z0-9]+", "-", framework.lower()).strip("-") or "session"
    digest = hashlib.sha256(f"{framework}\0{session}".encode()).hexdigest()[:16]
    return f"{slug}-{digest}"


class Guard:
    """The governed run of one session. Thread-safe; build it with :meth:`open`."""

    def __init__(self, store: Store, run_id: str, env: Envelope, workspace: Path) -> None:
        self.store, self.run_id, self.env, self.workspace = store, run_id, env, workspace
        self.events: list[Event] = []
        self.state = RunState()
        self._lock = threading.RLock()
        self._gate: tuple[tuple[ControlState, tuple[str, ...]], Gate] | None = None

    # ---- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        store: Store,
        envelope: Envelope | str | Path,
        session: str,
        *,
        framework: str,
        workspace: Path | None = None,
        task: str = "",
    ) -> Guard:
        """The session's run: created on first sight, else found, its log verified, and bound to ``envelope``.

        The envelope is strictly validated like any run's. A session continues under the contract it began
        with: opening it with an envelope whose contract differs is refused (:class:`GuardError`), so that a
        changed file never silently re-governs calls already decided.
        """
        if not session:
            raise GuardError("a governed session needs a session id (the framework's thread or conversation id)")
        loaded = load_checked(envelope)
        env = loaded.envelope
        ws = (workspace or loaded.base_dir / env.environment.workspace).resolve()
        if not ws.is_dir():
            raise InputError(f"workspace {ws} does not exist ($.environment.workspace or workspace=)")
        run_id = session_run_id(framework, session)
        recorded = _started(store, run_id)
        if recorded is None:
            started = RunStarted(
                task=task or f"{framework} session {session}",
                envelope_path=str(loaded.path or ""),
                envelope=env.model_dump(mode="json"),
                plan_hash=env.plan.hash,
                contract_hash=env.contract_hash,
                model=f"{framework} (external)",
                workspace=str(ws),
                budgets=env.budgets.model_dump(),
                max_external=env.outputs.max_external,
                sandbox="external",
                acknowledged=[a.to_dict() for a in loaded.accepted],
            )
            opened = SessionOpened(framework=framework, session=session, by=whoami())
            try:
                store.create_run(started.task, [started, opened], run_id=run_id)
            except sqlite3.IntegrityError:  # another process created it between our read and our write
                recorded = _started(store, run_id)
                if recorded is None:
                    raise
        if recorded is not None:
            store.verify_run(run_id)
            if contract_hash(Envelope.model_validate(recorded)) != contract_hash(env):  # unset later fields aside
                raise GuardError(
                    f"session {session!r} of {framework} is governed by run {run_id}, which began under another "
                    "envelope; a session keeps its contract: start a new session id to use this envelope"
                )
            env = Envelope.model_validate(recorded)
            ws = Path(_started_workspace(store, run_id) or ws)
        guard = cls(store, run_id, env, ws)
        guard.refresh()
        return guard

    # ---- the gate ----------------------------------------------------------------------------

    def check(self, tool: str, args: Mapping[str, Any], call_id: str | None = None) -> Answer:
        """The verdict on a proposed call: a new call is recorded and decided; a known ``call_id`` (the
        framework asking again, e.g. after resuming from an ASK) gets its current verdict, which a human's
        answer may have changed since. A known id with other arguments is a new call."""
        plain = _json_args(args)
        with self._lock:
            return self._write(lambda events, state: self._check(events, state, tool, plain, call_id))

    def verdict(self, call_id: str) -> Answer:
        """The current verdict of a call already checked (an approval answered meanwhile changes it)."""
        with self._lock:
            return self._write(lambda events, state: self._current(state, self._action(state, call_id)))

    def answer(
        self, approval_id: str, choice: Literal["once", "run", "deny"], *, by: str | None = None, reason: str = ""
    ) -> Answer:
        """A human's answer given in the program (an interrupt resumed, an SDK approval): recorded like
        ``tether approve|deny`` records it. An approval already answered keeps its first answer."""
        with self._lock:
            return self._write(lambda events, state: self._answer(state, approval_id, choice, by, reason))

    # ---- receipts ----------------------------------------------------------------------------

    def started(self, call_id: str) -> None:
        """The program is about to run an allowed call: recorded durably before the tool runs."""
        with self._lock:
            self._write(lambda events, state: (self._start(state, call_id), None))

    def completed(self, call_id: str, *, ok: bool, output: str = "", error: str = "", duration_s: float = 0.0) -> None:
        """What the program's tool returned (or raised), as the call's receipt; ``started`` is implied (and then
        synced with it: a receipt that is the only trace of an effect is not left to the next write)."""
        with self._lock:
            implied = self._action(self.refresh(), call_id).status is not ActionStatus.STARTED
            self._write(
                lambda events, state: (self._complete(state, call_id, ok, output, error, duration_s), None),
                durable=implied,
            )
            self._observe()

    def run_call(self, call_id: str, fn: Callable[[], T]) -> T:
        """Run an allowed call's tool between its two receipts: ``fn``'s exception is recorded, then re-raised."""
        self.started(call_id)
        began = time.monotonic()
        try:
            value = fn()
        except BaseException as e:
            self.completed(call_id, ok=False, error=f"{type(e).__name__}: {e}", duration_s=time.monotonic() - began)
            raise
        self.completed(call_id, ok=True, output=_text(value), duration_s=time.monotonic() - began)
        return value

    # ---- reading -----------------------------------------------------------------------------

    def refresh(self) -> RunState:
        """Read what others appended since (approvals, other processes of the session) into the fold."""
        with self._lock:
            after = self.events[-1].seq if self.events else -1
            for e in self.store.events(self.run_id, after=after):
                self.events.append(e)
                self.state.apply(e)
            return self.state

    # ---- the pure steps (read the fold, name the events) ---------------------------------

    def _check(
        self, events: Sequence[Event], state: RunState, tool: str, args: dict[str, Any], call_id: str | None
    ) -> tuple[list[Payload], Answer]:
        known = state.actions.get(call_id) if call_id else None
        if known is not None and known.args_hash == content_hash(args):
            return self._current(state, known)
        if known is not None:  # the same id with other arguments: a different call, decided on its own
            call_id = f"{call_id}~{uuid.uuid4().hex[:6]}"
        call_id = call_id or f"c-{uuid.uuid4().hex[:12]}"
        args_hash = content_hash(args)
        proposed = ActionProposed(call_id=call_id, tool=tool, args=args, args_hash=args_hash, turn=state.used.turns)
        if state.finished:
            why = f"run {self.run_id} has ended ({state.status}): {state.result or state.next_action}"
            return [proposed, ActionInvalid(call_id=call_id, tool=tool, error=why)], self._answer_of(
                Verdict.DENY, "run:finished", why, call_id, tool
            )
        contract = self.env.tool(tool)
        if contract is None:
            why = f"{tool!r} is not a tool the envelope declares; declared: {sorted(t.name for t in self.env.tools)}"
            invalid = ActionInvalid(call_id=call_id, tool=tool, error=why)
            return [proposed, invalid], self._answer_of(Verdict.DENY, "envelope:undeclared-tool", why, call_id, tool)
        action = Action(call_id, tool, args, args_hash, state.used.turns, state.last_seq + 1)
        ruling = decide(action, contract, lambda: self._gate_for(events, state), state, events, self.env)
        d = ruling.decision
        items: list[Payload] = [proposed]
        if ruling.review is not None:
            items.append(review_gate_event(call_id, contract.name, ruling.review))
        items.append(ActionDecided(call_id=call_id, **d.to_dict()))
        approval_id = None
        if d.verdict is Verdict.ASK:
            approval_id = "ap-" + uuid.uuid4().hex[:8]
            expires = datetime.now(UTC) + timedelta(seconds=self.env.approvals.timeout_s)
            items.append(
                ApprovalRequested(
                    approval_id=approval_id,
                    call_id=call_id,
                    tool=tool,
                    args_hash=args_hash,
                    preview=_preview(tool, args),
                    reason=d.reason,
                    expires_at=expires.timestamp(),
                )
            )
        return items, self._answer_of(d.verdict, d.deciding_rule, d.reason, call_id, tool, approval_id)

    def _current(self, state: RunState, a: Action) -> tuple[list[Payload], Answer]:
        """The verdict a call has now; an overdue approval is expired first (and may end the run)."""
        if a.status is ActionStatus.WAITING and a.approval_id in state.pending_approvals:
            expires = float(state.pending_approvals[a.approval_id]["expires_at"])
            if time.time() > expires:
                outcome = self.env.approvals.on_timeout
                why = f"the approval was not answered within {self.env.approvals.timeout_s:g}s (on_timeout: {outcome})"
                expired = ApprovalExpired(approval_id=a.approval_id, outcome=outcome)
                return [expired], self._answer_of(
                    Verdict.DENY, "approval:expired", why, a.call_id, a.tool, a.approval_id
                )
            return [], self._answer_of(Verdict.ASK, a.deciding_rule, a.reason, a.call_id, a.tool, a.approval_id)
        if a.status in (ActionStatus.DECIDED, ActionStatus.STARTED, ActionStatus.COMPLETED, ActionStatus.FAILED):
            if a.approved_by is not None:
                why = f"approved by {a.approved_by} ({a.approval_id}); asked because: {a.reason}"
                return [], self._answer_of(Verdict.ALLOW, "approval:granted", why, a.call_id, a.tool, a.approval_id)
            return [], self._answer_of(Verdict.ALLOW, a.deciding_rule, a.reason, a.call_id, a.tool, a.approval_id)
        if a.status is ActionStatus.DENIED and a.approval_id is not None:
            rule = "approval:expired" if a.reason.startswith("approval expired") else "approval:denied"
            return [], self._answer_of(Verdict.DENY, rule, a.reason, a.call_id, a.tool, a.approval_id)
        rule = a.deciding_rule or "envelope:undeclared-tool"
        why = a.reason or a.error or "not allowed"
        return [], self._answer_of(Verdict.DENY, rule, why, a.call_id, a.tool, a.approval_id)

    def _answer(
        self, state: RunState, approval_id: str, choice: Literal["once", "run", "deny"], by: str | None, reason: str
    ) -> tuple[list[Payload], Answer]:
        req = state.pending_approvals.get(approval_id)
        if req is None:
            a = next((x for x in state.actions.values() if x.approval_id == approval_id), None)
            if a is None:
                raise GuardError(f"run {self.run_id} has no approval {approval_id!r}")
            return self._current(state, a)  # answered already (by the CLI, the console, another process)
        a = state.actions[req["call_id"]]
        if time.time() > float(req["expires_at"]):
            return self._current(state, a)
        request = ApprovalRequest(approval_id, self.run_id, a.call_id, a.tool, a.args, req["preview"], a.reason)
        item = answer_payload(request, ApprovalAnswer(choice, by or whoami(), reason))
        assert item is not None  # only "defer" answers nothing
        granted = choice != "deny"
        who = by or whoami()
        verdict, rule = (Verdict.ALLOW, "approval:granted") if granted else (Verdict.DENY, "approval:denied")
        why = f"approved by {who} ({approval_id})" if granted else (reason or f"denied by {who} ({approval_id})")
        return [item], self._answer_of(verdict, rule, why, a.call_id, a.tool, approval_id)

    def _start(self, state: RunState, call_id: str) -> list[Payload]:
        a = self._action(state, call_id)
        if a.status is ActionStatus.STARTED:
            return []
        if a.status is not ActionStatus.DECIDED:
            raise GuardError(
                f"call {call_id} ({a.tool}) is {a.status}, not allowed to run; only an ALLOWed call gets a receipt"
            )
        contract = self.env.tool(a.tool)
        idempotent = contract.retry_safe if contract is not None else False
        return [ActionStarted(call_id=call_id, tool=a.tool, args_hash=a.args_hash, attempt=1, idempotent=idempotent)]

    def _complete(
        self, state: RunState, call_id: str, ok: bool, output: str, error: str, duration_s: float
    ) -> list[Payload]:
        a = self._action(state, call_id)
        if a.status in (ActionStatus.COMPLETED, ActionStatus.FAILED):
            raise GuardError(f"call {call_id} ({a.tool}) already has its receipt; a call completes once")
        started = self._start(state, call_id)
        contract = self.env.tool(a.tool)
        content = _bounded(output if ok else (error or output or "failed"))
        result = {
            "ok": ok,
            "content": content,
            "data": {"chars": len(output), "error": error} if error else {"chars": len(output)},
            "changed_files": [],
            "failure_class": None if ok else "tool_error",
            "effects": [e.value for e in contract.effects] if contract is not None else [],
        }
        done = ActionCompleted(call_id=call_id, tool=a.tool, ok=ok, result=result, duration_s=round(duration_s, 6))
        return [*started, done]

    # ---- plumbing ----------------------------------------------------------------------------

    def _write(self, build: Callable[[list[Event], RunState], tuple[list[Payload], T]], *, durable: bool = True) -> T:
        """Build events from the freshest fold and append them on the head they were read at; on a race,
        read again and build again. Nothing is written from a stale read.

        Synced to disk before the call returns (``durable``): decisions, approvals and ``action.started``, which
        come before the program's effect or a human. A receipt and the control layer's view of it are not:
        the next durable write syncs them, as in tether's own loop."""
        for _ in range(WRITE_ATTEMPTS):
            state = self.refresh()
            items, out = build(self.events, state)
            if state.status is RunStatus.WAITING_APPROVAL and not state.pending_approvals:  # answered meanwhile
                items = [RunResumed(reason="every pending approval was answered; the session goes on"), *items]
            if not items:
                return out
            head = self.events[-1].head
            try:
                written = self.store.append_many(self.run_id, items, expect=head, durable=durable)
            except HeadMoved:
                continue
            for e in written:
                self.events.append(e)
                self.state.apply(e)
            self._finish_if_stopped()
            return out
        raise RuntimeFailure(f"run {self.run_id}: {WRITE_ATTEMPTS} writers raced this one; nothing was written")

    def _finish_if_stopped(self) -> None:
        """A recorded fact the run cannot go on from: ``next_step`` names the finish, the guard performs it."""
        if self.state.stop is None or self.state.finished:
            return
        step = next_step(self.state, self.env, datetime.now(UTC))
        if isinstance(step, Finish):
            self._write(lambda events, state: ([closing(state, events, step)] if not state.finished else [], None))

    def _observe(self) -> None:
        """The control layer's view of the new receipts (beliefs, diagnostics, control state)."""
        self._write(lambda events, state: (list(observe(events, self.env)), None), durable=False)

    def _gate_for(self, events: Sequence[Event], state: RunState) -> Gate:
        key = (control_state(events), tuple(r["rule"] for r in state.run_rules))
        if self._gate is None or self._gate[0] != key:
            rules = [
                Rule(id=f"run:{r['approval_id']}", rule=r["rule"], reason=f"approved for this run by {r['by']}")
                for r in state.run_rules
            ]
            self._gate = (key, Gate(self.env, self.workspace, control=key[0], run_rules=rules))
        return self._gate[1]

    def _action(self, state: RunState, call_id: str) -> Action:
        a = state.actions.get(call_id)
        if a is None:
            raise GuardError(f"run {self.run_id} has no call {call_id!r}; check() it first")
        return a

    def _answer_of(
        self, verdict: Verdict, rule: str, reason: str, call_id: str, tool: str, approval_id: str | None = None
    ) -> Answer:
        return Answer(verdict, rule, reason, call_id, self.run_id, tool, approval_id)


def _started(store: Store, run_id: str) -> dict[str, Any] | None:
    """The envelope a session's run began under, or None when the run does not exist yet."""
    try:
        store.run(run_id)
    except InputError:
        return None
    first = store.events(run_id, kinds={RunStarted.KIND})
    return dict(first[0].payload["envelope"]) if first else None


def _started_workspace(store: Store, run_id: str) -> str:
    first = store.events(run_id, kinds={RunStarted.KIND})
    return str(first[0].payload.get("workspace", "")) if first else ""


def _json_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the log holds them (JSON values); anything else is refused before it is recorded."""
    if not isinstance(args, Mapping):
        raise GuardError(f"tool arguments must be a mapping of names to JSON values, got {type(args).__name__}")
    try:
        plain = json.loads(json.dumps(dict(args), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as e:  # not JSON, NaN, or nested past what JSON tools read
        raise GuardError(f"tool arguments must be JSON values: {type(e).__name__}: {e}") from e
    assert isinstance(plain, dict)
    return plain


def _preview(tool: str, args: Mapping[str, Any]) -> str:
    text = f"{tool} {json.dumps(args, indent=2, sort_keys=True, ensure_ascii=False)}"
    return text if len(text) <= PREVIEW_CAP else text[:PREVIEW_CAP] + f"\n... ({len(text)} characters in all)"


def _bounded(text: str) -> str:
    if len(text) <= 2 * OUTPUT_CAP:
        return text
    return f"{text[:OUTPUT_CAP]}\n... ({len(text) - 2 * OUTPUT_CAP} characters not kept) ...\n{text[-OUTPUT_CAP:]}"


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)
