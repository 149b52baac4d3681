"""Judging a completion claim: the latest verification in the log plus the reviewer's findings.

A claim is accepted only when every required sensor passed on the latest cascade (see
``tether.verify.completion_verdict``), the reviewer raised no medium or high finding, and — when the
run changed nothing and sent nothing out — the envelope's ``outputs.no_op`` condition holds
(:func:`no_op_check`, recorded as ``noop.checked``).
Otherwise it is refused back to the model with the reasons and diagnostics; ``next_step``
ends the run VERIFY_FAILED once refusals exceed ``verification.max_refusals``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.envelope import noop
from tether.envelope.schema import Envelope
from tether.events.kinds_control import (
    CompletionAccepted,
    CompletionRefused,
    DiagnosticData,
    NoOpChecked,
    NoOpClause,
    SensorResultEvent,
    VerifyCompleted,
)
from tether.events.kinds_kernel import (
    CompletionClaimed,
)
from tether.events.payload import Payload
from tether.events.store import Event
from tether.verify.cascade import planned_sensors
from tether.verify.result import SensorResult

from .reviewer import ReviewFinding, blocking


def claim_event(call_id: str, summary: str) -> CompletionClaimed:
    return CompletionClaimed(call_id=call_id, summary=summary)


def latest_cascade(events: Sequence[Event]) -> tuple[Event | None, list[Event]]:
    """The latest ``verify.completed`` and the ``sensor.result`` events that immediately precede it."""
    idx = next((i for i in range(len(events) - 1, -1, -1) if events[i].kind == VerifyCompleted.KIND), None)
    if idx is None:
        return None, []
    results: list[Event] = []
    j = idx - 1
    while j >= 0 and events[j].kind == SensorResultEvent.KIND:
        results.append(events[j])
        j -= 1
    return events[idx], list(reversed(results))


def no_op_check(
    envelope: Envelope, results: Sequence[SensorResult], changed: Sequence[str], external: int, call_id: str
) -> NoOpChecked | None:
    """For a claim that changed no file and sent nothing out: the ``outputs.no_op`` condition, evaluated on the
    completion sensors (the workspace is the untouched one: the snapshot check saw no change). None otherwise,
    or when the envelope states no condition (then a claim with nothing delivered is the reviewer's to judge)."""
    condition = envelope.outputs.no_op
    if changed or external or not condition:
        return None
    outcomes = {r.sensor: r.result for r in results}
    required = {r.sensor: r.required for r in results} | {n: req for n, req in planned_sensors(envelope) if req}
    clauses = [
        NoOpClause(clause=c.clause, holds=c.holds, detail=c.detail)
        for c in noop.evaluate(condition, outcomes, required)
    ]
    return NoOpChecked(
        call_id=call_id,
        condition=condition,
        holds=all(c.holds for c in clauses),
        clauses=clauses,
        changed_files=len(changed),
        external_outputs=external,
    )


def judge_completion(
    events: Sequence[Event],
    envelope: Envelope,
    findings: Sequence[ReviewFinding] = (),
    call_id: str = "",
    no_op: NoOpChecked | None = None,
) -> list[Payload]:
    """``review.finding`` events, then ``completion.accepted`` or ``completion.refused``.

    Call after appending the cascade's events (``tether.verify.cascade_events``) for the final state.
    """
    out: list[Payload] = [f.to_payload() for f in findings]
    verify, results = latest_cascade(events)
    reasons: list[str] = []
    diagnostics: list[DiagnosticData] = []
    if verify is None:
        reasons.append("no verification has run on the final state")
    else:
        verdict = verify.data_as(VerifyCompleted)
        reasons += verdict.reasons
        if not verdict.accepted and not reasons:
            reasons.append("verification did not accept the final state")
        for r in results:
            sensor = r.data_as(SensorResultEvent)
            if sensor.result == "FAIL":
                diagnostics += sensor.diagnostics
    if verify is None and not any(req for _, req in planned_sensors(envelope)):
        reasons = ["no verification has run on the final state"]
    for f in blocking(findings):
        reasons.append(f"reviewer ({f.view}): {f.message}" + (f" [{f.file}]" if f.file else ""))
    if no_op is not None and not no_op.holds:
        why = "; ".join(f"{c.clause}: {c.detail}" for c in no_op.clauses if not c.holds)
        reasons.append(f"nothing was changed, and outputs.no_op ({no_op.condition!r}) does not hold: {why}")
    if not reasons:
        evidence = [r.id for r in results] + ([verify.id] if verify else [])
        out.append(CompletionAccepted(call_id=call_id, evidence=evidence))
        return out
    refusals = sum(1 for e in events if e.kind == CompletionRefused.KIND) + 1
    out.append(
        CompletionRefused(
            call_id=call_id,
            reasons=reasons,
            refusals=refusals,
            max_refusals=envelope.verification.max_refusals,
            diagnostics=diagnostics[:20],
        )
    )
    return out
