"""The ``tether`` command: one typer app, one module per command group.

Errors raised on purpose (:class:`tether.errors.TetherError`) become a one-paragraph
message and a documented exit code; a traceback only with ``--debug``. With ``--json`` every
error is one JSON object on stdout instead (docs/cli.md): a program reading the JSON output
reads its failure from the same stream, and the exit code is the same either way.
"""

from __future__ import annotations

import json
import sys
from importlib.metadata import version as installed_version
from typing import Any, NoReturn

import typer
from rich.markup import escape

from tether.errors import EnvelopeInvalid, InputError, LogCorrupt, RuntimeFailure, SandboxUnavailable, TetherError

from . import (
    common,
    demo_cmds,
    doctor_cmds,
    envelope_cmds,
    episode_cmds,
    exec_cmds,
    fork_cmds,
    key_cmds,
    log_cmds,
    policy_cmds,
    replay_cmds,
    run_cmds,
    serve_cmds,
    trace_cmds,
    undo_cmds,
)

app = typer.Typer(
    name="tether",
    help="The agent proposes. tether decides. Evidence accepts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"tether {installed_version('tether')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print tether's version and exit."
    ),
) -> None:
    """The agent proposes. tether decides. Evidence accepts."""


for group in (
    envelope_cmds,
    log_cmds,
    exec_cmds,
    doctor_cmds,
    run_cmds,
    demo_cmds,
    policy_cmds,
    key_cmds,
    serve_cmds,
    episode_cmds,
    fork_cmds,
    undo_cmds,
    trace_cmds,
    replay_cmds,
):
    group.register(app)


def exit_code_for(error: TetherError) -> int:
    if isinstance(error, SandboxUnavailable):
        return common.EXIT_BLOCKED
    if isinstance(error, LogCorrupt):
        return common.EXIT_INVALID
    if isinstance(error, InputError):
        return common.EXIT_USAGE
    if isinstance(error, RuntimeFailure):
        return common.EXIT_RUNTIME
    return common.EXIT_RUNTIME


def error_object(message: str, code: int, error: BaseException) -> dict[str, Any]:
    """The ``--json`` form of an error: message, file, field within it, exit code (and details where known)."""
    obj: dict[str, Any] = {
        "error": message,
        "type": type(error).__name__,
        "path": getattr(error, "path", None),
        "field": getattr(error, "field", None),
        "exit": code,
    }
    if isinstance(error, EnvelopeInvalid):
        obj["problems"] = [p.to_dict() for p in error.problems]
    if isinstance(error, LogCorrupt):
        obj.update(run_id=error.run_id, seq=error.seq)
    return obj


def fail(message: str, code: int, as_json: bool, error: BaseException, markup: str = "") -> NoReturn:
    """Report an error in the chosen form and exit with ``code``."""
    if as_json:
        typer.echo(json.dumps(error_object(message, code, error), sort_keys=True))
    else:
        common.err_console.print(markup or f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        rc = app(args=args, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)  # typer returns a raised Exit's code when not standalone
    except TetherError as e:
        if debug:
            raise
        fail(str(e), exit_code_for(e), as_json, e)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt) as e:
        # Every event is appended whole, so the log is intact; an action cut off mid-way is what
        # resume is built for (re-run if idempotent, otherwise stop and name it).
        message = "interrupted: the log is intact; see `tether runs` and `tether resume RUN`"
        fail(message, 130, as_json, e, markup=escape(message))
    except typer.TyperException as e:  # usage errors: bad option, missing argument
        code = getattr(e, "exit_code", common.EXIT_USAGE)
        show = getattr(e, "show", None)
        if as_json or not callable(show):
            fail(e.format_message() if hasattr(e, "format_message") else str(e), code, as_json, e)
        show()
        sys.exit(code)
    except Exception as e:
        if debug:
            raise
        message = f"internal error: {e.__class__.__name__}: {e} (rerun with --debug)"
        fail(message, common.EXIT_RUNTIME, as_json, e, markup=f"[bold red]{escape(message)}[/]")


if __name__ == "__main__":
    main()
