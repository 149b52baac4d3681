"""Judging a completion claim: the latest verification in the log plus the reviewer's findings.

A claim is accepted only when every required sensor passed on the latest cascade (see
``tether.verify.completion_verdict``) and the reviewer raised no medium or high finding.
Otherwise it is refused back to the model with the reasons and diagnostics; ``next_step``
ends the run VERIFY_FAILED once refusals exceed ``verification.max_refusals``.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.envelope.schema import Envelope
from tether.events.kinds_control import (
    CompletionAccepted,
    CompletionClaimed,
    CompletionRefused,
    DiagnosticData,
    SensorResultEvent,
    VerifyCompleted,
)
from tether.events.payload import Payload
from tether.events.store import Event
from tether.verify.cascade import planned_sensors

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


def judge_completion(
    events: Sequence[Event], envelope: Envelope, findings: Sequence[ReviewFinding] = (), call_id: str = ""
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
