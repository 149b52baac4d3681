"""The ``tether`` command: a table of sub-commands, each module imported only when its command runs.

Start-up is on the critical path (``tether hook`` answers before every tool call of another agent), so this
module imports nothing but the standard library at its top. Three paths, cheapest first:

* ``tether hook …`` goes straight to :mod:`tether.hooks.entry` (no typer; no pydantic when a daemon answers);
* ``tether --version`` is printed from the installed metadata;
* everything else builds the typer app, whose group (:class:`tether.cli.lazy.LazyGroup`) imports a command's
  module only when that command is invoked; ``tether --help`` lists the commands from :data:`COMMANDS`
  without importing any of them.

**Adding a command.** Write ``cli/<area>_cmds.py`` with a ``register(app)`` that adds its commands (or a
sub-typer) to ``app``, and add one row per command name to :data:`COMMANDS`: ``name: (module, short help)``.
The short help is what ``tether --help`` shows; it must be the first line of the command's docstring (or its
``help=``): tests/cli/test_lazy_cli.py checks every row. Keep heavy imports inside the command modules, never
here, in cli/common.py's top, or in ``tether/__init__``.

Errors raised on purpose (:class:`tether.errors.TetherError`) become a one-paragraph message and a documented
exit code; a traceback only with ``--debug``. With ``--json`` every error is one JSON object on stdout instead
(docs/cli.md): a program reading the JSON output reads its failure from the same stream, and the exit code is
the same either way.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not `typing`'s: `tether hook` must not import typing
if TYPE_CHECKING:
    from typing import Any, NoReturn

    import typer

    from tether.errors import TetherError

#: Every sub-command: name -> (module under tether.cli, short help shown by ``tether --help``), in help order.
COMMANDS: dict[str, tuple[str, str]] = {
    "compile": (
        "envelope_cmds",
        "Compile an intent plan into an envelope, binding the plan hash and sealing the contract hash.",
    ),
    "validate": ("envelope_cmds", "Validate an envelope. Exit 0 valid, 1 invalid, 2 usage or I/O error."),
    "schema": ("envelope_cmds", "Print the JSON Schema of an envelope or intent plan (for editors)."),
    "init": (
        "envelope_cmds",
        "Write a starter plan, a compiled envelope and a scripted trajectory: `tether run` works at once.",
    ),
    "runs": ("log_cmds", "List runs with their status."),
    "exec": (
        "exec_cmds",
        "Run one command through the gate and the sandbox (exit 0 ok, 1 denied/failed, 4 blocked, 5 ask).",
    ),
    "doctor": ("doctor_cmds", "Prove each available sandbox backend really isolates (exit 0/1/4)."),
    "run": (
        "run_cmds",
        "Run an agent on a task under an envelope. Exit 0 COMPLETE/NO_OP, 1 stopped, 4 blocked, 5 waiting/needs input.",
    ),
    "resume": (
        "run_cmds",
        "Continue a run from its log: after approvals, a crash, a dependency that is back, or a stop a person answers.",
    ),
    "show": (
        "run_cmds",
        "A run for a person: turns, verdicts and reasons, changed files, sensors, the final diff, the contract.",
    ),
    "approvals": ("run_cmds", "List pending approvals across runs."),
    "approve": (
        "run_cmds",
        "Approve a pending action (then `tether resume RUN`, or the governed agent retries the call).",
    ),
    "deny": (
        "run_cmds",
        "Deny a pending action with a reason (then `tether resume RUN`, or the governed agent retries the call).",
    ),
    "worker": (
        "distributed_cmds",
        "Host runs as Temporal workflows: poll the shared task queue and this worker's own, until Ctrl-C.",
    ),
    "submit": (
        "distributed_cmds",
        "Start a run as a Temporal workflow; print its run id and workflow id (--wait: its outcome).",
    ),
    "demo": (
        "demo_cmds",
        "Run the bugfix demo: a denial, a declined approval, a wrong edit, a fix, verification, COMPLETE.",
    ),
    "serve": (
        "serve_cmds",
        "The web console: runs, live timelines, each turn's loop view, the approval inbox. Ctrl-C stops it.",
    ),
    "export": (
        "episode_cmds",
        "Write a run's episode package: its log (exact bytes), blobs, envelope, plan and starting workspace.",
    ),
    "import": (
        "episode_cmds",
        "Verify a package whole (names, types, sizes, hashes, signature, chain), then add its run to the store.",
    ),
    "fork": (
        "fork_cmds",
        "Fork a run at SEQ: the workspace is rebuilt from the log as it was there, then the fork goes on live.",
    ),
    "undo": (
        "undo_cmds",
        "Restore the workspace to before a run's actions (all, those after --to SEQ, or one --action).",
    ),
    "trace": (
        "trace_cmds",
        "Export a stored run as an OpenTelemetry trace, to the exporter the OTEL_* variables name.",
    ),
    "replay": (
        "replay_cmds",
        "Re-execute a run from its recorded starting files and model answers; report the first divergence.",
    ),
    "mcp-proxy": (
        "mcp_cmds",
        "Serve MCP on stdio in front of another server: only declared tools, each call gated and logged.",
    ),
    "graph": ("graph_cmds", "Task graphs: nodes are runs, edges are dependencies, workers take nodes under leases."),
    "log": ("log_cmds", "Inspect and verify run logs."),
    "policy": ("policy_cmds", "Ask the gate about a call, or run policy test cases."),
    "key": ("key_cmds", "The anchor key: signed checkpoints of every run's head."),
    "db": ("db_cmds", "The PostgreSQL event store: its schema and roles."),
    "eval": ("eval_cmds", "Measure tether against public benchmarks."),
    "skills": ("knowledge_cmds", "Skills: SKILL.md folders a run can bind and load."),
    "memory": ("knowledge_cmds", "Project memory: facts the user stated, with their source."),
    "schedule": (
        "schedule_cmds",
        "Schedules: governed tasks fired on a cron, each firing with its receipts in the log.",
    ),
    "scheduler": (
        "schedule_cmds",
        "Fire due schedules, each firing with its trigger receipt first (--once: one pass; --now: a given clock).",
    ),
    "daemon": (
        "daemon_cmds",
        "Answer `tether hook` calls over a Unix socket, in the foreground (hooks start one on demand).",
    ),
}

_app: typer.Typer | None = None


def build_app() -> typer.Typer:
    """The typer app (built once): the root options, and a lazy group that loads commands from :data:`COMMANDS`."""
    global _app
    if _app is not None:
        return _app
    import typer

    from .lazy import LazyGroup

    app = typer.Typer(
        name="tether",
        help="The agent proposes. tether decides. Evidence accepts.",
        cls=LazyGroup.of(COMMANDS),
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False, "--version", is_eager=True, callback=_print_version, help="Print tether's version and exit."
        ),
    ) -> None:
        """The agent proposes. tether decides. Evidence accepts."""

    _app = app
    return app


def __getattr__(name: str) -> Any:
    """``tether.cli.main.app``: the typer app, built on first use (so that importing this module stays cheap)."""
    if name == "app":
        return build_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _version() -> str:
    from importlib.metadata import version

    return f"tether {version('tether')}"


def _print_version(value: bool) -> None:
    if value:
        import typer

        typer.echo(_version())
        raise typer.Exit()


def exit_code_for(error: TetherError) -> int:
    from tether.errors import InputError, LogCorrupt, SandboxUnavailable

    from .common import EXIT_BLOCKED, EXIT_INVALID, EXIT_RUNTIME, EXIT_USAGE

    if isinstance(error, SandboxUnavailable):
        return EXIT_BLOCKED
    if isinstance(error, LogCorrupt):
        return EXIT_INVALID
    if isinstance(error, InputError):
        return EXIT_USAGE
    return EXIT_RUNTIME  # RuntimeFailure and any other TetherError


def error_object(message: str, code: int, error: BaseException) -> dict[str, Any]:
    """The ``--json`` form of an error: message, file, field within it, exit code (and details where known)."""
    from tether.errors import EnvelopeInvalid, LogCorrupt

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
    import json

    if as_json:
        print(json.dumps(error_object(message, code, error), sort_keys=True))
    else:
        from rich.markup import escape

        from .common import err_console

        err_console.print(markup or f"[bold red]error:[/] {escape(message)}", soft_wrap=True)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        _hook(args[1:], own_process=argv is None)
    if args == ["--version"]:
        print(_version())
        return
    _run_app(args)


def _hook(args: list[str], own_process: bool) -> NoReturn:
    """``tether hook …``. In a process of its own (the console script), the relay asks the daemon first, as the
    launcher does (:mod:`tether.hooks.relay`: standard library only; it ends the process once the daemon has
    answered): :mod:`tether.hooks.entry` and the client import ``typing`` (~40 M instructions, more than the rest
    of this path), which a call the daemon answers does without. Whatever the relay cannot vouch for goes, with the
    input it read, to :func:`tether.hooks.entry.main`. Fail closed: a relay that fails exits 2, never 1."""
    raw = None
    if own_process:
        try:
            from tether.hooks import relay

            raw = relay.launch(args)  # returns only when the daemon did not answer
        except BaseException as e:  # never exit 1, which the agent reads as "no objection"
            sys.stderr.write(f"tether refused (fail closed): the hook relay failed: {type(e).__name__}: {e}\n")
            sys.exit(2)
    from tether.hooks.entry import finish
    from tether.hooks.entry import main as hook_main

    code = hook_main(args, raw, own_process=own_process)
    if own_process:
        finish(code)  # the reply is out: end at once (what a normal exit does that anyone sees, done first)
    sys.exit(code)


def _run_app(args: list[str]) -> None:
    import typer

    from tether.errors import TetherError

    from .common import EXIT_RUNTIME, EXIT_USAGE

    debug = "--debug" in args
    if debug:
        args.remove("--debug")
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        rc = build_app()(args=args, standalone_mode=False)
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
        from rich.markup import escape

        message = "interrupted: the log is intact; see `tether runs` and `tether resume RUN`"
        fail(message, 130, as_json, e, markup=escape(message))
    except typer.TyperException as e:  # usage errors: bad option, missing argument
        code = getattr(e, "exit_code", EXIT_USAGE)
        show = getattr(e, "show", None)
        if as_json or not callable(show):
            fail(e.format_message() if hasattr(e, "format_message") else str(e), code, as_json, e)
        show()
        sys.exit(code)
    except Exception as e:
        if debug:
            raise
        from rich.markup import escape

        message = f"internal error: {e.__class__.__name__}: {e} (rerun with --debug)"
        fail(message, EXIT_RUNTIME, as_json, e, markup=f"[bold red]{escape(message)}[/]")


def script() -> None:
    """The ``tether`` executable: :func:`main`, then, if the command used the Temporal SDK, an exit that skips the
    interpreter's finalization. The SDK's Rust threads can outlive it and abort the process (SIGABRT,
    "PyGILState_Release: thread state … must be current", temporalio/sdk-python#300) after a command that
    succeeded, e.g. ``tether submit --wait``. Not in :func:`main`, which tests call in their own process."""
    try:
        main()
        code: object = 0
    except SystemExit as e:
        code = e.code
        if "temporalio" not in sys.modules:
            raise
    if "temporalio" not in sys.modules:
        return
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)  # as sys.exit("message") would
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code or 0)


if __name__ == "__main__":
    script()
