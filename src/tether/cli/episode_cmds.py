"""``tether export RUN -o FILE`` and ``tether import FILE``: episode packages (see tether.observe.episode)."""

from __future__ import annotations

from pathlib import Path

import typer

from tether.events.anchor import AnchorKey, key_path
from tether.events.backends import describe
from tether.observe.episode import MAX_BYTES, Limits, export_run, import_package

from .common import DbOption, JsonOption, console, db_path, print_json, reader, writer


def export_cmd(
    run: str = typer.Argument(..., help="Run id (or unique prefix)."),
    out: Path = typer.Option(..., "--output", "-o", help="The package to write (a .tar.gz)."),
    key: Path | None = typer.Option(
        None, "--key", help="Sign with this anchor key (default: $TETHER_KEY or `tether key init`'s, if it exists)."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Write a run's episode package: its log (exact bytes), blobs, envelope, plan and starting workspace.

    Signed with the anchor key when one exists. Refused for a log that does not verify, and for a log
    holding the value of a host variable passed to the sandbox (env_allow, secrets).
    """
    path = key_path(key)
    signing = AnchorKey.load(path) if key is not None or path.exists() else None
    with reader(db) as store:
        manifest = export_run(store, run, out, key=signing)
    if as_json:
        print_json({"package": str(out), **manifest})
        return
    size = out.stat().st_size
    signed = f"signed by {manifest['signature']['key_id']}" if "signature" in manifest else "unsigned (no key)"
    console.print(
        f"exported {manifest['run_id']}: {manifest['events']} events, {len(manifest['files'])} files, "
        f"{size} bytes, head seq {manifest['head']['seq']}, {signed} -> {out}"
    )
    for h, why in manifest["withheld_blobs"].items():
        console.print(f"[yellow]withheld[/] blob {h}: {why}")


def import_cmd(
    package: Path = typer.Argument(..., help="An episode package written by `tether export`."),
    key: Path | None = typer.Option(None, "--key", help="Require a signature by this key (private or public)."),
    max_bytes: int = typer.Option(MAX_BYTES, "--max-bytes", help="Refuse a package larger than this, decompressed."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Verify a package whole (names, types, sizes, hashes, signature, chain), then add its run to the store.

    Nothing is imported unless everything checks; the import is one transaction.
    """
    trusted = AnchorKey.load(key_path(key)) if key is not None else None
    spec = db_path(db)
    with writer(spec, create=True) as store:
        done = import_package(store, package, trusted=trusted, limits=Limits(max_bytes=max_bytes))
        with reader(spec) as check:  # what `tether log verify` will say there
            audit = check.verify_run(done.run_id)
    info = {
        "run_id": done.run_id,
        "events": audit.events,
        "head": {"seq": audit.head[0], "hash": audit.head[1]},
        "blobs": len(done.blobs),
        "signature": done.signature_note,
        "warnings": done.warnings,
        "db": describe(spec),
    }
    if as_json:
        print_json(info)
        return
    console.print(
        f"imported {done.run_id}: {audit.events} events, chain intact, head seq {audit.head[0]}, "
        f"{len(done.blobs)} blobs; {done.signature_note} -> {describe(spec)}"
    )
    for w in done.warnings:
        console.print(f"[yellow]note:[/] {w}")
    console.print(
        f"its envelope is the sender's: read it (tether show {done.run_id}) before resume, fork or replay, which"
        " ask for --trust-imported"
    )


def register(app: typer.Typer) -> None:
    app.command("export")(export_cmd)
    app.command("import")(import_cmd)
