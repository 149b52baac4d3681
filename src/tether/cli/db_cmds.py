"""``tether db init URL``: make tether's schema in a PostgreSQL database, and grant the application role."""

from __future__ import annotations

import typer

from .common import JsonOption, console, print_json

db_app = typer.Typer(help="The PostgreSQL event store: its schema and roles.", no_args_is_help=True)


@db_app.command("init")
def init_cmd(
    url: str = typer.Argument(..., help="postgresql:// URL, connecting as the role that will own the tables."),
    app_role: str | None = typer.Option(
        None, "--app-role", help="The role tether runs connect as: granted read and insert on the log, nothing more."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Create the tether schema as the URL's role (its owner) and grant --app-role what a store needs.

    Runs then connect as the application role (--db or $TETHER_DB with its URL), which can read the log and
    insert into it but never update, delete or truncate it; triggers refuse those to the owner as well.
    Running it again on a database that has the schema only grants the role; on an older schema
    (tether/pg1) it first migrates it in place, in one transaction. See docs/store.md.
    """
    from tether.errors import InputError
    from tether.events.backends import describe, is_url
    from tether.events.pgstore import init

    if not is_url(url):
        raise InputError(f"{url}: expected a postgresql:// URL (a SQLite store needs no init: it is made on first use)")
    done = init(url, app_role)
    if as_json:
        print_json({"db": describe(url), "done": done, "app_role": app_role})
        return
    console.print(f"{describe(url)}: {done}")


def register(app: typer.Typer) -> None:
    app.add_typer(db_app, name="db")
