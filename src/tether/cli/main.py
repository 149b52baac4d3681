"""The ``tether`` command: one typer app, one module per command group.

Errors raised on purpose (:class:`tether.errors.TetherError`) become a one-paragraph
message and a documented exit code; a traceback only with ``--debug``.
"""

from __future__ import annotations

import sys

import typer
from rich.markup import escape

from tether.errors import InputError, LogCorrupt, RuntimeFailure, SandboxUnavailable, TetherError

from . import (
    common,
    demo_cmds,
    doctor_cmds,
    envelope_cmds,
    exec_cmds,
    key_cmds,
    log_cmds,
    policy_cmds,
    run_cmds,
    serve_cmds,
)

app = typer.Typer(
    name="tether",
    help="The agent proposes. tether decides. Evidence accepts.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for group in (envelope_cmds, log_cmds, exec_cmds, doctor_cmds, run_cmds, demo_cmds, policy_cmds, key_cmds, serve_cmds):
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


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    try:
        rc = app(args=args, standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)  # typer returns a raised Exit's code when not standalone
    except TetherError as e:
        if debug:
            raise
        common.err_console.print(f"[bold red]error:[/] {escape(str(e))}", soft_wrap=True)
        sys.exit(exit_code_for(e))
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        # Every event is appended whole, so the log is intact; an action cut off mid-way is what
        # resume is built for (re-run if idempotent, otherwise stop and name it).
        common.err_console.print("interrupted: the log is intact; see `tether runs` and `tether resume RUN`")
        sys.exit(130)
    except typer.TyperException as e:  # usage errors: bad option, missing argument
        show = getattr(e, "show", None)
        if callable(show):
            show()
        else:
            common.err_console.print(f"[bold red]usage error:[/] {escape(str(e))}")
        sys.exit(getattr(e, "exit_code", common.EXIT_USAGE))
    except Exception as e:
        if debug:
            raise
        common.err_console.print(
            f"[bold red]internal error:[/] {e.__class__.__name__}: {escape(str(e))} (rerun with --debug)"
        )
        sys.exit(common.EXIT_RUNTIME)


if __name__ == "__main__":
    main()
