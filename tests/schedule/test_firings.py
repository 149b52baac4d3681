"""Firings end to end in one process (real SQLite, real runs of a scripted model, the local sandbox):
the receipt comes first, a trigger starts at most one run, NO_OP firings make no run, missed fire times
follow the policy, failures pause the schedule, and a firing on a stale view or a changed envelope fails."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tether.errors import InputError, RunExists
from tether.events.kinds_schedule import FiringFinished, SchedulePaused, TriggerFired, is_schedule_log, schedule_log
from tether.events.store import EventStore
from tether.kernel import scheduler
from tether.kernel.schedule import firing_run_id, trigger_id

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
LOG = schedule_log("nightly")
LOCAL = scheduler.Options(sandbox="local")


def add(db: Path, envelope: Path, **over: Any) -> None:
    fields: dict[str, Any] = {
        "cron": "0 * * * *",
        "envelope": envelope,
        "task": "write a",
        "now": T0 - timedelta(minutes=30),
    }
    with EventStore.open(db) as store:
        scheduler.add(store, scheduler.define("nightly", **{**fields, **over}))


def tick(db: Path, now: datetime) -> list[scheduler.Outcome]:
    with EventStore.open(db) as store:
        return scheduler.tick(store, now, LOCAL)


def kinds(db: Path, run_id: str = LOG) -> list[str]:
    with EventStore.open(db) as store:
        return [e.kind for e in store.events(run_id)]


def runs(db: Path) -> list[str]:
    with EventStore.open(db) as store:
        return [i.run_id for i in store.runs() if not is_schedule_log(i.run_id)]


def test_the_receipt_comes_first_and_one_trigger_makes_one_run(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project)
    assert tick(db, T0 - timedelta(minutes=1))[0].status == "idle"
    (out,) = tick(db, T0 + timedelta(seconds=20))
    assert out.status == "COMPLETE" and out.run_id and out.trigger
    assert kinds(db) == ["schedule.added", "trigger.fired", "firing.finished"]
    with EventStore.open(db) as store:
        fired = store.events(LOG)[1]
        started = store.events(out.run_id)
        assert started[0].kind == "run.started" and started[1].kind == "schedule.firing"
        assert started[1].payload["trigger"] == out.trigger == fired.payload["trigger"]
        assert fired.ts < started[0].ts  # durable before anything of the firing started
        with pytest.raises(RunExists):  # the store itself refuses a second run of the trigger
            store.create_run("again", run_id=out.run_id)
    assert runs(db) == [out.run_id]
    assert tick(db, T0 + timedelta(seconds=50))[0].status == "idle"  # the same fire time again: nothing
    health = tick_health(db, T0 + timedelta(minutes=1))
    assert health["last_outcome"] == "COMPLETE" and health["lag_s"] == 20.0 and health["consecutive_failures"] == 0
    assert health["next_fire_at"] == (T0 + timedelta(hours=1)).isoformat()


def tick_health(db: Path, now: datetime) -> dict[str, Any]:
    with EventStore.open(db) as store:
        return scheduler.fold(store, "nightly").health(now)


def test_a_retried_firing_goes_on_with_its_receipt_and_its_run_id(tmp_path: Path, project: Path) -> None:
    """A scheduler that died right after writing the receipt: the next one runs that firing, once."""
    db = tmp_path / "t.db"
    add(db, project)
    with EventStore.open(db) as store:
        s = scheduler.fold(store, "nightly")
        trigger = trigger_id(s.generation, T0)
        run_id = firing_run_id("nightly", T0, trigger)
        store.append(LOG, TriggerFired(trigger=trigger, fire_at=T0.isoformat(), fired_at=T0.isoformat(), run_id=run_id))
    (out,) = tick(db, T0 + timedelta(hours=5, minutes=10))  # long after: the open firing is finished first, not skipped
    assert (out.status, out.run_id, out.trigger) == ("COMPLETE", run_id, trigger)
    (again,) = tick(db, T0 + timedelta(hours=5, minutes=10, seconds=1))
    assert again.status == "missed" and "5 fire time(s)" in again.reason  # 04:00 .. 08:00: recorded, not fired
    assert runs(db) == [run_id] and kinds(db).count("firing.finished") == 1


def test_nothing_to_do_is_a_noop_firing_without_a_run_or_a_model_call(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project, noop_if="test -f out/a.txt")  # exit 0 when the file is there: nothing to do
    (first,) = tick(db, T0 + timedelta(seconds=5))
    assert first.status == "COMPLETE" and (project.parent / "out" / "a.txt").exists()
    (second,) = tick(db, T0 + timedelta(hours=1, seconds=5))
    assert second.status == "NO_OP" and second.run_id is None and "nothing to do" in second.reason
    assert runs(db) == [first.run_id]  # no run, so no model call and no output
    with EventStore.open(db) as store:
        checks = [e.payload for e in store.events(LOG, kinds={"eligibility.checked"})]
        ends = [e.payload for e in store.events(LOG, kinds={"firing.finished"})]
    assert [(c["verdict"], c["exit_code"]) for c in checks] == [("work", 1), ("nothing_to_do", 0)]
    assert ends[1]["status"] == "NO_OP" and ends[1]["external_outputs"] == 0 and ends[1]["run_id"] is None


@pytest.mark.parametrize("policy", ["skip", "once"])
def test_missed_fire_times_follow_the_declared_policy(tmp_path: Path, project: Path, policy: str) -> None:
    db = tmp_path / "t.db"
    add(db, project, missed=policy, noop_if="true")
    (out,) = tick(db, T0 + timedelta(hours=3, minutes=10))  # 03:00 .. 06:00 passed unseen
    with EventStore.open(db) as store:
        (missed,) = [e.payload for e in store.events(LOG, kinds={"trigger.missed"})]
        fired = [e.payload for e in store.events(LOG, kinds={"trigger.fired"})]
    assert missed["first"] == T0.isoformat() and missed["policy"] == policy
    if policy == "skip":
        assert out.status == "missed" and missed["count"] == 4 and fired == []
    else:
        assert out.status == "NO_OP" and missed["count"] == 3
        assert [(f["fire_at"], f["catch_up"]) for f in fired] == [((T0 + timedelta(hours=3)).isoformat(), True)]
    assert tick(db, T0 + timedelta(hours=3, minutes=11))[0].status == "idle"


def test_consecutive_failures_pause_the_schedule_with_an_alert(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project, noop_if="exit 3", max_failures=2)  # the eligibility check itself fails
    for hour in (0, 1):
        (out,) = tick(db, T0 + timedelta(hours=hour, seconds=1))
        assert out.status == "FAILED" and "exit 3" in out.reason
    assert kinds(db)[-2:] == ["schedule.alert", "schedule.paused"]
    assert tick(db, T0 + timedelta(hours=2, seconds=1))[0].status == "idle"  # paused: nothing fires
    health = tick_health(db, T0 + timedelta(hours=2))
    assert health["state"] == "paused" and health["consecutive_failures"] == 2 and "2 consecutive" in health["alert"]
    with EventStore.open(db) as store:
        scheduler.control(store, "nightly", "resume", now=T0 + timedelta(hours=2, minutes=30))
    assert tick_health(db, T0 + timedelta(hours=2, minutes=31))["consecutive_failures"] == 0
    assert runs(db) == []


def test_a_changed_envelope_fails_the_firing_and_starts_nothing(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project)
    project.write_text(project.read_text().replace("max_turns: 30", "max_turns: 31"))
    (out,) = tick(db, T0 + timedelta(seconds=1))
    assert out.status == "FAILED" and "changed since the schedule was added" in out.reason and runs(db) == []
    project.unlink()
    (gone,) = tick(db, T0 + timedelta(hours=1, seconds=1))
    assert gone.status == "FAILED" and "cannot be read" in gone.reason


def test_a_log_that_moved_under_the_firing_blocks_its_run(
    tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer appends while the eligibility check runs: the firing is recorded failed, no run starts."""
    db = tmp_path / "t.db"
    add(db, project, noop_if="exit 1")
    check = scheduler._eligibility

    def meanwhile(*args: Any) -> Any:
        with EventStore.open(db) as other:
            other.append(LOG, SchedulePaused(at=T0.isoformat(), by="ana", reason="maintenance"))
        return check(*args)

    monkeypatch.setattr(scheduler, "_eligibility", meanwhile)
    (out,) = tick(db, T0 + timedelta(seconds=1))
    assert out.status == "FAILED" and "moved under the firing" in out.reason and runs(db) == []


def test_over_the_daily_budget_a_firing_is_refused_with_a_receipt(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project, daily_usd=1.0, cron="0 3,4 * * *")
    with EventStore.open(db) as store:  # a firing earlier today spent the day's budget
        s = scheduler.fold(store, "nightly")
        t = trigger_id(s.generation, T0)
        at = T0.isoformat()
        store.append_many(
            LOG,
            [
                TriggerFired(trigger=t, fire_at=at, fired_at=at, run_id=firing_run_id("nightly", T0, t)),
                FiringFinished(trigger=t, status="COMPLETE", spend_usd=1.0, finished_at=at),
            ],
        )
    (out,) = tick(db, T0 + timedelta(hours=1, seconds=1))
    assert out.status == "REFUSED" and "daily budget" in out.reason and runs(db) == []
    assert tick_health(db, T0 + timedelta(hours=1, minutes=1))["consecutive_failures"] == 0  # a refusal is no failure


def test_a_per_firing_budget_narrows_the_envelope_and_may_not_widen_it(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    with pytest.raises(InputError, match="a firing may only narrow"):
        add(db, project, budget={"usd": 1000.0})
    add(db, project, budget={"usd": 0.25, "turns": 5})
    (out,) = tick(db, T0 + timedelta(seconds=1))
    with EventStore.open(db) as store:
        started, origin = store.events(str(out.run_id))[:2]
    assert started.payload["budgets"]["usd"] == 0.25 and started.payload["budgets"]["turns"] == 5
    assert origin.payload["budget"]["usd"] == 0.25


def test_the_python_api_schedules_and_fires(tmp_path: Path, project: Path) -> None:
    from tether import Harness

    harness = Harness(project, db=tmp_path / "t.db", sandbox="local")
    added = harness.schedule("nightly", "0 * * * *", "write a", now=T0, max_failures=1, noop_if="test -f out/a.txt")
    assert added.spec is not None and added.spec.max_failures == 1 and added.health(T0)["state"] == "active"
    (out,) = harness.fire_schedules(T0 + timedelta(hours=1, seconds=1))
    assert out.status == "COMPLETE" and out.run_id == runs(tmp_path / "t.db")[0]
    with pytest.raises(InputError, match="exists"):
        harness.schedule("nightly", "0 * * * *", "again", now=T0)
