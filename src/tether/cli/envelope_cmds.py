"""``tether compile | validate | schema | init``: authoring and checking contracts."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.markup import escape

from tether.envelope.compile import builtin_template, compile_envelope
from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope, IntentPlan
from tether.errors import EnvelopeInvalid, FileError, Problem
from tether.policy.strict import strict_problems

from .common import EXIT_INVALID, EXIT_USAGE, JsonOption, console, print_json


def compile_cmd(
    plan: Path = typer.Argument(..., help="Intent plan (YAML)."),
    output: Path = typer.Option(..., "-o", "--output", help="Envelope to write (YAML or .json)."),
    template: Path | None = typer.Option(None, "--from", help="Envelope template (default: OUTPUT if it exists)."),
    as_json: bool = JsonOption,
) -> None:
    """Compile an intent plan into an envelope, binding the plan hash and sealing the contract hash."""
    env = compile_envelope(plan, output, template)
    if as_json:
        print_json({"envelope": str(output), "plan_hash": env.plan.hash, "contract_hash": env.contract_hash})
        return
    console.print(f"compiled {output}")
    console.print(f"  plan_hash      {env.plan.hash}")
    console.print(f"  contract_hash  {env.contract_hash}")


def validate_cmd(
    envelope: Path = typer.Argument(..., help="Envelope file (YAML or JSON)."),
    strict: bool = typer.Option(False, "--strict", help="Also check bindings, boundaries, budgets, approvals, rules."),
    as_json: bool = JsonOption,
) -> None:
    """Validate an envelope. Exit 0 valid, 1 invalid, 2 usage or I/O error."""
    problems: list[Problem] = []
    env: Envelope | None = None
    try:
        env = load_envelope(envelope)
    except EnvelopeInvalid as e:
        problems = e.problems
    if env is not None and strict:
        problems = strict_problems(env, envelope)
    if as_json:
        print_json(
            {
                "file": str(envelope),
                "valid": not problems,
                "strict": strict,
                "plan_hash": env.plan.hash if env else None,
                "contract_hash": env.contract_hash if env else None,
                "problems": [p.to_dict() for p in problems],
            }
        )
    elif problems:
        console.print(f"[red]invalid[/] {envelope}: {len(problems)} problem(s)")
        for p in problems:
            console.print(
                f"  [bold]{escape(p.path)}[/]: found {escape(p.found)}; expected {escape(p.expected)}", soft_wrap=True
            )
    else:
        assert env is not None
        console.print(f"[green]valid[/] {envelope}" + (" (strict)" if strict else " (schema only)"))
        console.print(f"  plan_hash      {env.plan.hash}")
        console.print(f"  contract_hash  {env.contract_hash}")
    if problems:
        raise typer.Exit(EXIT_INVALID)


def schema_cmd(which: str = typer.Argument("envelope", help="envelope | plan")) -> None:
    """Print the JSON Schema of an envelope or intent plan (for editors)."""
    models: dict[str, type[Envelope] | type[IntentPlan]] = {"envelope": Envelope, "plan": IntentPlan}
    if which not in models:
        console.print(f"unknown schema {which!r}; expected one of {sorted(models)}")
        raise typer.Exit(EXIT_USAGE)
    typer.echo(json.dumps(models[which].model_json_schema(), indent=2))


def init_cmd(
    directory: Path = typer.Argument(Path("."), help="Where to write plan.yaml, envelope.yaml and trajectory.yaml."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing files."),
    as_json: bool = JsonOption,
) -> None:
    """Write a starter plan, a compiled envelope and a scripted trajectory: `tether run` works at once.

    The template is coherent: the plan forbids editing tests and the envelope's write set leaves them
    read-only; bubblewrap is preferred, and where it cannot start the run falls back to the local sandbox
    and says so; tether's own files (.tether/) are never counted as the agent's writes.
    """
    directory.mkdir(parents=True, exist_ok=True)
    names = ("plan.yaml", "envelope.yaml", "trajectory.yaml")
    targets = {directory / name: name for name in names}
    existing = [str(p) for p in targets if p.exists()]
    if existing and not force:
        raise FileError(f"{', '.join(existing)}: already exist(s); pass --force to overwrite")
    for path, name in targets.items():
        path.write_text(builtin_template(name), encoding="utf-8")
    env = compile_envelope(directory / "plan.yaml", directory / "envelope.yaml")  # binds the plan: runnable now
    if as_json:
        print_json({"wrote": [str(p) for p in targets], "contract_hash": env.contract_hash})
        return
    for path in targets:
        console.print(f"wrote {path}")
    console.print(
        f"next: edit {directory / 'plan.yaml'}, then `tether compile {directory / 'plan.yaml'} -o "
        f"{directory / 'envelope.yaml'}` (after every edit of the plan); `tether run` runs the scripted trajectory"
    )


def register(app: typer.Typer) -> None:
    app.command("compile")(compile_cmd)
    app.command("validate")(validate_cmd)
    app.command("schema")(schema_cmd)
    app.command("init")(init_cmd)
