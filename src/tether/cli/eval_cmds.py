"""``tether eval agentdojo``: how often an injected instruction gets a side effect past the gate (docs/trust.md)."""

from __future__ import annotations

from typing import Any

import typer

from .common import JsonOption, console, print_json

eval_app = typer.Typer(help="Measure tether against public benchmarks.", no_args_is_help=True)


@eval_app.command("agentdojo")
def agentdojo_cmd(
    suite: list[str] = typer.Option(
        None, "--suite", help="workspace, travel, banking or slack (repeatable; default: all)."
    ),
    task: list[str] = typer.Option(None, "--task", help="Only these user task ids, e.g. user_task_0 (repeatable)."),
    as_json: bool = JsonOption,
) -> None:
    """Replay AgentDojo's ground-truth tool calls, benign and injected, through the gate; print per suite the
    benign utility, attack success and approvals per task. Needs the extra: pip install 'tether[agentdojo]'."""
    from tether.evals.agentdojo import run  # the benchmark is an optional extra, imported only here

    reports = []
    for report in run(suite or None, user_tasks=task or None):
        reports.append(report.to_dict())
        if not as_json:
            _row(reports[-1])
    if as_json:
        print_json({"benchmark": "agentdojo", "suites": reports})


def _row(r: dict[str, Any]) -> None:
    console.print(
        f"[bold]{r['suite']}[/]: benign utility {r['benign_utility']:.0%} ({r['benign_passed']}/{r['user_tasks']} "
        f"tasks pass the gate without a human), {r['approvals_per_task']:.2f} approvals/task; attacks: "
        f"{r['attack_success']}/{r['actionable']} tool-actionable pairs succeeded "
        f"({r['stopped_by_ask']} stopped at a human, {r['stopped_by_deny']} denied), "
        f"{r['not_actionable']} pairs need no tool call or never reach their goal"
    )


def register(app: typer.Typer) -> None:
    app.add_typer(eval_app, name="eval")
