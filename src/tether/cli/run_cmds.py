"""``tether run | resume | show | approvals | approve | deny``: running agents and answering them."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.markup import escape
from rich.table import Table

from tether.control.loop import control_state
from tether.events.protocol import Store
from tether.events.store import Event, RunInfo
from tether.kernel import session
from tether.kernel.approvals import (
    ApprovalAnswer,
    ApprovalRequest,
    Approver,
    pending,
    record_answer,
    takes_effect,
    whoami,
)
from tether.kernel.continuation import Request, parse_budget
from tether.kernel.outcome import OutputContract
from tether.kernel.undo import Ledger, undoable
from tether.observe.diff import RunDiff
from tether.observe.timeline import render, timeline
from tether.state import RunState

from .common import (
    DbOption,
    JsonOption,
    TrustImportedOption,
    console,
    err_console,
    exit_code,
    print_json,
    reader,
    writer,
)
from .progress import ProgressLine, progress_line
from .prompt import ask_approval
from .trace_cmds import traced

ProgressOption = typer.Option(
    None, "--progress/--no-progress", help="A line on stderr saying what runs and for how long (default: on a TTY)."
)


def printer(as_json: bool, verbose: bool = False, progress: ProgressLine | None = None) -> Any:
    def on_event(e: Event) -> None:
        if as_json:
            typer.echo(json.dumps(e.to_dict(), sort_keys=True))
        elif line := render(e, verbose=verbose):
            console.print(line)
        if progress is not None:
            progress.on_event(e)

    return on_event


def approver_for(interactive: bool | None, as_json: bool) -> Approver | None:
    """The prompt that answers approvals, with ``--interactive`` (the default when stdin is a terminal and the
    output is not JSON); none with ``--headless``: an ASK then leaves the run waiting."""
    if interactive is None:
        interactive = sys.stdin.isatty() and not as_json
    return ask_approval if interactive else None


def exit_with(contract: OutputContract, control: str, as_json: bool) -> NoReturn:
    """Print a driven run's output contract (and, as text, its control state), then exit with its status's code."""
    show_contract(contract, as_json)
    if not as_json:
        console.print(control)
    raise typer.Exit(exit_code(contract.status))


def control_line(store: Store, run_id: str) -> str:
    """The control state the run ended in, and the resolver's last reason."""
    events = store.events(run_id)
    last = next((e.payload for e in reversed(events) if e.kind == "control.changed"), None)
    why = f" ({last['tier']}: {last['reason']})" if last else " (no diagnostic ever left the healthy band)"
    return f"control state: {control_state(events).value}{why}"


def show_contract(contract: OutputContract, as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps({"kind": "output_contract", **contract.model_dump()}, sort_keys=True))
        return
    table = Table(show_header=False, box=None, padding=(0, 1))
    for key in ("run_id", "status", "result", "next_action", "last_error"):
        value = getattr(contract, key)
        if value:
            table.add_row(f"[bold]{key}[/]", str(value))
    table.add_row("[bold]evidence[/]", ", ".join(contract.evidence) or "-")
    table.add_row("[bold]unknowns[/]", "\n".join(contract.unknowns) or "-")
    if contract.head is not None:
        table.add_row("[bold]head[/]", f"seq {contract.head.seq} {contract.head.hash}")
    console.print(table)


def run_cmd(
    task: str = typer.Argument(None, help="The task (default: the plan's goal)."),
    envelope: Path = typer.Option(Path("envelope.yaml"), "--envelope", "-e", help="Envelope (strictly validated)."),
    model: str | None = typer.Option(None, "--model", "-m", help="scripted:FILE | openai:MODEL | anthropic:MODEL"),
    base_url: str | None = typer.Option(None, "--base-url", help="Provider base URL (local servers)."),
    workspace: Path | None = typer.Option(None, "--workspace", "-w", help="Override the envelope's workspace."),
    sandbox: str | None = typer.Option(None, "--sandbox", help="Override the sandbox backend: bwrap | local."),
    context_window: int | None = typer.Option(
        None,
        "--context-window",
        min=1,
        help="The model's context window in tokens, over the envelope's and the table's.",
    ),
    interactive: bool = typer.Option(
        None, "--interactive/--headless", help="Prompt for approvals (default: if a TTY)."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Show every event."),
    progress: bool | None = ProgressOption,
    continue_plan: bool = typer.Option(
        False, "--continue-plan", help="Start from the task list of the latest earlier run on this workspace."
    ),
) -> None:
    """Run an agent on a task under an envelope. Exit 0 COMPLETE/NO_OP, 1 stopped, 4 blocked, 5 waiting/needs input."""
    loaded = session.load_checked(envelope)
    if task is None:
        from tether.envelope.load import load_plan

        task = load_plan(loaded.base_dir / loaded.envelope.plan.path).goal
    ws = (workspace or loaded.base_dir / loaded.envelope.environment.workspace).resolve()
    approver = approver_for(interactive, as_json)
    options = session.Options(
        model=model,
        base_url=base_url,
        workspace=ws,
        sandbox=sandbox,
        approver=approver,
        continue_plan=continue_plan,
        context_window=context_window,
    )
    with writer(db, ws, create=True) as store, progress_line(err_console, progress, as_json) as line:
        with traced(printer(as_json, verbose, line)) as sink:  # and to OpenTelemetry when OTEL_* ask for it
            options.on_event = sink
            contract = session.start(store, envelope, task, options).drive()
        control = control_line(store, contract.run_id)
    exit_with(contract, control, as_json)


def resume_cmd(
    run: str = typer.Argument(..., help="Run id (or unique prefix)."),
    note: str | None = typer.Option(None, "--note", help="A message the model is shown (NEEDS_INPUT, NO_PROGRESS)."),
    budget: list[str] = typer.Option(
        [], "--budget", help="Raise a limit: usd=5, tokens=…, turns=…, wall=… (seconds), tool_calls=… (BUDGET_STOP)."
    ),
    attempts: int = typer.Option(
        0, "--attempts", help="More completion claims verification may refuse (VERIFY_FAILED)."
    ),
    by: str | None = typer.Option(None, "--by", help="Who continues the run (default: the current user)."),
    model: str | None = typer.Option(None, "--model", "-m"),
    base_url: str | None = typer.Option(None, "--base-url"),
    sandbox: str | None = typer.Option(None, "--sandbox"),
    interactive: bool = typer.Option(None, "--interactive/--headless"),
    trust_imported: bool = TrustImportedOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
    verbose: bool = typer.Option(False, "--verbose", "-v"),
    progress: bool | None = ProgressOption,
) -> None:
    """Continue a run from its log: after approvals, a crash, a dependency that is back, or a stop a person answers.

    Which stop needs which option, and which are final (COMPLETE, NO_OP, BLOCKED_PERMISSION): docs/lifecycle.md.
    """
    request = Request(by or whoami(), "tether resume", note, dict(parse_budget(b) for b in budget), attempts)
    options = session.Options(
        model=model,
        base_url=base_url,
        sandbox=sandbox,
        approver=approver_for(interactive, as_json),
        trust_imported=trust_imported,
    )
    with writer(db) as store, progress_line(err_console, progress, as_json) as line:
        with traced(printer(as_json, verbose, line)) as sink:
            options.on_event = sink
            contract = session.resume(store, run, options, request).drive()
        control = control_line(store, contract.run_id)
    exit_with(contract, control, as_json)


DIFF_LINES = 200  # of the final diff shown by a compact `tether show`; --full prints it whole


def show_cmd(
    run: str = typer.Argument(..., help="Run id (or unique prefix)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Every event, and the summary tables."),
    full: bool = typer.Option(False, "--full", help="Every text whole (no … cuts), and the whole diff."),
    context: int | None = typer.Option(
        None,
        "--context",
        metavar="TURN",
        help="Exactly the messages sent to the model at TURN, rebuilt from the log and checked against its manifest.",
    ),
) -> None:
    """A run for a person: turns, verdicts and reasons, changed files, sensors, the final diff, the contract.

    Compact by default; --verbose adds every event (diagnostics, beliefs, checkpoints) and the summary
    tables. Whatever is shortened says so, and --full prints it whole. --context TURN prints one model
    call's messages instead (docs/context.md).
    """
    from tether.observe.diff import run_diff

    with reader(db) as store:
        info = store.run(run)
        store.verify(info.run_id)  # the timeline is a fold: of a verified log only (`tether log show` prints any)
        events = store.events(info.run_id)
        if context is not None:
            show_context(info.run_id, events, context, as_json)
            return
        diff = run_diff(store, events)
    state = RunState.from_events(events)
    ledger = Ledger.of(events)
    rollback = undoable(ledger)
    if as_json:
        print_json(shown_run(info, events, state, diff, rollback))
        return
    console.print(f"[bold]run {info.run_id}[/] — {state.status} — {escape(info.task)}")
    lines, cuts = timeline(events, verbose=verbose, whole=full)
    for line in [*lineage(state), *lines, *(summary_lines(events) if verbose else [])]:
        console.print(line)
    cuts += show_diff(diff, full)
    show_undo(ledger, rollback)
    console.print()
    show_contract(OutputContract.from_state(state), False)
    if cuts:
        console.print(f"\n[dim]{cuts} text(s) shortened (…); `tether show {info.run_id} --full` prints them whole[/]")


def shown_run(
    info: RunInfo, events: list[Event], state: RunState, diff: RunDiff, rollback: dict[str, str]
) -> dict[str, Any]:
    """``tether show --json``: what the text shows, whole, for a program: the verified head it was read at
    (what the rest is true of), the summary tables, the final diff, the output contract, what can be undone,
    and the runs it was delegated by and delegated to."""
    from tether.observe.summary import summarize

    return {
        "run_id": info.run_id,
        "status": state.status,
        "head": {"seq": info.head_seq, "hash": info.head_hash},
        "summary": summarize(events),
        "diff": dataclasses.asdict(diff),
        "contract": OutputContract.from_state(state).model_dump(),
        "undo": rollback,
        "parent_run": state.parent_run,
        "children": [{"call_id": c.call_id, "run_id": c.child_run, "task": c.task} for c in state.children.values()],
    }


def lineage(state: RunState) -> list[str]:
    """The lines that place a run among others, under its title: the run that delegated it (and the command that
    shows it), then each run it delegated, with the call that did and the child's task (cut to 80 characters)."""
    lines = [f"  delegated by run {state.parent_run} (`tether show {state.parent_run}`)"] if state.parent_run else []
    return lines + [
        f"  delegated to child run {c.child_run} ({c.call_id}): {escape(c.task[:80])}" for c in state.children.values()
    ]


def summary_lines(events: list[Event]) -> list[str]:
    """``--verbose``'s summary tables as lines (a table with no row is left out): each row its ``key=value``
    pairs, escaped, since they hold what the agent wrote."""
    from tether.observe.summary import summarize

    lines = []
    for title, table in summarize(events).items():
        if table:
            lines.append(f"\n[bold]{title}[/]")
            lines += ["  " + escape("  ".join(f"{k}={v}" for k, v in row.items())) for row in table]
    return lines


def show_context(run_id: str, events: list[Event], turn: int, as_json: bool) -> None:
    """One call's messages as sent, each with its role, tokens, hash and the events it was built from."""
    from tether.kernel.manifest import context_at

    ctx = context_at(events, turn)
    request = ctx.request
    rows = [
        {
            "role": m.role,
            "content": m.content,
            "tool_calls": [{"id": c.id, "name": c.name, "args": c.args} for c in m.tool_calls],
            "tool_call_id": m.tool_call_id,
            **r.model_dump(exclude={"role"}),
        }
        for m, r in zip(ctx.messages, ctx.records, strict=True)
    ]
    if as_json:
        print_json(
            {
                "run_id": run_id,
                "turn": turn,
                "seq": ctx.seq,
                "model": request.model,
                "counter": request.counter,
                "prompt_tokens": request.prompt_tokens_est,
                "tools_tokens": request.tools_tokens,
                "messages": rows,
            }
        )
        return
    console.print(
        f"[bold]run {run_id} — turn {turn}[/] (event {ctx.seq}): {len(rows)} messages to {escape(request.model)}, "
        f"{request.prompt_tokens_est} tokens by {escape(request.counter)} ({request.tools_tokens} of them the "
        "tool definitions); every message matches its recorded hash"
    )
    for n, row in enumerate(rows, start=1):
        built = ", ".join(str(s) for s in row["seqs"]) or "the envelope"
        console.print(
            f"\n[bold cyan]── {n} {row['role']}[/] [dim]{row['tokens']} tokens · {row['hash']} · events {built}"
            + (f" · answers {escape(row['tool_call_id'])}" if row["tool_call_id"] else "")
            + "[/]"
        )
        if row["content"]:
            console.print(escape(row["content"]), soft_wrap=True)
        for c in row["tool_calls"]:
            console.print(
                f"[green]→ {escape(c['name'])}[/] {escape(json.dumps(c['args'], sort_keys=True))} [dim]({c['id']})[/]"
            )


#: More actions than this with one same answer are shown as one line (a governed session of 1,000 calls: 1,000
#: lines saying "not undoable: it ran without a workspace snapshot around it").
UNDO_GROUP = 3


def show_undo(ledger: Ledger, rollback: dict[str, str]) -> None:
    """Which executed actions ``tether undo`` can take back, and why not (kernel/undo.py ``undoable``): one line an
    action, but one line for each answer more than :data:`UNDO_GROUP` actions share (how many, the first and last
    call ids, the tools), in the order each answer first came; ``--json`` keeps every action's own."""
    if not rollback:
        return
    groups: dict[str, list[str]] = {}
    for call_id, why in rollback.items():
        groups.setdefault(why, []).append(call_id)
    console.print("\n[bold]undo[/] (tether undo RUN [--to SEQ | --action CALL_ID])")
    for why, calls in groups.items():
        style = "green" if why.startswith("undoable") else "dim" if why.startswith("nothing") else "yellow"
        if len(calls) <= UNDO_GROUP:
            for call_id in calls:
                console.print(
                    f"  {escape(call_id)} ({escape(ledger.records[call_id].tool)}): [{style}]{escape(why)}[/]"
                )
            continue
        tools = Counter(ledger.records[c].tool for c in calls)
        kinds = escape(", ".join(f"{n} {tool}" for tool, n in tools.most_common()))
        span = f"{escape(calls[0])} … {escape(calls[-1])}"
        console.print(f"  {len(calls)} actions, {span} ({kinds}): [{style}]{escape(why)}[/]")


def show_diff(diff: RunDiff, full: bool) -> int:
    """Print the run's final diff (coloured); 1 if it was cut to :data:`DIFF_LINES` lines, else 0."""
    if diff.missing:
        console.print(f"\n[bold]changes[/]: unknown — {escape(diff.missing)}")
        return 0
    span = f"seq {diff.since_seq} → {diff.until_seq}"
    if not diff.files:
        console.print(f"\n[bold]changes[/] ({span}): none")
        return 0
    console.print(f"\n[bold]changes[/] ({span}): {len(diff.files)} file(s): {escape(', '.join(diff.files))}")
    lines = diff.text.splitlines()
    shown = lines if full else lines[:DIFF_LINES]
    for line in shown:
        style = (
            "green" if line.startswith("+") else "red" if line.startswith("-") else "cyan" if line[:2] == "@@" else ""
        )
        console.print(f"[{style}]{escape(line)}[/]" if style else escape(line), highlight=False)
    if len(shown) < len(lines):
        console.print(f"[dim]… {len(lines) - len(shown)} more diff line(s)[/]")
        return 1
    return 0


def approvals_cmd(db: str | None = DbOption, as_json: bool = JsonOption) -> None:
    """List pending approvals across runs."""
    with reader(db) as store:
        items = pending(store)
    if as_json:
        print_json(
            [
                {
                    "approval_id": r.approval_id,
                    "run_id": r.run_id,
                    "call_id": r.call_id,
                    "tool": r.tool,
                    "args": r.args,
                    "preview": r.preview,
                    "reason": r.reason,
                }
                for r in items
            ]
        )
        return
    if not items:
        console.print("no pending approvals")
    for r in items:
        console.print(f"[bold yellow]{r.approval_id}[/] run {r.run_id} · {r.tool} · {escape(r.reason)}")
        console.print("  " + escape(r.preview).replace("\n", "\n  "))


RunOption = typer.Option(None, "--run", help="The run, when the approval waits in several (a fork and its parent).")


def approve_cmd(
    approval_id: str,
    for_run: bool = typer.Option(False, "--for-run", help="Also allow this exact call for the rest of the run."),
    by: str | None = typer.Option(None, "--by", help="Who approves (default: current user)."),
    run: str | None = RunOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Approve a pending action (then `tether resume RUN`, or the governed agent retries the call)."""
    with writer(db) as store:
        answer = ApprovalAnswer("run" if for_run else "once", by or whoami())
        req = record_answer(store, approval_id, answer, run=run)
        then = takes_effect(store, req.run_id)
        hosted = signal_workflow(store, req)
    answered(req, "approved", then, as_json, hosted)


def deny_cmd(
    approval_id: str,
    reason: str = typer.Option(..., "--reason", help="Why; the model is told."),
    by: str | None = typer.Option(None, "--by"),
    run: str | None = RunOption,
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Deny a pending action with a reason (then `tether resume RUN`, or the governed agent retries the call)."""
    with writer(db) as store:
        req = record_answer(store, approval_id, ApprovalAnswer("deny", by or whoami(), reason), run=run)
        then = takes_effect(store, req.run_id)
        hosted = signal_workflow(store, req)
    answered(req, "denied", then, as_json, hosted)


def signal_workflow(store: Store, req: ApprovalRequest) -> dict[str, Any] | None:
    """For a run hosted as a Temporal workflow: signal it that the answer (already in the log) is there."""
    from tether.distributed.answers import signal_answer

    sent = signal_answer(store, req.run_id, req.approval_id)
    if sent is None:
        return None
    if not sent.signalled:
        err_console.print(
            f"[yellow]the answer is in the log, but workflow {sent.workflow_id} on {sent.address} was not "
            f"signalled ({escape(sent.error)}); it reads the log at its next re-check[/]"
        )
    return {"workflow_id": sent.workflow_id, "signalled": sent.signalled}


def answered(req: ApprovalRequest, verb: str, then: str, as_json: bool, hosted: dict[str, Any] | None = None) -> None:
    """The answer, and how it takes effect (``tether resume``, the agent retrying a governed session's call, or the
    Temporal workflow hosting the run, signalled)."""
    if hosted is not None:
        then = f"the run continues as workflow {hosted['workflow_id']}"
    if as_json:
        out = {"approval_id": req.approval_id, "run_id": req.run_id, "tool": req.tool, "answer": verb, "then": then}
        print_json(out if hosted is None else {**out, "hosted": hosted})
    else:
        console.print(f"{verb} {req.approval_id} ({req.tool}); {then}")


def register(app: typer.Typer) -> None:
    app.command("run")(run_cmd)
    app.command("resume")(resume_cmd)
    app.command("show")(show_cmd)
    app.command("approvals")(approvals_cmd)
    app.command("approve")(approve_cmd)
    app.command("deny")(deny_cmd)
