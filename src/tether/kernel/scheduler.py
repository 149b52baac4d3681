"""The scheduler: fire what is due, each firing with its receipts in the schedule's log, nothing in memory.

One pass (:func:`tick`) takes each schedule in turn, under the lease of its log (one scheduler per
schedule at a time; a dead holder's lease is taken over), folds the log (:mod:`tether.kernel.schedule`)
and does the first of:

1. a firing whose receipt is written but whose end is not (a scheduler died in it) is finished: its run,
   if it exists, is resumed or read; if it does not, the firing goes on from where its receipts stop;
2. a due fire time gets its **trigger receipt** (``trigger.fired``, with missed times as ``trigger.missed``),
   appended compare-and-append on the head just folded, BEFORE anything of the firing starts; a moved head
   means another writer got there first, and the pass folds again instead of firing on a stale view.

A firing then: checks the envelope file is byte for byte the one added (its hash), refuses over the daily
budget (a receipt, ``REFUSED``), narrows the envelope's budgets to the firing's (and to what is left of
the day's), runs the eligibility command in the sandbox (exit 0: nothing to do, a ``NO_OP`` firing with no
model call and no output), checks the schedule's log has not moved under it, and only then starts the
run, under the run id derived from the trigger: one trigger, one run, whatever the retries. The firing
ends with ``firing.finished`` (the run's status and spend), and after ``max_failures`` failed firings in
a row with ``schedule.alert`` and ``schedule.paused``.

What cannot be recorded (the store cannot be opened or written, the writer lock is held past its timeout,
the schedule's log does not verify) raises :class:`SchedulerError`: the CLI exits non-zero naming why.
Nothing is skipped silently.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from tether.canonical import bytes_hash
from tether.envelope.narrow import narrow
from tether.envelope.schema import Budgets, Envelope
from tether.errors import (
    HeadMoved,
    InputError,
    LogCorrupt,
    RunLeased,
    RuntimeFailure,
    SandboxUnavailable,
    TetherError,
)
from tether.events.kinds_schedule import (
    EligibilityChecked,
    FiringFinished,
    Missed,
    ScheduleAdded,
    ScheduleAlert,
    ScheduleFiring,
    SchedulePaused,
    ScheduleRemoved,
    ScheduleResumed,
    TriggerFired,
    TriggerMissed,
    Verdict,
    is_schedule_log,
    schedule_log,
)
from tether.events.payload import Payload
from tether.events.protocol import Store, has_run
from tether.models.base import Model
from tether.state import RunState
from tether.status import FiringStatus, RunStatus

from . import session
from .continuation import Request
from .runtime import EventSink, Runtime
from .schedule import (
    BUDGET_NAMES,
    Due,
    Firing,
    Schedule,
    check_cron,
    check_name,
    failed,
    firing_run_id,
    iso,
    trigger_id,
)

#: How long the eligibility command may run.
ELIGIBILITY_TIMEOUT_S = 300.0
#: Output of the eligibility command kept in its receipt.
ELIGIBILITY_OUTPUT = 4000


class SchedulerError(RuntimeFailure):
    """A firing could not be recorded (store unreachable, locked, its log corrupt): the scheduler stops."""


@dataclass(frozen=True)
class Options:
    """How firings run: the caller's choices, as ``tether scheduler``'s options."""

    model: Model | str | None = None  # default: the envelope's agent.model
    sandbox: str | None = None  # override the envelope's backend
    on_event: EventSink | None = None
    by: str = "scheduler"


@dataclass(frozen=True)
class Outcome:
    """What a pass did with one schedule: ``status`` is the firing's end, or idle / busy / missed."""

    schedule: str
    status: str
    trigger: str | None = None
    run_id: str | None = None
    reason: str = ""


# ---- operator commands ---------------------------------------------------------------------------


def fold(store: Store, name: str) -> Schedule:
    """The schedule ``name`` as its log stands; :class:`InputError` if there is none."""
    log = schedule_log(check_name(name))
    try:
        store.run(log)
    except InputError:
        raise InputError(f"no schedule {name!r} (see `tether schedule list`)") from None
    return Schedule.from_events(log, store.events(log))


def schedules(store: Store) -> list[Schedule]:
    """Every schedule in the store (removed ones included), by name."""
    logs = [i.run_id for i in store.runs() if is_schedule_log(i.run_id)]
    return sorted((Schedule.from_events(log, store.events(log)) for log in logs), key=lambda s: s.name)


def define(
    name: str,
    *,
    cron: str,
    envelope: Path,
    task: str,
    now: datetime,
    workspace: Path | None = None,
    budget: Mapping[str, float] | None = None,
    daily_usd: float | None = None,
    missed: Missed = "skip",
    grace_s: float = 120.0,
    max_failures: int = 3,
    noop_if: str | None = None,
    by: str = "",
) -> ScheduleAdded:
    """A schedule's ``schedule.added`` event, every part checked: the name, the cron expression, the envelope
    (strictly, and its bytes hashed), the per-firing budget (it may only narrow), the workspace. Nothing is
    written; :func:`add` writes it."""
    _check_terms(name, cron, task, daily_usd, grace_s, max_failures)
    path = envelope.resolve()
    loaded = session.load_checked(path)
    _narrowed(loaded.envelope, dict(budget or {}), None)  # refuses a budget beyond the envelope's
    ws = _workspace(loaded, workspace)
    return ScheduleAdded(
        name=name,
        cron=cron,
        envelope_path=str(path),
        envelope_hash=bytes_hash(path.read_bytes()),
        contract_hash=loaded.envelope.contract_hash,
        task=task,
        workspace=str(ws),
        budget=dict(budget or {}),
        daily_usd=daily_usd,
        missed=missed,
        grace_s=grace_s,
        max_failures=max_failures,
        noop_if=noop_if,
        added_at=iso(now),
        by=by,
    )


def _check_terms(name: str, cron: str, task: str, daily_usd: float | None, grace_s: float, max_failures: int) -> None:
    """The terms of a schedule that need nothing read: its name, cron expression, task and numbers."""
    check_name(name)
    check_cron(cron)
    if not task.strip():
        raise InputError("--task: expected the task a firing runs, found nothing")
    for what, value in (("--daily-budget", daily_usd), ("--grace", grace_s)):
        if value is not None and (not math.isfinite(value) or value < 0):
            raise InputError(f"{what}: expected a number >= 0, found {value}")
    if max_failures < 1:
        raise InputError(f"--max-failures: expected at least 1, found {max_failures}")


def _workspace(loaded: session.Loaded, workspace: Path | None) -> Path:
    """The workspace firings run on (``--workspace``, else the envelope's), resolved; it must be a directory."""
    ws = (workspace or loaded.base_dir / loaded.envelope.environment.workspace).resolve()
    if not ws.is_dir():
        raise InputError(f"workspace {ws} does not exist ($.environment.workspace or --workspace)")
    return ws


def add(store: Store, added: ScheduleAdded) -> Schedule:
    """Add the schedule :func:`define` made (or add again one that was removed)."""
    name, log = added.name, schedule_log(added.name)
    try:
        current = fold(store, name)
    except InputError:
        store.create_run(f"schedule {name}", [added], run_id=log)
        return fold(store, name)
    if not current.removed:
        raise InputError(f"schedule {name!r} exists; remove it first (`tether schedule remove {name}`)")
    store.append(log, added, expect=current.head)
    return fold(store, name)


def control(store: Store, name: str, action: str, *, now: datetime, by: str = "", reason: str = "") -> Schedule:
    """Pause, resume or remove a schedule: one event, appended on the head just folded."""
    s = fold(store, name)
    if s.removed:
        raise InputError(f"schedule {name!r} was removed; add it again to use it")
    event: Payload
    if action == "pause":
        event = SchedulePaused(at=iso(now), by=by, reason=reason or "paused by an operator")
    elif action == "resume":
        event = ScheduleResumed(at=iso(now), by=by)
    elif action == "remove":
        event = ScheduleRemoved(at=iso(now), by=by)
    else:
        raise InputError(f"{action!r}: expected pause, resume or remove")
    if (action == "pause" and s.paused) or (action == "resume" and not s.paused):
        return s  # already so: nothing to record
    store.append(s.log_id, event, expect=s.head)
    return fold(store, name)


# ---- the scheduler ---------------------------------------------------------------------------------


def tick(store: Store, now: datetime, options: Options = Options()) -> list[Outcome]:
    """One pass over every schedule at clock reading ``now``."""
    return [fire(store, s.name, now, options) for s in schedules(store) if not s.removed or s.in_flight()]


def fire(store: Store, name: str, now: datetime, options: Options = Options()) -> Outcome:
    """Finish an interrupted firing of ``name``, or fire what is due: under its log's lease, on its log alone."""
    log = schedule_log(name)
    try:
        store.acquire(log)
    except RunLeased as e:
        return Outcome(name, "busy", reason=e.holder)
    except TetherError as e:
        raise SchedulerError(f"schedule {name}: cannot take its log's lease: {e}") from e
    try:
        return _fire(store, name, now, options)
    finally:
        store.release(log)


def _fire(store: Store, name: str, now: datetime, options: Options) -> Outcome:
    for _ in range(5):
        s = _verified(store, name)
        open_firing = s.in_flight()
        if open_firing is not None:
            return _recover(store, s, open_firing, options)
        due = s.due(now)
        receipts, trigger = _receipts(s, due, now)
        if not receipts:
            return Outcome(name, "idle")
        try:
            _write(store, s.log_id, receipts, s.head)
        except HeadMoved:
            continue  # another writer appended since the fold: decide again on the log as it is now
        if not trigger:
            return Outcome(
                name, "missed", reason=f"{due.missed_count} fire time(s) missed, policy {s.spec and s.spec.missed}"
            )
        s = _verified(store, name)
        return _run(store, s, s.firings[trigger], options)
    raise SchedulerError(f"schedule {name}: its log kept moving under the scheduler; nothing was fired")


def _receipts(s: Schedule, due: Due, now: datetime) -> tuple[list[Payload], str]:
    """What a pass writes for ``due``: the missed fire times, then the trigger receipt (and its trigger id)."""
    receipts: list[Payload] = []
    if due.missed_count and due.missed_first and due.missed_last and s.spec:
        first, last = iso(due.missed_first), iso(due.missed_last)
        receipts.append(
            TriggerMissed(first=first, last=last, count=due.missed_count, policy=s.spec.missed, seen_at=iso(now))
        )
    if due.fire_at is None:
        return receipts, ""
    trigger = trigger_id(s.generation, due.fire_at)
    run_id = firing_run_id(s.name, due.fire_at, trigger)
    fired = TriggerFired(
        trigger=trigger, fire_at=iso(due.fire_at), fired_at=iso(now), run_id=run_id, catch_up=due.catch_up
    )
    return [*receipts, fired], trigger


def _verified(store: Store, name: str) -> Schedule:
    try:
        store.verify(schedule_log(name))
    except LogCorrupt as e:
        raise SchedulerError(f"schedule {name}: its log does not verify, nothing is fired on it: {e}") from e
    return fold(store, name)


def _write(store: Store, log: str, events: list[Payload], head: tuple[int, str] | None) -> None:
    """Append to a schedule's log; a failure to write is the scheduler's to report, never to swallow."""
    try:
        store.append_many(log, events, expect=head)
    except HeadMoved:
        raise
    except TetherError as e:
        raise SchedulerError(f"{log}: cannot record {', '.join(type(p).KIND for p in events)}: {e}") from e


def _recover(store: Store, s: Schedule, firing: Firing, options: Options) -> Outcome:
    """A firing a scheduler began and did not finish: its run goes on (never a second one), or it starts."""
    if not has_run(store, firing.run_id):
        return _run(store, s, firing, options)
    state = RunState.from_events(store.events(firing.run_id))
    if state.status.terminal or state.status.waiting:
        return _finished(store, s.name, firing, state)
    run_options = session.Options(model=options.model, sandbox=options.sandbox, on_event=options.on_event)
    try:
        runtime = session.resume(store, firing.run_id, run_options, Request(options.by, "tether scheduler: resumed"))
    except RunLeased as e:
        return Outcome(s.name, "busy", firing.trigger, firing.run_id, e.holder)
    except TetherError as e:
        return _end(store, s.name, firing, FiringStatus.FAILED, f"the firing's run could not be resumed: {e}")
    return _drive(store, s.name, firing, runtime)


def _run(store: Store, s: Schedule, firing: Firing, options: Options) -> Outcome:
    """The firing after its receipt: checks, eligibility, then its one run."""
    spec = s.spec
    assert spec is not None  # a firing has a schedule.added before it
    left = _day_left(s, spec, firing)
    refused = _refusal(spec, firing, left)
    if refused is not None:
        return _end(store, s.name, firing, *refused)
    try:
        loaded = session.load_checked(Path(spec.envelope_path))
        env = _narrowed(loaded.envelope, spec.budget, left)
    except TetherError as e:
        return _end(store, s.name, firing, FiringStatus.FAILED, f"the envelope cannot be used: {e}")
    ended, s = _eligible(store, s, spec, firing, env, options)
    if ended is not None:
        return ended
    if store.head(s.log_id) != s.head:
        found = store.head(s.log_id)
        return _end(store, s.name, firing, FiringStatus.FAILED, _moved(HeadMoved(s.log_id, s.head, found)))
    return _start(store, s.name, spec, firing, dataclasses.replace(loaded, envelope=env), options)


def _day_left(s: Schedule, spec: ScheduleAdded, firing: Firing) -> float | None:
    """What is left of the daily budget on the firing's day (by fire time), or None without one."""
    if spec.daily_usd is None:
        return None
    return spec.daily_usd - s.spent_on(firing.fire_at.date())


def _refusal(spec: ScheduleAdded, firing: Firing, left: float | None) -> tuple[FiringStatus, str] | None:
    """Why the firing ends before its envelope is loaded: the envelope file changed, or the day's budget is spent."""
    problem = _envelope_changed(spec)
    if problem:
        return FiringStatus.FAILED, problem
    if left is not None and left <= 0:
        why = f"the daily budget (${spec.daily_usd:g}) is spent for {firing.fire_at.date()}: refused, not run"
        return FiringStatus.REFUSED, why
    return None


def _eligible(
    store: Store, s: Schedule, spec: ScheduleAdded, firing: Firing, env: Envelope, options: Options
) -> tuple[Outcome | None, Schedule]:
    """Run the eligibility command once (its receipt in the log before its verdict counts): the firing's end if it
    failed or found nothing to do, else None; and the schedule as folded after the receipt."""
    if spec.noop_if and firing.eligibility is None:
        checked = _eligibility(spec.noop_if, env, Path(spec.workspace), firing.trigger, options.sandbox)
        try:
            _write(store, s.log_id, [checked], s.head)
        except HeadMoved as e:
            return _end(store, s.name, firing, FiringStatus.FAILED, _moved(e)), s
        firing.eligibility, s = checked.verdict, fold(store, s.name)
        if checked.verdict == "error":
            return _end(store, s.name, firing, FiringStatus.FAILED, f"eligibility check failed: {checked.error}"), s
    if firing.eligibility == "nothing_to_do":
        return _end(store, s.name, firing, RunStatus.NO_OP, f"eligibility: `{spec.noop_if}` found nothing to do"), s
    return None, s


def _start(
    store: Store, name: str, spec: ScheduleAdded, firing: Firing, loaded: session.Loaded, options: Options
) -> Outcome:
    """The firing's one run, under the run id derived from its trigger, on the narrowed envelope; driven to its end."""
    origin = ScheduleFiring(
        schedule=name, trigger=firing.trigger, fire_at=iso(firing.fire_at), budget=_limits(loaded.envelope.budgets)
    )
    run_options = session.Options(
        model=options.model,
        sandbox=options.sandbox,
        on_event=options.on_event,
        workspace=Path(spec.workspace),
        run_id=firing.run_id,
        origin=[origin],
    )
    try:
        runtime = session.start_checked(store, loaded, spec.task, run_options)
    except TetherError as e:
        if has_run(store, firing.run_id):  # the run was created: the next pass goes on with it
            raise SchedulerError(f"schedule {name}: firing {firing.trigger[:12]}: {e}") from e
        return _end(store, name, firing, FiringStatus.FAILED, f"the run could not start: {e}")
    return _drive(store, name, firing, runtime)


def _drive(store: Store, name: str, firing: Firing, runtime: Runtime) -> Outcome:
    try:
        runtime.drive()
    except TetherError as e:
        return _end(store, name, firing, FiringStatus.FAILED, f"the run stopped on an error: {e}")
    return _finished(store, name, firing, RunState.from_events(store.events(firing.run_id)))


def _finished(store: Store, name: str, firing: Firing, state: RunState) -> Outcome:
    reason = f"run {firing.run_id} ended {state.status}"
    return _end(store, name, firing, state.status, reason, state.used.usd, state.external_used)


def _end(
    store: Store,
    name: str,
    firing: Firing,
    status: RunStatus | FiringStatus,
    reason: str,
    spend: float = 0.0,
    external: int = 0,
) -> Outcome:
    """Record how the firing ended (and pause the schedule after too many failures in a row)."""
    run_id = firing.run_id if has_run(store, firing.run_id) else None
    for _ in range(5):
        s = fold(store, name)
        done = FiringFinished(
            trigger=firing.trigger,
            run_id=run_id,
            status=status,
            reason=reason,
            spend_usd=spend,
            external_outputs=external,
            finished_at=iso(datetime.now(UTC)),
        )
        events: list[Payload] = [done]
        failures = s.failures + 1 if failed(status) else s.failures
        if s.spec and failed(status) and failures >= s.spec.max_failures and not s.paused:
            why = f"{failures} consecutive failed firings (the last: {reason})"
            events += [
                ScheduleAlert(reason=why, failures=failures, trigger=firing.trigger),
                SchedulePaused(at=done.finished_at, by="scheduler", reason=why),
            ]
        try:
            _write(store, s.log_id, events, s.head)
        except HeadMoved:
            continue
        return Outcome(name, str(status), firing.trigger, run_id, reason)
    raise SchedulerError(
        f"schedule {name}: its log kept moving; the end of firing {firing.trigger[:12]} is not recorded"
    )


# ---- the parts of a firing -------------------------------------------------------------------------


def _moved(e: HeadMoved) -> str:
    return (
        f"the schedule's log moved under the firing (seq {e.expected[0]} -> {e.found[0]}): "
        "another writer changed the schedule, so nothing was started on the stale view"
    )


def _envelope_changed(spec: ScheduleAdded) -> str:
    """Why the envelope file is not the one added (unreadable, or other bytes), or ''."""
    try:
        found = bytes_hash(Path(spec.envelope_path).read_bytes())
    except OSError as e:
        return f"the envelope {spec.envelope_path} cannot be read: {e.strerror}"
    if found != spec.envelope_hash:
        return (
            f"the envelope {spec.envelope_path} changed since the schedule was added ({spec.envelope_hash[:19]}…, "
            f"now {found[:19]}…): add the schedule again to accept the new contract"
        )
    return ""


def _narrowed(env: Envelope, budget: Mapping[str, float], usd_left: float | None) -> Envelope:
    """The envelope with each budget at most the firing's (and USD at most what is left of the day's)."""
    unknown = sorted(set(budget) - set(BUDGET_NAMES))
    if unknown:
        raise InputError(f"--budget {', '.join(unknown)}: expected one of {', '.join(BUDGET_NAMES)}")
    ceiling = {k: (int(v) if k in ("tokens", "turns", "tool_calls") else v) for k, v in budget.items()}
    if usd_left is not None:
        ceiling["usd"] = min(ceiling.get("usd", usd_left), usd_left)
    for k, v in budget.items():
        limit = getattr(env.budgets, k)
        if limit is not None and v > limit:
            raise InputError(f"--budget {k}={v:g}: the envelope allows {limit:g}; a firing may only narrow it")
    if not ceiling:
        return env
    return narrow(env, budgets=Budgets(**ceiling))


def _limits(budgets: Budgets) -> dict[str, float]:
    return {k: float(v) for k, v in budgets.model_dump().items() if v is not None}


def _eligibility(command: str, env: Envelope, workspace: Path, trigger: str, sandbox: str | None) -> EligibilityChecked:
    """Run the eligibility command in the envelope's sandbox: exit 0 nothing to do, 1 work, anything else error."""
    try:
        box, unavailable = session.sandbox_for(env, workspace, sandbox)
        if box is None:
            raise unavailable or SandboxUnavailable("no sandbox")
        receipt = box.run(command, cwd=workspace, timeout_s=ELIGIBILITY_TIMEOUT_S)
    except TetherError as e:
        return EligibilityChecked(trigger=trigger, command=command, verdict="error", error=str(e))
    output = (receipt.stdout + receipt.stderr)[-ELIGIBILITY_OUTPUT:]
    verdict: Verdict = "error"
    if not receipt.timed_out and receipt.exit_code in (0, 1):
        verdict = "nothing_to_do" if receipt.exit_code == 0 else "work"
    error = "" if verdict != "error" else f"exit {receipt.exit_code}" + (" (timed out)" if receipt.timed_out else "")
    return EligibilityChecked(
        trigger=trigger,
        command=command,
        verdict=verdict,
        exit_code=receipt.exit_code,
        backend=receipt.backend,
        duration_s=receipt.duration_s,
        output=output,
        error=error,
    )
