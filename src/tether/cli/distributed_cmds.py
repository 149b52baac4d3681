"""``tether worker | submit``: runs as Temporal workflows (docs/distributed.md)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import typer

from .common import DbOption, JsonOption, console, err_console, exit_code, print_json

TemporalOption = typer.Option(..., "--temporal", help="The Temporal frontend, HOST:PORT.")
QueueOption = typer.Option("tether", "--task-queue", help="The shared task queue workers poll.")
NamespaceOption = typer.Option("default", "--namespace", help="The Temporal namespace.")


def register(app: typer.Typer) -> None:
    app.command("worker")(worker_cmd)
    app.command("submit")(submit_cmd)


def worker_cmd(
    temporal: str = TemporalOption,
    task_queue: str = QueueOption,
    namespace: str = NamespaceOption,
    db: str | None = typer.Option(
        None, "--db", help="Serve only runs that log to this store (default: $TETHER_DB, else the store each names)."
    ),
    sticky: float = typer.Option(
        10.0,  # tether.distributed.worker.STICKY_S, Temporal's default (not imported here: temporalio is large)
        "--sticky-s",
        min=0.1,
        help="Seconds a run's next workflow task waits for this worker before any worker takes it: how long a run "
        "whose worker is lost waits (Temporal's default).",
    ),
) -> None:
    """Host runs as Temporal workflows: poll the shared task queue and this worker's own, until Ctrl-C."""
    from tether.distributed.worker import serve

    only = _store(db)

    def ready(own: str) -> None:
        err_console.print(f"worker {own} polling {task_queue} on {temporal} (namespace {namespace})")

    asyncio.run(
        serve(
            temporal,
            namespace=namespace,
            task_queue=task_queue,
            db=_absolute(only) if only else None,
            ready=ready,
            sticky_s=sticky,
        )
    )


def submit_cmd(
    envelope: Path = typer.Argument(..., help="Envelope (strictly validated here; workers read it from this path)."),
    task: str = typer.Argument(..., help="The task."),
    temporal: str = TemporalOption,
    task_queue: str = QueueOption,
    namespace: str = NamespaceOption,
    workspace: Path | None = typer.Option(None, "--workspace", "-w", help="Override the envelope's workspace."),
    model: str | None = typer.Option(None, "--model", "-m", help="scripted:FILE | openai:MODEL | anthropic:MODEL"),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Override the sandbox backend: bwrap | local."),
    db: str | None = DbOption,
    wait: bool = typer.Option(False, "--wait", help="Wait for the run to end; print its output contract."),
    as_json: bool = JsonOption,
) -> None:
    """Start a run as a Temporal workflow; print its run id and workflow id (--wait: its outcome)."""
    from tether.distributed.client import outcome, submission, submit, workflow_id
    from tether.kernel.outcome import OutputContract

    from .run_cmds import show_contract

    sub = submission(
        envelope,
        task,
        db=_absolute(db) if db else None,
        address=temporal,
        namespace=namespace,
        workspace=workspace,
        model=model,
        sandbox=sandbox,
    )

    async def go() -> dict[str, object] | None:
        await submit(sub, task_queue=task_queue)
        ids = {"run_id": sub.run_id, "workflow_id": workflow_id(sub.run_id), "db": sub.db}
        if as_json:
            print_json(ids)
        else:
            console.print(f"submitted run {sub.run_id} as workflow {ids['workflow_id']} (log: {sub.db})")
        return await outcome(sub) if wait else None

    result = asyncio.run(go())
    if result is not None:
        contract = OutputContract.model_validate(result)
        show_contract(contract, as_json)
        raise typer.Exit(exit_code(contract.status))


def _store(db: str | None) -> str | None:
    """--db, else $TETHER_DB, else None (a run's default store: under its workspace)."""
    import os

    return db or os.environ.get("TETHER_DB") or None


def _absolute(spec: str) -> str:
    """A file spec made absolute (a worker may run elsewhere); a PostgreSQL URL as given."""
    from tether.events.backends import is_url

    return spec if is_url(spec) else str(Path(spec).resolve())
