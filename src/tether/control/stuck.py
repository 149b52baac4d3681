"""Stuck detection from the log (the current strategy's window only).

Patterns, each over the trailing receipts of the window:

- ``repeated_action``: the same action (tool + argument hash) with the same observation
  ``REPEAT`` (3) times in a row. Polling a long-running job is exempt: its observation changes.
- ``repeated_error``: the same failure signature ``REPEAT`` times among the last ``ERROR_SPAN``
  (6) receipts, whatever the actions were.
- ``alternation``: the last four actions are A, B, A, B (A ≠ B) and each letter observed the
  same thing both times (A/B/A/B with changing observations is exempt).
- ``no_action``: ``REPEAT`` model responses in a row with no tool call.

A pattern is reported once per streak (keyed by the streak's first event).
"""

from __future__ import annotations

from tether.events.kinds_calls import ActionCompleted, ActionFailed, ActionProposed, StuckPattern
from tether.events.store import Event
from tether.records import dataclass
from tether.typeless import cast

from .receipts import ActionRecord, LogView, SensorRecord, view

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from collections.abc import Sequence

    # later kind modules (payload.LATER): read by their kind's string, imported where one is made
    from tether.events.kinds import ModelResponded
    from tether.events.kinds_control import StuckDetected

ACTION_KINDS = frozenset(k.KIND for k in (ActionProposed, ActionCompleted, ActionFailed))
REPEAT = 3
ERROR_SPAN = 6


@dataclass(frozen=True)
class Stuck:
    """A stuck pattern found in the log, what it is, and the events it cites."""

    pattern: StuckPattern
    detail: str
    cites: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.cites)


def detect(events: Sequence[Event], lv: LogView | None = None) -> list[Stuck]:
    lv = lv or view(events)
    actions = [a for a in lv.actions if lv.in_window(a.event)]
    streak: list[ActionRecord] = []
    if actions:
        last = actions[-1]
        for a in reversed(actions):
            if a.identity == last.identity and a.observation == last.observation:
                streak.append(a)
            else:
                break
        streak.reverse()
    pool: list[ActionRecord | SensorRecord] = [*actions, *(s for s in lv.sensors if lv.in_window(s.event))]
    receipts = sorted(pool, key=lambda r: r.event.seq)[-ERROR_SPAN:]
    silent: list[Event] = []
    for e in reversed([e for e in events if lv.in_window(e)]):
        if e.kind == "model.responded":
            if cast("ModelResponded", e.data).tool_calls:
                break
            silent.append(e)
        elif e.kind in ACTION_KINDS:
            break
    silent.reverse()
    tool = streak[-1].tool if streak else ""
    return patterns(tool, [a.event.id for a in streak], receipts, actions[-4:], silent)


def patterns(
    tool: str,
    streak: Sequence[str],
    receipts: Sequence[ActionRecord | SensorRecord],
    last4: Sequence[ActionRecord],
    silent: Sequence[Event],
) -> list[Stuck]:
    """The stuck patterns, from the window's trailing streak of identical actions (same identity and
    observation as the last: their tool, and their events' ids), its last ``ERROR_SPAN`` receipts, its last four
    actions and its trailing model responses without a tool call (each in log order). The streak is its ids, not
    its records: the control layer's fold holds it for as long as it lasts, and a record holds its event, output and
    all (an agent reading one file over and over held every read's output: 160 Reads of a 20 kB file made a hook
    session's fold checkpoint 3.0 MB)."""
    return [
        *_repeated_action(tool, streak),
        *_repeated_errors(receipts),
        *_alternation(last4),
        *_no_action(silent),
    ]


def _repeated_action(tool: str, streak: Sequence[str]) -> list[Stuck]:
    """``repeated_action`` when the trailing streak of identical actions is ``REPEAT`` or longer."""
    if len(streak) < REPEAT:
        return []
    detail = f"{tool} called {len(streak)} times in a row with the same arguments and the same result"
    return [Stuck("repeated_action", detail, tuple(streak))]


def _repeated_errors(receipts: Sequence[ActionRecord | SensorRecord]) -> list[Stuck]:
    """``repeated_error`` for each failure signature (of an action or a sensor) seen ``REPEAT`` times
    among ``receipts``, in the order each signature first appears."""
    sigs: dict[str, list[ActionRecord | SensorRecord]] = {}
    for r in receipts:
        sig = r.failure_signature
        if sig is not None:
            sigs.setdefault(sig, []).append(r)
    found: list[Stuck] = []
    for rs in sigs.values():
        if len(rs) >= REPEAT:
            first = rs[0]
            what = f"sensor {first.sensor}" if isinstance(first, SensorRecord) else first.tool
            detail = f"the same failure ({what}) occurred {len(rs)} times in the last {len(receipts)} receipts"
            found.append(Stuck("repeated_error", detail, tuple(r.event.id for r in rs)))
    return found


def _alternation(last4: Sequence[ActionRecord]) -> list[Stuck]:
    """``alternation`` when the last four actions are A, B, A, B (A and B differ) and each letter
    observed the same thing both times."""
    if len(last4) < 4:
        return []
    a, b, c, d = last4[-4:]
    if not (
        a.identity == c.identity
        and b.identity == d.identity
        and a.identity != b.identity
        and a.observation == c.observation
        and b.observation == d.observation
    ):
        return []
    detail = f"alternating {a.tool} and {b.tool} (A/B/A/B) with unchanged results"
    return [Stuck("alternation", detail, (a.event.id, b.event.id, c.event.id, d.event.id))]


def _no_action(silent: Sequence[Event]) -> list[Stuck]:
    """``no_action`` when ``REPEAT`` or more model responses in a row called no tool."""
    if len(silent) < REPEAT:
        return []
    detail = f"{len(silent)} model responses in a row without an action"
    return [Stuck("no_action", detail, tuple(e.id for e in silent))]


def stuck_events(events: Sequence[Event], lv: LogView | None = None) -> list[StuckDetected]:
    """``stuck.detected`` for each pattern not already reported for this streak."""
    stuck = [cast("StuckDetected", e.data) for e in events if e.kind == "stuck.detected"]
    return new_stuck(detect(events, lv), {(p.pattern, (p.cites or [""])[0]) for p in stuck})


def new_stuck(found: Sequence[Stuck], reported: set[tuple[str, str]]) -> list[StuckDetected]:
    """``stuck.detected`` for each of ``found`` whose (pattern, first cite) is not in ``reported``."""
    if not found:
        return []
    from tether.events.kinds_control import StuckDetected  # here: a hook's call is seldom stuck

    return [
        StuckDetected(pattern=s.pattern, detail=s.detail, count=s.count, cites=list(s.cites))
        for s in found
        if (s.pattern, s.cites[0]) not in reported
    ]
