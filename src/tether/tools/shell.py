"""Command built-ins: ``bash`` and ``run_tests``. Both run through ``ctx.sandbox`` in the workspace.

A non-zero exit is an ``ok=False`` result (failure class ``nonzero_exit``, ``timeout``,
``tests_failed`` or ``no_tests``); an unavailable sandbox raises (``SandboxUnavailable``).
"""

from __future__ import annotations

import re
import shlex
from typing import Annotated, Any

from pydantic import Field

from ._paths import clip
from .context import ToolContext
from .contract import tool
from .git import receipt_dict
from .result import ToolResult

MAX_STDOUT_CHARS = 8000
MAX_STDERR_CHARS = 4000


def _effective_timeout(ctx: ToolContext, requested: float | None) -> float:
    """The model may shorten the contract timeout, never extend it."""
    return ctx.timeout_s if requested is None else min(requested, ctx.timeout_s)


def _output_block(stdout: str, stderr: str) -> str:
    parts = []
    if stdout:
        parts.append("--- stdout ---\n" + clip(stdout.rstrip("\n"), MAX_STDOUT_CHARS, keep_tail=True))
    if stderr:
        parts.append("--- stderr ---\n" + clip(stderr.rstrip("\n"), MAX_STDERR_CHARS, keep_tail=True))
    return "\n".join(parts) if parts else "(no output)"


def _command_preview(ctx: ToolContext, command: str, timeout_s: float) -> str:
    return f"$ {command}\ncwd: {ctx.workspace}\nsandbox: {ctx.sandbox.name}\ntimeout: {timeout_s:g}s"


def _preview_bash(ctx: ToolContext, command: str, timeout_s: float | None = None) -> str:
    return _command_preview(ctx, command, _effective_timeout(ctx, timeout_s))


@tool(
    effects=["exec"],
    idempotent=False,
    timeout_s=120,
    evidence=["exit code", "stdout and stderr (bounded)", "duration", "changed files (tether's workspace snapshots)"],
    rollback="tether undo: restores the files it changed, from the rollback receipt",
    preview=_preview_bash,
)
def bash(
    ctx: ToolContext,
    command: Annotated[str, Field(min_length=1)],
    timeout_s: Annotated[float | None, Field(gt=0)] = None,
) -> ToolResult:
    """Run a shell command in the workspace (sandboxed) and return its exit code and output.

    Args:
        command: The shell command line (run with /bin/sh -c semantics by the sandbox).
        timeout_s: Seconds before the command is killed; can only shorten the configured timeout.
    """
    limit = _effective_timeout(ctx, timeout_s)
    receipt = ctx.sandbox.run(command, cwd=ctx.workspace, timeout_s=limit)
    data: dict[str, Any] = receipt_dict(receipt)
    data["timeout_s"] = limit
    if receipt.timed_out:
        status, failure = f"timed out after {limit:g}s", "timeout"
    elif receipt.exit_code != 0:
        status, failure = f"exit {receipt.exit_code}", "nonzero_exit"
    else:
        status, failure = "exit 0", None
    lines = [
        f"$ {clip(command, 500)}",
        f"{status} ({receipt.duration_s:.2f}s)",
        _output_block(receipt.stdout, receipt.stderr),
    ]
    if receipt.truncated:
        lines.append("[the sandbox truncated this output]")
    return ToolResult(
        ok=failure is None,
        content="\n".join(lines),
        data=data,
        failure_class=failure,
    )


# --------------------------------------------------------------------------- run_tests

_COUNT = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)\b")
_SUMMARY = re.compile(r"^=*\s*(?:\d+ \w+(?:, )?)+ in [\d.]+s")
_FAILED_ID = re.compile(r"^(FAILED|ERROR) (\S+)")


def parse_pytest(output: str) -> dict[str, Any]:
    """Counts from pytest's final summary line, and failing test ids (``-rfE`` lines), if present."""
    counts: dict[str, int] = {}
    for line in reversed(output.splitlines()):
        if _SUMMARY.match(line.strip()) or "no tests ran" in line:
            for n, kind in _COUNT.findall(line):
                key = {"error": "errors", "warning": "warnings"}.get(kind, kind)
                counts[key] = int(n)
            break
    failing = [m.group(2) for m in map(_FAILED_ID.match, output.splitlines()) if m]
    return {"counts": counts, "failing": failing[:100]}


def _run_tests_command(ctx: ToolContext, args: list[str] | None) -> str:
    return ctx.envelope.verification.test_command + "".join(" " + shlex.quote(a) for a in args or ())


def _preview_run_tests(ctx: ToolContext, args: list[str] | None = None) -> str:
    return _command_preview(ctx, _run_tests_command(ctx, args), ctx.timeout_s)


@tool(
    effects=["exec"],
    idempotent=True,
    timeout_s=600,
    evidence=["exit code", "pass/fail/error counts parsed from the test runner", "failing test ids", "output tail"],
    rollback="none (runs the envelope's test command; tests should not modify the workspace)",
    preview=_preview_run_tests,
)
def run_tests(ctx: ToolContext, args: list[str] | None = None) -> ToolResult:
    """Run the envelope's test command in the workspace (sandboxed) and report pass/fail counts.

    Args:
        args: Extra arguments appended to the test command (each shell-quoted), e.g. ["-k", "parser"].
    """
    command = _run_tests_command(ctx, args)
    receipt = ctx.sandbox.run(command, cwd=ctx.workspace, timeout_s=ctx.timeout_s)
    parsed = parse_pytest(receipt.stdout + "\n" + receipt.stderr)
    counts: dict[str, int] = parsed["counts"]
    data: dict[str, Any] = receipt_dict(receipt)
    data.update(command=command, counts=counts, failing=parsed["failing"], timeout_s=ctx.timeout_s)
    if receipt.timed_out:
        verdict, failure = f"TIMED OUT after {ctx.timeout_s:g}s", "timeout"
    elif receipt.exit_code == 0:
        verdict, failure = "PASSED", None
    elif receipt.exit_code == 1:
        verdict, failure = "FAILED", "tests_failed"
    elif receipt.exit_code == 5:
        verdict, failure = "NO TESTS COLLECTED", "no_tests"
    else:
        verdict, failure = f"ERROR (exit {receipt.exit_code})", "nonzero_exit"
    summary = ", ".join(f"{n} {k}" for k, n in counts.items()) if counts else "no counts parsed"
    lines = [f"$ {command}", f"tests {verdict}: {summary} (exit {receipt.exit_code}, {receipt.duration_s:.2f}s)"]
    if parsed["failing"]:
        lines.append("failing: " + ", ".join(parsed["failing"][:20]))
    lines.append(_output_block(receipt.stdout, receipt.stderr))
    return ToolResult(ok=failure is None, content="\n".join(lines), data=data, failure_class=failure)
