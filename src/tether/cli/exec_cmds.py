"""``tether exec``: one command through the gate, then the sandbox; prints the receipt.

Exit codes: 0 the command ran and succeeded · 1 the gate denied it, or it ran and failed / timed out
(the receipt says which) · 4 the required sandbox cannot start (BLOCKED_DEPENDENCY, with the fix) ·
5 the gate asks for approval, which ``exec`` cannot give (the command did not run).
"""

from __future__ import annotations

import shlex
from enum import StrEnum
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from tether.envelope.load import load_envelope
from tether.envelope.schema import Effect, Envelope, PlanRef, ToolContract
from tether.errors import SandboxUnavailable
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.quickenum import Quick
from tether.sandbox import Receipt, make_sandbox

from .common import EXIT_BLOCKED, EXIT_INVALID, EXIT_OK, EXIT_WAITING, JsonOption, console, print_json

DEFAULT_TIMEOUT_S = 120.0


class Backend(StrEnum, metaclass=Quick):
    BWRAP = "bwrap"
    LOCAL = "local"


def default_envelope() -> Envelope:
    """Used without ``--envelope``: one ``bash`` tool, the built-in coding profile, a required bwrap sandbox."""
    bash = ToolContract(name="bash", purpose="Run a shell command in the workspace.", effects=[Effect.EXEC])
    return Envelope(plan=PlanRef(path="(none)", hash=""), tools=[bash])


def register(app: typer.Typer) -> None:
    app.command(
        "exec",
        context_settings={"allow_interspersed_args": False},
        help="Run one command through the gate and the sandbox (exit 0 ok, 1 denied/failed, 4 blocked, 5 ask).",
    )(exec_command)


def exec_command(
    command: list[str] = typer.Argument(..., help="The command; one argument runs via bash -c, several as argv."),
    envelope: Path | None = typer.Option(None, "--envelope", "-e", help="Envelope (default: built-in, cwd)."),
    sandbox: Backend | None = typer.Option(None, "--sandbox", help="Override the envelope's sandbox backend."),
    timeout: float | None = typer.Option(None, "--timeout", min=0.001, help="Seconds (default: tool or 120)."),
    json_out: bool = JsonOption,
) -> None:
    if envelope is not None:
        env = load_envelope(envelope)
        workspace = (envelope.resolve().parent / env.environment.workspace).resolve()
    else:
        env = default_envelope()
        workspace = Path.cwd().resolve()
    text = command[0] if len(command) == 1 else shlex.join(command)
    run_as: str | list[str] = command[0] if len(command) == 1 else list(command)

    decision = Gate(env, workspace).decide("bash", {"command": text})
    out: dict[str, Any] = {"command": text, "workspace": str(workspace), "decision": decision.to_dict()}
    if decision.verdict is Verdict.DENY:
        finish(out | {"status": "DENIED"}, None, json_out, EXIT_INVALID)
    if decision.verdict is Verdict.ASK:
        finish(out | {"status": "WAITING_APPROVAL"}, None, json_out, EXIT_WAITING)

    spec = env.environment.sandbox
    if sandbox is not None:
        spec = spec.model_copy(update={"backend": sandbox.value})
    try:
        environment = env.environment
        box = make_sandbox(
            spec,
            workspace,
            env_allow=environment.env_allow,
            deny=environment.filesystem.deny if environment.filesystem else (),
            secrets=[s.name for s in environment.secrets or ()],
        )
    except SandboxUnavailable as e:
        out |= {"status": "BLOCKED_DEPENDENCY", "error": str(e), "fix": e.fix}
        finish(out, None, json_out, EXIT_BLOCKED)
    fallback = getattr(box, "fallback_reason", None)
    if fallback:
        out["fallback_reason"] = fallback
    tool = env.tool("bash")
    timeout_s = timeout or (tool.timeout_s if tool and tool.timeout_s else DEFAULT_TIMEOUT_S)
    receipt = box.run(run_as, cwd=workspace, timeout_s=timeout_s)
    out |= {"status": "RAN", "receipt": receipt.model_dump(mode="json")}
    finish(out, receipt, json_out, EXIT_OK if receipt.ok else EXIT_INVALID)


def finish(out: dict[str, Any], receipt: Receipt | None, json_out: bool, code: int) -> NoReturn:
    if json_out:
        print_json(out)
        raise typer.Exit(code)
    d = out["decision"]
    console.print(
        f"[bold]{out['status']}[/]  gate: {d['verdict']} by [cyan]{d['deciding_rule']}[/] — {escape(d['reason'])}"
    )
    if "error" in out:
        console.print(f"[bold red]sandbox unavailable:[/] {out['error']}", soft_wrap=True)
    if "fallback_reason" in out:
        console.print(f"[yellow]bwrap unavailable, ran in local (not required):[/] {out['fallback_reason']}")
    if receipt is not None:
        table = Table(show_header=False, box=None)
        table.add_row("backend", receipt.backend)
        table.add_row("exit", f"{receipt.exit_code}" + ("  (timed out)" if receipt.timed_out else ""))
        table.add_row("duration", f"{receipt.duration_s:.3f}s")
        trunc = "  (truncated)" if receipt.truncated else ""
        table.add_row("bytes", f"stdout {receipt.stdout_bytes}, stderr {receipt.stderr_bytes}{trunc}")
        console.print(table)
        for name, text in (("stdout", receipt.stdout), ("stderr", receipt.stderr)):
            if text:
                console.rule(name)
                console.out(text, end="" if text.endswith("\n") else "\n", highlight=False)
    raise typer.Exit(code)
