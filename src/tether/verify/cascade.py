"""The verification cascade: sensors cheapest first, stopping at the first failure.

``run_cascade`` is the effectful part (sensors run commands through the sandbox);
``completion_verdict`` and ``cascade_events`` are pure.

Which sensors run: those the envelope lists in ``verification.sensors`` (with their
``required`` flags); an envelope that lists none gets every sensor, none required.

The cascade stops at the first *stopping* failure: a required sensor's FAIL, or a
``scoped_tests`` FAIL (its tests are a subset of the suite, so the full run would only
fail again, later). Sensors after it are reported SKIPPED ("not reached"), so a
required sensor behind a failure still blocks completion. An optional sensor's other
failures (a lint finding) are reported with their diagnostics, and the cascade goes
on: ``required: false`` must never gate completion on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tether.envelope.schema import Envelope
from tether.events.kinds_verify import SuiteBaseline

from .result import Diagnostic, SensorResult
from .runner import CommandSandbox
from .sensors import ORDER, SENSORS, SensorContext, normalise

#: Optional sensors whose failure implies a later required one would fail too (so it is not run).
PREDICTIVE = frozenset({"scoped_tests"})
NOT_REACHED = "not reached: "

__all__ = ["Diagnostic", "SensorResult", "cascade_events", "completion_verdict", "planned_sensors", "run_cascade"]


def planned_sensors(envelope: Envelope) -> list[tuple[str, bool]]:
    """(sensor, required) in cascade order."""
    declared = {s.name: s.required for s in envelope.verification.sensors}
    if not declared:
        return [(name, False) for name in ORDER]
    return [(name, declared[name]) for name in ORDER if name in declared]


def run_cascade(
    envelope: Envelope,
    workspace: Path,
    changed_files: Sequence[str],
    sandbox: CommandSandbox,
    baseline: str | None,
    test_baseline: SuiteBaseline | None = None,
) -> list[SensorResult]:
    changed = tuple(sorted({normalise(f) for f in changed_files}))
    results: list[SensorResult] = []
    failed: str | None = None
    for name, required in planned_sensors(envelope):
        if failed is not None:
            results.append(SensorResult(name, "SKIPPED", required, f"{NOT_REACHED}{failed} failed"))
            continue
        ctx = SensorContext(envelope, workspace, changed, sandbox, baseline, required, test_baseline)
        res = SENSORS[name](ctx)
        results.append(res)
        if res.result == "FAIL" and (required or name in PREDICTIVE):
            failed = name
    return results


def completion_verdict(results: Sequence[SensorResult], envelope: Envelope) -> tuple[bool, list[str]]:
    """Accepted only when every required sensor PASSed; a required FAIL, SKIPPED or missing result blocks."""
    by_name = {r.sensor: r for r in results}
    reasons: list[str] = []
    for name, required in planned_sensors(envelope):
        if not required:
            continue
        r = by_name.get(name)
        if r is None:
            reasons.append(f"required sensor {name} did not run")
        elif r.result == "FAIL":
            first = f" — {r.diagnostics[0]}" if r.diagnostics else ""
            reasons.append(f"required sensor {name} FAILED: {r.summary}{first}")
        elif r.result == "SKIPPED":
            reasons.append(f"required sensor {name} was SKIPPED: {r.summary}{_blocker(r, by_name)}")
    return (not reasons, reasons)


def _blocker(skipped: SensorResult, by_name: dict[str, SensorResult]) -> str:
    """For a sensor not reached behind a failure: that failure's first diagnostic, so the reason can be acted on."""
    if not skipped.summary.startswith(NOT_REACHED):
        return ""
    failed = by_name.get(skipped.summary.removeprefix(NOT_REACHED).split(" ", 1)[0])
    if failed is None or failed.result != "FAIL":
        return ""
    return f" ({failed.sensor}: {failed.summary}" + (f" — {failed.diagnostics[0]})" if failed.diagnostics else ")")


def cascade_events(
    results: Sequence[SensorResult], envelope: Envelope, *, trigger: str = "", changed_files: Sequence[str] = ()
) -> list[tuple[str, dict[str, Any]]]:
    """The events recording one cascade: a ``sensor.result`` per sensor, then ``verify.completed``."""
    accepted, reasons = completion_verdict(results, envelope)
    out: list[tuple[str, dict[str, Any]]] = [("sensor.result", r.to_payload(trigger)) for r in results]
    out.append(
        (
            "verify.completed",
            {
                "trigger": trigger,
                "results": {r.sensor: r.result for r in results},
                "changed_files": sorted({normalise(f) for f in changed_files}),
                "accepted": accepted,
                "reasons": reasons,
            },
        )
    )
    return out
