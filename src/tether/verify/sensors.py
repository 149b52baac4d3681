"""The six sensors. Each is a function ``SensorContext -> SensorResult``.

=============  =====================================================================  ==========================
sensor         checks                                                                 SKIPPED when
=============  =====================================================================  ==========================
syntax         the changed Python files compile (in process, nothing executed)        —
policy         the diff stays inside the envelope's write set, churn under            —
               ``budgets.churn_pct``, no added line matches a credential pattern
lint           ``ruff check`` on the changed Python files                              ruff is not installed
types          the project's configured checker (mypy / pyright) on the changed files  none configured, or missing
scoped_tests   the tests whose imports reach a changed file (``tether.verify.scope``)  none selected, or no pytest
tests          ``verification.test_command``                                          the runner is missing, or
                                                                                      it collected no tests
=============  =====================================================================  ==========================

A missing tool is SKIPPED, never PASS. Commands run through the sandbox passed in.
"""

from __future__ import annotations

import configparser
import json
import re
import secrets
import shlex
import shutil
import tempfile
import time
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pathspec

from tether.envelope.schema import Envelope
from tether.events.kinds_verify import SuiteBaseline

from .gitdiff import WorkspaceDiff, diff_for, is_artefact
from .integrity import FAILING, compare, describe, tolerated_failures
from .result import Diagnostic, Outcome, SensorResult
from .runner import NOT_FOUND_EXIT, CommandSandbox, ReceiptLike, find_tool
from .scope import select_tests
from .secret_patterns import scan_line
from .testreport import ReportError, TestReport, run_reported, runner_of
from .testsurface import read_bytes

LINT_TIMEOUT_S = 120.0
TYPES_TIMEOUT_S = 600.0
TESTS_TIMEOUT_S = 1800.0
MAX_DIAGNOSTICS = 50


@dataclass(frozen=True)
class SensorContext:
    envelope: Envelope
    workspace: Path
    changed_files: tuple[str, ...]
    sandbox: CommandSandbox
    baseline: str | None
    required: bool
    test_baseline: SuiteBaseline | None = None

    @property
    def changed_python(self) -> list[str]:
        return sorted(f for f in self.changed_files if f.endswith(".py") and (self.workspace / f).is_file())


Sensor = Callable[[SensorContext], SensorResult]


def _result(
    ctx: SensorContext, name: str, outcome: Outcome, summary: str, diags: Sequence[Diagnostic] = (), t0: float = 0.0
) -> SensorResult:
    return SensorResult(
        name, outcome, ctx.required, summary, tuple(diags[:MAX_DIAGNOSTICS]), time.monotonic() - t0 if t0 else 0.0
    )


def _missing(receipt: ReceiptLike, module: str | None = None) -> bool:
    if receipt.exit_code == NOT_FOUND_EXIT:
        return True
    return module is not None and f"No module named {module}" in receipt.stderr + receipt.stdout


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def _timeout(ctx: SensorContext, tool: str, default: float) -> float:
    contract = ctx.envelope.tool(tool)
    return float(contract.timeout_s) if contract is not None and contract.timeout_s else default


# ---- syntax --------------------------------------------------------------------------------


def syntax(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    files = ctx.changed_python
    diags = []
    for rel in files:
        try:
            source = (ctx.workspace / rel).read_bytes()
            compile(source, rel, "exec", dont_inherit=True)
        except SyntaxError as e:
            diags.append(Diagnostic(rel, e.lineno, f"{type(e).__name__}: {e.msg}", "syntax"))
        except (ValueError, OSError) as e:
            diags.append(Diagnostic(rel, None, f"cannot compile: {e}", "syntax"))
    if diags:
        return _result(
            ctx, "syntax", "FAIL", f"{len(diags)} of {len(files)} changed Python files do not compile", diags, t0
        )
    return _result(ctx, "syntax", "PASS", f"{len(files)} changed Python files compile", (), t0)


# ---- policy --------------------------------------------------------------------------------


def _spec(globs: Sequence[str]) -> pathspec.PathSpec[Any]:
    return pathspec.PathSpec.from_lines("gitignore", globs)


def policy_problems(envelope: Envelope, diff: WorkspaceDiff, changed_files: Sequence[str]) -> list[Diagnostic]:
    """Write-set, churn and secret violations of a diff (shared with the reviewer)."""
    fs = envelope.environment.filesystem
    write = _spec(fs.write if fs else [])
    deny = _spec(fs.deny if fs else [])
    paths = sorted({*diff.paths, *(c for c in changed_files if not is_artefact(c))})
    diags: list[Diagnostic] = []
    for p in paths:
        if deny.match_file(p):
            diags.append(
                Diagnostic(p, None, "changed a path the envelope denies (environment.filesystem.deny)", "policy.deny")
            )
        elif not write.match_file(p):
            allowed = ", ".join(fs.write) if fs and fs.write else "nothing"
            diags.append(Diagnostic(p, None, f"changed outside the write set (allowed: {allowed})", "policy.write_set"))
    limit = envelope.budgets.churn_pct
    churn = diff.churn_pct
    if limit is not None and churn is not None and churn > limit:
        diags.append(
            Diagnostic(
                "",
                None,
                f"churn {churn:.1f}% exceeds budgets.churn_pct {limit:g}% "
                f"(+{diff.insertions}/-{diff.deletions} of {diff.baseline_lines} lines)",
                "policy.churn",
            )
        )
    for f in diff.files:
        for line_no, text in f.added:
            for hit in scan_line(text):
                diags.append(
                    Diagnostic(f.path, line_no, f"adds what looks like a {hit.kind} ({hit.redacted})", "policy.secret")
                )
    return diags


def policy(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    diff = diff_for(ctx.workspace, ctx.baseline, ctx.changed_files)
    diags = policy_problems(ctx.envelope, diff, ctx.changed_files)
    churn = f"; churn {diff.churn_pct:.1f}%" if diff.churn_pct is not None else "; churn unknown (no git baseline)"
    n = len({*diff.paths, *ctx.changed_files})
    if diags:
        return _result(ctx, "policy", "FAIL", f"{len(diags)} policy violations in {n} changed files{churn}", diags, t0)
    return _result(ctx, "policy", "PASS", f"{n} changed files inside the write set, no secrets{churn}", (), t0)


# ---- lint ----------------------------------------------------------------------------------


def lint(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    files = ctx.changed_python
    if not files:
        return _result(ctx, "lint", "PASS", "no changed Python files to lint", (), t0)
    ruff = find_tool("ruff", ctx.workspace)
    if ruff is None:
        return _result(ctx, "lint", "SKIPPED", "ruff is not installed", (), t0)
    cmd = [ruff, "check", "--output-format=json", "--no-cache", "--force-exclude", "--", *files]
    r = ctx.sandbox.run(cmd, cwd=ctx.workspace, timeout_s=LINT_TIMEOUT_S)
    if _missing(r):
        return _result(ctx, "lint", "SKIPPED", "ruff is not available in the sandbox", (), t0)
    if r.timed_out:
        return _result(ctx, "lint", "FAIL", f"ruff timed out after {LINT_TIMEOUT_S:g}s", (), t0)
    try:
        items: list[dict[str, Any]] = json.loads(r.stdout or "[]")
    except json.JSONDecodeError:
        return _result(ctx, "lint", "FAIL", f"ruff failed (exit {r.exit_code}): {_tail(r.stderr, 3)}", (), t0)
    diags = [
        Diagnostic(
            _rel(ctx.workspace, str(i.get("filename", ""))),
            (i.get("location") or {}).get("row"),
            str(i.get("message", "")),
            i.get("code"),
        )
        for i in items
    ]
    if diags or r.exit_code not in (0, None):
        summary = (
            f"ruff: {len(diags)} problems in {len(files)} files"
            if diags
            else f"ruff exit {r.exit_code}: {_tail(r.stderr, 3)}"
        )
        return _result(ctx, "lint", "FAIL", summary, diags, t0)
    return _result(ctx, "lint", "PASS", f"ruff: {len(files)} files clean", (), t0)


def _rel(workspace: Path, filename: str) -> str:
    p = Path(filename)
    try:
        return p.resolve().relative_to(workspace.resolve()).as_posix() if p.is_absolute() else p.as_posix()
    except ValueError:
        return filename


# ---- types ---------------------------------------------------------------------------------


def configured_type_checker(workspace: Path) -> str | None:
    """``mypy`` or ``pyright`` when the project configures one (pyproject, setup.cfg, mypy.ini, pyrightconfig)."""
    pyproject = workspace / "pyproject.toml"
    tool: dict[str, Any] = {}
    if pyproject.is_file():
        try:
            tool = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {})
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            tool = {}
    if "mypy" in tool or (workspace / "mypy.ini").is_file() or (workspace / ".mypy.ini").is_file():
        return "mypy"
    setup_cfg = workspace / "setup.cfg"
    if setup_cfg.is_file():
        cp = configparser.ConfigParser()
        try:
            cp.read(setup_cfg, encoding="utf-8")
        except configparser.Error:
            pass
        else:
            if cp.has_section("mypy"):
                return "mypy"
    if "pyright" in tool or (workspace / "pyrightconfig.json").is_file():
        return "pyright"
    return None


_MYPY_LINE = re.compile(
    r"^(?P<file>[^:\n]+\.pyi?):(?P<line>\d+)(?::\d+)?: error: (?P<msg>.*?)(?:\s+\[(?P<code>[a-z\-]+)\])?$"
)


def types(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    checker = configured_type_checker(ctx.workspace)
    if checker is None:
        return _result(ctx, "types", "SKIPPED", "no type checker configured (mypy/pyright)", (), t0)
    files = ctx.changed_python
    if not files:
        return _result(ctx, "types", "PASS", f"{checker}: no changed Python files to check", (), t0)
    exe = find_tool(checker, ctx.workspace)
    if exe is None:
        return _result(ctx, "types", "SKIPPED", f"{checker} is configured but not installed", (), t0)
    if checker == "mypy":
        cmd = [exe, "--no-color-output", "--no-error-summary", "--show-error-codes", "--", *files]
    else:
        cmd = [exe, "--outputjson", *files]
    r = ctx.sandbox.run(cmd, cwd=ctx.workspace, timeout_s=TYPES_TIMEOUT_S)
    if _missing(r):
        return _result(ctx, "types", "SKIPPED", f"{checker} is not available in the sandbox", (), t0)
    if r.timed_out:
        return _result(ctx, "types", "FAIL", f"{checker} timed out after {TYPES_TIMEOUT_S:g}s", (), t0)
    diags: list[Diagnostic] = []
    if checker == "mypy":
        for line in r.stdout.splitlines():
            m = _MYPY_LINE.match(line.strip())
            if m:
                diags.append(Diagnostic(m["file"], int(m["line"]), m["msg"], m["code"]))
    else:
        try:
            report = json.loads(r.stdout or "{}")
        except json.JSONDecodeError:
            report = {}
        for d in report.get("generalDiagnostics", []):
            if d.get("severity") == "error":
                pos = ((d.get("range") or {}).get("start") or {}).get("line")
                diags.append(
                    Diagnostic(
                        _rel(ctx.workspace, d.get("file", "")),
                        pos + 1 if isinstance(pos, int) else None,
                        d.get("message", ""),
                        d.get("rule"),
                    )
                )
    if diags or r.exit_code != 0:
        summary = (
            f"{checker}: {len(diags)} errors"
            if diags
            else f"{checker} exit {r.exit_code}: {_tail(r.stdout + r.stderr, 3)}"
        )
        return _result(ctx, "types", "FAIL", summary, diags, t0)
    return _result(ctx, "types", "PASS", f"{checker}: {len(files)} files type-check", (), t0)


# ---- tests ---------------------------------------------------------------------------------

_FAILED = re.compile(r"^(FAILED|ERROR) (?P<node>\S+?)(?: - (?P<msg>.*))?$")
_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.py):(?P<line>\d+): (?P<what>\w[\w.]*)")
_PYTEST_SUMMARY = re.compile(r"\b\d+ (passed|failed|error|errors|skipped|xfailed|xpassed|deselected)\b")
PYTEST_NO_TESTS = 5


def parse_pytest(output: str) -> tuple[list[Diagnostic], str]:
    """Failing tests as diagnostics (file, line of the failure when shown, message) and the summary line."""
    locations: dict[str, int] = {}
    for line in output.splitlines():
        m = _LOCATION.match(line.strip())
        if m and m["file"] not in locations:
            locations[m["file"]] = int(m["line"])
    diags = []
    for line in output.splitlines():
        m = _FAILED.match(line.strip())
        if not m:
            continue
        node = m["node"]
        file = node.split("::", 1)[0]
        name = node.split("::", 1)[1] if "::" in node else file
        verb = "failed" if m[1] == "FAILED" else "errored"
        msg = f"{name} {verb}" + (f": {m['msg']}" if m["msg"] else "")
        diags.append(Diagnostic(file, locations.get(file), msg, node))
    summary = next((ln.strip("= ").strip() for ln in reversed(output.splitlines()) if _PYTEST_SUMMARY.search(ln)), "")
    return diags, summary


def _run_tests(ctx: SensorContext, name: str, command: str, t0: float, *, reported: bool = False) -> SensorResult:
    timeout = _timeout(ctx, "run_tests", TESTS_TIMEOUT_S)
    # A fresh bytecode cache: an edit that keeps a file's size within the same second would
    # otherwise run stale .pyc files (CPython and pytest's rewrite cache validate by mtime+size).
    cache = Path(tempfile.gettempdir()) / f"tether-pycache-{secrets.token_hex(6)}"
    env = {"PYTHONPYCACHEPREFIX": str(cache)}
    report: TestReport | ReportError | None = None
    try:
        if reported:
            r, report = run_reported(ctx.sandbox, ctx.workspace, command, timeout_s=timeout, env=env)
        else:
            r = ctx.sandbox.run(command, cwd=ctx.workspace, timeout_s=timeout, env=env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    output = r.stdout + "\n" + r.stderr
    if _missing(r, "pytest"):
        return _result(ctx, name, "SKIPPED", f"test runner not available: {command}", (), t0)
    if r.timed_out:
        return _result(ctx, name, "FAIL", f"tests timed out after {timeout:g}s: {command}", (), t0)
    is_pytest = "pytest" in command
    diags, summary = parse_pytest(output) if is_pytest else ([], "")
    if report is not None:
        judged = _judge_report(ctx, name, r, report, diags, summary, t0)
        if judged is not None:
            return judged
    if is_pytest and r.exit_code == PYTEST_NO_TESTS:
        return _result(ctx, name, "SKIPPED", "pytest collected no tests", (), t0)
    if r.exit_code == 0:
        return _result(ctx, name, "PASS", summary or f"{command}: exit 0", (), t0)
    if not diags:
        diags = [Diagnostic("", None, _tail(output) or f"exit {r.exit_code}", f"exit {r.exit_code}")]
    return _result(ctx, name, "FAIL", summary or f"{command}: exit {r.exit_code}", diags, t0)


def _judge_report(
    ctx: SensorContext,
    name: str,
    r: ReceiptLike,
    report: TestReport | ReportError,
    diags: list[Diagnostic],
    summary: str,
    t0: float,
) -> SensorResult | None:
    """The verdict the reporter's evidence forces; None to judge by the exit status as usual.

    An unusable report fails; so does any test-integrity problem against the baseline. Failures that the
    baseline already had and ``verification.must_fix`` does not require to be fixed are tolerated.
    """
    if isinstance(report, ReportError):
        return _result(ctx, name, "FAIL", "the test run's report is unusable", [_report_diag(str(report))], t0)
    if r.exit_code != report.exitstatus:
        why = f"the test process exited {r.exit_code} but pytest's session ended with {report.exitstatus}"
        return _result(ctx, name, "FAIL", "the test run's report is unusable", [_report_diag(why)], t0)
    base = ctx.test_baseline
    if base is None or not base.ok:
        return None
    must_fix = ctx.envelope.verification.must_fix
    problems = compare(base, report, lambda p: read_bytes(ctx.workspace, p), must_fix)
    tail = summary or f"exit {r.exit_code}"
    if problems:
        return _result(
            ctx, name, "FAIL", f"{describe(problems)}; {tail}", [p.diagnostic() for p in problems] + diags, t0
        )
    tolerated = tolerated_failures(base, must_fix)
    failing = {t.id for t in report.tests if t.outcome in FAILING}
    if r.exit_code == 1 and failing and failing <= tolerated and not report.errors:
        note = f"{len(failing)} failing at the baseline too, tolerated by verification.must_fix"
        return _result(ctx, name, "PASS", f"{tail} ({note})", (), t0)
    return None


def _report_diag(message: str) -> Diagnostic:
    return Diagnostic("", None, message, "integrity.report")


def tests(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    command = ctx.envelope.verification.test_command.strip()
    if not command:
        return _result(ctx, "tests", "SKIPPED", "no verification.test_command", (), t0)
    first = shlex.split(command)[0]
    if "/" not in first and find_tool(first, ctx.workspace) is None:
        return _result(ctx, "tests", "SKIPPED", f"{first} is not installed", (), t0)
    return _run_tests(ctx, "tests", command, t0, reported=runner_of(command) == "pytest")


def scoped_tests(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    command = ctx.envelope.verification.test_command.strip()
    if "pytest" not in command:
        return _result(ctx, "scoped_tests", "SKIPPED", "scoped tests need a pytest test_command", (), t0)
    selected = select_tests(ctx.workspace, ctx.changed_files)
    if not selected:
        return _result(ctx, "scoped_tests", "SKIPPED", "no tests import the changed files", (), t0)
    cmd = command + " -- " + " ".join(shlex.quote(s) for s in selected)
    res = _run_tests(ctx, "scoped_tests", cmd, t0)
    note = f" ({len(selected)} test files selected: {', '.join(selected[:5])}{'…' if len(selected) > 5 else ''})"
    return SensorResult(res.sensor, res.result, res.required, res.summary + note, res.diagnostics, res.duration_s)


SENSORS: dict[str, Sensor] = {
    "syntax": syntax,
    "policy": policy,
    "lint": lint,
    "types": types,
    "scoped_tests": scoped_tests,
    "tests": tests,
}
#: Cheapest first.
ORDER: tuple[str, ...] = ("syntax", "policy", "lint", "types", "scoped_tests", "tests")


def normalise(path: str) -> str:
    return PurePosixPath(path).as_posix().removeprefix("./")
