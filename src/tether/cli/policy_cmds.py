"""``tether policy``: ask the gate about a call, or run a table of policy tests.

Exit codes: ``check`` exits 0 for ALLOW, 1 for DENY, 5 for ASK (a human would be asked);
``test`` exits 0 when every case gets its expected decision, 1 on any mismatch; 2 for bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.markup import escape
from rich.table import Table

from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.errors import InputError
from tether.policy.cases import load_cases, run_cases, shell_tool
from tether.policy.decision import Decision, Verdict
from tether.policy.defaults import default_envelope
from tether.policy.gate import Gate

from . import common

policy_app = typer.Typer(
    name="policy", help="Ask the gate about a call, or run policy test cases.", no_args_is_help=True
)

EXIT_FOR = {Verdict.ALLOW: common.EXIT_OK, Verdict.DENY: common.EXIT_INVALID, Verdict.ASK: common.EXIT_WAITING}
_STYLE = {Verdict.ALLOW: "green", Verdict.ASK: "yellow", Verdict.DENY: "red"}


BUILTIN = "(built-in)"
EnvelopeOption = typer.Option(
    None, "--envelope", "-e", help="Envelope file (default: ./envelope.yaml if present, else the built-in one)."
)
BuiltinOption = typer.Option(False, "--builtin", help="Use the built-in envelope even where ./envelope.yaml exists.")
WorkspaceOption = typer.Option(
    None, "--workspace", "-w", help="Workspace the paths resolve against (default: the envelope's, else here)."
)


def _envelope(path: Path | None, builtin: bool, workspace: Path | None) -> tuple[Envelope, str, Path]:
    """The envelope that decides, the name to show for it, and the workspace its paths resolve against.

    The same default as ``tether run``: ./envelope.yaml when present, so that a check answers for the
    envelope a run here would use (an ALLOW from the built-in one could be a DENY under the real one).
    """
    if path is not None and builtin:
        raise InputError("give either --envelope FILE or --builtin, not both")
    if path is None and not builtin and Path("envelope.yaml").is_file():
        path = Path("envelope.yaml")
    if path is None:
        return default_envelope(), BUILTIN, workspace or Path.cwd()
    env = load_envelope(path)
    return env, str(path.resolve()), workspace or (path.resolve().parent / env.environment.workspace)


def _print_decision(decision: Decision, label: str) -> None:
    style = _STYLE[decision.verdict]
    common.console.print(f"[bold {style}]{decision.verdict.name}[/] {escape(label)}")
    common.console.print(f"  decided by [bold]{decision.deciding_rule}[/]: {escape(decision.reason)}", soft_wrap=True)
    for m in decision.matches:
        if m.id != decision.deciding_rule:
            common.console.print(f"  also {m.verdict.name:5} {m.id}: {escape(m.reason)}", soft_wrap=True)


@policy_app.command("check")
def check(
    command: list[str] = typer.Argument(None, help="The shell command (after --), joined with spaces."),
    envelope: Path | None = EnvelopeOption,
    builtin: bool = BuiltinOption,
    workspace: Path | None = WorkspaceOption,
    tool: str | None = typer.Option(None, "--tool", help="Tool name, for a non-shell call (with --args)."),
    args: str | None = typer.Option(None, "--args", help="Tool arguments as a JSON object."),
    json_out: bool = common.JsonOption,
) -> None:
    """Decide one call and print the decision, the deciding rule and every matched rule.

    Exit 0 ALLOW, 1 DENY, 5 ASK, 2 bad input. Example: tether policy check -- 'rm -rf ~'
    """
    env, source, ws = _envelope(envelope, builtin, workspace)
    call_args: dict[str, Any]
    if tool is not None or args is not None:
        if command:
            raise InputError("give either a command (after --) or --tool/--args, not both")
        try:
            parsed = json.loads(args or "{}")
        except json.JSONDecodeError as e:
            raise InputError(f"--args: invalid JSON at column {e.colno}: {e.msg}") from e
        if not isinstance(parsed, dict):
            raise InputError("--args: expected a JSON object")
        call_args = parsed
        name = tool or shell_tool(env)
    else:
        if not command:
            raise InputError("nothing to check: give a command after -- or --tool NAME --args JSON")
        name = shell_tool(env)
        call_args = {"command": " ".join(command)}
    decision = Gate(env, ws).decide(name, call_args)
    if json_out:
        common.print_json({"tool": name, "args": call_args, "envelope": source, **decision.to_dict()})
    else:
        label = call_args["command"] if "command" in call_args else f"{name} {json.dumps(call_args)}"
        _print_decision(decision, str(label))
        common.console.print(f"  envelope: {escape(source)}", soft_wrap=True)
    raise typer.Exit(EXIT_FOR[decision.verdict])


@policy_app.command("test")
def test(
    cases_file: Path = typer.Argument(..., help="YAML list of cases: command or tool+args, and expect."),
    envelope: Path | None = EnvelopeOption,
    builtin: bool = BuiltinOption,
    workspace: Path | None = WorkspaceOption,
    json_out: bool = common.JsonOption,
) -> None:
    """Run a table of (call, expected decision) cases; report mismatches. Exit 1 on any mismatch."""
    env, source, ws = _envelope(envelope, builtin, workspace)
    outcomes = run_cases(load_cases(cases_file, env), Gate(env, ws))
    bad = [o for o in outcomes if not o.ok]
    if json_out:
        common.print_json(
            {
                "envelope": source,
                "total": len(outcomes),
                "mismatches": [
                    {
                        "index": o.case.index,
                        "call": o.case.label,
                        "expected": o.case.expect.name,
                        **o.decision.to_dict(),
                    }
                    for o in bad
                ],
            }
        )
    else:
        if bad:
            table = Table("#", "call", "expected", "got", "rule", "reason")
            for o in bad:
                d = o.decision
                table.add_row(
                    str(o.case.index), o.case.label, o.case.expect.name, d.verdict.name, d.deciding_rule, d.reason
                )
            common.console.print(table)
        passed = len(outcomes) - len(bad)
        common.console.print(f"{passed}/{len(outcomes)} cases as expected (envelope: {escape(source)})")
    raise typer.Exit(common.EXIT_INVALID if bad else common.EXIT_OK)


def register(app: typer.Typer) -> None:
    app.add_typer(policy_app, name="policy")
