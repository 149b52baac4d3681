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

- **budgets.** The envelope's ``tool_calls`` and ``wall_s`` budgets hold: past them a call is refused and
  the run ends BUDGET_STOP (:class:`BudgetStop` is raised). Money and tokens are the program's model calls,
  which the guard does not see.
- **an end.** :meth:`Guard.close` ends the session (a hook's SessionEnd or accepted Stop calls :meth:`Guard.end`).

The run ends only in :func:`tether.kernel.steps.next_step`: the guard records the fact that ends it (an
approval that expired with ``on_timeout: stop``, ``session.ended``) and performs the ``Finish`` that
``next_step`` names, exactly as tether's own runtime does.
"""

from __future__ import annotations

import _thread
import os
import time
from _collections_abc import Mapping  # collections.abc's, without the collections package
from enum import Enum

from tether import disk, jsonc, places, plain
from tether.canonical import content_hash, sha256
from tether.clock import UTC, datetime, timedelta
from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope, Rule, ToolContract
from tether.errors import HeadMoved, InputError, LogCorrupt, RunExists, RuntimeFailure
from tether.events.chain import GENESIS
from tether.events.kinds_calls import (
    ActionCompleted,
    ActionDecided,
    ActionProposed,
    ActionStarted,
    RunStarted,
    SessionOpened,
)
from tether.events.payload import Payload
from tether.events.store import Event, first_hash, unchained, unverified
from tether.ids import uuid4_hex
from tether.kernel.budgets import Breach, breach
from tether.policy.decision import Verdict
from tether.quickenum import Quick
from tether.records import dataclass, replace
from tether.scoped import nullcontext
from tether.state import EXTERNAL, Action, RunState, completed_output
from tether.status import ActionStatus, ControlState, RunStatus
from tether.typeless import TypeVar

from .envcache import Validated
from .partial import Incomplete

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import Any, Literal

    from tether.disk import StrPath
    from tether.events.kinds import ApprovalRequested
    from tether.events.protocol import Store
    from tether.events.storebase import Audit, Head
    from tether.policy.gate import Gate
    from tether.policy.provenance import Provenance

    from .log import Log


def load_gate(shell: bool = True) -> None:
    """Import what :meth:`Guard.check` decides with: the gate (``policy``), the provenance index and the execution
    review. They are imported where they are used, so a process that only records (a hook's PostToolUse, a
    prompt, a stop) never builds them (~100 M instructions of a fresh process, a tenth of a cold hook call); one
    that will decide imports them up front (the hooks, with the collector paused; the daemon, at its start).
    ``shell``: the shell gate too (a command line's reading, which the gate imports at its first shell call), which a
    hook process deciding another tool's call does without."""
    import tether.control.risk  # the execution review's rating of every call it reviews
    import tether.policy.decide
    import tether.policy.gate
    import tether.policy.provenance
    import tether.review.execution

    if shell:
        import tether.policy.shellgate  # noqa: F401


def load_observer() -> None:
    """Import the control layer (:func:`tether.control.loop.observe`), which a receipt's view of it needs
    (:meth:`Guard.completed`, :meth:`Guard.report`). Imported where it is used, so a process that only decides (a
    hook's PreToolUse) never builds it (~18 M instructions, the control package's eleven modules); one that will
    record a receipt imports it up front (the hooks, with the collector paused; the daemon, at its start)."""
    import tether.control.loop  # noqa: F401


#: How often a write is retried on a fresh read when another writer moved the log's head first; every attempt after
#: the first holds the store's writer lock from its read to its append (``Store.exclusive``), so a writer deciding
#: back to back cannot starve it (tests/guard/test_write_fairness.py).
WRITE_ATTEMPTS = 20

#: What of a tool's output the log keeps (the head and the tail; the total length is recorded).
OUTPUT_CAP = 32 * 1024
#: The longest argument preview an approval shows.
PREVIEW_CAP = 4000

T = TypeVar("T")


#: Calls in these states were let through (by the gate, a human, or the agent's own user): they count
#: against ``budgets.tool_calls`` from the moment they are allowed, since the program runs them at once.
LET_THROUGH = frozenset({ActionStatus.DECIDED, ActionStatus.STARTED, ActionStatus.COMPLETED, ActionStatus.FAILED})
#: What a call is once it ran (a receipt recorded it), whether or not anything decided it first.
RAN = frozenset({ActionStatus.STARTED, ActionStatus.COMPLETED, ActionStatus.FAILED})


class GuardError(InputError):
    """The program asked for something the session's log does not allow (a receipt for a call never allowed,
    an answer to an approval that is not pending, a session opened with another envelope)."""


class BudgetStop(GuardError):
    """A budget of the envelope is spent: the call is refused and the session's run has ended BUDGET_STOP.
    ``answer`` is the refusal (its rule is ``budget:<name>``, or ``run:finished`` for a later call)."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.message())
        self.answer = answer


class Asking(Enum, metaclass=Quick):
    """Who answers an ASK. ``TETHER``: a pending approval (``tether approve``, the console, :meth:`Guard.answer`);
    the same call id checked again reads the answer. ``AGENT``: the agent asks its own user (Claude Code), so
    nothing is staged and the receipt says whether the call ran. ``RETRY``: a pending approval, and an
    identical call proposed later under a new id takes a granted approval once (Codex retries a refused call
    under a new id)."""

    TETHER = "tether"
    AGENT = "agent"
    RETRY = "retry"


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
    import re

    slug = re.sub(r"[^a-z0-9]+", "-", framework.lower()).strip("-") or "session"
    digest = sha256(f"{framework}\0{session}".encode()).hexdigest()[:16]
    return f"{slug}-{digest}"


class Guard:
    """The governed run of one session. Thread-safe; build it with :meth:`open`."""

    def __init__(
        self,
        store: Store,
        run_id: str,
        env: Envelope,
        workspace: StrPath,
        asking: Asking = Asking.TETHER,
        contract: str = "",
    ) -> None:
        """``contract``: ``contract_hash(env)`` when the caller has it (a kept envelope, guard/envcache.py)."""
        self.store, self.run_id, self.env, self.asking = store, run_id, env, asking
        self.root = disk.text(workspace)  # the workspace as text: what a hook call decides with
        self.events: list[Event] | Log = []  # a Log when restored from a fold checkpoint (guard/checkpoint.py)
        self.genesis = ""  # the hash of the run's first event (a checkpoint names it)
        self.contract = env.contract_hash or contract or contract_hash(env)
        self.turns = (0, 0)  # (events seen, turns counted): the hooks count their prompts here
        self.checkpointed = 0  # the log's length at the last fold checkpoint this guard wrote or loaded
        self.state = RunState()
        self._lock = _thread.RLock()
        self._gate: tuple[tuple[ControlState, tuple[str, ...]], Gate] | None = None
        self._provenance: Provenance | None = None  # fed only the events appended since the last call
        #: Set by a fold checkpoint that restored the run state in part (guard/partial.py): the whole state, made
        #: from the checkpoint and the events held after its head (:meth:`exact`).
        self.whole: Callable[[Sequence[Event]], RunState] | None = None

    def exact(self, read: Callable[[], T]) -> T:
        """``read()``, made again on the whole run state when the state restored in part cannot answer it exactly
        (guard/partial.py ``Incomplete``): for what reads the state and writes nothing before it is done."""
        try:
            return read()
        except Incomplete as doubt:
            self._made_whole(doubt)
        return read()

    def _made_whole(self, doubt: Incomplete) -> None:
        """The whole run state in place of the part, folded to the last event held; ``doubt`` again when the state
        is whole already (nothing here answers it then)."""
        make, self.whole = self.whole, None
        if make is None:
            raise doubt
        self.state = make(self.events)

    def _folded(self, new: Sequence[Event]) -> None:
        """Hold ``new`` and fold it; a state restored in part that cannot fold one exactly is made whole, which folds
        them all."""
        for e in new:
            self.events.append(e)
        try:
            for e in new:
                self.state.apply(e)
        except Incomplete as doubt:
            self._made_whole(doubt)

    @property
    def workspace(self) -> Path:
        """The workspace as a ``Path``, for the callers off a hook call's path (the Stop's checks, the MCP gateway):
        pathlib imported here, not by a hook call (``root`` is the same place as text)."""
        from pathlib import Path

        return Path(self.root)

    # ---- opening ---------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        store: Store,
        envelope: Envelope | str | Path | Validated,
        session: str,
        *,
        framework: str,
        workspace: StrPath | None = None,
        task: str = "",
        run_id: str | None = None,
        begin: Callable[[str], Sequence[Payload]] | None = None,
        asking: Asking = Asking.TETHER,
        strict: bool = True,
        restore: Callable[[Guard, int], object] | None = None,
        start_event: Event | None = None,
        since: Head | None = None,
    ) -> Guard:
        """The session's run: created on first sight, else found, its log verified, and bound to ``envelope``.

        The envelope is strictly validated like any run's. A session continues under the contract it began
        with: opening it with an envelope whose contract differs is refused (:class:`GuardError`), so that a
        changed file never silently re-governs calls already decided. ``run_id`` overrides the derived id
        (the hooks name runs after the agent's session); ``begin(workspace)`` gives the events a new run starts
        with after ``session.opened`` (the hooks' test baseline); ``asking`` says who answers an ASK.
        ``strict=False`` takes the envelope as it parses (the hooks' built-in envelope and a project's quick
        one), without the strict checks a run's envelope meets. ``restore(guard, audited)``: a fold checkpoint's
        loader (guard/checkpoint.py; the hooks pass one), called once the log (``audited`` events) is verified: a
        valid checkpoint spares the fold of the log up to its head. ``since``: that checkpoint's head
        (``Pending.mark``), from which the log's chain is verified (``verify_run``); the events before it are not
        hashed again when the checkpoint is the one restored, and the whole log is verified when it is not (the
        Stop's audit, ``tether log verify`` and the console verify it all: docs/hook-latency.md).
        ``start_event``: the run's ``run.started`` as the caller read it from ``store`` in this call (the hooks read it
        for the workspace), not read and parsed again (it holds the whole envelope).
        """
        if not session:
            raise GuardError("a governed session needs a session id (the framework's thread or conversation id)")
        loaded = _strict(envelope) if strict else _parsed(envelope)
        env = loaded.envelope
        ws = disk.resolve(workspace or places.join(loaded.base_dir, env.environment.workspace))
        if not disk.is_dir(ws):
            raise InputError(f"workspace {ws} does not exist ($.environment.workspace or workspace=)")
        run_id = run_id or session_run_id(framework, session)
        recorded, genesis = _started(store, run_id, start_event)
        if recorded is None:
            recorded, genesis = _create(store, run_id, loaded, ws, framework, session, task, begin)
        audited = 0
        if recorded is not None:
            audit = _audited(store, run_id, genesis, since)
            audited = audit.events
            env = _kept_contract(recorded, loaded, framework, session, run_id)
            ws = disk.text(recorded.workspace or ws)
        guard = cls(store, run_id, env, ws, asking, loaded.contract if env is loaded.envelope else "")
        if recorded is not None and restore is not None:
            guard.genesis = genesis
            restore(guard, audited)  # on any doubt it leaves the guard as it is: the whole log is folded
        if recorded is not None and audit.base and guard.checkpointed != audit.base + 1:
            audit = _audited(store, run_id, genesis)  # the checkpoint that stood for the log's start was not used
        guard._fold(checked=recorded is None)  # a found run's fold is held to its audit just below
        if recorded is not None:
            _held_to_audit(guard, audit)
        return guard

    # ---- the gate ----------------------------------------------------------------------------

    def check(
        self,
        tool: str,
        args: Mapping[str, Any],
        call_id: str | None = None,
        *,
        lead: Sequence[Payload] = (),
        turn: int | None = None,
    ) -> Answer:
        """The verdict on a proposed call: a new call is recorded and decided; a known ``call_id`` (the
        framework asking again, e.g. after resuming from an ASK) gets its current verdict, which a human's
        answer may have changed since. A known id with other arguments is a new call.

        ``lead``: events recorded just before the proposal in the same transaction (a hook's ``hook.received``);
        ``turn``: the program's turn number, when it has one. Past a budget :class:`BudgetStop` is raised."""
        plain = _json_args(args)
        with self._lock:
            answer = self._write(lambda events, state: self._check(events, state, tool, plain, call_id, lead, turn))
        if answer.rule.startswith("budget:") or (
            answer.rule == "run:finished" and self.state.status is RunStatus.BUDGET_STOP
        ):
            raise BudgetStop(answer)
        return answer

    def refuse(
        self, tool: str, args: Mapping[str, Any], rule: str, reason: str, call_id: str, *, lead: Sequence[Payload] = ()
    ) -> Answer:
        """Record a call the program's side refuses before the gate can judge it (a hook call missing what its
        tool needs): proposed and denied under ``rule``, so the log shows every call the agent tried."""
        plain = _json_args(args)

        def build(events: Sequence[Event], state: RunState) -> tuple[list[Payload], Answer]:
            proposed = ActionProposed(
                call_id=call_id, tool=tool, args=plain, args_hash=content_hash(plain), turn=state.used.turns
            )
            decided = ActionDecided(call_id=call_id, verdict="DENY", deciding_rule=rule, reason=reason)
            return [*lead, proposed, decided], self._answer_of(Verdict.DENY, rule, reason, call_id, tool)

        with self._lock:
            return self._write(build)

    def record(self, items: Sequence[Payload], *, observed: bool = False) -> None:
        """Append what the program observed (a hook call, a sensor's verdict) to the session's run; ``observed``: then
        the control layer's view of it, as after a receipt (a stop's sensor results give beliefs: which tests fail,
        which a write's review reads)."""
        with self._lock:
            self._write(lambda events, state: (list(items), None))
            if observed:
                self._observe()

    # ---- the end ------------------------------------------------------------------------------

    def close(self, reason: str = "", *, ok: bool = True) -> RunState:
        """The program is done with the session: the run ends through ``next_step`` — COMPLETE when nothing is
        left open, else NEEDS_INPUT naming what is (a call started without its receipt, or ``ok=False``).
        Approvals still pending expire (denied). Closing an ended run changes nothing; a later call is refused."""
        with self._lock:
            self._write(lambda events, state: (self._closing(state, reason, ok), None))
            return self.state

    def end(self, how: str, reason: str, *, by: str = "", lead: Sequence[Payload] = ()) -> RunState:
        """Record that the session is over (``how``: see :class:`~tether.events.kinds_guard.SessionEnded`) after
        ``lead``; ``next_step`` names the finish. An ended run is left as it is (``lead`` is still recorded)."""

        def build(events: Sequence[Event], state: RunState) -> tuple[list[Payload], None]:
            if state.finished:
                return list(lead), None
            from tether.events.kinds_guard import SessionEnded  # here: a later kind module (events/payload.py LATER)

            return [*lead, SessionEnded.model_validate({"how": how, "reason": reason, "by": by})], None

        with self._lock:
            self._write(build)
            return self.state

    def reopen(self, by: str, reason: str) -> bool:
        """A session that ended goes on (the agent's user prompted it again): ``run.continued``, as a person
        continuing a run records it. A spent budget is not reopened (False): the session needs a new run."""

        def build(events: Sequence[Event], state: RunState) -> tuple[list[Payload], bool]:
            if not state.finished or state.status is RunStatus.BUDGET_STOP:
                return [], False
            from tether.events.kinds import RunContinued  # here: a later kind module (events/payload.py LATER)

            return [RunContinued(by=by, from_status=state.status, reason=reason)], True

        with self._lock:
            return self._write(build)

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

    def report(
        self,
        call_id: str,
        tool: str,
        args: Mapping[str, Any],
        *,
        ok: bool,
        output: str = "",
        error: str = "",
        lead: Sequence[Payload] = (),
        duration_s: float | None = None,
        changes: Callable[[], tuple[Payload | None, list[str] | None]] | None = None,
    ) -> None:
        """The receipt of a call the agent ran on its own authority (a hook's PostToolUse: Claude Code's user
        may have approved an ASK): recorded whatever tether decided, the proposal first when tether never saw
        the call. The truth of what ran is the log's, not only what tether allowed. A second receipt of a call
        is not recorded (``lead`` is). ``duration_s``: how long the tool ran as the program says, None when it
        does not (tether did not run it, so it cannot tell). ``changes``: what the call changed in the workspace,
        read from the freshest log (its ``action.rollback``, recorded before the receipt, and the paths it
        changed; None: not known)."""
        plain = _json_args(args)

        def build(events: Sequence[Event], state: RunState) -> tuple[list[Payload], None]:
            a = state.actions.get(call_id)
            items: list[Payload] = list(lead)
            if a is not None and a.status in (ActionStatus.COMPLETED, ActionStatus.FAILED):
                return items, None
            if a is None:
                args_hash = content_hash(plain)
                items.append(ActionProposed(call_id=call_id, tool=tool, args=plain, args_hash=args_hash, turn=0))
                a = Action(call_id, tool, plain, args_hash, 0, state.last_seq + 1)
            if a.status is not ActionStatus.STARTED:
                items.append(ActionStarted(call_id=call_id, tool=a.tool, args_hash=a.args_hash, attempt=1))
            rollback, observed = changes() if changes is not None else (None, None)
            if rollback is not None:
                items.append(rollback)
            return [*items, self._receipt(a, ok, output, error, duration_s, observed)], None

        with self._lock:
            self._write(build)
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
        return self._fold(checked=True)

    def _fold(self, *, checked: bool) -> RunState:
        """Fold what was appended after the last event held. ``checked``: each must chain, from its contents, after
        the one before it, the first after the head held (a resident guard, the daemon's, reads what others wrote
        with no audit in between: a row planted behind its back is :class:`LogCorrupt`, not folded). Only
        :meth:`open` folds unchecked, to hold what it read to the audit instead."""
        with self._lock:
            held = self.events[-1].head if self.events else (-1, GENESIS)
            new = self.store.events(self.run_id, after=held[0])
            bad = unchained(new, held) if checked and new else None
            if bad is not None:
                raise LogCorrupt(self.run_id, bad, "an event appended since the session was opened does not chain")
            self._folded(new)
            return self.state

    def indexed(self) -> Provenance:
        """The provenance index of the log read so far: built once, then fed only what is new, so a call's
        cost does not grow with the session (the events list only ever grows)."""
        if self._provenance is None:
            from tether.policy.provenance import Provenance  # here: see load_gate

            self._provenance = Provenance(self.env)
        return self._provenance.feed(self.events)

    def output(self, action: Action) -> str:
        """What a completed call gave back, as the log's receipt keeps it: read from its completion event, since the
        fold keeps no output (state.py ``KEPT_KEYS``); "" for a call with no completion."""
        return completed_output(self.events, action)

    # ---- the pure steps (read the fold, name the events) ---------------------------------

    def _check(
        self,
        events: Sequence[Event],
        state: RunState,
        tool: str,
        args: dict[str, Any],
        call_id: str | None,
        lead: Sequence[Payload] = (),
        turn: int | None = None,
    ) -> tuple[list[Payload], Answer]:
        """The events that propose ``tool(args)`` and decide it, and the answer: a call id already checked with
        these arguments has its current verdict (nothing proposed again); what the log alone settles is answered
        before the gate (:meth:`_before_gate`); only then does the gate decide (:meth:`_decided`)."""
        args_hash = content_hash(args)
        known = state.actions.get(call_id) if call_id else None
        unjudged = known is not None and known.verdict is None and known.status in RAN
        if unjudged and known is not None:  # its receipt came first: judged under an id of its own, once
            known = _judged_after(state, known) or known
        if known is not None and known.args_hash == args_hash and not (unjudged and known.verdict is None):
            now, answer = self._current(state, known)
            return [*lead, *now], answer
        if known is not None:  # the same id with other arguments, or a receipt no decision came before: decided anew
            call_id = f"{call_id}~{uuid4_hex()[:6]}"
        call_id = call_id or f"c-{uuid4_hex()[:12]}"
        turn = state.used.turns if turn is None else turn
        proposed = ActionProposed(call_id=call_id, tool=tool, args=args, args_hash=args_hash, turn=turn)
        head: list[Payload] = [*lead, proposed]
        contract = self.env.tool(tool)
        settled = self._before_gate(state, contract, tool, args_hash, call_id)
        if settled is not None:
            items, answer = settled
            return [*head, *items], answer
        assert contract is not None  # an undeclared tool is settled before the gate
        action = Action(call_id, tool, args, args_hash, turn, state.last_seq + len(head))
        items, answer = self._decided(events, state, action, contract)
        return [*head, *items], answer

    def _before_gate(
        self, state: RunState, contract: ToolContract | None, tool: str, args_hash: str, call_id: str
    ) -> tuple[list[Payload], Answer] | None:
        """What the log settles without asking the gate, in this order: a run that has ended takes no call; a
        tool the envelope does not declare is refused (fail closed); a spent budget refuses the call and ends the
        session; where the agent retries a refused call under a new id (:attr:`Asking.RETRY`), a human's grant to
        the identical call lets it through once. None: the gate decides."""
        if state.finished:
            from tether.events.kinds import ActionInvalid  # here: a later kind module (events/payload.py LATER)

            why = f"run {self.run_id} has ended ({state.status}): {state.result or state.next_action}"
            invalid = ActionInvalid(call_id=call_id, tool=tool, error=why)
            return [invalid], self._answer_of(Verdict.DENY, "run:finished", why, call_id, tool)
        if contract is None:
            from tether.events.kinds import ActionInvalid  # here: a later kind module (events/payload.py LATER)

            why = f"{tool!r} is not a tool the envelope declares; declared: {sorted(t.name for t in self.env.tools)}"
            invalid = ActionInvalid(call_id=call_id, tool=tool, error=why)
            return [invalid], self._answer_of(Verdict.DENY, "envelope:undeclared-tool", why, call_id, tool)
        over = spent(state, datetime.now(UTC))
        if over is not None:
            rule = f"budget:{over.budget}"
            decided = ActionDecided(call_id=call_id, verdict="DENY", deciding_rule=rule, reason=over.reason)
            from tether.events.kinds_guard import SessionEnded  # a later kind module: only a spent budget writes it

            ended = SessionEnded(
                how="budget", reason=over.reason, by="tether", budget=over.budget, used=over.used, limit=over.limit
            )
            return [decided, ended], self._answer_of(Verdict.DENY, rule, over.reason, call_id, tool)
        granted = self._granted_before(state, tool, args_hash, call_id) if self.asking is Asking.RETRY else None
        if granted is not None:
            why = f"a human approved this exact call ({granted})"
            decided = ActionDecided(call_id=call_id, verdict="ALLOW", deciding_rule="approval:granted", reason=why)
            return [decided], self._answer_of(Verdict.ALLOW, "approval:granted", why, call_id, tool)
        return None

    def _decided(
        self, events: Sequence[Event], state: RunState, action: Action, contract: ToolContract
    ) -> tuple[list[Payload], Answer]:
        """The gate's decision on ``action`` (:func:`tether.policy.decide.decide`), after the execution review it
        made, if any; an ASK stages a pending approval bound to the arguments' hash, unless the agent asks its
        own user (:attr:`Asking.AGENT`): then nothing is staged and the receipt says whether the call ran."""
        from tether.policy.decide import decide  # here: see load_gate
        from tether.review.execution import review_gate_event

        ruling = decide(
            action, contract, lambda: self._gate_for(events, state), state, events, self.env, self.indexed()
        )
        d = ruling.decision
        items: list[Payload] = []
        if ruling.review is not None:
            items.append(review_gate_event(action.call_id, contract.name, ruling.review))
        items.append(ActionDecided(call_id=action.call_id, **d.to_dict()))
        approval_id = None
        if d.verdict is Verdict.ASK and self.asking is not Asking.AGENT:
            approval_id = "ap-" + uuid4_hex()[:8]
            items.append(self._approval(action, approval_id, d.reason))
        return items, self._answer_of(d.verdict, d.deciding_rule, d.reason, action.call_id, action.tool, approval_id)

    def _approval(self, action: Action, approval_id: str, reason: str) -> ApprovalRequested:
        """The pending approval of an ASK: bound to the hash of the arguments (an answer grants this call, not
        another one under its id), shown with a bounded preview, expiring after the envelope's timeout."""
        from tether.events.kinds import ApprovalRequested  # here: a later kind module (events/payload.py LATER)

        expires = datetime.now(UTC) + timedelta(seconds=self.env.approvals.timeout_s)
        return ApprovalRequested(
            approval_id=approval_id,
            call_id=action.call_id,
            tool=action.tool,
            args_hash=action.args_hash,
            preview=_preview(action.tool, action.args),
            reason=reason,
            expires_at=expires.timestamp(),
        )

    def _current(self, state: RunState, a: Action) -> tuple[list[Payload], Answer]:
        """The verdict a call has now; an overdue approval is expired first (and may end the run)."""
        if a.status is ActionStatus.WAITING and a.approval_id in state.pending_approvals:
            expires = float(state.pending_approvals[a.approval_id]["expires_at"])
            if time.time() > expires:
                from tether.events.kinds import ApprovalExpired  # here: a later kind module (events/payload.py LATER)

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
        from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest, answer_payload, whoami  # answers only

        request = ApprovalRequest(approval_id, self.run_id, a.call_id, a.tool, a.args, req["preview"], a.reason)
        item = answer_payload(request, ApprovalAnswer(choice, by or whoami(), reason))
        assert item is not None  # only "defer" answers nothing
        granted = choice != "deny"
        who = by or whoami()
        verdict, rule = (Verdict.ALLOW, "approval:granted") if granted else (Verdict.DENY, "approval:denied")
        why = f"approved by {who} ({approval_id})" if granted else (reason or f"denied by {who} ({approval_id})")
        return [item], self._answer_of(verdict, rule, why, a.call_id, a.tool, approval_id)

    @staticmethod
    def _granted_before(state: RunState, tool: str, args_hash: str, call_id: str) -> str | None:
        """An approval granted to an identical earlier call that never ran and no later retry has taken yet."""
        # the identical calls from the state's index (RunState.same_calls), the current action of each id only
        same = [
            a
            for a in state.same_calls.get((tool, args_hash), ())
            if a.call_id != call_id and state.actions.get(a.call_id) is a
        ]
        same.sort(key=lambda a: a.seq)
        taken_after = -1  # the latest seq of an identical call that took a grant: earlier grants are taken
        for b in same:
            if b.deciding_rule == "approval:granted":
                taken_after = max(taken_after, b.seq)
        for a in same:
            if a.approval_id and a.approved_by and a.status is ActionStatus.DECIDED and a.seq >= taken_after:
                return f"{a.approval_id} by {a.approved_by}"
        return None

    def _closing(self, state: RunState, reason: str, ok: bool) -> list[Payload]:
        if state.finished:
            return []
        from tether.events.kinds import ApprovalExpired  # here: later kind modules (events/payload.py LATER)
        from tether.events.kinds_guard import SessionEnded

        items: list[Payload] = [ApprovalExpired(approval_id=a, outcome="deny") for a in state.pending_approvals]
        open_calls = [f"{a.call_id} ({a.tool})" for a in state.open_actions]
        said = f": {reason}" if reason else ""
        if open_calls:
            why = f"the session was closed{said}, with calls started and no receipt: {', '.join(open_calls)}"
            items.append(SessionEnded(how="abandoned", reason=why, by="program"))
        elif not ok:
            items.append(
                SessionEnded(how="abandoned", reason=f"the program closed the session unfinished{said}", by="program")
            )
        else:
            items.append(SessionEnded(how="closed", reason=f"the program closed the session{said}", by="program"))
        return items

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
        return [*self._start(state, call_id), self._receipt(a, ok, output, error, duration_s)]

    def _receipt(
        self, a: Action, ok: bool, output: str, error: str, duration_s: float | None, observed: list[str] | None = None
    ) -> ActionCompleted:
        contract = self.env.tool(a.tool)
        result = {
            "ok": ok,
            "content": _bounded(output if ok else (error or output or "failed")),
            "data": {"chars": len(output), "error": error} if error else {"chars": len(output)},
            "changed_files": [],
            "failure_class": None if ok else "tool_error",
            "effects": [e.value for e in contract.effects] if contract is not None else [],
        }
        took = None if duration_s is None else round(duration_s, 6)
        return ActionCompleted(
            call_id=a.call_id, tool=a.tool, ok=ok, result=result, duration_s=took, observed_files=observed
        )

    # ---- plumbing ----------------------------------------------------------------------------

    def _write(
        self,
        build: Callable[[Sequence[Event], RunState], tuple[list[Payload], T]],
        *,
        durable: bool = True,
        goes_on: bool = True,
    ) -> T:
        """Build events from the freshest fold and append them on the head they were read at; on a race,
        read again and build again. Nothing is written from a stale read.

        Synced to disk before the call returns (``durable``): decisions, approvals and ``action.started``, which
        come before the program's effect or a human. A receipt and the control layer's view of it are not:
        the next durable write syncs them, as in tether's own loop."""
        for attempt in range(WRITE_ATTEMPTS):
            # lost once: from now on no other writer between this read and this append
            with self.store.exclusive(self.run_id) if attempt else nullcontext():
                written, out = self.exact(lambda: self._attempt(build, durable, goes_on))  # writes at its end
            if written is None:
                continue
            self._folded(written)
            self._finish_if_stopped()
            return out
        raise RuntimeFailure(f"run {self.run_id}: {WRITE_ATTEMPTS} writers raced this one; nothing was written")

    def _attempt(
        self, build: Callable[[Sequence[Event], RunState], tuple[list[Payload], T]], durable: bool, goes_on: bool
    ) -> tuple[list[Event] | None, T]:
        """One of :meth:`_write`'s attempts: the events written (none to write: ``[]``) and the answer, or None
        written when another writer moved the head first."""
        state = self.refresh()
        items, out = build(self.events, state)
        waited = state.status is RunStatus.WAITING_APPROVAL and not state.pending_approvals  # answered meanwhile
        if goes_on and waited:
            from tether.events.kinds import RunResumed  # here: a later kind module (events/payload.py LATER)

            items = [RunResumed(reason="every pending approval was answered; the session goes on"), *items]
        if not items:
            return [], out
        try:
            return self.store.append_many(self.run_id, items, expect=self.events[-1].head, durable=durable), out
        except HeadMoved:
            return None, out

    def _finish_if_stopped(self) -> None:
        """A recorded fact the run cannot go on from: ``next_step`` names the finish, the guard performs it."""
        if self.state.stop is None or self.state.finished:
            return
        from tether.kernel.outcome import closing  # here: only a call that ends the run needs the kernel's ending
        from tether.kernel.step import Finish
        from tether.kernel.steps import next_step

        step = self.exact(lambda: next_step(self.state, self.env, datetime.now(UTC)))
        if isinstance(step, Finish):  # as the runtime finishes: the budget breach first, when one is why
            from tether.events.kinds import BudgetExceeded  # here: a later kind module (events/payload.py LATER)

            spent = [] if step.breach is None else [BudgetExceeded(**_breach(step.breach))]
            self._write(
                lambda events, state: ([*spent, closing(state, events, step)] if not state.finished else [], None),
                goes_on=False,
            )

    def _observe(self) -> None:
        """The control layer's view of the new receipts (beliefs, diagnostics, control state)."""
        from tether.control.loop import observe  # here: see load_observer

        self._write(lambda events, state: (list(observe(events, self.env)), None), durable=False)

    def _gate_for(self, events: Sequence[Event], state: RunState) -> Gate:
        # The control state from the run state (what ``control.loop.control_state`` folds): no control layer here.
        key = (state.control, tuple(r["rule"] for r in state.run_rules))
        if self._gate is None or self._gate[0] != key:
            from tether.policy.gate import Gate  # here: see load_gate

            rules = [
                Rule(id=f"run:{r['approval_id']}", rule=r["rule"], reason=f"approved for this run by {r['by']}")
                for r in state.run_rules
            ]
            self._gate = (key, Gate(self.env, self.root, control=key[0], run_rules=rules))
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


@dataclass(frozen=True, eq=False, repr=False)
class _Loaded:
    """An envelope as the guard loaded it, with where it came from."""

    envelope: Envelope
    base_dir: str  # a place (tether/places.py)
    path: str | None
    accepted: tuple[Any, ...] = ()
    contract: str = ""  # contract_hash(envelope), when known without serializing it (a kept envelope)
    dump: dict[str, Any] | None = None  # its JSON dump, likewise
    dumped: str = ""  # content_hash(dump): a run that recorded it governs with this envelope as it is


def _strict(envelope: Envelope | str | Path | Validated) -> _Loaded:
    """The envelope strictly validated, as a run's is (imported here: the hooks' decision path, which opens
    sessions without it, does not pay for the kernel's runtime)."""
    from tether.kernel.session import load_checked

    if isinstance(envelope, Validated):  # strictly checked from its source, as any other
        envelope = envelope.path or envelope.envelope

    loaded = load_checked(envelope)
    path = None if loaded.path is None else str(loaded.path)
    return _Loaded(loaded.envelope, str(loaded.base_dir), path, loaded.accepted)


def _parsed(envelope: Envelope | str | Path | Validated) -> _Loaded:
    """The envelope as it parses, without the strict checks."""
    if isinstance(envelope, Validated):
        path = envelope.path
        base = places.parent(path) if path is not None else disk.text(os.getcwd())
        return _Loaded(envelope.envelope, base, path, (), envelope.contract, envelope.dump, envelope.dumped)
    if isinstance(envelope, Envelope):
        return _Loaded(envelope, disk.text(os.getcwd()), None)
    from pathlib import Path  # a file parsed here (YAML, pydantic): not a hook call's

    from tether.envelope.load import load_envelope

    real = Path(envelope).resolve()
    return _Loaded(load_envelope(real), str(real.parent), str(real))


def spent(state: RunState, now: datetime) -> Breach | None:
    """The budget a governed session has spent, if any (:func:`counted`); wall time runs while the session is
    open. Money and tokens are the program's model calls, which tether does not see: they stay 0 here."""
    return breach(counted(state), now, before="action")


def counted(state: RunState) -> RunState:
    """``state`` with its ``tool_calls`` used as a governed session spends them: the calls let through (the program
    runs them at once, so a call is spent when it is allowed, not when its receipt comes)."""
    through = state.calls_in(LET_THROUGH)  # RunState.calls_by: not a scan of every call of the session
    return replace(state, used=replace(state.used, tool_calls=max(state.used.tool_calls, through)))


def _breach(b: Breach) -> dict[str, Any]:
    return {"budget": b.budget, "used": float(b.used), "limit": float(b.limit)}


def _opening(loaded: _Loaded, ws: str, framework: str, session: str, task: str) -> tuple[RunStarted, SessionOpened]:
    """The first two events of a session's run. ``run.started`` holds the envelope and its contract hash (what a
    later open is held to: :func:`_kept_contract`), the workspace, and that the program runs the tools itself,
    in no sandbox of tether's; ``session.opened`` names the framework, the session and who opened it."""
    env = loaded.envelope
    started = RunStarted(
        task=task or f"{framework} session {session}",
        envelope_path=str(loaded.path or ""),
        envelope=loaded.dump if loaded.dump is not None else env.model_dump(mode="json"),
        plan_hash=env.plan.hash,
        contract_hash=env.contract_hash or loaded.contract or contract_hash(env),
        model=f"{framework} (external)",
        workspace=str(ws),
        budgets=env.budgets.model_dump(),
        max_external=env.outputs.max_external,
        sandbox=f"{EXTERNAL}: {framework}",  # the program runs the tools, in no sandbox of tether's
        acknowledged=[a.to_dict() for a in loaded.accepted],
    )
    from tether.kernel.approvals import whoami  # a session's first call only

    return started, SessionOpened(framework=framework, session=session, by=whoami())


def _audited(store: Store, run_id: str, genesis: str, since: Head | None = None) -> Audit:
    """``verify_run`` of the session's log (from ``since``: :meth:`Guard.open`), its first event the one the session
    was opened with."""
    audit = store.verify_run(run_id, since=since)
    if audit.first != genesis:  # what governs is the event the audit verified, not one read beside it
        raise LogCorrupt(run_id, 0, "the run's first event was rewritten while the session was opened")
    return audit


def _held_to_audit(guard: Guard, audit: Audit) -> None:
    """What :meth:`Guard.open` folded is what the audit verified, not rows read again after it: each event the fold
    read (from the checkpoint's head on) is the audit's, those appended since chain after the audit's head, and none
    of the audit's was taken away (a closed session's end cut off to reopen it); else :class:`LogCorrupt`."""
    events, run_id = guard.events, guard.run_id
    if len(events) < audit.events:
        raise LogCorrupt(run_id, len(events), "the log was cut short between its audit and its fold")
    bad = unverified(events[max(guard.checkpointed - 1, 0) :], audit.hashes)
    if bad is None and len(events) > audit.events:
        bad = unchained(events[audit.events :], (audit.events - 1, audit.hashes[-1]))
    if bad is not None:
        raise LogCorrupt(run_id, bad, "an event was rewritten between the log's audit and its fold")


def _kept_contract(recorded: RunStarted, loaded: _Loaded, framework: str, session: str, run_id: str) -> Envelope:
    """The envelope a session found again is governed by: the one its run began under, read from the log,
    whatever the file says now; opened with an envelope whose contract differs (unset later fields aside), it
    is refused, so a changed file never silently re-governs calls already decided.

    A kept envelope (guard/envcache.py) whose JSON dump is exactly the one the run recorded is that envelope as
    validating the record makes it (kept only when the round trip holds): it governs as it is, and neither is
    validated again. Any other record is validated and compared, as always."""
    env = loaded.envelope
    if loaded.dumped and content_hash(recorded.envelope) == loaded.dumped:
        return env
    plain.unsure("the run's recorded envelope is not the kept one: it is validated (with pydantic)")
    began = Envelope.model_validate(recorded.envelope)  # validated once: compared, then governs
    if contract_hash(began) != (loaded.contract or contract_hash(env)):
        raise GuardError(
            f"session {session!r} of {framework} is governed by run {run_id}, which began under another "
            "envelope; a session keeps its contract: start a new session id to use this envelope"
        )
    return began


def _create(
    store: Store,
    run_id: str,
    loaded: _Loaded,
    ws: str,
    framework: str,
    session: str,
    task: str,
    begin: Callable[[str], Sequence[Payload]] | None,
) -> tuple[RunStarted | None, str]:
    """Create the session's run (on the full path only); ``(None, "")`` when this process made it, else what
    :func:`_started` reads of the run another process created between our read and our write."""
    plain.unsure("a new session's run: it is created on the full path")
    started, opened = _opening(loaded, ws, framework, session, task)
    first = [started, opened, *(begin(ws) if begin is not None else ())]
    try:
        store.create_run(started.task, first, run_id=run_id)
    except RunExists:
        recorded, genesis = _started(store, run_id)
        if recorded is None:
            raise
        return recorded, genesis
    return None, ""


def _started(store: Store, run_id: str, found: Event | None = None) -> tuple[RunStarted | None, str]:
    """How a session's run began (its envelope, its workspace), or None when the run does not exist yet; and the hash
    of that first event, which a fold checkpoint names ("" when it is not the log's first), worked out from its
    contents: read outside the audit's snapshot, it may be a row rewritten and put back around the audit, so
    :meth:`Guard.open` compares it with the hash the audit verified. ``found``: that event as the caller read it from
    this store in this call, used as read (one parse of the envelope it holds fewer)."""
    try:
        store.run(run_id)
    except InputError:
        return None, ""
    ours = found is not None and found.run_id == run_id and found.kind == RunStarted.KIND
    first = [found] if ours and found is not None else store.events(run_id, kinds={RunStarted.KIND})
    if not first:
        return None, ""
    return first[0].data_as(RunStarted), first_hash(first[0])


def _judged_after(state: RunState, ran: Action) -> Action | None:
    """The proposal of ``ran`` (a call whose receipt came before any proposal: :meth:`Guard.report`) that the gate
    judged after it, under an id of its own (``<id>~<suffix>``, same arguments); None when there is none yet. A
    receipt carries no verdict: answering such a call with its "current verdict" let it through unjudged."""
    prefix = f"{ran.call_id}~"
    return next(
        (a for a in state.same_calls.get((ran.tool, ran.args_hash), ()) if a.call_id.startswith(prefix) and a.verdict),
        None,
    )


def _json_args(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments as the log holds them (JSON values); anything else is refused before it is recorded."""
    if not isinstance(args, Mapping):
        raise GuardError(f"tool arguments must be a mapping of names to JSON values, got {type(args).__name__}")
    try:
        plain = jsonc.loads(jsonc.dumps(dict(args), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as e:  # not JSON, NaN, or nested past what JSON tools read
        raise GuardError(f"tool arguments must be JSON values: {type(e).__name__}: {e}") from e
    assert isinstance(plain, dict)
    return plain


def _preview(tool: str, args: Mapping[str, Any]) -> str:
    import json  # indent: json's Python encoder (tether.jsonc has none); a preview is made where a call asks

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
        return jsonc.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)
