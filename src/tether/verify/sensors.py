"""The six sensors. Each is a function ``SensorContext -> SensorResult``.

=============  =====================================================================  ==========================
sensor         checks                                                                 SKIPPED when
=============  =====================================================================  ==========================
syntax         the changed Python files compile (in process, nothing executed)        —
policy         the diff stays inside the envelope's write set, churn under            —
               ``budgets.churn_pct``, no added line matches a credential pattern
lint           ``ruff check`` on the changed Python files: problems the run introduced  ruff is not installed
types          the project's configured checker (mypy / pyright) on the changed files  none configured, or missing
               (mypy: problems the run introduced)
scoped_tests   the tests whose imports reach a changed file (``tether.verify.scope``)  none selected, or no pytest
tests          ``verification.test_command``                                          the runner is missing, or
                                                                                      it collected no tests
=============  =====================================================================  ==========================

A missing tool is SKIPPED, never PASS; a tool that times out, crashes or prints what cannot be
parsed is ERROR. Commands run through the sandbox passed in; the result names the binary that ran.

"Introduced": lint and mypy also run on the baseline version of each changed file (its bytes from
the baseline snapshot, checked in the sandbox as if at the file's own path: ruff's
``--stdin-filename``, mypy's ``--shadow-file``), and a problem counts only when the final file has
more of it (same file, code and message) than the baseline had. A file the run added has no
baseline: all its problems are the run's.
"""

from __future__ import annotations

import configparser
import json
import re
import shlex
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

import pathspec

from tether.envelope.schema import Envelope
from tether.events.kinds_baseline import SuiteBaseline
from tether.snapshot import BlobStore, Manifest, SnapshotError, read_content

from . import bytecode, sensorconfig, shadowing
from .changes import WorkspaceDiff
from .integrity import FAILING, compare, describe, tolerated_failures
from .result import BLOCKING, Diagnostic, Outcome, SensorResult
from .runner import NOT_FOUND_EXIT, CommandSandbox, ReceiptLike, describe_tool, find_tool
from .scope import select_tests
from .secret_patterns import scan_line
from .testreport import ReportError, TestReport, run_reported, runner_of
from .testsurface import read_bytes

LINT_TIMEOUT_S = 120.0
TYPES_TIMEOUT_S = 600.0
TESTS_TIMEOUT_S = 1800.0
MAX_DIAGNOSTICS = 50
MAX_NOTES = 5  # non-blocking notes appended to a verdict


@dataclass(frozen=True)
class SensorContext:
    """What a sensor sees: the final workspace, the run's snapshot diff and the baseline it was made from."""

    envelope: Envelope
    workspace: Path
    changed_files: tuple[str, ...]
    sandbox: CommandSandbox
    diff: WorkspaceDiff
    required: bool
    baseline: Manifest | None = None
    blobs: BlobStore | None = None
    test_baseline: SuiteBaseline | None = None
    origin: Callable[[str], bytes | None] | None = None  # a file's text at the start without a baseline (hooks)
    deadline: float | None = None  # time.monotonic() by which every sensor has answered (a hook's stop)

    def within(self, limit: float) -> float:
        """A command's timeout: ``limit``, or less as the deadline nears (a command timed out is an ERROR)."""
        return limit if self.deadline is None else max(0.1, min(limit, self.deadline - time.monotonic()))

    @property
    def changed_python(self) -> list[str]:
        return sorted(f for f in self.changed_files if f.endswith(".py") and (self.workspace / f).is_file())

    def tool(self, name: str) -> str | None:
        return find_tool(name, self.workspace, self.envelope.verification.tools)

    def baseline_bytes(self, rel: str) -> bytes | None:
        """The file as it was when the run started; None when it did not exist or cannot be read back. Without a
        baseline, its text in ``origin`` (a hook session's commit), or None."""
        if self.baseline is None and self.origin is not None:
            return self.origin(rel)
        entry = self.baseline.entries.get(rel) if self.baseline is not None else None
        if entry is None:
            return None
        try:
            return read_content(entry, self.blobs)
        except SnapshotError:
            return None


#: ``STDIN_FROM + [content, *argv]`` runs argv with ``content`` on its standard input. The bytes travel
#: as an argument because no host path is visible in every sandbox (bwrap covers ``.tether/``).
STDIN_FROM = ["/bin/sh", "-c", 'c="$1"; shift; printf "%s" "$c" | "$@"', "sh"]
MAX_ARG_BYTES = 100_000  # under Linux's 128 KiB limit on one argument


def baseline_text(ctx: SensorContext, rel: str) -> str | None:
    """The file's baseline bytes as an argument, or None (no baseline version, unreadable, or too large)."""
    data = ctx.baseline_bytes(rel)
    if data is None or len(data) > MAX_ARG_BYTES or b"\0" in data:
        return None
    return data.decode("utf-8", "surrogateescape")


def introduced(after: Sequence[Diagnostic], before: Sequence[Diagnostic]) -> list[Diagnostic]:
    """The diagnostics of ``after`` beyond what ``before`` already had (same file, code and message)."""
    budget = Counter((d.file, d.code, d.message) for d in before)
    out = []
    for d in after:
        key = (d.file, d.code, d.message)
        if budget[key] > 0:
            budget[key] -= 1
        else:
            out.append(d)
    return out


Sensor = Callable[[SensorContext], SensorResult]


def _result(
    ctx: SensorContext,
    name: str,
    outcome: Outcome,
    summary: str,
    diags: Sequence[Diagnostic] = (),
    t0: float = 0.0,
    tool: str = "",
) -> SensorResult:
    took = time.monotonic() - t0 if t0 else 0.0
    return SensorResult(name, outcome, ctx.required, summary, tuple(diags[:MAX_DIAGNOSTICS]), took, tool)


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
    """Write-set, churn and secret violations of a diff (shared with the reviewer).

    The paths checked are the snapshot diff's plus what receipts reported (a tool may write a path the
    snapshot ignores, such as a git-ignored ``.env``); paths under ``.tether/`` are tether's own.
    """
    fs = envelope.environment.filesystem
    write = _spec(fs.write if fs else [])
    deny = _spec(fs.deny if fs else [])
    paths = sorted({*diff.paths, *(c for c in changed_files if not _tethers(c))})
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
                f"(+{diff.insertions}/-{diff.deletions} of {diff.touched_lines} lines in the touched files)",
                "policy.churn",
            )
        )
    cap = envelope.budgets.churn_lines
    if cap is not None and diff.changed_lines > cap:
        diags.append(
            Diagnostic(
                "",
                None,
                f"{diff.changed_lines} lines changed (+{diff.insertions}/-{diff.deletions}) exceeds "
                f"budgets.churn_lines {cap}",
                "policy.churn_lines",
            )
        )
    for f in diff.files:
        for line_no, text in f.added:
            for hit in scan_line(text):
                diags.append(
                    Diagnostic(f.path, line_no, f"adds what looks like a {hit.kind} ({hit.redacted})", "policy.secret")
                )
    return diags


def _tethers(path: str) -> bool:
    return PurePosixPath(path).parts[:1] == (".tether",)


def policy(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    diff = ctx.diff
    if not diff.available:
        return _result(ctx, "policy", "ERROR", f"the run's changes are unknown: {diff.note}", (), t0)
    diags = policy_problems(ctx.envelope, diff, ctx.changed_files)
    churn = f"; churn {diff.churn_pct:.1f}% ({diff.changed_lines} lines)" if diff.churn_pct is not None else ""
    n = len({*diff.paths, *(c for c in ctx.changed_files if not _tethers(c))})
    if diags:
        return _result(ctx, "policy", "FAIL", f"{len(diags)} policy violations in {n} changed files{churn}", diags, t0)
    return _result(ctx, "policy", "PASS", f"{n} changed files inside the write set, no secrets{churn}", (), t0)


# ---- lint ----------------------------------------------------------------------------------


RUFF_EXIT_OK = (0, 1)  # 1: problems found; anything else is ruff failing


def _ruff_diagnostics(ctx: SensorContext, stdout: str) -> list[Diagnostic] | None:
    try:
        items = json.loads(stdout or "[]")
    except json.JSONDecodeError:
        return None
    if not isinstance(items, list):
        return None
    return [
        Diagnostic(
            _rel(ctx.workspace, str(i.get("filename", ""))),
            (i.get("location") or {}).get("row"),
            str(i.get("message", "")),
            i.get("code"),
        )
        for i in items
        if isinstance(i, dict)
    ]


def lint(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    files = ctx.changed_python
    if not files:
        return _result(ctx, "lint", "PASS", "no changed Python files to lint", (), t0)
    if (off := _config_changed(ctx, "lint", "ruff", t0)) is not None:
        return off
    ruff = ctx.tool("ruff")
    if ruff is None:
        return _result(ctx, "lint", "SKIPPED", "ruff is not installed", (), t0)
    if (planted := _planted_tool(ctx, "lint", ruff, t0)) is not None:
        return planted
    tool = describe_tool(ruff, ctx.sandbox, ctx.workspace)
    base = [ruff, "check", "--output-format=json", "--no-cache", "--force-exclude"]
    r = ctx.sandbox.run([*base, "--", *files], cwd=ctx.workspace, timeout_s=ctx.within(LINT_TIMEOUT_S))
    if _missing(r):
        return _result(ctx, "lint", "SKIPPED", "ruff is not available in the sandbox", (), t0, tool)
    if r.timed_out:
        return _result(ctx, "lint", "ERROR", f"ruff timed out after {LINT_TIMEOUT_S:g}s", (), t0, tool)
    diags = _ruff_diagnostics(ctx, r.stdout)
    if diags is None or r.exit_code not in RUFF_EXIT_OK:
        why = f"ruff failed (exit {r.exit_code}): {_tail(r.stderr or r.stdout, 3)}"
        return _result(ctx, "lint", "ERROR", why, (), t0, tool)
    if not diags:
        return _result(ctx, "lint", "PASS", f"ruff: {len(files)} files clean", (), t0, tool)
    before: list[Diagnostic] = []
    for rel in sorted({d.file for d in diags}):
        text = baseline_text(ctx, rel)
        if text is None:
            continue
        cmd = [*STDIN_FROM, text, *base, "--stdin-filename", rel, "-"]  # checked as if at its own path
        b = ctx.sandbox.run(cmd, cwd=ctx.workspace, timeout_s=ctx.within(LINT_TIMEOUT_S))
        old = _ruff_diagnostics(ctx, b.stdout)
        if b.timed_out or old is None or b.exit_code not in RUFF_EXIT_OK:
            why = f"ruff failed on the baseline version of {rel} (exit {b.exit_code}): {_tail(b.stderr, 3)}"
            return _result(ctx, "lint", "ERROR", why, (), t0, tool)
        before += [replace(d, file=rel) for d in old]
    new = introduced(diags, before)
    if new:
        summary = f"ruff: {len(new)} problems introduced in {len({d.file for d in new})} files"
        summary += f" ({len(diags) - len(new)} more were there before the run)" if len(new) < len(diags) else ""
        return _result(ctx, "lint", "FAIL", summary, new, t0, tool)
    return _result(ctx, "lint", "PASS", f"ruff: no new problems ({len(diags)} were there before the run)", (), t0, tool)


def _config_changed(ctx: SensorContext, name: str, tool: str, t0: float) -> SensorResult | None:
    """FAIL when the run changed ``tool``'s configuration: the final and the baseline check would both read the
    run's rules, so whatever they turned off would be off for both (``tether.verify.sensorconfig``)."""
    changed = {*ctx.diff.paths, *ctx.changed_files}

    def now(path: str) -> bytes | None:
        return read_bytes(ctx.workspace, path)

    paths = sensorconfig.changed(tool, changed, ctx.baseline_bytes, now)
    if paths:
        why = f"the run changed {tool}'s configuration: it decides what {tool} reports, so a run may not change it"
        diags = [Diagnostic(p, None, why, f"{name}.config_changed") for p in paths]
        summary = f"{tool}'s configuration changed in {', '.join(paths[:3])}: revert it (a human changes it)"
        return _result(ctx, name, "FAIL", summary, diags, t0)
    if ctx.baseline is None and ctx.origin is None:  # no version of any file to compare: a directive may be the user's
        return None
    paths = sensorconfig.suppressed(tool, changed, ctx.baseline_bytes, now)
    if not paths:
        return None
    why = f"the run added a line that turns {tool} off for the whole file; remove it (a human adds such a line)"
    diags = [Diagnostic(p, None, why, f"{name}.suppressed") for p in paths]
    return _result(ctx, name, "FAIL", f"{tool} is turned off inside {', '.join(paths[:3])}: {why}", diags, t0)


def _planted_tool(ctx: SensorContext, name: str, exe: str, t0: float) -> SensorResult | None:
    """ERROR when the tool found is in the workspace (its virtualenv) and is not the file that was there at the
    run's start by the baseline scan (``tether.verify.shadowing``): the agent may have written it. Without a
    scan (no test baseline: a hook session, a run without a test command) the tool runs as before."""
    path = Path(exe)
    root = next((r for r in (ctx.workspace, ctx.workspace.resolve()) if path.is_relative_to(r)), None)
    if root is None or not path.is_absolute():
        return None
    baseline = _loader_baseline(ctx)
    rel = path.relative_to(root).as_posix()
    if baseline is None or baseline.get(rel) == shadowing.stamp_of(path):
        return None
    why = f"{rel} is in the workspace and was created or changed since the run's start: it is not run as a sensor"
    diag = Diagnostic(rel, None, why, f"{name}.tool_changed")
    return _result(ctx, name, "ERROR", f"{why} (restore it, or name the tool in verification.tools)", [diag], t0)


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


MYPY_EXIT_OK = (0, 1)  # 1: type errors; 2: mypy itself failed
MAX_MYPY_BASELINES = 10  # mypy runs once per file with errors; beyond this, errors are reported uncompared


def _mypy_diagnostics(stdout: str) -> list[Diagnostic]:
    out = []
    for line in stdout.splitlines():
        m = _MYPY_LINE.match(line.strip())
        if m:
            out.append(Diagnostic(m["file"], int(m["line"]), m["msg"], m["code"]))
    return out


def _pyright_diagnostics(ctx: SensorContext, stdout: str) -> list[Diagnostic] | None:
    try:
        report = json.loads(stdout or "{}")
    except json.JSONDecodeError:
        return None
    if not isinstance(report, dict):
        return None
    diags = []
    for d in report.get("generalDiagnostics", []):
        if d.get("severity") == "error":
            pos = ((d.get("range") or {}).get("start") or {}).get("line")
            line = pos + 1 if isinstance(pos, int) else None
            diags.append(Diagnostic(_rel(ctx.workspace, d.get("file", "")), line, d.get("message", ""), d.get("rule")))
    return diags


def types(ctx: SensorContext) -> SensorResult:
    t0 = time.monotonic()
    checker = configured_type_checker(ctx.workspace)
    if checker is None:
        return _result(ctx, "types", "SKIPPED", "no type checker configured (mypy/pyright)", (), t0)
    files = ctx.changed_python
    if not files:
        return _result(ctx, "types", "PASS", f"{checker}: no changed Python files to check", (), t0)
    if (off := _config_changed(ctx, "types", checker, t0)) is not None:
        return off
    exe = ctx.tool(checker)
    if exe is None:
        return _result(ctx, "types", "SKIPPED", f"{checker} is configured but not installed", (), t0)
    if (planted := _planted_tool(ctx, "types", exe, t0)) is not None:
        return planted
    tool = describe_tool(exe, ctx.sandbox, ctx.workspace)
    if checker == "mypy":
        base = [exe, "--no-color-output", "--no-error-summary", "--show-error-codes"]
        cmd = [*base, "--", *files]
    else:
        cmd = [exe, "--outputjson", *files]
    r = ctx.sandbox.run(cmd, cwd=ctx.workspace, timeout_s=ctx.within(TYPES_TIMEOUT_S))
    if _missing(r):
        return _result(ctx, "types", "SKIPPED", f"{checker} is not available in the sandbox", (), t0, tool)
    if r.timed_out:
        return _result(ctx, "types", "ERROR", f"{checker} timed out after {TYPES_TIMEOUT_S:g}s", (), t0, tool)
    crashed = f"{checker} failed (exit {r.exit_code}): {_tail(r.stderr or r.stdout, 3)}"
    if checker == "pyright":
        return _pyright_result(ctx, _pyright_diagnostics(ctx, r.stdout), crashed, len(files), t0, tool)
    diags = _mypy_diagnostics(r.stdout)
    if r.exit_code not in MYPY_EXIT_OK or (r.exit_code == 1 and not diags):
        return _result(ctx, "types", "ERROR", crashed, (), t0, tool)
    if not diags:
        return _result(ctx, "types", "PASS", f"mypy: {len(files)} files type-check", (), t0, tool)
    return _mypy_against_baseline(ctx, diags, base, t0, tool)


def _pyright_result(
    ctx: SensorContext, found: list[Diagnostic] | None, crashed: str, n_files: int, t0: float, tool: str
) -> SensorResult:
    """pyright's verdict: unlike mypy's, its errors are not compared with the baseline."""
    if found is None:
        return _result(ctx, "types", "ERROR", crashed, (), t0, tool)
    if found:
        summary = f"pyright: {len(found)} errors (not compared with the baseline)"
        return _result(ctx, "types", "FAIL", summary, found, t0, tool)
    return _result(ctx, "types", "PASS", f"pyright: {n_files} files type-check", (), t0, tool)


def _mypy_against_baseline(
    ctx: SensorContext, diags: list[Diagnostic], base: list[str], t0: float, tool: str
) -> SensorResult:
    """mypy fails only on errors the run introduced: each file with errors is checked again as it was at
    the baseline (``--shadow-file``), and the errors already there are not the run's."""
    before: list[Diagnostic] = []
    for rel in sorted({d.file for d in diags})[:MAX_MYPY_BASELINES]:
        text = baseline_text(ctx, rel)
        if text is None:
            continue
        cmd = [*STDIN_FROM, text, *base, "--shadow-file", rel, "/dev/stdin", "--", rel]
        b = ctx.sandbox.run(cmd, cwd=ctx.workspace, timeout_s=ctx.within(TYPES_TIMEOUT_S))
        if b.timed_out or b.exit_code not in MYPY_EXIT_OK:
            why = f"mypy failed on the baseline version of {rel} (exit {b.exit_code}): {_tail(b.stderr or b.stdout, 3)}"
            return _result(ctx, "types", "ERROR", why, (), t0, tool)
        before += [d for d in _mypy_diagnostics(b.stdout) if d.file == rel]
    new = introduced(diags, before)
    if new:
        summary = f"mypy: {len(new)} errors introduced"
        summary += f" ({len(diags) - len(new)} more were there before the run)" if len(new) < len(diags) else ""
        return _result(ctx, "types", "FAIL", summary, new, t0, tool)
    return _result(ctx, "types", "PASS", f"mypy: no new errors ({len(diags)} were there before the run)", (), t0, tool)


# ---- tests ---------------------------------------------------------------------------------

_FAILED = re.compile(r"^(FAILED|ERROR) (?P<node>\S+?)(?: - (?P<msg>.*))?$")
_LOCATION = re.compile(r"^(?P<file>[^\s:]+\.py):(?P<line>\d+): (?P<what>\w[\w.]*)")
_PYTEST_SUMMARY = re.compile(r"\b\d+ (passed|failed|error|errors|skipped|xfailed|xpassed|deselected)\b")
PYTEST_NO_TESTS = 5
PYTEST_BROKEN = (3, 4)  # internal error, usage error: nothing was decided about the code


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
    """The test run's verdict, unless a file Python loads ahead of source appeared before or during it."""
    baseline = _loader_baseline(ctx)
    before = shadowing.judge(ctx.workspace, baseline)
    res = _blocked_by_loaders(ctx, name, before, t0) or _run_tests_once(ctx, name, command, t0, reported=reported)
    if res.result in BLOCKING:
        return res
    after = shadowing.judge(ctx.workspace, baseline)  # the workspace's code ran: it may have built one
    blocked = _blocked_by_loaders(ctx, name, after, t0)
    if blocked is not None:
        return blocked
    notes = [Diagnostic(f.path, None, f.why, f.code) for f in after[:MAX_NOTES]]
    if len(after) > MAX_NOTES:  # a virtualenv with mypyc-compiled packages holds hundreds
        more = f"{len(after) - MAX_NOTES} more extension modules shadow a source, all there at the run's start"
        notes.append(Diagnostic("", None, more, "shadowing.preexisting"))
    return replace(res, diagnostics=res.diagnostics + tuple(notes)) if notes else res


def _loader_baseline(ctx: SensorContext) -> shadowing.Stamps | None:
    """The baseline's scan of extension modules and start-up files; None when there is none or it is unreadable."""
    h = ctx.test_baseline.loaders if ctx.test_baseline is not None else None
    if h is None or ctx.blobs is None:
        return None
    try:
        return shadowing.load(ctx.blobs.get_blob(h))
    except Exception:  # a missing or malformed blob: judged as no baseline (every shadowing extension blocks)
        return None


def _blocked_by_loaders(
    ctx: SensorContext, name: str, found: list[shadowing.Finding], t0: float
) -> SensorResult | None:
    blocking = [f for f in found if f.blocking]
    if not blocking:
        return None
    shown = ", ".join(f.path for f in blocking[:5]) + (" ..." if len(blocking) > 5 else "")
    why = f"files Python would load ahead of the sources appeared or shadow a source: {shown} (delete them)"
    return _result(ctx, name, "FAIL", why, [Diagnostic(f.path, None, f.why, f.code) for f in blocking], t0)


def _run_tests_once(ctx: SensorContext, name: str, command: str, t0: float, *, reported: bool = False) -> SensorResult:
    timeout = ctx.within(_timeout(ctx, "run_tests", TESTS_TIMEOUT_S))
    report: TestReport | ReportError | None = None
    with bytecode.fresh(ctx.workspace) as (env, dropped):
        if dropped.sourceless:
            shown = ", ".join(dropped.sourceless[:5]) + (" ..." if len(dropped.sourceless) > 5 else "")
            why = f"bytecode without source would be imported instead of source: {shown}"
            note = "bytecode without its .py: tether runs no bytecode it did not compile"
            diags = [Diagnostic(p, None, note, "bytecode.sourceless") for p in dropped.sourceless]
            return _result(ctx, name, "ERROR", f"{why} (delete it)", diags, t0)
        if not env and ctx.test_baseline is not None and ctx.blobs is not None:
            bytecode.restore(ctx.workspace, ctx.test_baseline.bytecode, _unchanged_since_baseline(ctx), ctx.blobs)
        if reported:
            r, report = run_reported(ctx.sandbox, ctx.workspace, command, timeout_s=timeout, env=env)
        else:
            r = ctx.sandbox.run(command, cwd=ctx.workspace, timeout_s=timeout, env=env)
    output = r.stdout + "\n" + r.stderr
    if _missing(r, "pytest"):
        return _result(ctx, name, "SKIPPED", f"test runner not available: {command}", (), t0)
    if r.timed_out:
        return _result(ctx, name, "ERROR", f"tests timed out after {timeout:g}s: {command}", (), t0)
    is_pytest = "pytest" in command
    diags, summary = parse_pytest(output) if is_pytest else ([], "")
    if is_pytest and r.exit_code in PYTEST_BROKEN:
        why = f"pytest itself failed (exit {r.exit_code}: internal or usage error): {_tail(output, 3)}"
        return _result(ctx, name, "ERROR", why, (), t0)
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


def _unchanged_since_baseline(ctx: SensorContext) -> Callable[[str, str], bool]:
    """Whether a source still has the digest it had at the run's start, by the snapshot diff (bytes, not times)."""
    diff, baseline = ctx.diff, ctx.baseline
    if diff is None or not diff.available or baseline is None:
        return lambda source, digest: False
    changed = {*diff.paths, *ctx.changed_files}

    def unchanged(source: str, digest: str) -> bool:
        entry = baseline.entries.get(source)
        return entry is not None and entry.digest == digest and source not in changed

    return unchanged


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
    if "/" not in first and ctx.tool(first) is None:
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
