"""Replay: run a recorded run again from its starting files and its model's recorded answers, and compare.

What is re-executed, and what is fed back:

- the **workspace** is rebuilt from the run's start snapshot in the log (:func:`materialise_start`), in a
  fresh temporary directory — never the original directory, so it works on another machine from an
  exported package, and a start snapshot whose bytes no longer match their digests is reported as the
  first divergence (both digests), never replayed on a silently different workspace;
- the **model** is :class:`RecordedModel`: the i-th model call gets the i-th recorded answer (or failure);
- the **human** is the recorded one: approvals are answered as they were, by call id
  (:func:`recorded_answers`), and a stop someone continued is continued the same way (the same
  ``run.continued`` request: note, raised budgets, attempts);
- **everything else runs again for real**: the gate decides, the sandbox executes, the snapshots
  observe, the sensors verify.

``tether replay RUN --model M`` is the counterfactual instead (:func:`counterfactual_seq`): not a check but a
new run — the run forked just before it first asked its model (or at ``--to SEQ``), going on live with
model M, logged in the original store beside the run it came from (``run.forked`` names it and M).

The replay is its own run, in its own store, in the same temporary directory (its ``run.started`` names
the original in ``replay_of``). The original store is only read, so the original log is untouched.

The comparison (:func:`facts`, :func:`first_divergence`) lines up, in log order, what each side
*decided and observed*: every decision (verdict and deciding rule), every receipt (ok, exit code,
changed files, a hash of the output), every completion verdict, and the final status. Output is hashed
after masking what legitimately differs between two executions: the workspace's path and durations
(``in 0.43s``). The first fact that differs is the divergence, reported with both sides.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tether.canonical import bytes_hash
from tether.envelope.schema import Envelope
from tether.errors import InputError, ProviderError
from tether.events.kinds import (
    ActionCompleted,
    ActionDecided,
    ActionFailed,
    ActionInvalid,
    ApprovalDenied,
    ApprovalGranted,
    ApprovalRequested,
    Checkpoint,
    ModelFailed,
    ModelResponded,
    RunContinued,
    RunFinished,
    RunStarted,
)
from tether.events.kinds_control import CompletionAccepted, CompletionRefused
from tether.events.kinds_kernel import (
    ModelRequested,
)
from tether.events.protocol import Store
from tether.events.store import Event, EventStore
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.scripted import EXHAUSTED
from tether.snapshot import ContentMismatch, SnapshotError
from tether.state import RunState

from . import session
from .approvals import ApprovalAnswer, ApprovalRequest, Approver
from .continuation import Request, refuse_governed, refuse_imported
from .snapshots import materialise_start

#: Durations in tool output ("in 0.43s", "(0.01s)", "12 ms"): they differ between any two executions.
DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|seconds?)\b")


class RecordedModel:
    """The replay's model: plays the model outcomes of a log in order (answers, and failures as failures)."""

    def __init__(self, events: Sequence[Event], name: str, *, to_seq: int | None = None) -> None:
        self.name = name
        kinds = (ModelResponded.KIND, ModelFailed.KIND)
        self.outcomes = [e for e in events if e.kind in kinds and (to_seq is None or e.seq <= to_seq)]
        self.calls = 0

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        i, self.calls = self.calls, self.calls + 1
        if i >= len(self.outcomes):
            text = f"[replay] the recording has {len(self.outcomes)} model answers and all have been played."
            return ModelResponse(text, (), "complete", EXHAUSTED, Usage(0, 0), self.name)
        e = self.outcomes[i]
        if e.kind == ModelFailed.KIND:
            f = e.data_as(ModelFailed)
            raise ProviderError(f.error, transient=False, status=f.status, malformed=f.failure == "malformed")
        r = e.data_as(ModelResponded)
        calls = tuple(ToolCall(c.id, c.name, c.args) for c in r.tool_calls)
        usage = Usage(r.input_tokens, r.output_tokens, reported=r.usage_reported)
        return ModelResponse(r.text, calls, r.termination, r.raw_stop_reason, usage, r.model)  # type: ignore[arg-type]


def recorded_answers(events: Sequence[Event]) -> Approver:
    """An approver that answers each call as a human answered it in ``events`` (left pending if never answered)."""
    call_of: dict[str, str] = {}
    answers: dict[str, ApprovalAnswer] = {}
    for e in events:
        match e.data if e.kind in ANSWER_KINDS else None:
            case ApprovalRequested() as p:
                call_of[p.approval_id] = p.call_id
            case ApprovalGranted() as p if p.approval_id in call_of:
                answers[call_of[p.approval_id]] = ApprovalAnswer("run" if p.scope == "run" else "once", p.by)
            case ApprovalDenied() as p if p.approval_id in call_of:
                answers[call_of[p.approval_id]] = ApprovalAnswer("deny", p.by, p.reason)

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        return answers.get(request.call_id, ApprovalAnswer("defer", "replay"))

    return approver


ANSWER_KINDS = frozenset(k.KIND for k in (ApprovalRequested, ApprovalGranted, ApprovalDenied))


# ---- what is compared ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fact:
    """One thing a run decided or observed, as the comparison sees it."""

    seq: int
    what: str  # decision | receipt | verdict | status
    subject: str  # the call id, or "run"
    value: dict[str, Any]


def facts(events: Sequence[Event], workspace: str) -> list[Fact]:
    """The decisions, receipts, completion verdicts and final status of a log, in log order."""
    out: list[Fact] = []
    for e in events:
        value: dict[str, Any] | None = None
        subject = str(e.payload.get("call_id", "run"))
        match e.data if e.kind in FACT_KINDS else None:
            case ActionDecided() as p:
                what, value = "decision", {"verdict": p.verdict, "rule": p.deciding_rule}
            case ActionInvalid() as p:
                what, value = "decision", {"verdict": "INVALID", "rule": p.error}
            case ActionCompleted() as p:
                what, value = "receipt", receipt(p, workspace)
            case ActionFailed() as p:
                what, value = "receipt", {"ok": False, "failure": p.failure_class}
            case CompletionAccepted() | CompletionRefused():
                what, value = "verdict", {"accepted": e.kind == CompletionAccepted.KIND}
            case RunFinished() as p:
                what, value = "status", {"status": str(p.status)}
        if value is not None:
            out.append(Fact(e.seq, what, subject, value))
    return out


FACT_KINDS = frozenset(
    k.KIND for k in (ActionDecided, ActionInvalid, ActionCompleted, ActionFailed, CompletionAccepted, CompletionRefused)
) | {RunFinished.KIND}


def receipt(p: ActionCompleted, workspace: str) -> dict[str, Any]:
    content = str(p.result.get("content", ""))
    if workspace:
        content = content.replace(workspace, "<workspace>")
    masked = DURATION.sub("<duration>", content)
    return {
        "ok": p.ok,
        "exit_code": (p.result.get("data") or {}).get("exit_code"),
        "changed_files": sorted(p.changed_files),
        "output": bytes_hash(masked.encode("utf-8")),
    }


@dataclass(frozen=True)
class Divergence:
    """The first fact the two runs disagree on, with both sides (``None``: that side has no such fact)."""

    what: str
    subject: str
    field: str
    original: Any
    replay: Any
    original_seq: int | None
    replay_seq: int | None

    def describe(self) -> str:
        where = f"{self.what} of {self.subject}" if self.subject != "run" else self.what
        return (
            f"{where}: {self.field} was {self.original!r} (original seq {self.original_seq}), "
            f"replay has {self.replay!r} (replay seq {self.replay_seq})"
        )


def first_divergence(original: Sequence[Fact], replay: Sequence[Fact]) -> Divergence | None:
    """The first position where the facts differ; a replay may go on past the original's last fact."""
    for i, a in enumerate(original):
        b = replay[i] if i < len(replay) else None
        if b is None:
            return Divergence(a.what, a.subject, "presence", a.value, None, a.seq, None)
        if (a.what, a.subject) != (b.what, b.subject):
            return Divergence(
                a.what, a.subject, "next fact", f"{a.what} of {a.subject}", f"{b.what} of {b.subject}", a.seq, b.seq
            )
        for key in a.value.keys() | b.value.keys():
            if a.value.get(key) != b.value.get(key):
                return Divergence(a.what, a.subject, key, a.value.get(key), b.value.get(key), a.seq, b.seq)
    return None


# ---- running it ------------------------------------------------------------------------------------


@dataclass
class ReplayReport:
    """What ``tether replay`` prints: reproduced or the first divergence, and what was compared."""

    run_id: str
    replay_run: str
    reproduced: bool
    compared: int
    original_status: str
    replay_status: str
    divergence: Divergence | None = None
    kept: str | None = None  # the replay's directory (workspace and store), when asked to keep it
    to_seq: int | None = None
    notes: list[str] = field(default_factory=list)


def replay(
    store: Store,
    run_id: str,
    *,
    to_seq: int | None = None,
    sandbox: str | None = None,
    keep: Path | None = None,
    trust_imported: bool = False,
) -> ReplayReport:
    """Re-execute ``run_id`` (see the module docstring) and compare it with the original, up to ``to_seq``.

    An imported run is refused unless ``trust_imported`` (:func:`~tether.kernel.continuation.refuse_imported`)."""
    info = store.run(run_id)
    store.verify(info.run_id)  # a log that does not verify is refused, not replayed
    events = store.events(info.run_id)
    if to_seq is not None:
        events = [e for e in events if e.seq <= to_seq]
    if not events or events[0].kind != RunStarted.KIND:
        raise InputError(
            f"run {info.run_id} does not begin with run.started (a fork begins with run.forked): "
            "replay the run it was forked from"
        )
    state = RunState.from_events(events)
    refuse_governed(state, "replay")
    refuse_imported(store.imported(info.run_id), state, "replay", trust=trust_imported)
    workdir = Path(tempfile.mkdtemp(prefix="tether-replay-")) if keep is None else keep
    try:
        return _replay(store, info.run_id, events, state, workdir, to_seq, sandbox, keep is not None)
    finally:
        if keep is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _replay(
    store: Store,
    run_id: str,
    events: list[Event],
    state: RunState,
    workdir: Path,
    to_seq: int | None,
    sandbox: str | None,
    keep: bool,
) -> ReplayReport:
    workspace = workdir / "workspace"
    kept = str(workdir) if keep else None
    try:
        materialise_start(store, run_id, workspace)
    except SnapshotError as e:  # nothing was re-executed: the first divergence is the starting files
        first = _start_divergence(e, events)
        return ReplayReport(run_id, "", False, 0, str(state.status), "not run", first, kept, to_seq)
    options = _options(events, state, workspace, sandbox, to_seq)
    replay_run, theirs = _rerun(run_id, events, state, workdir, workspace, options)
    original = facts(events, state.workspace)
    replayed = facts(theirs, str(workspace))
    divergence = first_divergence(original, replayed)
    return ReplayReport(
        run_id=run_id,
        replay_run=replay_run,
        reproduced=divergence is None,
        compared=len(original),
        original_status=str(state.status),
        replay_status=str(RunState.from_events(theirs).status),
        divergence=divergence,
        kept=kept,
        to_seq=to_seq,
    )


def _start_divergence(e: SnapshotError, events: Sequence[Event]) -> Divergence:
    """The divergence of a start that could not be rebuilt: a file whose bytes are not the recorded ones (named,
    with both digests), or the snapshot as a whole (missing or unreadable), at the run's first checkpoint."""
    start_seq = next((x.seq for x in events if x.kind == Checkpoint.KIND), None)
    recorded, found = (e.recorded, e.found) if isinstance(e, ContentMismatch) else ("the recorded start", str(e))
    subject = str(e.path) if isinstance(e, ContentMismatch) else "run"
    return Divergence("start snapshot", subject, "content", recorded, found, start_seq, None)


def _options(
    events: list[Event], state: RunState, workspace: Path, sandbox: str | None, to_seq: int | None
) -> session.Options:
    """The replay's session as the original's: the recorded model's replies (up to ``to_seq``), the recorded
    approvals, the recorded context window, and its sandbox unless one is asked for (only a kind this host can
    name: a recorded one it does not know falls back to the default); no model reviewer, whose calls are not
    recorded."""
    start = events[0].payload
    recorded = str(start.get("sandbox") or "")
    return session.Options(
        model=RecordedModel(events, state.model, to_seq=to_seq),
        workspace=workspace,
        sandbox=sandbox or (recorded if recorded in ("bwrap", "local") else None),
        approver=recorded_answers(events),
        review_model=False,
        context_window=start.get("context_window"),
    )


def _rerun(
    run_id: str, events: list[Event], state: RunState, workdir: Path, workspace: Path, options: session.Options
) -> tuple[str, list[Event]]:
    """Run the task again in a store of its own under ``workdir``, with the original's envelope, plan and
    prices, and continue it wherever the original was continued, while the replay stopped where the original
    did (else the comparison says where they parted); the replay's run id and its events."""
    start = events[0].payload
    envelope = Envelope.model_validate(state.envelope)
    loaded = session.Loaded(envelope, workdir, None, prices=session.recorded_prices(start, envelope))
    with EventStore.open(workdir / "replay.db", create=True) as mine:
        runtime = session.begin(mine, loaded, state.task, workspace, options, start.get("plan"), replay_of=run_id)
        replay_run = runtime.run_id
        runtime.drive()
        for c in continuations(events):
            now = RunState.from_events(mine.events(replay_run))
            if not now.finished or now.status != c.from_status:
                break  # the original was continued from a stop the replay did not reach: the facts will say so
            again = Request(c.by, f"replay of {run_id}", c.note, c.budgets, c.attempts)
            session.resume(mine, replay_run, options, again).drive()
        return replay_run, mine.events(replay_run)


def counterfactual_seq(events: Sequence[Event], to_seq: int | None = None) -> int:
    """Where ``replay --model M`` forks: ``to_seq`` if given, else just before the run's first model call."""
    if to_seq is not None:
        return to_seq
    first = next((e.seq for e in events if e.kind == ModelRequested.KIND), None)
    if first is None:
        raise InputError("the run never asked its model, so there is nothing to ask another model")
    return first - 1


def continuations(events: Sequence[Event]) -> list[RunContinued]:
    """The original's continuations of a *finished* run (a note, raises): the replay makes the same ones.

    Resumes after an approval or a crash are not repeated: the replay answers approvals inline and
    does not crash.
    """
    out = []
    for e in events:
        if e.kind == RunContinued.KIND:
            c = e.data_as(RunContinued)
            if c.from_status.terminal:
                out.append(c)
    return out
