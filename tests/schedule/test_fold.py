"""The schedule fold (pure): due fire times under both missed-firing policies, trigger ids, health, budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tether.errors import InputError
from tether.events.kinds_schedule import (
    FiringFinished,
    ScheduleAdded,
    SchedulePaused,
    ScheduleResumed,
    TriggerFired,
    TriggerMissed,
    schedule_log,
)
from tether.events.payload import Payload
from tether.events.store import EventStore
from tether.kernel.schedule import Schedule, check_cron, check_name, failed, firing_run_id, trigger_id

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)


def added(**over: Any) -> ScheduleAdded:
    fields: dict[str, Any] = {
        "name": "nightly",
        "cron": "0 * * * *",
        "envelope_path": "/x/envelope.yaml",
        "envelope_hash": "sha256:00",
        "task": "t",
        "workspace": "/x",
        "added_at": (T0 - timedelta(minutes=30)).isoformat(),
    }
    return ScheduleAdded(**{**fields, **over})


def fold(tmp_path: Path, *events: Payload) -> Schedule:
    """The schedule after ``events`` are appended to its log (created at the first call on ``tmp_path``)."""
    with EventStore.open(tmp_path / "s.db") as store:
        log = schedule_log("nightly")
        if any(i.run_id == log for i in store.runs()):
            store.append_many(log, list(events))
        else:
            store.create_run("schedule nightly", list(events), run_id=log)
        return Schedule.from_events(log, store.events(log))


def fired(s: Schedule, at: datetime, run_id: str = "r") -> TriggerFired:
    return TriggerFired(
        trigger=trigger_id(s.generation, at), fire_at=at.isoformat(), fired_at=at.isoformat(), run_id=run_id
    )


def test_an_on_time_fire_time_is_due_once(tmp_path: Path) -> None:
    s = fold(tmp_path, added())
    assert s.due(T0 - timedelta(minutes=1)).fire_at is None  # not yet
    due = s.due(T0 + timedelta(seconds=30))
    assert due.fire_at == T0 and not due.catch_up and due.missed_count == 0
    s2 = fold(tmp_path / "b", added(), fired(s, T0))
    assert s2.due(T0 + timedelta(seconds=40)).fire_at is None  # fired: the cursor moved past it
    assert s2.in_flight() is not None and s2.next_fire(T0) == T0 + timedelta(hours=1)


@pytest.mark.parametrize("policy", ["skip", "once"])
def test_missed_fire_times_follow_the_policy(tmp_path: Path, policy: str) -> None:
    s = fold(tmp_path, added(missed=policy))
    late = T0 + timedelta(hours=3, minutes=10)  # 03:00 .. 06:00 passed; 06:00 is ten minutes old: missed too
    due = s.due(late)
    assert due.missed_first == T0
    if policy == "skip":
        assert due.fire_at is None and due.missed_count == 4 and due.missed_last == T0 + timedelta(hours=3)
    else:
        assert due.fire_at == T0 + timedelta(hours=3) and due.catch_up
        assert due.missed_count == 3 and due.missed_last == T0 + timedelta(hours=2)
    # an on-time fire time fires under both policies; the older ones are recorded missed
    on_time = s.due(T0 + timedelta(hours=3, seconds=5))
    assert on_time.fire_at == T0 + timedelta(hours=3) and not on_time.catch_up and on_time.missed_count == 3


def test_missed_times_recorded_move_the_cursor(tmp_path: Path) -> None:
    last = T0 + timedelta(hours=3)
    miss = TriggerMissed(first=T0.isoformat(), last=last.isoformat(), count=4, policy="skip", seen_at=last.isoformat())
    s = fold(tmp_path, added(), miss)
    assert s.due(last + timedelta(minutes=20)).fire_at is None
    assert s.due(last + timedelta(hours=1, seconds=1)).fire_at == last + timedelta(hours=1)


def test_paused_and_resumed(tmp_path: Path) -> None:
    at = (T0 + timedelta(hours=1, minutes=30)).isoformat()
    s = fold(tmp_path, added(), SchedulePaused(at=T0.isoformat(), by="ana"))
    assert s.due(T0 + timedelta(seconds=1)).fire_at is None and s.health(T0)["state"] == "paused"
    s = fold(tmp_path / "b", added(), SchedulePaused(at=T0.isoformat()), ScheduleResumed(at=at))
    # fire times while paused are neither fired nor missed: the cursor starts again at the resume
    due = s.due(T0 + timedelta(hours=2, seconds=1))
    assert due.fire_at == T0 + timedelta(hours=2) and due.missed_count == 0


def test_trigger_ids_are_per_generation_and_fire_time() -> None:
    a, b = trigger_id("gen1", T0), trigger_id("gen1", T0)
    assert a == b and a != trigger_id("gen2", T0) and a != trigger_id("gen1", T0 + timedelta(hours=1))
    assert firing_run_id("nightly", T0, a) == f"nightly-20261201T0300Z-{a[:8]}"


def test_failures_count_in_a_row_and_reset(tmp_path: Path) -> None:
    assert failed("FAILED") and failed("VERIFY_FAILED") and failed("BUDGET_STOP")
    assert not failed("NO_OP") and not failed("COMPLETE") and not failed("REFUSED") and not failed("WAITING_APPROVAL")
    s0 = fold(tmp_path, added())
    t1, t2 = T0, T0 + timedelta(hours=1)
    end = T0.isoformat()
    events: list[Payload] = [
        fired(s0, t1),
        FiringFinished(trigger=trigger_id(s0.generation, t1), status="FAILED", finished_at=end, spend_usd=0.25),
        fired(s0, t2),
        FiringFinished(trigger=trigger_id(s0.generation, t2), status="VERIFY_FAILED", finished_at=end, spend_usd=0.5),
    ]
    s = fold(tmp_path, *events)
    assert s.failures == 2 and s.spent_on(T0.date()) == 0.75
    h = s.health(t2 + timedelta(minutes=1))
    assert h["last_outcome"] == "VERIFY_FAILED" and h["consecutive_failures"] == 2 and h["lag_s"] == 0
    s = fold(tmp_path, ScheduleResumed(at=end))
    assert s.failures == 0


@pytest.mark.parametrize(
    ("expr", "says"),
    [("61 * * * *", "Bad minute"), ("* * *", "five fields"), ("0 3 * * 8", "Bad day-of-week"), ("", "five fields")],
)
def test_a_bad_cron_is_named(expr: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        check_cron(expr)


@pytest.mark.parametrize("name", ["", "Nightly", "a b", "../x", "-x", "x" * 64])
def test_a_bad_name_is_refused(name: str) -> None:
    with pytest.raises(InputError, match="schedule name"):
        check_name(name)
