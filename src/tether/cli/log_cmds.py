"""``tether runs`` and ``tether log show | verify``: reading the event log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from tether.errors import LogCorrupt, TetherError
from tether.events import registry
from tether.events.anchor import AnchorKey, anchor_file_path, key_path
from tether.events.protocol import Store
from tether.events.store import EventStore

from .common import EXIT_INVALID, DbOption, JsonOption, console, print_json, reader

log_app = typer.Typer(help="Inspect and verify run logs.", no_args_is_help=True)


def run_rows(store: Store) -> list[dict[str, Any]]:
    """One row per run of ``store``; a run whose log does not verify is listed as such, never folded.

    The status is folded from the kinds it depends on only (``STATUS_KINDS``), not from the whole log.
    Schedules' logs are not runs of an agent: ``tether schedule list`` shows them. A task graph's log is
    listed with the graph's status (``tether graph show``).
    """
    from tether.events.kinds_schedule import is_schedule_log
    from tether.graph.fold import graph_status
    from tether.state import STATUS_KINDS, RunState

    rows: list[dict[str, Any]] = []
    for info in store.runs():
        if is_schedule_log(info.run_id):
            continue
        try:
            store.verify(info.run_id)
            status: str = (
                graph_status(store, info.run_id, info.task)
                or RunState.from_events(store.events(info.run_id, kinds=STATUS_KINDS)).status
            )
        except LogCorrupt as e:
            status = f"CORRUPT at seq {e.seq}"
        rows.append(
            {
                "run_id": info.run_id,
                "created_at": info.created_at,
                "status": status,
                "events": info.head_seq + 1,
                "task": info.task,
                "parent_run": info.parent_run,
            }
        )
    return rows


def every_database() -> tuple[list[dict[str, Any]], list[str]]:
    """The runs of every database this machine's tether has created, and the stale entries just pruned."""
    listing = registry.prune()
    rows: list[dict[str, Any]] = []
    for path in listing.databases:
        try:
            with EventStore.open(path, readonly=True) as store:
                rows += [{**row, "db": str(path)} for row in run_rows(store)]
        except TetherError as e:  # listed but unreadable (replaced by another file, locked): said, not skipped
            rows.append({"db": str(path), "error": str(e)})
    return rows, [str(p) for p in listing.stale]


def family_order(rows: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """Rows as a family tree: each run followed by its forks (depth-first, oldest first), with its depth."""
    ids = {r["run_id"] for r in rows}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows:
        children.setdefault(r["parent_run"] if r.get("parent_run") in ids else None, []).append(r)
    out: list[tuple[int, dict[str, Any]]] = []
    stack = [(0, r) for r in reversed(children.get(None, []))]
    while stack:
        depth, row = stack.pop()
        out.append((depth, row))
        stack += [(depth + 1, c) for c in reversed(children.get(row["run_id"], []))]
    return out


def runs_table(rows: list[dict[str, Any]]) -> Table:
    """The runs, forks indented under the run they were forked from."""
    table = Table("created", "status", "events", "task")
    table.add_column("run", no_wrap=True)
    for depth, r in family_order(rows):
        name = ("   " * (depth - 1) + "└─ " if depth else "") + r["run_id"]
        table.add_row(r["created_at"][:19], r["status"], str(r["events"]), escape(r["task"][:40]), name)
    return table


def runs_cmd(
    db: str | None = DbOption,
    all_dbs: bool = typer.Option(
        False, "--all", help="Every database tether created on this machine (the list in $XDG_STATE_HOME/tether)."
    ),
    as_json: bool = JsonOption,
) -> None:
    """List runs with their status.

    Without --db the database is found from here: ./.tether/tether.db, the workspace of ./envelope.yaml,
    then each parent directory's .tether/tether.db ($TETHER_DB overrides).
    """
    stale: list[str] = []
    if all_dbs:
        rows, stale = every_database()
    else:
        with reader(db) as store:
            rows = run_rows(store)
    if as_json:
        print_json({"runs": rows, "stale": stale} if all_dbs else rows)
        return
    if not all_dbs:
        console.print(runs_table(rows))
    for database in dict.fromkeys(r["db"] for r in rows if all_dbs):
        console.print(f"\n[bold]{escape(database)}[/]")
        errors = [r["error"] for r in rows if r["db"] == database and "error" in r]
        if errors:
            console.print(f"  [red]unreadable:[/] {escape(errors[0])}")
        else:
            console.print(runs_table([r for r in rows if r["db"] == database]))
    for path in stale:
        console.print(f"[yellow]stale:[/] {escape(path)} no longer exists (removed from the list)")


PAYLOAD_CHARS = 160  # of each payload in `tether log show`'s text form; --full and --json print it whole


@log_app.command("show")
def show_cmd(
    run: str,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
    full: bool = typer.Option(False, "--full", help="Print every payload whole."),
) -> None:
    """Print a run's raw events (docs/cli.md: the --json lines)."""
    with reader(db) as store:
        info = store.run(run)
        events = store.events(info.run_id)
    if as_json:
        for e in events:
            typer.echo(json.dumps(e.to_dict(), sort_keys=True))
        return
    cut = 0
    for e in events:
        payload = json.dumps(e.payload)
        if len(payload) > PAYLOAD_CHARS and not full:
            payload, cut = payload[: PAYLOAD_CHARS - 1] + "…", cut + 1
        console.print(f"[dim]{e.seq:>4} {e.ts[11:23]}[/] [bold]{e.kind:<20}[/] {escape(payload)}", soft_wrap=True)
    if cut:
        console.print(f"[dim]{cut} payload(s) shortened (…); `--full` or `--json` prints them whole[/]")


@log_app.command("verify")
def verify_cmd(
    run: str | None = typer.Argument(None, help="Run id (or unique prefix)."),
    all_runs: bool = typer.Option(False, "--all", help="Verify every run."),
    key: Path | None = typer.Option(
        None, "--key", help="Anchor key, private or public (default: $TETHER_KEY or the one `tether key init` wrote)."
    ),
    anchor_file: Path | None = typer.Option(None, "--anchor-file", help="Anchor file (default: next to the key)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Recompute the hash chain and check signed checkpoints. Exit 1 naming the first bad seq.

    Catches edits, deletions, reordering and truncation; with an anchor key also a full rewrite
    (every later hash recomputed), naming the first signed checkpoint that no longer matches.
    """
    if not run and not all_runs:
        raise typer.BadParameter("give a RUN id or --all")
    path = key_path(key)
    anchor_key = AnchorKey.load(path) if key is not None or path.exists() else None
    anchors = anchor_file_path(path, anchor_file)
    results: list[dict[str, Any]] = []
    with reader(db) as store:
        ids = [i.run_id for i in store.runs()] if all_runs else [store.run(run or "").run_id]
        for run_id in ids:
            try:
                audit = store.verify_run(run_id, anchor_key, anchors)
                results.append({"ok": True, **audit.to_dict()})
            except LogCorrupt as e:
                results.append({"run_id": run_id, "ok": False, "seq": e.seq, "reason": e.reason})
    if as_json:
        print_json(results)
    else:
        for r in results:
            if not r["ok"]:
                console.print(f"[red]BAD[/]  {r['run_id']}: first bad seq {r['seq']}: {r['reason']}")
                continue
            anchor = r["anchor"]
            signed = (
                f"; {anchor['checkpoints']} signed checkpoint(s) match, last at seq {anchor['last_signed_seq']}"
                if anchor["checkpoints"]
                else ""
            )
            console.print(
                f"[green]ok[/]   {r['run_id']}: {r['events']} events, chain intact, head seq {r['head']['seq']} "
                f"{r['head']['hash'][:16]}…{signed}"
            )
            for limit in anchor["limits"]:
                console.print(f"     [yellow]not detectable:[/] {limit}")
    if not all(r["ok"] for r in results):
        raise typer.Exit(EXIT_INVALID)


def register(app: typer.Typer) -> None:
    app.command("runs")(runs_cmd)
    app.add_typer(log_app, name="log")
