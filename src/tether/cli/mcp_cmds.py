"""``tether mcp-proxy``: an MCP server over stdio that fronts another under an envelope (docs/mcp.md)."""

from __future__ import annotations

import uuid
from pathlib import Path

import typer

from tether.errors import InputError

from .common import DbOption


def register(app: typer.Typer) -> None:
    app.command(
        "mcp-proxy",
        context_settings={"allow_interspersed_args": False},
        help="Serve MCP on stdio in front of another server: only declared tools, each call gated and logged.",
    )(mcp_proxy)


def mcp_proxy(
    upstream: list[str] = typer.Argument(None, help="The upstream server's command (after --), for stdio."),
    envelope: Path = typer.Option(..., "--envelope", "-e", help="The envelope that governs the session."),
    upstream_url: str | None = typer.Option(None, "--upstream-url", help="A streamable HTTP upstream instead."),
    name: str = typer.Option(
        "upstream", "--name", help="The server's name in the envelope: its tools are mcp__NAME__TOOL."
    ),
    session: str | None = typer.Option(None, "--session", help="Continue this session's run (default: a new one)."),
    startup_timeout: float = typer.Option(
        30.0, "--startup-timeout", min=0.1, help="Seconds for the upstream to start."
    ),
    db: str | None = DbOption,
) -> None:
    """Serve MCP on stdio in front of another server: only declared tools, each call gated and logged.

    Give the upstream as a command after ``--`` (a stdio server, started in the envelope's workspace) or as
    ``--upstream-url``. The run (one per proxy session) is named on stderr; `tether show RUN` and
    `tether log verify RUN` read it, and `tether approve` answers its pending approvals.
    """
    from tether.envelope.load import load_envelope
    from tether.guard.mcp_proxy import Upstream, open_proxy, serve_stdio

    from .common import err_console, writer

    if bool(upstream) == bool(upstream_url):
        raise InputError("give the upstream server as a command after -- or as --upstream-url, not both or neither")
    env = load_envelope(envelope)
    workspace = (envelope.resolve().parent / env.environment.workspace).resolve()
    target = Upstream(command=list(upstream) or None, url=upstream_url, startup_timeout_s=startup_timeout)
    with writer(db, workspace, create=True) as store:
        proxy = open_proxy(store, envelope, target, name=name, session=session or uuid.uuid4().hex[:12])
        err_console.print(f"tether mcp-proxy: run {proxy.guard.run_id}; offering {len(proxy.offered())} tool(s)")
        serve_stdio(proxy)
