"""``tether undo RUN [--to SEQ | --action CALL_ID]``: take a run's workspace changes back (tether.kernel.undo).

Exit codes: 0 undone (or nothing left to undo), 1 refused (the reasons are printed; nothing was changed),
2 bad input (an unknown run, seq or call id), 3 applying failed part-way (every path was put back).
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from tether.kernel.undo import Outcome, Selection, shown, undo

from .common import EXIT_INVALID, DbOption, JsonOption, console, print_json, writer


def undo_cmd(
    run: str = typer.Argument(..., help="Run id (or unique prefix)."),
    to: int | None = typer.Option(None, "--to", help="Restore the workspace as it was at this seq of the log."),
    action: str | None = typer.Option(None, "--action", help="Undo only this action (its call id)."),
    workspace: Path | None = typer.Option(None, "--workspace", help="Default: the run's recorded workspace."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Plan and check only; change nothing, log nothing."),
    by: str | None = typer.Option(None, "--by", help="Who undoes (default: current user)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Restore the workspace to before a run's actions (all, those after --to SEQ, or one --action).

    Refuses, changing nothing, when a file was changed outside the run since, or an action had an
    effect outside the workspace. The undo is logged in the run as a ``run.undone`` receipt.
    """
    selection = Selection(to_seq=to, call_id=action)
    with writer(db) as store:
        run_id = store.run(run).run_id
        outcome = undo(store, run_id, selection, workspace=workspace, by=by, dry_run=dry_run)
    report(outcome, dry_run, as_json)
    if not outcome.ok:
        raise typer.Exit(EXIT_INVALID)


def report(outcome: Outcome, dry_run: bool, as_json: bool) -> None:
    p = outcome.plan
    if as_json:
        print_json(
            {
                "run_id": p.run_id,
                "scope": p.scope,
                "ok": outcome.ok,
                "dry_run": dry_run,
                "refusals": list(outcome.refusals),
                "actions": list(p.actions),
                "already_undone": list(p.already),
                "files": [{"path": s.path, "expected": shown(s.expected), "restore": shown(s.target)} for s in p.steps],
                "seq": outcome.seq,
            }
        )
        return
    if not outcome.ok:
        console.print(f"[bold red]undo refused[/] ({p.scope} of run {p.run_id}); nothing was changed:")
        for why in outcome.refusals:
            console.print(f"  - {escape(why)}")
        return
    if not p.actions:
        done = f": {', '.join(p.already)} already undone" if p.already else ""
        console.print(f"nothing to undo ({p.scope} of run {p.run_id}){done}")
        return
    verb = "would restore" if dry_run else "restored"
    for s in p.steps:
        what = "remove" if s.target is None else "create" if s.expected is None else "revert"
        console.print(f"  {verb} {escape(s.path)} ({what}: {shown(s.expected)} -> {shown(s.target)})")
    if dry_run:
        console.print(
            f"dry run: {counted(len(p.actions), 'action')} ({', '.join(p.actions)}) can be undone; nothing changed"
        )
    else:
        console.print(
            f"[green]undone[/] {counted(len(p.actions), 'action')} of run {p.run_id} ({p.scope}); "
            f"{counted(len(outcome.restored), 'file')} restored; receipt at seq {outcome.seq}"
        )


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless one ("1 file restored", not "1 files")."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def register(app: typer.Typer) -> None:
    app.command("undo")(undo_cmd)
