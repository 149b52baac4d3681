"""Guard.open governs with the run.started its audit verified, not with a copy read before the audit.

The attack: someone who can write the database (the agent, from a process it started) rewrites the run's first
event (its workspace, its envelope) while a hook process opens the session, and puts the original back before the
audit reads the log. ``_started`` (and the hooks' early read, ``start_event``) read the forged row, ``verify_run``
then reads the original chain and passes: under an anchor key the one rewrite of history its signatures cannot
miss went unnoticed, and the session was governed from the forged row (``ws = recorded.workspace``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.errors import LogCorrupt
from tether.events import EventStore
from tether.guard import Guard
from tether.hooks.calls import hook_envelope


def _opened(store: EventStore, ws: Path, **kw: Any) -> Guard:
    return Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False, **kw)


def _rewrite_first(store: EventStore, run_id: str, payload: str) -> None:
    conn = sqlite3.connect(store.path)  # file access: the triggers dropped, the stored hash left as it was
    conn.execute("DROP TRIGGER IF EXISTS events_no_update")
    conn.execute("UPDATE events SET payload=? WHERE run_id=? AND seq=0", (payload, run_id))
    conn.commit()
    conn.close()


def _first_payload(store: EventStore, run_id: str) -> str:
    conn = sqlite3.connect(store.path)
    try:
        (payload,) = conn.execute("SELECT payload FROM events WHERE run_id=? AND seq=0", (run_id,)).fetchone()
    finally:
        conn.close()
    return str(payload)


@pytest.fixture
def session(tmp_path: Path) -> Iterator[tuple[EventStore, Path, str]]:
    """A hook-style session's store, its workspace and its run (one call decided)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    store = EventStore.open(tmp_path / "tether.db")
    try:
        g = _opened(store, ws)
        g.check("bash", {"command": "ls"})
        yield store, ws, g.run_id
    finally:
        store.close()


@pytest.mark.parametrize("handed", [False, True], ids=["read-by-open", "start_event"])
def test_a_first_event_forged_only_while_it_is_read_is_refused(
    session: tuple[EventStore, Path, str], monkeypatch: pytest.MonkeyPatch, handed: bool
) -> None:
    store, ws, run_id = session
    original = _first_payload(store, run_id)
    forged = original.replace(str(ws), "/")  # the workspace "/": every write outside the real one allowed
    assert forged != original
    _rewrite_first(store, run_id, forged)
    start_event = store.events(run_id, kinds={"run.started"})[0] if handed else None
    real_verify = store.verify_run

    def verify_after_putting_back(rid: str, *a: Any, **kw: Any) -> Any:
        _rewrite_first(store, rid, original)  # the writer puts the original back before the audit
        return real_verify(rid, *a, **kw)

    monkeypatch.setattr(store, "verify_run", verify_after_putting_back)
    try:
        opened = _opened(store, ws, start_event=start_event)
    except LogCorrupt:
        return  # refused: the event read is not the one verified
    assert opened.workspace == ws, f"governed from a forged run.started: workspace {opened.workspace}"


def test_an_intact_session_opens_as_before(session: tuple[EventStore, Path, str]) -> None:
    store, ws, run_id = session
    start_event = store.events(run_id, kinds={"run.started"})[0]
    for handed in (None, start_event):
        again = _opened(store, ws, start_event=handed)
        assert again.workspace == ws and len(again.state.actions) == 1
