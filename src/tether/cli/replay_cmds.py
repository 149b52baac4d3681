"""``tether replay RUN``: re-execute a recorded run and say whether it reproduced (exit 0) or where it diverged (1)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.markup import escape

from tether.kernel import session
from tether.kernel.replay import ReplayReport, counterfactual_seq, replay

from .common import EXIT_INVALID, EXIT_OK, DbOption, JsonOption, TrustImportedOption, console, reader
from .fork_cmds import fork_and_drive
from .run_cmds import printer


def replay_cmd(
    run: str = typer.Argument(..., help="Run id (or unique prefix)."),
    to: int | None = typer.Option(None, "--to", help="Compare only up to this event seq of the original."),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Override the recorded sandbox backend: bwrap | local."),
    keep: Path | None = typer.Option(
        None, "--keep", help="Keep the replay's workspace and store in this new directory (default: removed)."
    ),
    model: str | None = typer.Option(
        None, "--model", "-m", help="Counterfactual: ask this model instead, from --to SEQ (default: the first call)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL for --model (local servers)."),
    workspace: Path | None = typer.Option(
        None, "--workspace", "-w", help="The counterfactual run's workspace (default: <workspace>-fork-<SEQ>)."
    ),
    trust_imported: bool = TrustImportedOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Re-execute a run from its recorded starting files and model answers; report the first divergence.

    The gate, sandbox and sensors run again for real; the original log is only read. Exit 0 reproduced,
    1 diverged (both sides are shown). With --model M: the counterfactual — a new run, forked from the
    original just before its first model call (or at --to SEQ), that goes on live with M; it exits with
    that run's status. See docs/lifecycle.md.
    """
    if model is not None:
        if keep is not None:
            raise typer.BadParameter("--keep is for a replay; a counterfactual run keeps its --workspace")
        options = session.Options(
            model=model,
            base_url=base_url,
            sandbox=sandbox,
            on_event=printer(as_json, False),
            trust_imported=trust_imported,
        )
        fork_and_drive(run, lambda events: counterfactual_seq(events, to), workspace, options, db, as_json)
    if keep is not None and keep.exists() and any(keep.iterdir()):
        raise typer.BadParameter(f"{keep} is not empty", param_hint="--keep")
    with reader(db) as store:
        report = replay(store, run, to_seq=to, sandbox=sandbox, keep=keep, trust_imported=trust_imported)
    if as_json:
        typer.echo(json.dumps({"kind": "replay", **dataclasses.asdict(report)}, sort_keys=True, default=str))
    else:
        _print(report)
    raise typer.Exit(EXIT_OK if report.reproduced else EXIT_INVALID)


def _print(report: ReplayReport) -> None:
    window = f" up to seq {report.to_seq}" if report.to_seq is not None else ""
    if report.divergence is None:
        console.print(
            f"[green]reproduced[/]: run {report.run_id}{window} — {report.compared} decisions, receipts and "
            f"verdicts match (original {report.original_status}, replay {report.replay_status})"
        )
    else:
        console.print(f"[red]diverged[/]: run {report.run_id}{window}")
        console.print("  " + escape(report.divergence.describe()))
    if report.kept:
        console.print(f"replay kept in {report.kept} (run {report.replay_run} in replay.db)")


def register(app: typer.Typer) -> None:
    app.command("replay")(replay_cmd)
