"""The control layer's stages composed from the whole log, with no cache: the oracle the fold must equal.

``tether.control.loop.observe`` reads the run's incremental fold (``tether.control.fold``). This is
the same pipeline written the plain way, each stage a pure function of the log as it would be after
the previous stages' output (each module's from-scratch function: ``derive``, ``plan_events``,
``hypothesis_events``, ``stuck_events``, ``compute``, ``budget_check``...). Slow (O(log) per call)
and obviously right; ``test_incremental.py`` checks the fold against it on every prefix of a log
that exercises every stage.
"""

from __future__ import annotations

from collections.abc import Sequence

from tether.control.beliefs import derive
from tether.control.diagnostics import compute
from tether.control.fold import MARKER_KINDS
from tether.control.hypotheses import hypothesis_events
from tether.control.loop import resolution_events
from tether.control.planning import plan_events
from tether.control.receipts import CONTROL_KINDS, LogView, last_control_seq, seq_of, view
from tether.control.recovery import budget_check, current_strategy, usage
from tether.control.resolver import ResolverInput, resolve
from tether.control.stuck import detect, stuck_events
from tether.envelope.schema import Envelope
from tether.events.kinds_control import ControlChanged, DiagnosticsComputed
from tether.events.payload import Payload
from tether.events.store import Event


class Work:
    """The log plus this call's pending output, as synthetic events (what the log will look like)."""

    def __init__(self, events: Sequence[Event]) -> None:
        self.events = list(events)
        self.last: Event | None = events[-1] if events else None
        self.out: list[Payload] = []

    def add(self, items: Sequence[Payload]) -> None:
        for item in items:
            last = self.last
            seq = (last.seq + 1) if last else 0
            self.last = Event.of(last.run_id if last else "", seq, last.ts if last else "", item)
            self.events.append(self.last)
            self.out.append(item)


def observe_log(events: Sequence[Event], envelope: Envelope) -> list[Payload]:
    """What ``observe`` must return for ``events``, computed from the whole log."""
    work = Work(events)
    work.add(derive(work.events))
    work.add(plan_events(work.events, envelope))
    work.add(hypothesis_events(work.events))

    marker = last_control_seq(events, MARKER_KINDS)
    inputs = [e for e in events if e.seq > marker and e.kind not in CONTROL_KINDS]
    if not inputs:
        return work.out
    through = inputs[-1].id

    lv: LogView = view(work.events)
    # The budget fold once per call: this call's own output (control kinds only, stamped with the
    # last event's time) changes no counter and no clock, so the log as given has the same usage.
    used = usage(events)
    work.add(stuck_events(work.events, lv))

    diags = compute(work.events, envelope, lv, used)
    last_diag = last(work.events, "diagnostics.computed")
    if last_diag is None or last_diag.payload.get("dimensions") != diags.values:
        work.add([DiagnosticsComputed(dimensions=diags.values, notes=diags.notes, through=through)])

    strategy = current_strategy(work.events)
    ok, note, left = budget_check(work.events, envelope, used)
    open_sb, total_sb = unresolved_system_breaking(work.events)
    res = resolve(
        ResolverInput(
            dimensions=diags.values,
            critical=envelope.control.critical,
            warning=envelope.control.warning,
            system_breaking=open_sb,
            system_breaking_total=total_sb,
            stuck=[s.pattern for s in detect(work.events, lv)],
            strategy=strategy,
            attempts_in_strategy=sum(1 for a in lv.actions if lv.in_window(a.event)),
            recovery_budget_ok=ok,
            recovery_budget_note=note,
        )
    )
    changed = last(work.events, "control.changed")
    work.add(resolution_events(res, strategy, changed.data_as(ControlChanged) if changed else None, left, through))
    return work.out


def unresolved_system_breaking(events: Sequence[Event]) -> tuple[list[str], int]:
    """(explanations of system-breaking contradictions whose key was not re-observed since, total in run)."""
    found = [e for e in events if e.kind == "contradiction.detected" and e.payload.get("severity") == "system_breaking"]
    open_: list[str] = []
    for c in found:
        key = c.payload["key"]
        since = max((seq_of(x) for x in c.payload.get("cites", [])), default=c.seq)
        re_observed = any(
            e.kind == "belief.recorded"
            and e.payload.get("key") == key
            and max((seq_of(x) for x in e.payload.get("cites", [])), default=-1) > since
            for e in events
        )
        if not re_observed:
            open_.append(str(c.payload.get("explanation", key)))
    return open_, len(found)


def last(events: Sequence[Event], kind: str) -> Event | None:
    return next((e for e in reversed(events) if e.kind == kind), None)
