"""Judging a completion claim: the latest verification in the log plus the reviewer's findings.

A claim is accepted only when every required sensor passed on the latest cascade (see
``tether.verify.completion_verdict``) and the reviewer raised no medium or high finding.
Otherwise it is refused back to the model with the reasons and diagnostics; ``stop_reason``
ends the run VERIFY_FAILED once refusals exceed ``verification.max_refusals``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.verify.cascade import planned_sensors

from .reviewer import ReviewFinding, blocking


def claim_event(call_id: str, summary: str) -> tuple[str, dict[str, Any]]:
    return ("completion.claimed", {"call_id": call_id, "summary": summary})


def latest_cascade(events: Sequence[Event]) -> tuple[Event | None, list[Event]]:
    """The latest ``verify.completed`` and the ``sensor.result`` events that immediately precede it."""
    idx = next((i for i in range(len(events) - 1, -1, -1) if events[i].kind == "verify.completed"), None)
    if idx is None:
        return None, []
    results: list[Event] = []
    j = idx - 1
    while j >= 0 and events[j].kind == "sensor.result":
        results.append(events[j])
        j -= 1
    return events[idx], list(reversed(results))


def judge_completion(
    events: Sequence[Event], envelope: Envelope, findings: Sequence[ReviewFinding] = (), call_id: str = ""
) -> list[tuple[str, dict[str, Any]]]:
    """``review.finding`` events, then ``completion.accepted`` or ``completion.refused``.

    Call after appending the cascade's events (``tether.verify.cascade_events``) for the final state.
    """
    out: list[tuple[str, dict[str, Any]]] = [("review.finding", f.to_payload()) for f in findings]
    verify, results = latest_cascade(events)
    reasons: list[str] = []
    diagnostics: list[dict[str, Any]] = []
    if verify is None:
        reasons.append("no verification has run on the final state")
    else:
        reasons += list(verify.payload.get("reasons", []))
        if not verify.payload.get("accepted", False) and not reasons:
            reasons.append("verification did not accept the final state")
        for r in results:
            if r.payload.get("result") == "FAIL":
                diagnostics += r.payload.get("diagnostics", [])
    if verify is None and not any(req for _, req in planned_sensors(envelope)):
        reasons = ["no verification has run on the final state"]
    for f in blocking(findings):
        reasons.append(f"reviewer ({f.view}): {f.message}" + (f" [{f.file}]" if f.file else ""))
    if not reasons:
        out.append(
            (
                "completion.accepted",
                {"call_id": call_id, "evidence": [r.id for r in results] + ([verify.id] if verify else [])},
            )
        )
        return out
    refusals = sum(1 for e in events if e.kind == "completion.refused") + 1
    out.append(
        (
            "completion.refused",
            {
                "call_id": call_id,
                "reasons": reasons,
                "refusals": refusals,
                "max_refusals": envelope.verification.max_refusals,
                "diagnostics": diagnostics[:20],
            },
        )
    )
    return out
