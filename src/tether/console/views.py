"""What the console shows, as plain values computed from a run's log: pure functions, no I/O, no HTML.

The templates only lay these values out (and Jinja escapes every string in them), so what a page says
about a run can be tested without a browser, and every page is a read of the same log as the CLI's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from tether.control.fold import RunFold
from tether.errors import LogCorrupt
from tether.events.kinds_control import ControlChanged
from tether.events.payload import REGISTRY
from tether.events.store import Event, RunInfo
from tether.state import RunState, external_driver
from tether.status import ControlState, RunStatus
from tether.told import told

PAGE_SIZE = 200  # events on one page of a run's timeline, however long the run (benchmarks/console.py)
TEXT_LIMIT = 4000  # characters of one output or diff shown inline; the whole text is at /runs/{id}/events/{seq}
CHART_POINTS = 120  # diagnostics samples drawn in the chart (evenly thinned beyond that)


# ---- the runs list --------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRow:
    """One line of the runs list; ``problem`` says why a run's log cannot be read (the row shows CORRUPT)."""

    run_id: str
    task: str
    created_at: str
    parent_run: str | None
    events: int
    status: str
    control: str
    duration_s: float
    usd: float
    tokens: int
    verified: bool
    problem: str = ""
    depth: int = 0
    approvals: tuple[dict[str, Any], ...] = ()  # the pending approval requests, as the fold keeps them


def run_row(info: RunInfo, events: Sequence[Event], chain_problem: str | None, now: datetime | None = None) -> RunRow:
    """A run as the list shows it; a log whose chain breaks or whose payloads do not parse is CORRUPT.
    ``now``: a running run's duration counts up to it (a paused or finished run's is what the log says)."""
    corrupt = RunRow(info.run_id, info.task, info.created_at, info.parent_run, len(events), "CORRUPT", "-", 0, 0, 0,
                     verified=False, problem=chain_problem or "")  # fmt: skip
    if chain_problem is not None:
        return corrupt
    try:
        state = RunState.from_events(events)
        control = control_of(events).value
    except LogCorrupt as e:
        return replace(corrupt, problem=str(e))
    except (KeyError, ValueError, TypeError, AttributeError) as e:  # chained, but not a log tether wrote
        return replace(corrupt, problem=f"the log does not fold: {e.__class__.__name__}: {e}")
    return replace(
        corrupt,
        status=state.status.value,
        control=control,
        duration_s=round(state.wall_used(now) if now and state.status is RunStatus.RUNNING else state.used.wall_s, 2),
        usd=round(state.used.usd, 4),
        tokens=state.used.tokens,
        verified=True,
        approvals=tuple(state.pending_approvals.values()),
    )


def control_of(events: Sequence[Event]) -> ControlState:
    """The control state the latest ``control.changed`` set (NORMAL before any): what
    ``control.loop.control_state`` answers, read from the one event instead of a fold of the whole log."""
    last = next((e for e in reversed(events) if e.kind == ControlChanged.KIND), None)
    return ControlState(last.data_as(ControlChanged).state) if last is not None else ControlState.NORMAL


def as_tree(rows: Sequence[RunRow]) -> list[RunRow]:
    """Rows ordered so that each fork follows its parent, with its depth (a parent missing from ``rows``,
    e.g. filtered out, leaves its forks at the top level)."""
    present = {r.run_id for r in rows}
    children: dict[str | None, list[RunRow]] = {}
    for r in rows:
        children.setdefault(r.parent_run if r.parent_run in present else None, []).append(r)
    out: list[RunRow] = []
    stack = [(r, 0) for r in reversed(children.get(None, []))]
    seen: set[str] = set()
    while stack:
        row, depth = stack.pop()
        if row.run_id in seen:  # a parent link that loops is shown once, never followed forever
            continue
        seen.add(row.run_id)
        out.append(replace(row, depth=depth))
        stack += [(c, depth + 1) for c in reversed(children.get(row.run_id, []))]
    return out


def matches(row: RunRow, status: str, control: str, query: str) -> bool:
    """The runs list's filters: exact status and control state, and a case-insensitive text in task or id."""
    q = query.strip().lower()
    return (
        (not status or row.status == status)
        and (not control or row.control == control)
        and (not q or q in row.task.lower() or q in row.run_id.lower())
    )


# ---- a run's timeline -----------------------------------------------------------------------------


#: The families of event kinds (the part before the dot) the timeline can show or hide, in the loop's order;
#: a family registered later and not named here is shown after them (:func:`families`).
FAMILIES = (
    "run", "model", "action", "approval", "sensor", "verify", "completion", "review", "belief", "contradiction",
    "hypothesis", "plan", "diagnostics", "stuck", "control", "recovery", "tests", "preflight", "budget", "sandbox",
)  # fmt: skip


def families() -> list[str]:
    """Every family of a registered event kind, those of :data:`FAMILIES` first in its order."""
    registered = sorted({kind.split(".")[0] for kind in REGISTRY})
    return [f for f in FAMILIES if f in registered] + [f for f in registered if f not in FAMILIES]


@dataclass(frozen=True)
class Item:
    """One event as the timeline shows it: a headline, labelled facts, and a long text (output, diff) if any."""

    seq: int
    ts: str
    kind: str
    turn: int
    group: str  # css class: model | action | verdict-ALLOW | sensor-FAIL | approval | control | ...
    title: str
    facts: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""
    text_label: str = ""
    clipped: bool = False
    origin: str = ""  # the run whose log holds the event: a fork's first events are its parent's


def _s(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


def _clip(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= TEXT_LIMIT else (text[:TEXT_LIMIT], True)


def _args(args: dict[str, Any]) -> str:
    return args["command"] if isinstance(args.get("command"), str) else _s(args)


def _started(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    facts = [
        ("model", _s(p.get("model", ""))),
        ("sandbox", _s(p.get("sandbox", ""))),
        ("workspace", _s(p.get("workspace", ""))),
    ]
    if p.get("sandbox_fallback"):
        facts.append(("sandbox fallback", _s(p["sandbox_fallback"])))
    driver = external_driver(str(p.get("sandbox", "")))
    if driver:
        facts.append(("governed session", f"{driver} runs the tools, outside any tether sandbox"))
    return "run started", facts, _s(p.get("task", ""))


def _responded(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    calls = ", ".join(_s(c.get("name")) for c in p.get("tool_calls", [])) or "no tool call"
    facts = [
        ("termination", _s(p.get("termination"))),
        ("calls", calls),
        ("tokens", f"{p.get('input_tokens', 0)} in + {p.get('output_tokens', 0)} out"),
        ("cost", f"${p.get('cost_usd', 0):.4f}"),
    ]
    return f"model turn {p.get('turn')}", facts, _s(p.get("text", ""))


def _decided(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    facts = [("deciding rule", _s(p.get("deciding_rule"))), ("reason", _s(p.get("reason")))]
    facts += [
        (f"matched {_s(r.get('verdict'))}", f"{_s(r.get('id'))}: {_s(r.get('reason'))}")
        for r in p.get("rules", [])
        if r.get("id") != p.get("deciding_rule")
    ]
    return _s(p.get("verdict")), facts, ""


def _completed(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    result = p.get("result") or {}
    data = result.get("data") or {}
    took = p.get("duration_s", 0)
    facts = [("tool", _s(p.get("tool"))), ("duration", "not reported" if took is None else f"{took:.2f}s")]
    if "exit_code" in data:
        facts.append(("exit code", _s(data["exit_code"])))
    if data.get("sandbox"):
        facts.append(("sandbox", _s(data["sandbox"])))
    if p.get("changed_files"):
        facts.append(("changed files", ", ".join(_s(f) for f in p["changed_files"])))
    if p.get("unexplained"):
        facts.append(("unexplained", "; ".join(_s(u) for u in p["unexplained"])))
    if not p.get("ok"):
        facts.append(("failure", _s(result.get("failure_class"))))
    text = data.get("diff") or result.get("content") or ""
    return ("ok" if p.get("ok") else "failed"), facts, _s(text)


def _sensor(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    facts = [("required", "yes" if p.get("required") else "no"), ("summary", _s(p.get("summary", "")))]
    if p.get("tool"):
        facts.append(("ran", _s(p["tool"])))
    diags = "\n".join(
        f"{_s(d.get('file'))}:{d.get('line') or ''} {_s(d.get('message'))}" for d in p.get("diagnostics", [])
    )
    return f"sensor {_s(p.get('sensor'))}: {_s(p.get('result'))}", facts, diags


def _finding(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
    facts = [("check", _s(p.get("check"))), ("message", _s(p.get("message")))]
    if p.get("file"):
        facts.append(("file", _s(p["file"])))
    return f"review {_s(p.get('view'))} / {_s(p.get('severity'))}", facts, _s(p.get("detail", ""))


def _fields(*names: str, title: str) -> Any:
    def render(p: dict[str, Any]) -> tuple[str, list[tuple[str, str]], str]:
        return title, [(n.replace("_", " "), _s(p[n])) for n in names if p.get(n) not in (None, "", [])], ""

    return render


RENDER = {
    "run.started": _started,
    "model.responded": _responded,
    "action.decided": _decided,
    "action.completed": _completed,
    "sensor.result": _sensor,
    "review.finding": _finding,
    "action.proposed": lambda p: (
        f"→ {_s(p.get('tool'))}",
        [("args", _args(p.get("args", {}))), ("call", _s(p.get("call_id")))],
        "",
    ),
    "approval.requested": lambda p: (
        "approval needed",
        [("approval", _s(p.get("approval_id"))), ("tool", _s(p.get("tool"))), ("reason", _s(p.get("reason")))],
        _s(p.get("preview", "")),
    ),
    "approval.granted": _fields("approval_id", "by", "scope", "rule", title="approved"),
    "approval.denied": _fields("approval_id", "by", "reason", title="denied"),
    "approval.expired": _fields("approval_id", "outcome", title="approval expired"),
    "action.failed": _fields("tool", "failure_class", "error", "fix", title="could not run"),
    "action.invalid": _fields("tool", "error", title="invalid arguments"),
    "run.finished": _fields("status", "result", "next_action", "last_error", title="run finished"),
    "session.ended": _fields("how", "reason", "by", "budget", title="session ended"),
    "run.waiting": _fields("status", "reason", title="waiting"),
    "model.requested": _fields("model", "n_messages", "max_tokens", "prompt_tokens_est", title="model called"),
    "action.started": _fields("tool", "attempt", "idempotent", title="running"),
    "run.checkpoint": _fields("label", "files", "note", "unreadable", title="checkpoint"),
    "run.resumed": _fields("reason", title="run resumed"),
    "run.continued": _fields("by", "from_status", "note", "budgets", "attempts", title="run continued"),
    "verify.completed": _fields("trigger", "accepted", "results", "reasons", title="verification"),
    "run.forked": _fields("parent_run", "at_seq", "workspace", title="forked"),
    "control.changed": lambda p: (
        f"control {_s(p.get('previous'))} → {_s(p.get('state'))}",
        [("tier", _s(p.get("tier"))), ("reason", _s(p.get("reason")))],
        "",
    ),
    "completion.refused": lambda p: ("completion refused", [("reasons", "; ".join(map(_s, p.get("reasons", []))))], ""),
    "completion.accepted": lambda p: (
        "completion accepted",
        [("evidence", ", ".join(map(_s, p.get("evidence", []))))],
        "",
    ),
    "completion.claimed": _fields("summary", title="completion claimed"),
    "belief.recorded": lambda p: (f"belief {_s(p.get('key'))}", [("value", _s(p.get("value")))], ""),
    "contradiction.detected": _fields("key", "severity", "explanation", title="contradiction"),
    "recovery.switched": _fields("previous", "strategy", "reason", title="recovery"),
    "stuck.detected": _fields("pattern", "count", "detail", title="stuck"),
    "hypothesis.recorded": _fields("id", "score", "statement", title="hypothesis"),
    "review.gate": _fields("tool", "ok", "risk", "reasons", title="execution review"),
    "diagnostics.computed": lambda p: (
        "diagnostics",
        [("dimensions", " · ".join(f"{_s(k)} {v:.2f}" for k, v in sorted((p.get("dimensions") or {}).items())))],
        "",
    ),
}


def _group(e: Event) -> str:
    p = e.payload
    if e.kind == "action.decided":
        return f"verdict verdict-{_s(p.get('verdict'))}"
    if e.kind == "sensor.result":
        return f"sensor sensor-{_s(p.get('result'))}"
    if e.kind == "action.completed":
        return "receipt receipt-ok" if p.get("ok") else "receipt receipt-failed"
    return e.kind.split(".")[0]


#: Characters that change how text looks without being seen: bidirectional overrides and isolates, zero-width
#: characters, and C0/C1 controls other than newline and tab. An agent can use them to make a command read as
#: something else where a person approves it ("Trojan Source"); the console shows each as a visible mark.
HIDDEN = re.compile(
    "[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]"
)


def visible(text: str) -> str:
    """``text`` with every hidden character replaced by a mark naming its code point, e.g. ``⟦U+202E⟧``."""
    return HIDDEN.sub(lambda m: f"⟦U+{ord(m.group()):04X}⟧", text)


def has_hidden(text: str) -> bool:
    return HIDDEN.search(text) is not None


def is_diff(text: str) -> bool:
    """A unified diff (perhaps after a line or two of header): its lines are shown coloured."""
    lines = text.splitlines()
    return any(x.startswith("--- ") for x in lines) and any(x.startswith("@@") for x in lines)


def diff_class(line: str) -> str:
    """The css class of one line of a unified diff."""
    if line.startswith(("+++ ", "--- ")):
        return "file"
    return {"@": "hunk", "+": "add", "-": "del"}.get(line[:1], "")


def item(e: Event, turn: int, call: dict[str, Any] | None = None) -> Item:
    """One event for the timeline. A kind without a renderer shows its payload as JSON. ``call``: the hook call the
    event belongs to (:func:`hook_calls`); a verdict the agent was told otherwise says what it was told."""
    fn = RENDER.get(e.kind)
    if fn is None:
        title, facts, text = e.kind, [], json.dumps(e.payload, indent=1, sort_keys=True, default=str)
    else:
        try:
            title, facts, text = fn(e.payload)
        except (AttributeError, KeyError, TypeError, ValueError):  # a payload of an odd shape still shows, raw
            title, facts, text = e.kind, [], json.dumps(e.payload, indent=1, sort_keys=True, default=str)
    if e.kind == "action.decided" and call is not None and call.get("event") == "PreToolUse":
        said = told(_s(call.get("agent")), _s(e.payload.get("verdict")), call.get("detail") or {})
        facts = facts if said is None else [*facts, (f"told {_s(call.get('agent'))}", f"{said.answer} — {said.why}")]
    title, facts, text = visible(title), [(k, visible(v)) for k, v in facts], visible(text)
    shown, clipped = _clip(text)
    label = "diff" if is_diff(shown) else "output" if e.kind == "action.completed" else ""
    return Item(e.seq, e.ts, e.kind, turn, _group(e), title, facts, shown, label, clipped, e.run_id)


def hook_calls(events: Sequence[Event], call: dict[str, Any] | None = None) -> list[dict[str, Any] | None]:
    """The hook call each event belongs to in a governed session: the latest ``hook.received`` up to it (``call``:
    the one before ``events[0]``, for a live stream going on); None before any (and in tether's own runs)."""
    out = []
    for e in events:
        if e.kind == "hook.received":
            call = e.payload
        out.append(call)
    return out


def turns_of(events: Sequence[Event], turn: int = 0) -> list[int]:
    """The turn each event belongs to: a turn starts at its model call; events before the first are turn 0.
    ``turn`` is the turn the event before ``events[0]`` was in (a live stream goes on from it)."""
    out = []
    for e in events:
        if e.kind in ("model.requested", "model.responded"):
            turn = max(turn, int(e.payload.get("turn", turn)))
        out.append(turn)
    return out


@dataclass(frozen=True)
class Page:
    """One page of a run's timeline: events ``[start, stop)`` by position in the log."""

    items: list[Item]
    start: int
    stop: int
    total: int
    size: int

    @property
    def earlier(self) -> int | None:
        return max(0, self.start - self.size) if self.start > 0 else None

    @property
    def later(self) -> int | None:
        return self.stop if self.stop < self.total else None

    @property
    def is_tail(self) -> bool:
        return self.stop >= self.total


def page(events: Sequence[Event], start: int | None, size: int = PAGE_SIZE) -> Page:
    """The page starting at position ``start``; by default the last page (where a live run grows)."""
    total = len(events)
    if start is None:
        start = max(0, total - size)
    start = min(max(0, start), max(0, total - 1))
    stop = min(total, start + size)
    turns, calls = turns_of(events), hook_calls(events)
    return Page([item(events[i], turns[i], calls[i]) for i in range(start, stop)], start, stop, total, size)


def page_of_seq(events: Sequence[Event], seq: int, size: int = PAGE_SIZE) -> int:
    """The start of the page that holds ``seq`` (pages are aligned to ``size``)."""
    pos = next((i for i, e in enumerate(events) if e.seq == seq), 0)
    return pos - pos % size


# ---- the charts: diagnostics over time, the control state as a band ---------------------------------


@dataclass(frozen=True)
class Series:
    name: str
    points: str  # SVG polyline points, "x,y x,y ..." in a 0..100 x 0..40 box
    last: float


def diagnostics_chart(events: Sequence[Event], width: float = 100.0, height: float = 40.0) -> list[Series]:
    """Each diagnostic dimension over the run (1 is healthy), thinned to at most ``CHART_POINTS`` samples."""
    samples = [e.payload.get("dimensions") or {} for e in events if e.kind == "diagnostics.computed"]
    if len(samples) > CHART_POINTS:
        step = len(samples) / CHART_POINTS
        samples = [samples[int(i * step)] for i in range(CHART_POINTS - 1)] + [samples[-1]]
    names = sorted({k for s in samples for k, v in s.items() if isinstance(v, int | float)})
    n = max(1, len(samples) - 1)
    out = []
    for name in names:
        pts = [
            (i * width / n, height - max(0.0, min(1.0, float(s[name]))) * height)
            for i, s in enumerate(samples)
            if isinstance(s.get(name), int | float)
        ]
        values = [float(s[name]) for s in samples if isinstance(s.get(name), int | float)]
        out.append(Series(name, " ".join(f"{x:.1f},{y:.1f}" for x, y in pts), values[-1]))
    return out


@dataclass(frozen=True)
class Band:
    state: str
    first_seq: int
    last_seq: int
    percent: float
    offset: float  # percent of the band before this span


def control_band(events: Sequence[Event]) -> list[Band]:
    """The control state over the run's events, as spans of the log (NORMAL until the first change)."""
    if not events:
        return []
    spans: list[tuple[str, int]] = [("NORMAL", events[0].seq)]
    for e in events:
        if e.kind == "control.changed" and e.payload.get("state") != spans[-1][0]:
            spans.append((_s(e.payload.get("state")), e.seq))
    last = events[-1].seq
    total = max(1, last - events[0].seq + 1)
    bands, offset = [], 0.0
    for i, (state, first) in enumerate(spans):
        end = spans[i + 1][1] - 1 if i + 1 < len(spans) else last
        if end >= first:
            percent = round(100 * (end - first + 1) / total, 2)
            bands.append(Band(state, first, end, percent, offset))
            offset = round(offset + percent, 2)
    return bands


# ---- the loop view: the eleven layers of one turn -----------------------------------------------------


@dataclass(frozen=True)
class Layer:
    name: str
    what: str
    kinds: tuple[str, ...]


LAYERS = (
    Layer("world model", "beliefs derived from receipts", ("belief.recorded",)),
    Layer("evidence", "receipts of what ran", ("action.completed", "action.failed", "action.invalid")),
    Layer("hypotheses", "what the agent thinks is wrong", ("hypothesis.recorded",)),
    Layer("contradictions", "beliefs the evidence overturned", ("contradiction.detected",)),
    Layer("diagnostics", "health dimensions and stuck patterns", ("diagnostics.computed", "stuck.detected")),
    Layer("control state", "the resolver's decision", ("control.changed",)),
    Layer("planning", "the model's proposals and plan", ("model.responded", "action.proposed", "plan.updated")),
    Layer(
        "execution review",
        "the decider's verdicts and the humans' answers",
        (
            "action.decided",
            "review.gate",
            "approval.requested",
            "approval.granted",
            "approval.denied",
            "approval.expired",
            "approval.mismatch",
        ),
    ),
    Layer(
        "verification",
        "sensors and completion claims",
        (
            "sensor.result",
            "verify.completed",
            "completion.claimed",
            "completion.refused",
            "completion.accepted",
            "tests.baseline",
            "preflight.completed",
        ),
    ),
    Layer("recovery", "the recovery ladder", ("recovery.switched",)),
    Layer("reviewer", "findings of the reviewer views", ("review.finding",)),
)


@dataclass(frozen=True)
class LayerView:
    layer: Layer
    items: list[Item]
    note: str
    held: str = ""  # what the layer holds once the turn is over, from the control layer's fold


@dataclass(frozen=True)
class TurnView:
    turn: int
    turns: list[int]
    layers: list[LayerView]
    control: str


def held_after(events: Sequence[Event]) -> dict[str, str]:
    """What the control layer's fold (``control/fold.py: RunFold``) holds after ``events``, per layer.

    A fresh fold, not the kernel's cache (``control.fold.folded``), which a run this process drives may be
    extending at the same moment."""
    fold = RunFold()
    fold.extend(events)
    beliefs = sorted(fold.beliefs.values(), key=lambda b: b.key)
    shown = "; ".join(f"{b.key} = {_s(b.value)}" for b in beliefs[:6]) + ("; …" if len(beliefs) > 6 else "")
    standing = [h.id for h in fold.hypotheses.hypotheses.values()]
    tasks = fold.plan.plan.ordered()
    progress, why = fold.progress()
    evidence, evidence_why = fold.evidence()
    return {
        "world model": f"{len(beliefs)} belief{'' if len(beliefs) == 1 else 's'} held"
        + (f": {shown}" if beliefs else ""),
        "hypotheses": f"{len(standing)} recorded" + (f": {', '.join(standing)}" if standing else ""),
        "diagnostics": f"progress {progress:.2f} ({why}); evidence support {evidence:.2f} ({evidence_why})",
        "planning": ", ".join(f"{t.id} {t.status}" for t in tasks) if tasks else "no plan recorded",
        "recovery": f"strategy {fold.strategy}",
    }


def turn_view(events: Sequence[Event], turn: int) -> TurnView:
    """What each of the eleven layers did in ``turn`` (its events), what it holds once the turn is over (the
    control layer's fold of the log up to the turn's last event), and the control state the turn ended in."""
    turns, calls = turns_of(events), hook_calls(events)
    mine = [(e, t, c) for e, t, c in zip(events, turns, calls, strict=True) if t == turn]
    last = mine[-1][0].seq if mine else -1
    prefix = [e for e in events if e.seq <= last]
    control = control_of(prefix).value if mine else "NORMAL"
    held = held_after(prefix) if mine else {}
    layers = []
    for layer in LAYERS:
        items = [item(e, t, c) for e, t, c in mine if e.kind in layer.kinds]
        note = "" if items else "nothing this turn"
        if layer.name == "control state":
            note = f"ended the turn {control}" + ("" if items else " (unchanged)")
        layers.append(LayerView(layer, items, note, held.get(layer.name, "")))
    return TurnView(turn, sorted(set(turns)), layers, control)
