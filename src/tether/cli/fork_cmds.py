"""``tether fork RUN --at SEQ``: a new run sharing RUN's log up to SEQ, in a new workspace, going on live."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

import typer

from tether.events.store import Event
from tether.kernel import session
from tether.kernel.fork import fork, fork_workspace

from .common import DbOption, JsonOption, TrustImportedOption, console, writer
from .run_cmds import approver_for, control_line, exit_with, printer


def fork_cmd(
    run: str = typer.Argument(..., help="The run to fork (id or unique prefix)."),
    at: int = typer.Option(..., "--at", help="The seq of the parent's last shared event (see `tether log show`)."),
    envelope: Path | None = typer.Option(None, "--envelope", "-e", help="Go on under another envelope (strict)."),
    model: str | None = typer.Option(None, "--model", "-m", help="Go on with another model."),
    workspace: Path | None = typer.Option(
        None, "--workspace", "-w", help="The fork's new workspace (default: <parent workspace>-fork-<SEQ>)."
    ),
    base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL (local servers)."),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Override the sandbox backend: bwrap | local."),
    interactive: bool = typer.Option(
        None, "--interactive/--headless", help="Prompt for approvals (default: if a TTY)."
    ),
    trust_imported: bool = TrustImportedOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every event."),
) -> None:
    """Fork a run at SEQ: the workspace is rebuilt from the log as it was there, then the fork goes on live.

    The parent is untouched; its events up to SEQ are the fork's too (shared, and verified with it).
    A pending approval at SEQ waits for an answer again (`tether approve|deny`, then `tether resume FORK`).
    """
    options = session.Options(
        model=model,
        base_url=base_url,
        sandbox=sandbox,
        approver=approver_for(interactive, as_json),
        on_event=printer(as_json, verbose),
        trust_imported=trust_imported,
    )
    fork_and_drive(run, lambda _events: at, workspace, options, db, as_json, envelope=envelope)


def fork_and_drive(
    run: str,
    at: Callable[[list[Event]], int],
    workspace: Path | None,
    options: session.Options,
    db: str | None,
    as_json: bool,
    *,
    envelope: Path | None = None,
) -> NoReturn:
    """Fork ``run`` at the seq ``at`` picks from its log, drive the fork live, print its contract and exit
    with its status (``tether fork``, and ``tether replay --model``, the counterfactual)."""
    with writer(db) as store:
        parent = store.run(run).run_id
        seq = at(store.events(parent))
        dest = workspace or fork_workspace(store, parent, seq)
        runtime = fork(store, parent, seq, dest, options, envelope=envelope)
        if not as_json:
            console.print(f"forked {parent} at seq {seq} as {runtime.run_id}; workspace {dest}")
        contract = runtime.drive()
        control = control_line(store, contract.run_id)
    exit_with(contract, control, as_json)


def register(app: typer.Typer) -> None:
    app.command("fork")(fork_cmd)
