"""``tether daemon``: the resident process that answers hook calls in milliseconds (docs/hook-latency.md)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("daemon")(daemon_cmd)


def daemon_cmd(
    socket: str | None = typer.Option(
        None, "--socket", help="Unix socket (default: $TETHER_HOOK_SOCKET, else per user)."
    ),
    idle: float = typer.Option(
        1800.0, "--idle", min=1.0, help="Exit after this many seconds without a call (none in flight)."
    ),
    stop: bool = typer.Option(
        False, "--stop", help="Ask the running daemon to exit once its calls in flight end (exit 1 if none answered)."
    ),
) -> None:
    """Answer `tether hook` calls over a Unix socket, in the foreground (hooks start one on demand).

    Ended idle, by --stop or by SIGTERM, it finishes its calls in flight, then checkpoints each session it answered."""
    from tether.hooks.daemon import run, stop_daemon

    if stop:
        raise typer.Exit(0 if stop_daemon(socket) else 1)
    raise typer.Exit(run(socket, idle_s=idle))
