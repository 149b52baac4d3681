"""A schedule as a pure fold of its log: its settings, its firings, what is due now, and its health.

A schedule's log (``schedule:NAME``, events in :mod:`tether.events.kinds_schedule`) is the only thing a
scheduler knows about it. :meth:`Schedule.from_events` folds it; :meth:`Schedule.due` says, for a clock
reading, which fire time to fire and which passed unseen (the missed-firing policy decides); the scheduler
(:mod:`tether.kernel.scheduler`) appends what this module decides, never anything it remembers.

Fire times come from the cron expression (``cronsim``), in UTC, strictly after the schedule's *cursor*:
the time it was added, resumed, or last fired or recorded as missed. A fire time seen within ``grace_s``
is on time; an older one was missed: ``skip`` records it and waits for the next, ``once`` fires the latest
missed time once (a catch-up) and records the others.

The trigger id of a firing is a hash of the schedule's generation (the hash of its ``schedule.added``
event) and the fire time, and the firing's run id is derived from it: whoever fires a fire time, however
often it is retried, it names one run.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from cronsim import CronSim, CronSimError

from tether.errors import InputError
from tether.events.kinds_schedule import (
    EligibilityChecked,
    FiringFinished,
    ScheduleAdded,
    ScheduleAlert,
    SchedulePaused,
    ScheduleRemoved,
    ScheduleResumed,
    TriggerFired,
    TriggerMissed,
)
from tether.events.store import Event, Head
from tether.status import SUCCESS, FiringStatus, RunStatus

NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
#: Missed fire times counted one by one up to here; beyond, the count says "at least".
MAX_COUNTED = 10_000
#: Per-firing limits a schedule may set (each narrows the envelope's).
BUDGET_NAMES = ("usd", "tokens", "turns", "tool_calls", "wall_s")


def check_name(name: str) -> str:
    if not NAME.fullmatch(name):
        raise InputError(
            f"schedule name {name!r}: expected 1-63 of a-z, 0-9, '-', '_', starting with a letter or digit"
        )
    return name


def check_cron(expr: str) -> str:
    """``expr`` if it is a five-field cron expression; :class:`InputError` naming what is wrong otherwise."""
    fields = expr.split()
    if len(fields) != 5:
        raise InputError(f"--cron {expr!r}: expected five fields (minute hour day month weekday), got {len(fields)}")
    try:
        CronSim(expr, datetime.now(UTC))
    except CronSimError as e:
        raise InputError(f"--cron {expr!r}: {e} (expected minute hour day month weekday, e.g. '0 3 * * *')") from e
    return expr


def parse_time(text: str, what: str = "time") -> datetime:
    """An ISO time as an aware UTC datetime (a naive one is taken as UTC)."""
    try:
        t = datetime.fromisoformat(text)
    except ValueError as e:
        raise InputError(f"{what} {text!r}: expected an ISO 8601 time, e.g. 2026-12-01T03:00:00Z") from e
    return (t if t.tzinfo else t.replace(tzinfo=UTC)).astimezone(UTC)


def iso(t: datetime) -> str:
    return t.astimezone(UTC).isoformat()


def trigger_id(generation: str, fire_at: datetime) -> str:
    """The id of the firing of one schedule generation at one fire time (the same, whoever computes it)."""
    return hashlib.sha256(f"{generation}\n{iso(fire_at)}".encode()).hexdigest()[:32]


def firing_run_id(name: str, fire_at: datetime, trigger: str) -> str:
    """The run id a trigger starts: readable (schedule, fire time) and unique (the trigger's hash)."""
    return f"{name}-{fire_at.astimezone(UTC):%Y%m%dT%H%MZ}-{trigger[:8]}"


def failed(status: str | None) -> bool:
    """A firing that counts towards the consecutive failures: FAILED, or a run that ended without success.

    A refusal over the daily budget and a run waiting for a human are neither successes nor failures.
    """
    if status is None or status == FiringStatus.REFUSED:
        return False
    if status == FiringStatus.FAILED:
        return True
    run = RunStatus(status)
    return run.terminal and run not in SUCCESS


@dataclass
class Firing:
    """One firing as its receipts tell it; ``status`` is None while it is in flight."""

    trigger: str
    fire_at: datetime
    fired_at: datetime
    run_id: str
    catch_up: bool = False
    eligibility: str | None = None  # the eligibility verdict, once checked
    status: str | None = None
    reason: str = ""
    spend_usd: float = 0.0

    @property
    def lag_s(self) -> float:
        return (self.fired_at - self.fire_at).total_seconds()


@dataclass(frozen=True)
class Due:
    """What a clock reading asks of a schedule: a fire time to fire (or none), and fire times missed."""

    fire_at: datetime | None = None
    catch_up: bool = False
    missed_first: datetime | None = None
    missed_last: datetime | None = None
    missed_count: int = 0


@dataclass
class Schedule:
    """A schedule folded from its log (the current generation: since its last ``schedule.added``)."""

    log_id: str
    head: Head = (-1, "")
    spec: ScheduleAdded | None = None
    generation: str = ""
    paused: bool = False
    pause_reason: str = ""
    removed: bool = False
    cursor: datetime | None = None
    firings: dict[str, Firing] = field(default_factory=dict)
    failures: int = 0  # consecutive failed firings since the last success or resume
    alert: str = ""

    @classmethod
    def from_events(cls, log_id: str, events: list[Event]) -> Schedule:
        s = cls(log_id)
        for e in events:
            s.apply(e)
        return s

    def apply(self, e: Event) -> None:
        self.head = e.head
        p = e.data
        if isinstance(p, ScheduleAdded):
            fresh = Schedule(self.log_id, e.head, p, e.hash, cursor=parse_time(p.added_at))
            self.__dict__.update(fresh.__dict__)
        elif isinstance(p, SchedulePaused):
            self.paused, self.pause_reason = True, p.reason
        elif isinstance(p, ScheduleResumed):
            self.paused, self.pause_reason, self.failures, self.alert = False, "", 0, ""
            self.cursor = max(self.cursor or parse_time(p.at), parse_time(p.at))
        elif isinstance(p, ScheduleRemoved):
            self.removed = True
        elif isinstance(p, TriggerMissed):
            self.cursor = max(self.cursor or parse_time(p.last), parse_time(p.last))
        elif isinstance(p, TriggerFired):
            fire_at = parse_time(p.fire_at)
            self.firings[p.trigger] = Firing(p.trigger, fire_at, parse_time(p.fired_at), p.run_id, p.catch_up)
            self.cursor = max(self.cursor or fire_at, fire_at)
        elif isinstance(p, EligibilityChecked) and p.trigger in self.firings:
            self.firings[p.trigger].eligibility = p.verdict
        elif isinstance(p, FiringFinished) and p.trigger in self.firings:
            f = self.firings[p.trigger]
            f.status, f.reason, f.spend_usd = str(p.status), p.reason, p.spend_usd
            if failed(f.status):
                self.failures += 1
            elif f.status in SUCCESS:
                self.failures = 0
        elif isinstance(p, ScheduleAlert):
            self.alert = p.reason

    # ---- questions -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        return self.spec.name if self.spec else self.log_id.partition(":")[2]

    @property
    def active(self) -> bool:
        return self.spec is not None and not self.paused and not self.removed

    def in_flight(self) -> Firing | None:
        """The firing whose receipt is written and whose end is not: the next scheduler finishes it first."""
        return next((f for f in self.firings.values() if f.status is None), None)

    def last(self) -> Firing | None:
        return max(self.firings.values(), key=lambda f: f.fire_at, default=None)

    def spent_on(self, day: date) -> float:
        """USD spent by the firings of one UTC day (by fire time)."""
        return sum(f.spend_usd for f in self.firings.values() if f.fire_at.date() == day)

    def next_fire(self, now: datetime) -> datetime | None:
        if not self.active or self.spec is None or self.cursor is None:
            return None
        return next(iter(CronSim(self.spec.cron, max(self.cursor, now))))

    def due(self, now: datetime) -> Due:
        """The fire time to fire at ``now`` and the ones missed, by the schedule's missed-firing policy."""
        spec, cursor = self.spec, self.cursor
        if not self.active or spec is None or cursor is None or self.in_flight() is not None:
            return Due()
        latest = next(iter(CronSim(spec.cron, now + timedelta(microseconds=1), reverse=True)))
        if latest <= cursor:
            return Due()
        on_time = (now - latest).total_seconds() <= spec.grace_s
        fire = latest if on_time or spec.missed == "once" else None
        first, count = _missed(spec.cron, cursor, latest, include_latest=fire is None)
        if count == 0:
            return Due(fire)
        last_missed = latest if fire is None else _before(spec.cron, latest)
        return Due(fire, fire is not None and not on_time, first, last_missed, count)

    def health(self, now: datetime) -> dict[str, Any]:
        """What an operator watches: last firing and outcome, lag, consecutive failures, next firing."""
        last, spec = self.last(), self.spec
        nxt = self.next_fire(now)
        return {
            "name": self.name,
            "cron": spec.cron if spec else None,
            "task": spec.task if spec else None,
            "envelope": spec.envelope_path if spec else None,
            "state": "removed" if self.removed else "paused" if self.paused else "active",
            "pause_reason": self.pause_reason or None,
            "alert": self.alert or None,
            "last_fire_at": iso(last.fire_at) if last else None,
            "last_run": last.run_id if last else None,
            "last_outcome": (last.status or "IN_FLIGHT") if last else None,
            "last_reason": (last.reason or None) if last else None,
            "lag_s": round(last.lag_s, 3) if last else None,
            "consecutive_failures": self.failures,
            "max_failures": spec.max_failures if spec else None,
            "next_fire_at": iso(nxt) if nxt else None,
            "firings": len(self.firings),
            "spent_today_usd": round(self.spent_on(now.date()), 6),
            "daily_usd": spec.daily_usd if spec else None,
        }


def _before(cron: str, t: datetime) -> datetime:
    return next(iter(CronSim(cron, t, reverse=True)))


def _missed(cron: str, cursor: datetime, latest: datetime, *, include_latest: bool) -> tuple[datetime | None, int]:
    """The first fire time after ``cursor`` and how many there are up to ``latest`` (itself counted or not)."""
    first, count = None, 0
    for t in CronSim(cron, cursor):
        if t > latest or (t == latest and not include_latest) or count >= MAX_COUNTED:
            break
        first, count = first or t, count + 1
    return first, count
