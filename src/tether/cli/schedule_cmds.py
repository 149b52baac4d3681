"""``tether schedule add | list | pause | resume | remove | status`` and ``tether scheduler``.

A schedule lives in its own log (docs/schedules.md); these commands append to it and fold it
(:mod:`tether.kernel.scheduler`). ``tether scheduler`` fires what is due: ``--once`` for one pass, ``--now``
to read the clock from the command line (a test, or catching up by hand). Exit codes: 0 done (a firing that
failed is recorded, not an error of the scheduler), 2 bad input, 3 a firing that could not be recorded
(store unreachable, locked past the timeout, a schedule's log moving or corrupt), named in the message.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from .common import DbOption, JsonOption, console, print_json, reader, writer

if TYPE_CHECKING:
    from tether.events.protocol import Store
    from tether.kernel.schedule import Schedule
    from tether.kernel.scheduler import Outcome

schedule_app = typer.Typer(
    help="Schedules: governed tasks fired on a cron, each firing with its receipts in the log.", no_args_is_help=True
)
NameArgument = typer.Argument(..., help="The schedule's name.")
NowOption = typer.Option(None, "--now", help="The clock reading to use (ISO 8601, UTC if no zone); default: now.")


def _now(text: str | None) -> datetime:
    from tether.kernel.schedule import parse_time

    return parse_time(text, "--now") if text else datetime.now(UTC)


def _who(by: str | None) -> str:
    from tether.kernel.approvals import whoami

    return by or whoami()


@schedule_app.command("add")
def add_cmd(
    name: str = NameArgument,
    cron: str = typer.Option(..., "--cron", help="Five-field cron expression, in UTC (e.g. '0 3 * * *')."),
    envelope: Path = typer.Option(..., "--envelope", "-e", help="The envelope each firing runs under (checked now)."),
    task: str = typer.Option(..., "--task", "-t", help="The task each firing runs."),
    workspace: Path | None = typer.Option(None, "--workspace", "-w", help="Default: the envelope's workspace."),
    budget: list[str] = typer.Option(
        [], "--budget", help="A per-firing limit NAME=VALUE (usd, tokens, turns, tool_calls, wall_s); narrows only."
    ),
    daily_budget: float | None = typer.Option(None, "--daily-budget", help="USD the firings of one UTC day may spend."),
    missed: str = typer.Option("skip", "--missed", help="Missed fire times: skip them, or run the latest once."),
    grace: float = typer.Option(120.0, "--grace", help="Seconds a fire time may be late and still be on time."),
    max_failures: int = typer.Option(3, "--max-failures", help="Failed firings in a row that pause the schedule."),
    noop_if: str | None = typer.Option(
        None, "--noop-if", help="Eligibility command run in the sandbox: exit 0 nothing to do (NO_OP), 1 work."
    ),
    by: str | None = typer.Option(None, "--by", help="Who adds it (default: current user)."),
    now: str | None = typer.Option(None, "--now", help="When it is added (ISO 8601): its first firing comes after."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Add a schedule: NAME fires TASK under ENVELOPE on CRON. Everything is checked before anything is written."""
    from tether.errors import InputError
    from tether.kernel import scheduler
    from tether.kernel.continuation import parse_budget

    if missed not in ("skip", "once"):
        raise InputError(f"--missed {missed!r}: expected skip or once")
    limits: dict[str, float] = {}
    for text in budget:
        key, value = parse_budget(text)
        limits[key] = value
    at = _now(now)
    added = scheduler.define(
        name,
        cron=cron,
        envelope=envelope,
        task=task,
        now=at,
        workspace=workspace,
        budget=limits,
        daily_usd=daily_budget,
        missed="once" if missed == "once" else "skip",
        grace_s=grace,
        max_failures=max_failures,
        noop_if=noop_if,
        by=_who(by),
    )
    with writer(db, Path(added.workspace), create=True) as store:
        _show(scheduler.add(store, added), as_json, at)


@schedule_app.command("list")
def list_cmd(
    removed: bool = typer.Option(False, "--removed", help="List removed schedules too."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Every schedule: state, cron, last outcome, next firing."""
    from tether.kernel.scheduler import schedules

    now = datetime.now(UTC)
    with reader(db) as store:
        rows = [s.health(now) for s in schedules(store) if removed or not s.removed]
    if as_json:
        print_json(rows)
        return
    table = Table("name", "state", "cron", "last outcome", "failures", "next firing", "task")
    for r in rows:
        table.add_row(
            escape(r["name"]),
            r["state"],
            escape(r["cron"] or ""),
            r["last_outcome"] or "-",
            str(r["consecutive_failures"]),
            r["next_fire_at"] or "-",
            escape(r["task"] or ""),
        )
    console.print(table if rows else "no schedules")


def _control(action: str, name: str, by: str | None, reason: str, db: str | None, as_json: bool) -> None:
    from tether.kernel.scheduler import control

    with writer(db) as store:
        _show(control(store, name, action, now=datetime.now(UTC), by=_who(by), reason=reason), as_json)


@schedule_app.command("pause")
def pause_cmd(
    name: str = NameArgument,
    reason: str = typer.Option("", "--reason", help="Why (shown by status)."),
    by: str | None = typer.Option(None, "--by", help="Who (default: current user)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Pause a schedule: no new firing starts until it is resumed (one already started finishes)."""
    _control("pause", name, by, reason, db, as_json)


@schedule_app.command("resume")
def resume_cmd(
    name: str = NameArgument,
    by: str | None = typer.Option(None, "--by", help="Who (default: current user)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Resume a paused schedule: fire times while paused are not caught up; the failure count starts again."""
    _control("resume", name, by, "", db, as_json)


@schedule_app.command("remove")
def remove_cmd(
    name: str = NameArgument,
    by: str | None = typer.Option(None, "--by", help="Who (default: current user)."),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Remove a schedule (its log and its firings' runs stay; it can be added again)."""
    _control("remove", name, by, "", db, as_json)


@schedule_app.command("status")
def status_cmd(
    name: str = NameArgument, now: str | None = NowOption, db: str | None = DbOption, as_json: bool = JsonOption
) -> None:
    """A schedule's health: last firing, last outcome, lag, consecutive failures, next firing, today's spend."""
    from tether.kernel.scheduler import fold

    with reader(db) as store:
        _show(fold(store, name), as_json, _now(now))


def _show(s: Schedule, as_json: bool, now: datetime | None = None) -> None:
    health = s.health(now or datetime.now(UTC))
    if as_json:
        print_json(health)
        return
    for key, value in health.items():
        console.print(f"{key:>22}  {escape(str(value)) if value is not None else '-'}")


def scheduler_cmd(
    once: bool = typer.Option(False, "--once", help="One pass over the schedules, then exit."),
    now: str | None = NowOption,
    interval: float = typer.Option(30.0, "--interval", min=0.5, help="Seconds between passes (without --once)."),
    model: str | None = typer.Option(None, "--model", help="Override the envelopes' model (e.g. scripted:FILE)."),
    sandbox: str | None = typer.Option(
        None, "--sandbox", help="Override the envelopes' sandbox backend: bwrap | local."
    ),
    lock_timeout: float | None = typer.Option(
        None, "--lock-timeout", min=0.1, help="Seconds to wait for the store's writer lock before failing (default 10)."
    ),
    db: str | None = DbOption,
    as_json: bool = JsonOption,
) -> None:
    """Fire due schedules, each firing with its trigger receipt first (--once: one pass; --now: a given clock)."""
    from tether.errors import InputError
    from tether.kernel import scheduler

    if now and not once:
        raise InputError("--now needs --once: a scheduler that keeps running reads the real clock")
    options = scheduler.Options(model=model, sandbox=sandbox)
    with writer(db) as store:
        _lock_timeout(store, lock_timeout)

        def step() -> None:
            _report(scheduler.tick(store, _now(now), options), as_json)

        if once:
            step()
        else:
            serve(step, interval)


def serve(step: Callable[[], None], interval: float) -> None:
    """Run ``step`` (one pass) every ``interval`` seconds until stopped. SIGTERM stops it cleanly: between
    passes at once, during one once the pass is done (its firing finished, not left for the next scheduler).
    Ctrl-C between passes is a clean stop too; during a pass it interrupts the pass (exit 130), and the next
    scheduler finishes the firing."""
    stopping = _Stopping()
    previous = signal.signal(signal.SIGTERM, stopping.handle)
    try:
        while True:
            stopping.in_pass = True
            step()
            stopping.in_pass = False
            if stopping.requested:
                return
            time.sleep(interval)
    except KeyboardInterrupt:
        if stopping.in_pass:
            raise
    finally:
        signal.signal(signal.SIGTERM, previous)


class _Stopping:
    """What SIGTERM found: a pass in flight (let it finish) or none (stop now)."""

    def __init__(self) -> None:
        self.in_pass = False
        self.requested = False

    def handle(self, signum: int, frame: object) -> None:
        self.requested = True
        if not self.in_pass:
            raise KeyboardInterrupt


def _lock_timeout(store: Store, seconds: float | None) -> None:
    """Either store's bound (a PostgreSQL store's was ignored: its locks had none)."""
    if seconds is not None:
        store.lock_timeout_s = seconds


def _report(outcomes: list[Outcome], as_json: bool) -> None:
    import dataclasses

    if as_json:
        print_json([dataclasses.asdict(o) for o in outcomes])
        return
    for o in outcomes:
        if o.status == "idle":
            continue
        run = f" run {o.run_id}" if o.run_id else ""
        console.print(f"{escape(o.schedule)}: {o.status}{run}" + (f" ({escape(o.reason)})" if o.reason else ""))


def register(app: typer.Typer) -> None:
    app.add_typer(schedule_app, name="schedule")
    app.command("scheduler")(scheduler_cmd)
