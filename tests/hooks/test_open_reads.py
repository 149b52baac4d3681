"""A cold hook call opens its session reading the run's ``run.started`` (which holds the whole envelope) once: the
hooks read it for the workspace and hand it to ``Guard.open``, which takes the genesis hash from the same event
(each read parsed the envelope's JSON again: 3 reads a call before). What it is handed that is not that run's
``run.started`` is read again from the store; the genesis a fold checkpoint is checked against is the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_kept_envelope import cold, project

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.events.kinds_calls import RunStarted
from tether.events.store import Event, EventStore
from tether.guard import session as guard_session


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    yield
    hook_session._CACHE.clear()
    control_fold.clear()


def counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = EventStore.events

    def events(self: EventStore, run_id: str, **k: Any) -> list[Event]:
        if k.get("kinds") == {RunStarted.KIND} or k.get("upto") == 0:  # by kind, or the run's first event
            reads.append(run_id)
        return real(self, run_id, **k)

    monkeypatch.setattr(EventStore, "events", events)
    return reads


def test_a_cold_call_reads_run_started_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hook = project(tmp_path, None)
    assert cold(hook, "ls", "t0")[0] == "allow"
    reads = counting(monkeypatch)
    assert cold(hook, "rm -rf /", "t1")[0] == "deny"
    assert len(reads) == 1, reads
    [guard] = hook.resident().values()
    first = guard.store.events(guard.run_id)[0]
    assert first.kind == RunStarted.KIND and guard.genesis == first.hash, "the genesis is the log's first event"


def test_an_event_that_is_not_the_runs_start_is_read_again(tmp_path: Path) -> None:
    hook = project(tmp_path, None)
    cold(hook, "ls", "t0")
    store = EventStore.open(tmp_path / ".tether" / "tether.db")
    run_id = next(r.run_id for r in store.runs())
    events = store.events(run_id)
    start, other = events[0], events[-1]
    assert guard_session._started(store, run_id, start) == guard_session._started(store, run_id)
    assert other.kind != RunStarted.KIND
    assert guard_session._started(store, run_id, other) == guard_session._started(store, run_id), "read again"
    forged = Event("another-run", 0, start.ts, start.kind, start.payload, start.prev_hash, "0" * 64)
    assert guard_session._started(store, run_id, forged)[1] == start.hash, "another run's: read again"
    assert guard_session._started(store, "no-such-run", start) == (None, "")
