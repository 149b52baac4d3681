"""The verification cascade: sensors cheapest first, stopping at the first failure.

``run_cascade`` is the effectful part (sensors run commands through the sandbox);
``completion_verdict`` and ``cascade_events`` are pure.

Which sensors run: those the envelope lists in ``verification.sensors`` (with their
``required`` flags); an envelope that lists none gets every sensor, none required.

The cascade stops at the first *stopping* failure: a required sensor's FAIL or ERROR, or a
``scoped_tests`` FAIL (its tests are a subset of the suite, so the full run would only
fail again, later). Sensors after it are reported SKIPPED ("not reached"), so a
required sensor behind a failure still blocks completion. An optional sensor's other
failures (a lint finding) are reported with their diagnostics, and the cascade goes
on: ``required: false`` must never gate completion on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from tether.envelope.schema import Envelope
from tether.events.kinds_baseline import SuiteBaseline
from tether.events.kinds_control import VerifyCompleted
from tether.events.payload import Payload
from tether.snapshot import BlobStore, Manifest

from .changes import WorkspaceDiff
from .result import BLOCKING, Diagnostic, SensorResult
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
    diff: WorkspaceDiff,
    *,
    baseline: Manifest | None = None,
    blobs: BlobStore | None = None,
    test_baseline: SuiteBaseline | None = None,
    origin: Callable[[str], bytes | None] | None = None,
    deadline: float | None = None,
) -> list[SensorResult]:
    """Run the planned sensors on the final state; ``diff`` is the run's (snapshot) diff; ``origin``: a file's
    text at the start where there is no ``baseline`` (a hook session: the commit it began on); ``deadline``: the
    ``time.monotonic()`` by which every sensor has answered (a command still running then times out: an ERROR)."""
    changed = tuple(sorted({normalise(f) for f in changed_files}))
    results: list[SensorResult] = []
    failed: str | None = None
    for name, required in planned_sensors(envelope):
        if failed is not None:
            results.append(SensorResult(name, "SKIPPED", required, f"{NOT_REACHED}{failed} failed"))
            continue
        ctx = SensorContext(
            envelope, workspace, changed, sandbox, diff, required, baseline, blobs, test_baseline, origin, deadline
        )
        res = SENSORS[name](ctx)
        results.append(res)
        if res.result in BLOCKING and (required or name in PREDICTIVE):
            failed = name
    return results


def completion_verdict(results: Sequence[SensorResult], envelope: Envelope) -> tuple[bool, list[str]]:
    """Accepted only when every required sensor PASSed; a required FAIL, ERROR, SKIPPED or missing result blocks.

    Required are the sensors the envelope marks so, and every result that says it is required (the
    ``snapshot`` check always does).
    """
    by_name = {r.sensor: r for r in results}
    reasons: list[str] = []
    required_names = [n for n, req in planned_sensors(envelope) if req]
    required_names = [r.sensor for r in results if r.required and r.sensor not in required_names] + required_names
    for name in required_names:
        r = by_name.get(name)
        if r is None:
            reasons.append(f"required sensor {name} did not run")
        elif r.result == "FAIL":
            first = f" — {r.diagnostics[0]}" if r.diagnostics else ""
            reasons.append(f"required sensor {name} FAILED: {r.summary}{first}")
        elif r.result == "ERROR":
            first = f" — {r.diagnostics[0]}" if r.diagnostics else ""
            reasons.append(f"required sensor {name} could not decide (ERROR): {r.summary}{first}")
        elif r.result == "SKIPPED":
            reasons.append(f"required sensor {name} was SKIPPED: {r.summary}{_blocker(r, by_name)}")
    return (not reasons, reasons)


def _blocker(skipped: SensorResult, by_name: dict[str, SensorResult]) -> str:
    """For a sensor not reached behind a failure: that failure's first diagnostic, so the reason can be acted on."""
    if not skipped.summary.startswith(NOT_REACHED):
        return ""
    failed = by_name.get(skipped.summary.removeprefix(NOT_REACHED).split(" ", 1)[0])
    if failed is None or failed.result not in BLOCKING:
        return ""
    return f" ({failed.sensor}: {failed.summary}" + (f" — {failed.diagnostics[0]})" if failed.diagnostics else ")")


def cascade_events(
    results: Sequence[SensorResult], envelope: Envelope, *, trigger: str = "", changed_files: Sequence[str] = ()
) -> list[Payload]:
    """The events recording one cascade: a ``sensor.result`` per sensor, then ``verify.completed``."""
    accepted, reasons = completion_verdict(results, envelope)
    out: list[Payload] = [r.to_payload(trigger) for r in results]
    out.append(
        VerifyCompleted(
            trigger=trigger,
            results={r.sensor: r.result for r in results},
            changed_files=sorted({normalise(f) for f in changed_files}),
            accepted=accepted,
            reasons=reasons,
        )
    )
    return out
