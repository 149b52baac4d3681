"""Shared CLI plumbing: output, exit codes and the database option.

Exit codes (the README's table; tests/test_exit_codes.py checks each row through the CLI):
  0 ok · 1 invalid / denied / check failed / run stopped · 2 usage or input error ·
  3 runtime failure outside a run's statuses (database locked, internal error) ·
  4 blocked dependency (a required sandbox cannot start; the model provider failed beyond retries) ·
  5 waiting for a human or for input (WAITING_APPROVAL, NEEDS_INPUT, e.g. a full context window)
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

import typer
from rich.console import Console

from tether.errors import FileError, TetherError
from tether.status import RunStatus

if TYPE_CHECKING:  # the store is imported by the commands that open one (tether/cli/main.py: start-up)
    from tether.events.backends import StoreSpec
    from tether.events.protocol import Store

EXIT_OK = 0
EXIT_INVALID = 1
EXIT_USAGE = 2
EXIT_RUNTIME = 3
EXIT_BLOCKED = 4
EXIT_WAITING = 5


def exit_code(status: RunStatus) -> int:
    """A run's exit code is a function of its status alone (the README's table).

    Exhaustive by construction: a new ``RunStatus`` member without a row here fails mypy (``assert_never``).
    """
    match status:
        case RunStatus.COMPLETE | RunStatus.NO_OP:
            return EXIT_OK
        case RunStatus.WAITING_APPROVAL | RunStatus.NEEDS_INPUT:
            return EXIT_WAITING
        case RunStatus.BLOCKED_DEPENDENCY:  # the sandbox or the model provider: may come back, resumable
            return EXIT_BLOCKED
        case RunStatus.VERIFY_FAILED | RunStatus.NO_PROGRESS | RunStatus.BUDGET_STOP | RunStatus.BLOCKED_PERMISSION:
            return EXIT_INVALID
        case RunStatus.NEW | RunStatus.RUNNING:  # a driver returned without an end or a pause: tether's fault
            return EXIT_RUNTIME
        case _:
            assert_never(status)


console = Console(highlight=False, soft_wrap=True)
err_console = Console(stderr=True, highlight=False, soft_wrap=True)

DbOption = typer.Option(
    None,
    "--db",
    help="Event store: a file or a postgresql:// URL (default: $TETHER_DB, else found from here: see `tether runs`).",
)
JsonOption = typer.Option(False, "--json", help="Machine-readable output.")
TrustImportedOption = typer.Option(
    False,
    "--trust-imported",
    help="Drive a run `tether import` added, under the envelope it brought (read it first: `tether show RUN`).",
)

DB_NAME = Path(".tether") / "tether.db"


def db_path(db: str | Path | None, workspace: Path | None = None) -> StoreSpec:
    """Where a command that may create the log puts it: --db, $TETHER_DB (a file or a postgresql:// URL),
    else under the workspace."""
    from tether.events.backends import spec_of

    if db is not None:
        return spec_of(db)
    env = os.environ.get("TETHER_DB")
    if env:
        return spec_of(env)
    return (workspace or Path.cwd()) / DB_NAME


def _envelope_workspace(envelope: Path) -> tuple[Path | None, str]:
    """The workspace ``envelope`` names, or why it names none (unreadable envelopes are skipped, and said)."""
    from tether.envelope.load import load_envelope

    try:
        env = load_envelope(envelope)
    except TetherError as e:
        return None, f"{envelope} (skipped: {str(e).splitlines()[0]})"
    return (envelope.resolve().parent / env.environment.workspace).resolve(), ""


def candidates(start: Path | None = None) -> list[Path]:
    """Where an existing database is looked for, in order: here, the workspace of ./envelope.yaml, then each
    parent directory (so a command run anywhere inside a workspace finds its log)."""
    here = (start or Path.cwd()).resolve()
    found = [here / DB_NAME]
    envelope = here / "envelope.yaml"
    if envelope.is_file():
        workspace, _ = _envelope_workspace(envelope)
        if workspace is not None:
            found.append(workspace / DB_NAME)
    found += [parent / DB_NAME for parent in here.parents]
    return list(dict.fromkeys(found))


def find_db(db: str | Path | None) -> StoreSpec:
    """The database an existing-log command reads: --db, $TETHER_DB, else the first of :func:`candidates`.

    The error names every place it looked, so a user can tell "wrong directory" from "never ran".
    """
    if db is not None or os.environ.get("TETHER_DB"):
        return db_path(db)
    looked = candidates()
    for path in looked:
        if path.is_file():
            return path
    envelope = Path.cwd() / "envelope.yaml"
    skipped = _envelope_workspace(envelope)[1] if envelope.is_file() else ""
    raise FileError(
        "no tether database found; looked for "
        + ", ".join(str(p) for p in looked)
        + (f"; {skipped}" if skipped else "")
        + " (pass --db FILE, set $TETHER_DB, or list every database with `tether runs --all`)",
        path=str(looked[0]),
    )


def reader(db: str | Path | None) -> Store:
    """The store for a read-only command: never created, never migrated, never written."""
    from tether.events.backends import local_dir, open_store

    spec = find_db(db)
    return open_store(spec, readonly=True, create=False, local=local_dir(spec))


def writer(db: str | Path | None, workspace: Path | None = None, *, create: bool = False) -> Store:
    """The store for a command that appends, signing checkpoints when an anchor key is configured.

    ``create`` puts a new database under ``workspace``; otherwise the existing one is found as :func:`reader` does.
    """
    from tether.events.anchor import Signer
    from tether.events.backends import local_dir, open_store

    spec = db_path(db, workspace) if create else find_db(db)
    return open_store(spec, create=create, signer=Signer.configured(), local=local_dir(spec, workspace))


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=True, default=str))
