"""A run's timeline for people: one line per meaningful event, same for live and replay.

``tether run`` prints these as events are appended; ``tether show`` prints them from
the log. Kinds with nothing to say to a reader (model.requested, run.checkpoint) and the
per-step bookkeeping (diagnostics, beliefs: their effect shows as control changes and
verdicts) render as None and are skipped unless verbose.

Long texts are shortened to keep one event on one line; :func:`timeline` counts the cuts
so the caller can say how to see them whole, and prints them whole when asked (``whole``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from rich.markup import escape

from tether.events.store import Event
from tether.state import external_driver
from tether.told import told

VERDICT_STYLE = {"ALLOW": "green", "ASK": "yellow", "DENY": "red"}
RESULT_STYLE = {"PASS": "green", "FAIL": "red", "SKIPPED": "yellow"}
STATUS_STYLE = {"COMPLETE": "bold green", "NO_OP": "green", "WAITING_APPROVAL": "bold yellow"}


# Set by :func:`timeline` for one rendering: print texts whole, and count the ones that were cut.
_WHOLE: ContextVar[bool] = ContextVar("whole", default=False)
_CUTS: ContextVar[list[int] | None] = ContextVar("cuts", default=None)
# Set by :func:`timeline` too: the latest ``hook.received`` of a governed session, whose PreToolUse the decisions
# after it answer (:func:`_decided` shows what the agent was told where it is not the verdict).
_HOOK: ContextVar[list[dict[str, Any]] | None] = ContextVar("hook", default=None)
VERBOSE_ONLY = frozenset({"diagnostics.computed", "belief.recorded"})


def _short(value: Any, n: int = 100) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    text = " ".join(text.split())
    if len(text) <= n or _WHOLE.get():
        return escape(text)
    cuts = _CUTS.get()
    if cuts is not None:
        cuts[0] += 1
    return escape(text[: n - 1] + "…")


def _args(args: dict[str, Any]) -> str:
    if isinstance(args.get("command"), str):
        return _short(args["command"], 90)
    return _short(args, 90)


def _started(p: dict[str, Any]) -> str:
    line = f"[bold]run started[/] model={p['model']} sandbox={p.get('sandbox', '?')} task: {_short(p['task'], 80)}"
    if p.get("parent_run"):
        call = escape(p.get("parent_call") or "?")
        line += f"\n    [blue]delegated by run {escape(p['parent_run'])}[/] (its call {call})"
    if p.get("sandbox_fallback"):
        line += f"\n    [yellow]sandbox fallback (required: false):[/] {_short(p['sandbox_fallback'], 140)}"
    driver = external_driver(str(p.get("sandbox", "")))
    if driver:
        line += f"\n    [yellow]governed session:[/] {escape(driver)} runs the tools, outside any tether sandbox"
    for a in p.get("acknowledged") or ():
        line += (
            f"\n    [yellow]accepted risk {escape(a['risk'])}[/] at {escape(a['path'])} = {_short(a['found'], 80)}"
            f" — reason: {_short(a['reason'], 120)}"
        )
    return line


def _responded(p: dict[str, Any]) -> str:
    calls = ", ".join(c["name"] for c in p["tool_calls"]) or "no tool call"
    text = f" — {_short(p['text'], 70)}" if p["text"] else ""
    tokens = f"{p['input_tokens']}+{p['output_tokens']} tok"
    if not p.get("usage_reported", True):
        tokens = f"~{tokens}, estimated: the provider gave no usage"
    tries = f", {p['attempts']} attempts" if p.get("attempts", 1) > 1 else ""
    return f"[cyan]model[/] turn {p['turn']} ({p['termination']}, {tokens}{tries}): {calls}{text}"


def _retried(p: dict[str, Any]) -> str:
    if p.get("failure") == "context_overflow":
        return f"[yellow]context overflow[/] (attempt {p['attempt']}): retrying once with max_tokens {p['max_tokens']}"
    return f"[yellow]model error[/] (attempt {p['attempt']} failed, retrying): {_short(p['error'])}"


def _failed(p: dict[str, Any]) -> str:
    n = p.get("attempts", 1)
    what = "context overflow" if p.get("failure") == "context_overflow" else "model failed"
    return f"[red]{what}[/] after {n} attempt{'' if n == 1 else 's'}: {_short(p['error'])}"


def _proposed(p: dict[str, Any]) -> str:
    return f"  [bold]→ {p['tool']}[/] {_args(p['args'])}"


def _decided(p: dict[str, Any]) -> str:
    style = VERDICT_STYLE.get(p["verdict"], "white")
    line = f"    [{style}]{p['verdict']}[/] by [bold]{escape(p['deciding_rule'])}[/]: {_short(p['reason'], 110)}"
    hook = _HOOK.get()
    call = hook[0] if hook else {}
    agent = str(call.get("agent", ""))
    said = told(agent, p["verdict"], call.get("detail") or {}) if call.get("event") == "PreToolUse" else None
    if said is not None:
        line += f"\n        [yellow]told {escape(agent)}: {said.answer}[/] — {_short(said.why, 140)}"
    return line


def _completed(p: dict[str, Any]) -> str:
    r = p["result"]
    mark = "[green]ok[/]" if p["ok"] else f"[red]failed[/] ({r.get('failure_class')})"
    files = f" changed {', '.join(p['changed_files'])}" if p["changed_files"] else ""
    first = (r.get("content") or "").strip().splitlines()
    took = "" if p.get("duration_s") is None else f" in {p['duration_s']:.2f}s"  # None: the program did not say
    return f"    {mark}{took}{files}" + (f" — {_short(first[0], 80)}" if first else "")


def _sensor(p: dict[str, Any]) -> str:
    style = RESULT_STYLE.get(p["result"], "white")
    req = " (required)" if p["required"] else ""
    return f"    sensor [bold]{p['sensor']}[/]{req}: [{style}]{p['result']}[/] {_short(p['summary'], 90)}"


def _baseline(p: dict[str, Any]) -> str:
    if not p["ok"]:
        return f"[yellow]test baseline[/]: none — {_short(p['detail'])}"
    counts: dict[str, int] = {}
    for t in p["tests"]:
        counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
    tally = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return f"[bold]test baseline[/]: {len(p['tests'])} tests ({tally}) in {p['duration_s']:.2f}s, before any write"


def _preflight(p: dict[str, Any]) -> str:
    if p["ok"]:
        return "[green]pre-flight ok[/]: " + "; ".join(f"{c['name']}: {_short(c['detail'], 50)}" for c in p["checks"])
    bad = [c for c in p["checks"] if not c["ok"]]
    return "[red]pre-flight failed[/]: " + "; ".join(f"{c['name']}: {_short(c['detail'], 80)}" for c in bad)


def _finished(p: dict[str, Any]) -> str:
    style = STATUS_STYLE.get(p["status"], "bold red")
    return f"[{style}]run finished: {p['status']}[/] — {_short(p['result'], 100)}"


def _rollback(p: dict[str, Any]) -> str:
    n = len(p["files"])
    line = f"    [dim]rollback receipt: {n} file{'' if n == 1 else 's'} (pre- and post-images)[/]"
    if p["unreadable"]:
        line += f" [yellow]unreadable: {_short(', '.join(p['unreadable']), 80)}[/]"
    return line


def _undone(p: dict[str, Any]) -> str:
    n = len(p["files"])
    return (
        f"[bold magenta]undone[/] by {escape(p['by'])} ({escape(p['scope'])}): {_short(', '.join(p['actions']), 80)}"
        f" — {n} file{'' if n == 1 else 's'} restored"
    )


def _continued(p: dict[str, Any]) -> str:
    changed = [f"{k} {p['before'].get(k)} → {v:g}" for k, v in p["budgets"].items()]
    changed += [f"+{p['attempts']} completion attempts"] if p["attempts"] else []
    changed += [f"note: {_short(p['note'], 80)}"] if p.get("note") else []
    what = f": {'; '.join(changed)}" if changed else ""
    return f"[bold]run continued[/] from {p['from_status']} by {escape(p['by'])}{what}"  # _short escapes the note


def _skills(p: dict[str, Any]) -> str:
    bound = ", ".join(f"{b['skill']['name']} ({b['why']})" for b in p["bound"]) or "none"
    n = len(p["problems"])
    trouble = f"; [red]{n} malformed[/] (tether skills list)" if n else ""
    return f"[blue]skills bound[/]: {_short(bound, 160)}{trouble}"


def _egress(p: dict[str, Any]) -> str:
    where = f"{escape(p['host'])}:{p['port']}" if p["port"] is not None else escape(p["host"]) or "?"
    if p["allowed"]:
        to = f" → {p['address']}" if p["address"] else ""
        return f"    [green]egress[/] {p['method']} {where}{to} ({p['bytes_up']} up, {p['bytes_down']} down)"
    return f"    [red]egress refused[/] ({p['rule']}) {p['method']} {where}: {_short(p['detail'], 90)}"


RENDER: dict[str, Callable[[dict[str, Any]], str]] = {
    "run.started": _started,
    "run.resumed": lambda p: f"[bold]run resumed[/] ({_short(p['reason'])})",
    "run.continued": _continued,
    "run.waiting": lambda p: f"[yellow]waiting: {p['status']}[/] {_short(p['reason'])}",
    "run.finished": _finished,
    "session.ended": lambda p: (
        f"[bold]session ended[/] ({p['how']}, by {p.get('by') or '?'}): {_short(p['reason'], 120)}"
    ),
    "model.responded": _responded,
    "model.retried": _retried,
    "model.failed": _failed,
    "model.truncated": lambda p: (
        f"  [yellow]reply cut off[/] at max_tokens {p['max_tokens']}: {len(p['not_run'])} call(s) not run; "
        "the model is told to continue"
    ),
    "model.unaffordable": lambda p: f"[red]model call not sent[/]: {_short(p['reason'], 160)}",
    "noop.checked": lambda p: (
        f"  [{'green' if p['holds'] else 'red'}]no-op check[/] ({_short(p['condition'], 60)}): "
        + ("holds" if p["holds"] else "does not hold")
        + " — "
        + _short("; ".join(f"{c['clause']}: {c['detail']}" for c in p["clauses"]), 110)
    ),
    "action.proposed": _proposed,
    "action.invalid": lambda p: f"    [red]invalid arguments[/]: {_short(p['error'], 110)}",
    "action.decided": _decided,
    "approval.requested": lambda p: f"    [yellow]approval needed[/] {p['approval_id']}: {_short(p['preview'], 90)}",
    "approval.granted": lambda p: f"    [green]approved[/] by {escape(p['by'])} ({p['scope']})",
    "approval.denied": lambda p: f"    [red]denied[/] by {escape(p['by'])}: {_short(p['reason'])}",
    "approval.expired": lambda p: f"    [red]approval expired[/] → {p['outcome']}",
    "action.started": lambda p: f"    running (attempt {p['attempt']})" if p["attempt"] > 1 else "",
    "egress.attempt": _egress,
    "action.completed": _completed,
    "action.rollback": _rollback,
    "run.undone": _undone,
    "action.failed": lambda p: f"    [red]error[/] {p['failure_class']}: {_short(p['error'])}",
    "budget.exceeded": lambda p: f"[red]budget {p['budget']} exceeded[/]: {p['used']:g} of {p['limit']:g}",
    "tests.baseline": _baseline,
    "preflight.completed": _preflight,
    "sensor.result": _sensor,
    "completion.claimed": lambda p: f"  [bold]claim[/]: {_short(p['summary'])}",
    "completion.refused": lambda p: (
        f"  [red]completion refused[/] ({p['refusals']}/{p['max_refusals']}): " + _short("; ".join(p["reasons"]), 120)
    ),
    "completion.accepted": lambda p: "  [green]completion accepted[/]: every required sensor passed",
    "belief.recorded": lambda p: f"    [dim]belief g{p['generation']} {escape(p['key'])} = {_short(p['value'], 60)}[/]",
    "contradiction.detected": lambda p: (
        f"  [red]contradiction[/] ({p['severity']}) {escape(p['key'])}: " + _short(p["explanation"])
    ),
    "diagnostics.computed": lambda p: (
        "    [dim]diagnostics " + " ".join(f"{k}={v:.2f}" for k, v in sorted(p["dimensions"].items())) + "[/]"
    ),
    "control.changed": lambda p: (
        f"  [magenta]control {p['previous']} → {p['state']}[/] ({p['tier']}): " + _short(p["reason"])
    ),
    "recovery.switched": lambda p: f"  [magenta]recovery {p['previous']} → {p['strategy']}[/]: {_short(p['reason'])}",
    "stuck.detected": lambda p: f"  [yellow]stuck[/] {p['pattern']} x{p['count']}: {_short(p['detail'])}",
    "review.finding": lambda p: f"  [yellow]review[/] {p['view']}/{p['severity']}: {_short(p['message'])}",
    "review.gate": lambda p: "" if p["ok"] else f"    [yellow]review gate[/] ({p['risk']}): {_short(p['reasons'])}",
    "plan.updated": lambda p: "  [blue]plan[/] " + ", ".join(f"{t['id']}:{t['status']}" for t in p["tasks"]),
    "skills.bound": _skills,
    "memory.recalled": lambda p: f"[blue]memory[/]: {len(p['facts'])} remembered fact(s) offered (tether memory list)",
    "memory.remembered": lambda p: "[blue]remembered[/]: " + _short("; ".join(f["text"] for f in p["facts"]), 160),
    "plan.carried": lambda p: (
        f"[blue]plan carried[/] from {p['from_run']}: " + ", ".join(f"{t['id']}:{t['status']}" for t in p["tasks"])
    ),
    "hypothesis.recorded": lambda p: f"  [blue]hypothesis[/] {p['id']} ({p['score']:.2f}): {_short(p['statement'])}",
    "mcp.started": lambda p: (
        f"[bold]MCP server {escape(p['server'])}[/] ({p['transport']}, {p['sandbox'] or 'remote'}): offers "
        + _short(", ".join(p["offered"]) or "nothing", 120)
        + (f"; not offered (undeclared): {_short(', '.join(p['undeclared']), 80)}" if p["undeclared"] else "")
    ),
    "delegate.started": lambda p: (
        f"    [blue]delegated[/] to child run {escape(p['child_run'])}: {_short(p['task'], 80)} "
        f"(tools {_short(', '.join(p['tools']), 60)}; write {_short(p['write'], 50)})"
    ),
    "delegate.finished": lambda p: (
        f"    [blue]child run {escape(p['child_run'])} ended {p['status']}[/]: {_short(p['summary'], 80)} — charged "
        + ", ".join(f"{k}={v:g}" for k, v in p["spend"].items())
        + (" (its whole budgets: it has not ended)" if p["reserved"] else "")
    ),
    "hook.bypassed": lambda p: (
        f"    [bold red]BYPASSED[/] {escape(p['call_id'])} ({escape(p['tool'])}) ran "
        + ("before tether judged it " if p.get("event") == "PreToolUse" else "after tether answered ")
        + f"{p['verdict']} ({escape(p['rule'])}): {_short(p['reason'])}"
    ),
    "hook.input_changed": lambda p: (
        f"    [bold red]INPUT CHANGED[/] {escape(p['call_id'])} ({escape(p['tool'])}) ran as {escape(p['ran_as'])}"
        f" with an input tether did not judge; judged after it ran: {p['verdict']} ({escape(p['rule'])}):"
        f" {_short(p['reason'])}"
    ),
    "mcp.failed": lambda p: f"[red]MCP server {escape(p['server'])} did not start[/]: {_short(p['error'], 160)}",
}


def _by_subagent(p: dict[str, Any]) -> str:
    """A hook call made inside one of the agent's subagents (Claude Code sends ``agent_id`` only from there): which
    one, on the line before what it did. The main thread's calls (no ``agent_id``) are not marked."""
    detail = p["detail"]
    kind = _short(detail.get("agent_type") or "subagent of unknown type", 40)
    what = " ".join(str(x) for x in (p["event"], detail.get("tool_name") or "") if x)
    return f"  [blue]by subagent {kind}[/] ({_short(detail['agent_id'], 40)}): {_short(what, 60)}"


@contextmanager
def _rendering(whole: bool, cuts: list[int]) -> Iterator[None]:
    whole_token, cuts_token, hook_token = _WHOLE.set(whole), _CUTS.set(cuts), _HOOK.set([{}])
    try:
        yield
    finally:
        _WHOLE.reset(whole_token)
        _CUTS.reset(cuts_token)
        _HOOK.reset(hook_token)


def timeline(events: Iterable[Event], *, verbose: bool = False, whole: bool = False) -> tuple[list[str], int]:
    """The lines of ``events`` and how many texts in them were shortened (0 when ``whole``)."""
    cuts = [0]
    with _rendering(whole, cuts):
        lines = [line for e in events if (line := render(e, verbose=verbose))]
    return lines, cuts[0]


def render(event: Event, *, verbose: bool = False) -> str | None:
    if event.kind in VERBOSE_ONLY and not verbose:
        return None
    fn = RENDER.get(event.kind)
    if fn is None and event.kind == "hook.received":
        hook = _HOOK.get()
        if hook:
            hook[0] = event.payload
        fn = _by_subagent if (event.payload.get("detail") or {}).get("agent_id") else None
    line = fn(event.payload) if fn else (f"[dim]{event.kind} {_short(event.payload)}[/]" if verbose else "")
    if not line:
        return None
    return f"[dim]{event.seq:>3}[/] {line}"
