"""Pre-flight: before the first model call, can this run be verified at all? And the test-integrity baseline.

Checks (each a :class:`PreflightCheck`; a failed one stops the run at once with the fix):

- every *required* sensor's tool exists — ``ruff`` for lint, the configured checker for types, the test
  command's program for tests and scoped_tests (BLOCKED_DEPENDENCY when missing; NEEDS_INPUT when the
  envelope asks for something unconfigured, such as required types with no checker);
- the test command collects at least one test (NEEDS_INPUT otherwise, naming the command);
- no ``name.pyc`` without its ``name.py`` lies in the workspace (NEEDS_INPUT: the tests sensor would refuse
  to run over bytecode tether did not compile).

The collection check is the baseline run itself: the whole test command runs once in the sandbox with
tether's reporter (``testreport``), before the agent can write anything, and its report — every test id
with its outcome and the shape of each test function — plus the bytes of the test surface become the
``tests.baseline`` event that completion is compared against (``integrity``). ``tether doctor --envelope``
runs the same checks with ``--collect-only``.
"""

from __future__ import annotations

import functools
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from tether.envelope.schema import Envelope
from tether.events.kinds_baseline import CachedBytecode, SuiteBaseline
from tether.events.kinds_verify import PreflightCheck

from . import bytecode, shadowing
from .cascade import planned_sensors
from .integrity import baseline_shapes
from .runner import NOT_FOUND_EXIT, CommandSandbox, ReceiptLike, find_tool
from .sensors import TESTS_TIMEOUT_S, configured_type_checker
from .testreport import ReportError, TestReport, run_reported, runner_of
from .testsurface import digest, read_bytes, surface_files

TEST_SENSORS = ("tests", "scoped_tests")


@dataclass(frozen=True)
class Preflight:
    checks: list[PreflightCheck]
    baseline: SuiteBaseline | None = None
    blobs: dict[str, bytes] = field(default_factory=dict)
    """The test surface's bytes by hash, for the event store's blobs."""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> list[PreflightCheck]:
        return [c for c in self.checks if not c.ok]


def tool_checks(envelope: Envelope, workspace: Path) -> list[PreflightCheck]:
    """One check per required sensor that runs a tool."""
    out: list[PreflightCheck] = []
    for name, required in planned_sensors(envelope):
        if not required:
            continue
        if name == "lint":
            out.append(_tool("lint", "ruff", envelope, workspace, "install ruff where tether runs (pip install ruff)"))
        elif name == "types":
            checker = configured_type_checker(workspace)
            if checker is None:
                out.append(
                    PreflightCheck(
                        name="types",
                        ok=False,
                        detail="the types sensor is required but the project configures no type checker",
                        fix="configure mypy or pyright in the project, or make types optional in verification.sensors",
                        status="NEEDS_INPUT",
                    )
                )
            else:
                out.append(_tool("types", checker, envelope, workspace, f"install {checker} where tether runs"))
        elif name in TEST_SENSORS:
            out.append(_test_program(name, envelope, workspace))
    return out


def _tool(sensor: str, tool: str, envelope: Envelope, workspace: Path, fix: str) -> PreflightCheck:
    found = find_tool(tool, workspace, envelope.verification.tools)
    if found is None:
        return PreflightCheck(
            name=sensor,
            ok=False,
            detail=f"{tool} (needed by {sensor}) is not installed",
            fix=fix,
            status="BLOCKED_DEPENDENCY",
        )
    return PreflightCheck(name=sensor, ok=True, detail=f"{tool}: {found}")


def _test_program(sensor: str, envelope: Envelope, workspace: Path) -> PreflightCheck:
    command = envelope.verification.test_command.strip()
    if not command:
        return PreflightCheck(
            name=sensor,
            ok=False,
            detail="verification.test_command is empty",
            fix="set verification.test_command (e.g. python -m pytest -q)",
            status="NEEDS_INPUT",
        )
    try:
        first = shlex.split(command)[0]
    except (ValueError, IndexError):
        return PreflightCheck(
            name=sensor,
            ok=False,
            detail=f"verification.test_command does not parse: {command!r}",
            fix="quote verification.test_command as a shell command",
            status="NEEDS_INPUT",
        )
    if "/" not in first and find_tool(first, workspace, envelope.verification.tools) is None:
        return PreflightCheck(
            name=sensor,
            ok=False,
            detail=f"{first} (verification.test_command) is not installed",
            fix=f"install {first}, or change verification.test_command",
            status="BLOCKED_DEPENDENCY",
        )
    return PreflightCheck(name=sensor, ok=True, detail=f"{first}: found")


def record_baseline(
    envelope: Envelope, workspace: Path, sandbox: CommandSandbox, *, collect_only: bool = False
) -> tuple[PreflightCheck, SuiteBaseline, dict[str, bytes]]:
    """Run the test command once with the reporter; the collection check, the baseline and the surface's bytes."""
    t0 = time.monotonic()
    command = envelope.verification.test_command.strip()
    workspace = workspace.resolve()
    surface, blobs = _surface(workspace)
    runner = runner_of(command)
    baseline = functools.partial(SuiteBaseline, command=command, runner=runner, surface=surface)
    if runner != "pytest":
        check = PreflightCheck(name="collection", ok=True, detail=f"not checked: {command!r} is not pytest")
        return check, baseline(ok=False, loaders=_stamp_loaders(workspace, blobs), detail=_NOT_PYTEST), blobs
    contract = envelope.tool("run_tests")
    timeout = float(contract.timeout_s) if contract is not None and contract.timeout_s else TESTS_TIMEOUT_S
    receipt, report, cached = _run_suite(sandbox, workspace, command, timeout, blobs, collect_only=collect_only)
    loaders = _stamp_loaders(workspace, blobs)  # after the run: what the project's own tests build is not the agent's
    took = round(time.monotonic() - t0, 6)
    if isinstance(report, ReportError):
        base = baseline(ok=False, detail=str(report), exit_code=receipt.exit_code, duration_s=took, loaders=loaders)
        return _no_report(command, receipt, report), base, blobs
    errors = [f"{e.id}: {e.message.strip().splitlines()[-1] if e.message.strip() else 'error'}" for e in report.errors]
    base = baseline(
        ok=True,
        exit_code=receipt.exit_code,
        tests=baseline_shapes(report.tests, lambda p: read_bytes(workspace, p)),
        deselected=report.deselected,
        errors=errors,
        duration_s=took,
        bytecode=cached,
        loaders=loaders,
        detail=f"{len(report.tests)} tests collected" + (f", {len(errors)} collection errors" if errors else ""),
    )
    return _collection(command, report, errors, collect_only=collect_only), base, blobs


_NOT_PYTEST = (
    "no per-test baseline: test integrity needs a pytest test command (unittest-style suites run under pytest too)"
)


def _surface(workspace: Path) -> tuple[dict[str, str], dict[str, bytes]]:
    """The test surface as it is before the agent starts: each file's digest by path, and the bytes by digest
    (completion compares against these; an unreadable file is left out, as if absent)."""
    blobs: dict[str, bytes] = {}
    surface: dict[str, str] = {}
    for path in surface_files(workspace):
        data = read_bytes(workspace, path)
        if data is not None:
            surface[path] = digest(data)
            blobs[surface[path]] = data
    return surface, blobs


def _run_suite(
    sandbox: CommandSandbox,
    workspace: Path,
    command: str,
    timeout: float,
    blobs: dict[str, bytes],
    *,
    collect_only: bool,
) -> tuple[ReceiptLike, TestReport | ReportError, list[CachedBytecode]]:
    """The baseline run: the receipt, the report (or why there is none) and the bytecode it compiled.

    A look (``collect_only``, tether doctor) leaves the workspace's bytecode as it is and writes none. A real
    baseline compiles everything from source, with no bytecode found in the workspace; what it compiled is
    captured (the bytes into ``blobs``) for completion runs to reuse, unless the run could not start from
    none (an environment had to point Python elsewhere, or sourceless bytecode was there)."""
    if collect_only:
        receipt, report = run_reported(
            sandbox, workspace, command, timeout_s=timeout, env={"PYTHONDONTWRITEBYTECODE": "1"}, collect_only=True
        )
        return receipt, report, []
    with bytecode.fresh(workspace) as (env, dropped):
        receipt, report = run_reported(sandbox, workspace, command, timeout_s=timeout, env=env)
    cached = bytecode.capture(workspace, blobs) if not env and not dropped.sourceless else []
    return receipt, report, cached


def _no_report(command: str, receipt: ReceiptLike, report: ReportError) -> PreflightCheck:
    """The failed collection check of a run that left no report, with its output's tail: pytest missing where
    the command runs is a dependency to install (BLOCKED_DEPENDENCY); anything else is the command to fix."""
    missing = receipt.exit_code == NOT_FOUND_EXIT or "No module named pytest" in receipt.stderr + receipt.stdout
    tail = (receipt.stderr.strip() or receipt.stdout.strip())[-600:]
    detail = f"{command!r} produced no test report (exit {receipt.exit_code}): {report}" + (f"\n{tail}" if tail else "")
    return PreflightCheck(
        name="collection",
        ok=False,
        detail=detail,
        fix="install pytest where the test command runs"
        if missing
        else "make verification.test_command run pytest on the project's tests (try it in `tether exec`)",
        status="BLOCKED_DEPENDENCY" if missing else "NEEDS_INPUT",
    )


def _collection(command: str, report: TestReport, errors: list[str], *, collect_only: bool) -> PreflightCheck:
    """The collection check of a run that reported: it fails when no test was collected (a command pointed at
    the wrong place, or collection errors), else says how many, and after a real run their outcomes."""
    if not report.tests:
        why = f"{command!r} collects no tests" + (f" ({len(errors)} collection errors: {errors[0]})" if errors else "")
        return PreflightCheck(
            name="collection",
            ok=False,
            detail=why,
            fix="point verification.test_command at the project's tests (e.g. python -m pytest tests/), "
            "or fix the collection errors",
            status="NEEDS_INPUT",
        )
    counts: dict[str, int] = {}
    for t in report.tests:
        counts[t.outcome] = counts.get(t.outcome, 0) + 1
    summary = "" if collect_only else " (" + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())) + ")"
    return PreflightCheck(name="collection", ok=True, detail=f"{len(report.tests)} tests collected{summary}")


def _stamp_loaders(workspace: Path, blobs: dict[str, bytes]) -> str:
    data = shadowing.dump(shadowing.scan(workspace)[0])
    blobs[digest(data)] = data
    return digest(data)


def run_preflight(
    envelope: Envelope, workspace: Path, sandbox: CommandSandbox, *, collect_only: bool = False
) -> Preflight:
    """Every check; the baseline is recorded when the tools are there and the envelope runs the tests sensor."""
    checks = tool_checks(envelope, workspace)
    if any(not c.ok for c in checks) or "tests" not in {name for name, _ in planned_sensors(envelope)}:
        return Preflight(checks)
    stray = bytecode.sourceless(workspace)
    if stray:  # the completion run would refuse them: say so now, before the agent works for nothing
        shown = ", ".join(stray[:5]) + (" ..." if len(stray) > 5 else "")
        fix = "delete them (tether runs no bytecode it did not compile), or keep the .py beside each"
        why = f"bytecode without source, which Python would import: {shown}"
        stop = PreflightCheck(name="bytecode", ok=False, detail=why, fix=fix, status="NEEDS_INPUT")
        return Preflight([*checks, stop])
    check, base, blobs = record_baseline(envelope, workspace, sandbox, collect_only=collect_only)
    return Preflight([*checks, check], base, blobs)
