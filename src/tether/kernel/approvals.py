"""Human approvals: answering a pending action, from a prompt or from the CLI.

An approval binds to the exact argument hash staged with it; the runtime checks
the hash again before executing. "Approve for this run" records a run-scoped
rule in the log, so the decision survives a resume and is visible in the trace.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from tether.errors import InputError, LogCorrupt
from tether.events.protocol import Store
from tether.records import dataclass
from tether.state import STATUS_KINDS, RunState, external_driver

if TYPE_CHECKING:  # a later kind module (events/payload.py LATER): imported where an answer is made
    from tether.events.kinds import ApprovalDenied, ApprovalGranted


@dataclass(frozen=True)
class ApprovalRequest:
    """A pending action, as shown to whoever approves: the exact call (bound to ``approval_id`` by the hash
    of its arguments), a preview (the diff, or the command and its directory) and why the gate asked."""

    approval_id: str
    run_id: str
    call_id: str
    tool: str
    args: dict[str, Any]
    preview: str
    reason: str


@dataclass(frozen=True)
class ApprovalAnswer:
    """A human's answer: ``once`` allows this call; ``run`` also allows the same call for the rest of the run
    (a run-scoped rule, recorded in the log); ``deny`` refuses it, giving ``reason`` to the model; ``defer``
    leaves it pending (the run waits in WAITING_APPROVAL)."""

    choice: Literal["once", "run", "deny", "defer"]
    by: str
    reason: str = ""


Approver = Callable[[ApprovalRequest], ApprovalAnswer]


def whoami() -> str:
    """The user answering or opening a session, by login name (getpass, imported here: with termios and pwd it
    cost every process that imported this module, and only a session's opening or an answer asks)."""
    import getpass

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def run_rule_for(tool: str, args: dict[str, Any]) -> str:
    """The narrowest rule that re-allows this call: the exact command, or the exact path."""
    if isinstance(args.get("command"), str):
        return f"{tool}({args['command']})"
    if isinstance(args.get("path"), str):
        return f"{tool}({args['path']})"
    return tool


def answer_payload(request: ApprovalRequest, answer: ApprovalAnswer) -> ApprovalGranted | ApprovalDenied | None:
    if answer.choice == "defer":
        return None
    from tether.events.kinds import ApprovalDenied, ApprovalGranted  # here: a hook's call seldom answers one

    if answer.choice == "deny":
        return ApprovalDenied(approval_id=request.approval_id, by=answer.by, reason=answer.reason or "denied")
    rule = run_rule_for(request.tool, request.args) if answer.choice == "run" else None
    return ApprovalGranted(approval_id=request.approval_id, by=answer.by, scope=answer.choice, rule=rule)


def pending(store: Store, *, verified: bool = True) -> list[ApprovalRequest]:
    """Every pending approval across the store's runs; by default only of runs whose log verifies.

    Nothing can be approved on a log that does not verify; ``verified=False`` still finds such a
    request, so that answering it can be refused naming the bad seq.
    """
    out = []
    for info in store.runs():
        try:
            if verified:
                store.verify(info.run_id)
            state = RunState.from_events(store.events(info.run_id, kinds=STATUS_KINDS))
        except LogCorrupt:
            if not verified:
                out += _requested_raw(store, info.run_id)
            continue
        for approval_id, req in state.pending_approvals.items():
            action = state.actions[req["call_id"]]
            out.append(
                ApprovalRequest(
                    approval_id, info.run_id, req["call_id"], req["tool"], action.args, req["preview"], req["reason"]
                )
            )
    return out


def _requested_raw(store: Store, run_id: str) -> list[ApprovalRequest]:
    """The approval requests of a log that cannot be folded, read from the raw rows: only so that answering
    one is refused naming the log's first bad seq (``record_answer`` verifies before it appends)."""
    try:
        events = store.events(run_id)
    except LogCorrupt:
        return []
    raw = [e.payload for e in events if e.kind == "approval.requested"]
    return [
        ApprovalRequest(str(p.get("approval_id")), run_id, str(p.get("call_id")), str(p.get("tool")), {}, "", "")
        for p in raw
    ]


def record_answer(store: Store, approval_id: str, answer: ApprovalAnswer, *, run: str | None = None) -> ApprovalRequest:
    """Record a human's answer to a pending approval (headless: `tether approve|deny`).

    ``run`` (an id or prefix) picks the run when the same approval waits in several: a fork taken at a
    pending approval shares it with its parent, and each answers for itself.
    """
    requests = pending(store, verified=False)  # a request on a broken log is found, then refused below
    matches = [r for r in requests if r.approval_id == approval_id or r.approval_id.startswith(approval_id)]
    if run is not None:
        matches = [r for r in matches if r.run_id.startswith(run)]
    runs = sorted({r.run_id for r in matches})
    if len({r.approval_id for r in matches}) == 1 and len(runs) > 1:
        raise InputError(
            f"approval {matches[0].approval_id} is pending in runs {', '.join(runs)} (a fork shares its parent's "
            "pending approvals); say which with --run RUN"
        )
    if len(matches) != 1:
        raise InputError(
            f"no pending approval {approval_id!r}" + (" (ambiguous prefix)" if matches else "; see `tether approvals`")
        )
    request = matches[0]
    item = answer_payload(request, answer)
    if item is None:
        return request
    # Like a driver: hold the run's lease, verify its log, and append on the head the answer was read at.
    store.acquire(request.run_id)
    try:
        store.verify_run(request.run_id)
        events = store.events(request.run_id)
        if request.approval_id not in RunState.from_events(events).pending_approvals:
            raise InputError(
                f"approval {request.approval_id} was answered meanwhile; see `tether show {request.run_id}`"
            )
        store.append(request.run_id, item, expect=events[-1].head)
    finally:
        store.release(request.run_id)
    return request


def driver_of(store: Store, run_id: str) -> str:
    """The program driving ``run_id`` when it is a governed session (``claude-code``, ``langgraph``), else ``""``."""
    started = store.events(run_id, kinds={"run.started"})
    return external_driver(str(started[0].payload.get("sandbox", ""))) if started else ""


def takes_effect_when(driver: str) -> str:
    """How an answer reaches a governed session: its program reads it when the agent retries the call."""
    return f"{driver} drives this run: the answer takes effect when the agent retries the call"


def takes_effect(store: Store, run_id: str) -> str:
    """How an answered approval takes effect: a run tether drives goes on with ``tether resume``; a governed
    session's program reads the answer when the agent retries the call (``tether resume`` refuses such a run)."""
    driver = driver_of(store, run_id)
    return takes_effect_when(driver) if driver else f"continue with: tether resume {run_id}"
