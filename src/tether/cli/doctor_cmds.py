"""``tether doctor``: prove the sandboxes enforce what they claim, on this machine.

Exit codes: 0 every required backend passed every check · 1 a required backend failed a check ·
4 a required backend cannot start at all (BLOCKED_DEPENDENCY; the fix is printed).
Without ``--envelope`` bwrap is required (the envelope default); with one, its sandbox section decides.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

from tether.envelope.load import load_envelope
from tether.sandbox.doctor import DoctorReport, Status, run_doctor

from .common import EXIT_BLOCKED, EXIT_INVALID, EXIT_OK, JsonOption, console, print_json

STYLE = {Status.PASS: "green", Status.FAIL: "bold red", Status.NOT_ENFORCED: "yellow", Status.SKIPPED: "dim"}


def register(app: typer.Typer) -> None:
    app.command("doctor", help="Prove each available sandbox backend really isolates (exit 0/1/4).")(doctor_command)


def doctor_command(
    envelope: Path | None = typer.Option(None, "--envelope", "-e", help="Take the required backend from it."),
    json_out: bool = JsonOption,
) -> None:
    required: tuple[str, ...] = ("bwrap",)
    if envelope is not None:
        spec = load_envelope(envelope).environment.sandbox
        required = (spec.backend,) if spec.required else ()
    report = run_doctor(required=required)
    code = EXIT_BLOCKED if report.blocked else (EXIT_OK if report.ok else EXIT_INVALID)
    if json_out:
        print_json(report.to_dict())
    else:
        render(report)
    raise typer.Exit(code)


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
