"""Event kinds of schedules (see tether.kernel.schedule and docs/schedules.md).

A schedule is its own hash-chained log, a run with the reserved id ``schedule:NAME`` (hidden from ``tether
runs``): everything a scheduler knows about it is folded from these events, none of it is kept in memory.

- ``schedule.added``    what to run and when: cron, envelope (path and the hash of its bytes), task, the
  per-firing budget, the daily budget, the missed-firing policy, the failures that pause it, its eligibility
  command. Adding again after ``schedule.removed`` starts a new generation of the same log.
- ``schedule.paused`` / ``schedule.resumed`` / ``schedule.removed``  an operator's (or the scheduler's) word.
- ``trigger.fired``     the trigger receipt: schedule, fire time, trigger id and the run id derived from it,
  appended (compare-and-append) BEFORE anything of the firing starts.
- ``trigger.missed``    fire times that passed while no scheduler ran, which the missed-firing policy skipped.
- ``eligibility.checked``  the eligibility command's receipt: nothing to do (a NO_OP firing), work, or error.
- ``firing.finished``   how a firing ended: its run, the run's status (or FAILED / REFUSED), spend, reason.
- ``schedule.alert``    the schedule paused itself after too many consecutive failed firings.
- ``schedule.firing``   in the firing's own run log, right after ``run.started``: which schedule and trigger
  started this run, and the budget the firing narrowed the envelope's to.
"""

from __future__ import annotations

from typing import Literal

from tether.plain import Field
from tether.status import FiringStatus, RunStatus

from .payload import Payload, new_dict, register

#: The reserved run-id prefix of a schedule's log.
SCHEDULE_PREFIX = "schedule:"

Missed = Literal["skip", "once"]
Verdict = Literal["nothing_to_do", "work", "error"]


def schedule_log(name: str) -> str:
    """The run id of schedule ``name``'s log."""
    return SCHEDULE_PREFIX + name


def is_schedule_log(run_id: str) -> bool:
    """Whether ``run_id`` is a schedule's log rather than an agent's run (``tether runs`` hides those)."""
    return run_id.startswith(SCHEDULE_PREFIX)


@register("schedule.added")
class ScheduleAdded(Payload):
    name: str
    cron: str = Field(description="Five-field cron expression, evaluated in UTC.")
    envelope_path: str = Field(description="Absolute path of the envelope file.")
    envelope_hash: str = Field(description="sha256: of the envelope file's bytes at add; a firing refuses another.")
    contract_hash: str = ""
    task: str
    workspace: str = Field(description="Absolute workspace path the firings run on.")
    budget: dict[str, float] = Field(
        default_factory=new_dict,
        description="Per-firing limits (usd, tokens, turns, tool_calls, wall_s): each narrows.",
    )
    daily_usd: float | None = Field(None, ge=0, description="Spend of one UTC day's firings, at most.")
    missed: Missed = "skip"
    grace_s: float = Field(120.0, ge=0, description="A fire time older than this when seen is missed, not on time.")
    max_failures: int = Field(3, ge=1, description="Consecutive failed firings that pause the schedule.")
    noop_if: str | None = Field(None, description="Eligibility command: exit 0 nothing to do, 1 work, else error.")
    added_at: str = Field(description="ISO time of the add: the first firing comes after it.")
    by: str = ""


@register("schedule.paused")
class SchedulePaused(Payload):
    at: str
    by: str = ""
    reason: str = ""


@register("schedule.resumed")
class ScheduleResumed(Payload):
    at: str
    by: str = ""


@register("schedule.removed")
class ScheduleRemoved(Payload):
    at: str
    by: str = ""


@register("trigger.fired")
class TriggerFired(Payload):
    trigger: str = Field(description="sha256 of (schedule generation, fire time): one firing, one id.")
    fire_at: str = Field(description="The cron time this firing is for (ISO, UTC).")
    fired_at: str = Field(description="When the scheduler wrote this receipt (its clock).")
    run_id: str = Field(description="The firing's run id, derived from the trigger: at most one run per trigger.")
    catch_up: bool = Field(False, description="A missed fire time run once under the 'once' policy.")


@register("trigger.missed")
class TriggerMissed(Payload):
    first: str
    last: str
    count: int = Field(ge=1)
    policy: Missed
    seen_at: str


@register("eligibility.checked")
class EligibilityChecked(Payload):
    trigger: str
    command: str
    verdict: Verdict
    exit_code: int | None = None
    backend: str = ""
    duration_s: float = 0.0
    output: str = Field("", description="The command's bounded stdout and stderr.")
    error: str = ""


@register("firing.finished")
class FiringFinished(Payload):
    trigger: str
    run_id: str | None = Field(None, description="None when the firing never started a run.")
    status: RunStatus | FiringStatus = Field(description="The run's status, or FAILED (could not run) / REFUSED.")
    reason: str = ""
    spend_usd: float = Field(0.0, ge=0)
    external_outputs: int = Field(0, ge=0)
    finished_at: str


@register("schedule.alert")
class ScheduleAlert(Payload):
    reason: str
    failures: int = Field(ge=1)
    trigger: str


@register("schedule.firing")
class ScheduleFiring(Payload):
    schedule: str
    trigger: str
    fire_at: str
    budget: dict[str, float] = Field(default_factory=new_dict, description="The limits this firing narrowed to.")
