"""Schedules on the PostgreSQL store: the same receipts, the same one run per trigger (tests/pgkit.py's server)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pgkit import Postgres

from tether.errors import InputError
from tether.events import open_store
from tether.events.kinds_schedule import TriggerFired, is_schedule_log, schedule_log
from tether.kernel import scheduler
from tether.kernel.schedule import firing_run_id, trigger_id

pytestmark = pytest.mark.postgres
T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
LOG = schedule_log("nightly")


def test_a_firing_and_a_retried_one_on_postgres(postgres: Postgres, project: Path, tmp_path: Path) -> None:
    url = postgres.tether_store()
    local = scheduler.Options(sandbox="local")
    with open_store(url, local=tmp_path) as store:
        scheduler.add(store, scheduler.define("nightly", cron="0 * * * *", envelope=project, task="w", now=T0))
        (first,) = scheduler.tick(store, T0 + timedelta(hours=1, seconds=2), local)
        assert first.status == "COMPLETE"
        s = scheduler.fold(store, "nightly")  # a receipt whose scheduler died before it started anything
        at = T0 + timedelta(hours=2)
        trigger = trigger_id(s.generation, at)
        run_id = firing_run_id("nightly", at, trigger)
        store.append(LOG, TriggerFired(trigger=trigger, fire_at=at.isoformat(), fired_at=at.isoformat(), run_id=run_id))
        (retried,) = scheduler.tick(store, at + timedelta(seconds=5), local)
        assert (retried.status, retried.run_id) == ("NO_OP", run_id)  # out/a.txt already written: nothing changed
        assert scheduler.tick(store, at + timedelta(seconds=6), local)[0].status == "idle"
        with pytest.raises(InputError, match="already exists"):
            store.create_run("again", run_id=run_id)
        runs = [i.run_id for i in store.runs() if not is_schedule_log(i.run_id)]
        assert runs == [first.run_id, run_id] and store.verify(LOG) == 5
