"""``tether serve``: the web console over a tether database."""

from __future__ import annotations

import typer
from rich.markup import escape

from tether.errors import FileError

from .common import DbOption, console, db_path, find_db


def serve_cmd(
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address; any but loopback requires a token."),
    port: int = typer.Option(8765, "--port", help="TCP port."),
    token: str | None = typer.Option(
        None, "--token", help="Access token (default: none on loopback, a generated one on any other bind)."
    ),
    db: str | None = DbOption,
) -> None:
    """The web console: runs, live timelines, each turn's loop view, the approval inbox. Ctrl-C stops it."""
    from tether.console.access import bind_token
    from tether.console.server import serve, url
    from tether.events.backends import describe

    try:  # the database other commands would read (here, ./envelope.yaml's workspace, parent directories)
        path = find_db(db)
    except FileError as e:  # none yet: serve where a run started here would write it, and say so
        path = db_path(db)
        console.print(f"[yellow]{escape(str(e))}[/]\nserving {describe(path)} once a run creates it")
    settled = bind_token(host, token)
    console.print(f"tether console for {describe(path)} at {url(host, port)}")
    if settled is not None and token is None:
        console.print(f"[bold]access token (shown once):[/] {settled}\nopen: {url(host, port, settled)}")
    serve(path, host, port, settled)


def register(app: typer.Typer) -> None:
    app.command("serve")(serve_cmd)
