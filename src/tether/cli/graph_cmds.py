"""``tether graph run | work | show``: task graphs of narrowed runs, driven by workers under leases.

Exit codes (of ``run`` and ``work``): the graph's status mapped as a run's is (0 COMPLETE/NO_OP, 1 a node
failed, 4 blocked on a dependency, 5 a node waits for a person); 2 the graph or an envelope is invalid.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape

from tether.status import RunStatus

if TYPE_CHECKING:
    from tether.events.backends import StoreSpec

from .common import (
    EXIT_RUNTIME,
    EXIT_WAITING,
    DbOption,
    JsonOption,
    console,
    db_path,
    err_console,
    exit_code,
    print_json,
)

graph_app = typer.Typer(help="Task graphs: nodes are runs, edges are dependencies, workers take nodes under leases.")


def register(app: typer.Typer) -> None:
    app.add_typer(graph_app, name="graph", no_args_is_help=True)


@graph_app.command("run")
def run_cmd(
    graph_file: Path = typer.Argument(..., help="GRAPH.yaml", exists=False),
    workers: int = typer.Option(2, "--workers", "-n", min=1, max=64, help="Worker processes on this machine."),
    strict: bool = typer.Option(
        False, "--strict", help="Refuse a node envelope that holds more than the graph's (else: warn and record)."
    ),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Every node's sandbox backend: bwrap | local."),
    db: str | None = DbOption,
    json_out: bool = JsonOption,
) -> None:
    """Check a graph, record it, and drive it with N worker processes until it finishes."""
    from tether.events.backends import local_dir, open_store
    from tether.graph.launch import spawn_workers, start_graph

    workspace = graph_file.resolve().parent
    path = db_path(db, workspace)
    with open_store(path, create=True, local=local_dir(path, workspace)) as store:
        graph_run, widened = start_graph(store, graph_file, strict=strict, sandbox=sandbox)
    for problem in widened:
        err_console.print(f"[yellow]warning:[/] {escape(str(problem))} (--strict refuses this)")
    if not json_out:
        err_console.print(f"graph run {graph_run}: {workers} worker(s); `tether graph show {graph_run}` to watch")
    procs = spawn_workers(path, graph_run, workers)
    try:
        for proc in procs:
            proc.wait()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
    _report(path, graph_run, json_out)


@graph_app.command("work")
def work_cmd(
    graph_run: str = typer.Argument(..., help="The graph's run id (or a unique prefix)."),
    db: str | None = DbOption,
    json_out: bool = JsonOption,
) -> None:
    """Join a graph as one more worker: take ready nodes under leases until the graph finishes."""
    from tether.graph.worker import Worker

    from .common import find_db, reader

    path = find_db(db)
    with reader(db) as store:
        run_id = store.run(graph_run).run_id
    Worker(path, run_id, note=lambda line: print(line, file=sys.stderr, flush=True)).work()
    _report(path, run_id, json_out)


@graph_app.command("show")
def show_cmd(
    graph_run: str = typer.Argument(..., help="The graph's run id (or a unique prefix)."),
    db: str | None = DbOption,
    json_out: bool = JsonOption,
) -> None:
    """Draw a graph's nodes with their states, runs, compensations and ignored outcomes."""
    _report(db, graph_run, json_out, exit_with_status=False)


def _report(db: StoreSpec | None, graph_run: str, json_out: bool, *, exit_with_status: bool = True) -> None:
    from tether.graph.draw import as_dict, as_text
    from tether.graph.fold import GraphState

    from .common import reader

    with reader(db) as store:
        run_id = store.run(graph_run).run_id
        store.verify(run_id)
        view = as_dict(GraphState.read(store, run_id), time.time())
    if json_out:
        print_json(view)
    else:
        console.print(escape(as_text(view)))
    if exit_with_status:
        status = view["status"]
        if status != "RUNNING":
            raise typer.Exit(exit_code(RunStatus(status)))
        waiting = any(n["state"] == "waiting" for n in view["nodes"])
        raise typer.Exit(EXIT_WAITING if waiting else EXIT_RUNTIME)  # no worker left on an unfinished graph
