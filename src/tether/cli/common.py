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
from typing import Any, assert_never

import typer
from rich.console import Console

from tether.events.anchor import Signer
from tether.events.store import EventStore
from tether.status import RunStatus

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

DbOption = typer.Option(None, "--db", help="Event store path (default: $TETHER_DB or .tether/tether.db).")
JsonOption = typer.Option(False, "--json", help="Machine-readable output.")


def db_path(db: Path | None, workspace: Path | None = None) -> Path:
    if db is not None:
        return db
    env = os.environ.get("TETHER_DB")
    if env:
        return Path(env)
    return (workspace or Path.cwd()) / ".tether" / "tether.db"


def reader(db: Path | None) -> EventStore:
    """The store for a read-only command: never created, never migrated, never written."""
    return EventStore.open(db_path(db), readonly=True)


def writer(db: Path | None, workspace: Path | None = None, *, create: bool = False) -> EventStore:
    """The store for a command that appends, signing checkpoints when an anchor key is configured."""
    return EventStore.open(db_path(db, workspace), create=create, signer=Signer.configured())


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, sort_keys=True, default=str))
