"""``tether doctor``: prove the sandboxes enforce what they claim, on this machine.

Exit codes: 0 every required backend passed every check · 1 a required backend failed a check ·
4 a required backend cannot start at all (BLOCKED_DEPENDENCY; the fix is printed).
Without ``--envelope`` bwrap is required (the envelope default); with one, its sandbox section decides,
and the run's pre-flight checks run too (``tether.verify.preflight``, collection only): every required
sensor's tool exists (else exit 4) and the test command collects at least one test (else exit 1).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.errors import InputError, SandboxUnavailable
from tether.events.kinds_verify import PreflightCheck
from tether.sandbox.doctor import DoctorReport, Status, run_doctor
from tether.sandbox.factory import make_sandbox
from tether.verify.preflight import run_preflight

from .common import EXIT_BLOCKED, EXIT_INVALID, EXIT_OK, JsonOption, console, print_json

STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.NOT_ENFORCED: "yellow", Status.SKIPPED: "dim"}


def register(app: typer.Typer) -> None:
    app.command("doctor", help="Prove each available sandbox backend really isolates (exit 0/1/4).")(doctor_command)


def doctor_command(
    envelope: Path | None = typer.Option(
        None, "--envelope", "-e", help="Take the required backend from it, and run its pre-flight checks."
    ),
    workspace: Path | None = typer.Option(None, "--workspace", "-w", help="Override environment.workspace."),
    json_out: bool = JsonOption,
) -> None:
    required: tuple[str, ...] = ("bwrap",)
    env: Envelope | None = None
    if envelope is not None:
        env = load_envelope(envelope)
        spec = env.environment.sandbox
        required = (spec.backend,) if spec.required else ()
    report = run_doctor(required=required)
    code = EXIT_BLOCKED if report.blocked else (EXIT_OK if report.ok else EXIT_INVALID)
    out = report.to_dict()
    checks: list[PreflightCheck] = []
    if env is not None and envelope is not None:
        ws = (workspace or envelope.resolve().parent / env.environment.workspace).resolve()
        checks = preflight_checks(env, ws)
        out["preflight"] = {"workspace": str(ws), "checks": [c.model_dump() for c in checks]}
        failed = [c for c in checks if not c.ok]
        if any(c.status == "BLOCKED_DEPENDENCY" for c in failed):
            code = EXIT_BLOCKED
        elif failed and code == EXIT_OK:
            code = EXIT_INVALID
    if json_out:
        print_json(out)
    else:
        render(report)
        if env is not None:
            render_preflight(checks)
    raise typer.Exit(code)


def preflight_checks(env: Envelope, workspace: Path) -> list[PreflightCheck]:
    """The checks ``tether run`` makes before its first model call, collecting (not running) the tests."""
    if not workspace.is_dir():
        raise InputError(f"workspace {workspace} does not exist ($.environment.workspace or --workspace)")
    try:
        sandbox = make_sandbox(env.environment.sandbox, workspace, env_allow=env.environment.env_allow)
    except SandboxUnavailable as e:
        return [PreflightCheck(name="sandbox", ok=False, detail=str(e), fix=e.fix, status="BLOCKED_DEPENDENCY")]
    return run_preflight(env, workspace, sandbox, collect_only=True).checks


def render_preflight(checks: list[PreflightCheck]) -> None:
    table = Table(
        title="[bold]pre-flight[/] (what tether run checks before the first model call)", title_justify="left"
    )
    table.add_column("check")
    table.add_column("result")
    table.add_column("detail / fix", overflow="fold")
    for c in checks:
        result = "[green]PASS[/]" if c.ok else f"[bold red]FAIL[/] ({c.status})"
        table.add_row(c.name, result, c.detail + (f"\nfix: {c.fix}" if c.fix and not c.ok else ""))
    console.print(table)


def render(report: DoctorReport) -> None:
    for b in report.backends:
        label = f"[bold]{b.backend}[/] ({'required' if b.required else 'optional'})"
        if not b.available:
            console.print(f"{label}: [bold red]unavailable[/] — {b.reason}", soft_wrap=True)
            continue
        table = Table(title=label, title_justify="left")
        table.add_column("check")
        table.add_column("result")
        table.add_column("evidence", overflow="fold")
        for c in b.checks:
            table.add_row(c.name, f"[{STYLE[c.status]}]{c.status.value}[/]", c.detail)
        console.print(table)
        if b.does_not_isolate:
            console.print(f"[yellow]{b.backend} does not isolate:[/]")
            for line in b.does_not_isolate:
                console.print(f"  - {line}", soft_wrap=True)
    verdict = "[green]ok[/]" if report.ok else "[bold red]FAILED[/]"
    console.print(f"doctor: {verdict} (not_enforced = the backend does not claim this; only bwrap must pass all)")
