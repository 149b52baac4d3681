"""``tether key init | show``: the Ed25519 key that anchors run logs outside the database."""

from __future__ import annotations

from pathlib import Path

import typer

from tether.events.anchor import AnchorKey, anchor_every, anchor_file_path, key_path

from .common import JsonOption, console, print_json

key_app = typer.Typer(help="The anchor key: signed checkpoints of every run's head.", no_args_is_help=True)
KeyOption = typer.Option(None, "--key", help="Key path (default: $TETHER_KEY or ~/.config/tether/anchor.key).")


def describe(key: AnchorKey) -> dict[str, object]:
    return {
        "key": str(key.path),
        "key_id": key.key_id,
        "can_sign": key.private is not None,
        "anchor_file": str(anchor_file_path(key.path)),
        "every": anchor_every(),
    }


@key_app.command("init")
def init_cmd(key: Path | None = KeyOption, as_json: bool = JsonOption) -> None:
    """Create the anchor key (mode 0600; never overwrites). From now on every run end and every N events
    is signed, in the database and in the anchor file."""
    created = AnchorKey.generate(key_path(key))
    info = describe(created)
    if as_json:
        print_json(info)
        return
    console.print(f"created {info['key']} ({info['key_id']}); public key: {created.path.with_suffix('.pub')}")
    console.print(
        f"checkpoints go to {info['anchor_file']} and the database, every {info['every']} events and at "
        "every run end. Keep the key off machines the agent can write to."
    )


@key_app.command("show")
def show_cmd(key: Path | None = KeyOption, as_json: bool = JsonOption) -> None:
    """Where the key and the anchor file are, and the key's id."""
    info = describe(AnchorKey.load(key_path(key)))
    if as_json:
        print_json(info)
        return
    for k, v in info.items():
        console.print(f"[bold]{k}[/] {v}")


def register(app: typer.Typer) -> None:
    app.add_typer(key_app, name="key")
