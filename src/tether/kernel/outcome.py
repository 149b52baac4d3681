"""The output contract every finished (or paused) run ends with, and how a finish assembles it.

:func:`closing` is pure: the same log and the same :class:`~tether.kernel.steps.Finish` give the same
``run.finished`` payload, so a finish that is repeated after a crash says the same thing.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from tether.events.kinds import ActionCompleted, RunFinished
from tether.events.kinds_control import CompletionAccepted, SensorResultEvent, VerifyCompleted
from tether.events.store import Event
from tether.plain import BaseModel, ConfigDict
from tether.state import RunState
from tether.status import ActionStatus, ClaimStatus, RunStatus

from .continuation import resume_command
from .step import Finish

#: Actions in these states were proposed but never ran: each is an unknown of the outcome.
NOT_RUN = (ActionStatus.PROPOSED, ActionStatus.DECIDED, ActionStatus.WAITING)
#: The kinds the closing cites or reports on (only these are parsed).
CLOSING_KINDS = frozenset(k.KIND for k in (SensorResultEvent, CompletionAccepted, VerifyCompleted, ActionCompleted))


class LogHead(BaseModel):
    """The run log's head when the contract was made: anchor it (keep it elsewhere) to detect a rewrite."""

    model_config = ConfigDict(frozen=True)

    seq: int
    hash: str


class OutputContract(BaseModel):
    model_config = ConfigDict(frozen=True)

    run_id: str
    status: RunStatus
    result: str
    evidence: list[str]
    unknowns: list[str]
    next_action: str
    last_error: str | None = None
    head: LogHead | None = None

    @classmethod
    def from_state(cls, state: RunState) -> OutputContract:
        return cls(
            run_id=state.run_id,
            status=state.status,
            result=state.result,
            evidence=state.evidence if state.finished else [],
            unknowns=state.unknowns,
            next_action=state.next_action,
            last_error=state.last_error,
            head=LogHead(seq=state.last_seq, hash=state.head_hash) if state.last_seq >= 0 else None,
        )


def _not_run(call_id: str, tool: str, status: ActionStatus, driver: str) -> str:
    """What is unknown of an action with no receipt. tether runs its own loop's actions, so one never started did
    not run; in a governed session ``driver`` runs them and tether hears of a run only from its receipt, so an
    action let through (or asked of a person) with none may have run all the same (its receipt lost, refused or
    never sent)."""
    if not driver or status is ActionStatus.PROPOSED:
        return f"{call_id} ({tool}) was proposed but not executed"
    if status is ActionStatus.WAITING:
        return f"{call_id} ({tool}) was asked of a person and no receipt of it came: declined, or run unreported"
    return f"{call_id} ({tool}) was allowed and no receipt of it came: {driver} may have run it"


def closing(state: RunState, events: Iterable[Event], finish: Finish) -> RunFinished:
    """The ``run.finished`` payload for ``finish``: result, evidence, unknowns and the next action.

    The result is the accepted claim's summary when there is one (the agent's words, verified),
    else the finish's reason. Evidence cites the latest verification events and successful actions;
    unknowns name what was proposed but never ran and the optional sensors that could not run. ``events`` is the
    run's log, or only its events of :data:`CLOSING_KINDS` (what is read of it; a paged log's ``only``).
    """
    claim = next((c for c, s in state.claims.items() if s is ClaimStatus.ACCEPTED), None)
    result = finish.reason
    if claim is not None:
        result = str(state.actions[claim].result.get("data", {}).get("claim", "")) or finish.reason
    unknowns = [
        _not_run(a.call_id, a.tool, a.status, state.driver) for a in state.actions.values() if a.status in NOT_RUN
    ]
    checks: deque[str] = deque(maxlen=3)  # the latest verification verdicts (verify.completed, completion.accepted)
    done: deque[str] = deque(maxlen=5)  # the latest actions that succeeded: what a long log holds stays bounded
    for e in events:
        if e.kind not in CLOSING_KINDS:
            continue
        match e.data:
            case SensorResultEvent(result="SKIPPED", required=False) as p:
                unknowns.append(f"optional sensor {p.sensor} SKIPPED: {p.summary}")
            case CompletionAccepted() | VerifyCompleted():
                checks.append(e.id)
            case ActionCompleted(ok=True):
                done.append(e.id)
    evidence = [*checks, *done]
    next_action = finish.next_action or default_next_action(finish)
    if state.driver:  # a governed session: its program drives it, not tether resume
        next_action += f"; the run is driven by {state.driver}: it goes on only when that session does"
    else:
        command = resume_command(
            state.run_id, finish.status, budget=finish.breach.budget if finish.breach else None, ended_by=state.stop
        )
        if command is not None:  # the exact command that continues this run, never one that would be refused
            next_action += f"; to continue this run: {command}"
    return RunFinished(
        status=finish.status,
        result=result,
        evidence=evidence,
        unknowns=sorted(set(unknowns)),
        next_action=next_action,
        last_error=state.last_error,
    )


def default_next_action(finish: Finish) -> str:
    """What a person does next after a finish that did not name it itself."""
    match finish.status:
        case RunStatus.COMPLETE:
            return "review the diff (`tether show`, or git diff) and merge it"
        case RunStatus.NO_OP:
            return "nothing to do: the verification already passed before any change"
        case RunStatus.BUDGET_STOP:
            budget = finish.breach.field if finish.breach else "the budget"
            return f"decide whether the work is worth more than {budget} allows"
        case _:
            return "inspect with `tether show`"
