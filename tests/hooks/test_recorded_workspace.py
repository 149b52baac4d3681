"""The workspace a session's run began in (hooks/session.py ``_recorded_workspace``) is read from the run's first
event when that is its ``run.started``, as every session's run begins: asked for by kind, SQLite walked every row of
the run (no index holds the kind), ~2.5 ms of each cold call late in a 1,000-call session. A run that does not begin
with it is still asked by kind, and the answer is the first ``run.started`` either way."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.events.store import EventStore


@pytest.fixture(autouse=True)
def cold() -> Iterator[None]:
    hook_session._CACHE.clear()
    control_fold.clear()
    yield
    hook_session._CACHE.clear()
    control_fold.clear()


def asked(store: EventStore, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each read of ``store``'s events from now on, by its arguments."""
    reads: list[dict[str, Any]] = []
    real = store.events

    def events(run_id: str, **kw: Any) -> Any:
        reads.append(kw)
        return real(run_id, **kw)

    monkeypatch.setattr(store, "events", events)
    return reads


def test_a_sessions_workspace_is_read_from_its_first_event_not_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = Hook(tmp_path)
    for i in range(3):
        hook.bash(f"grep -n n{i} README.md", call_id=f"t{i}")
    store = EventStore.open(tmp_path / ".tether" / "tether.db")
    [run_id] = [r.run_id for r in store.runs()]
    reads = asked(store, monkeypatch)
    seen: list[Any] = []
    assert hook_session._recorded_workspace(store, run_id, seen) == str(tmp_path)
    assert reads == [{"upto": 0}], "one read of the first event, no walk of the log for a kind"
    assert [e.kind for e in seen] == ["run.started"] and seen[0].seq == 0


def test_a_run_that_does_not_begin_with_run_started_is_asked_by_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run_id = store.create_run("t", [("model.requested", {"turn": 0, "model": "scripted:x"})])
    for where in ("/first", "/second"):
        store.append(run_id, "run.started", {"task": "t", "workspace": where})
    reads = asked(store, monkeypatch)
    seen: list[Any] = []
    assert hook_session._recorded_workspace(store, run_id, seen) == "/first"
    assert reads == [{"upto": 0}, {"kinds": {"run.started"}}]
    assert [e.seq for e in seen] == [1]
    assert hook_session._recorded_workspace(EventStore.open(tmp_path / "t.db"), "nope") is None
