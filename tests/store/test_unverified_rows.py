"""``unverified`` with the rows the audit verified (events/store.py ``Verified``) answers what it answers by hashing.

An event read apart from the audit that is exactly an audited row (run id, seq, time, kind, payload text) is taken
without hashing it again; any other is hashed as before. So: an intact log's events are not hashed at all, and for
every way an event can differ from its row (each field changed, a type changed, the row's hash column changed), the
answer is the one the hashes alone give, event by event.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_schema3 import make_run

from tether.events import store as store_module
from tether.events.store import Event, EventStore, Verified, unverified


@pytest.fixture
def audited(tmp_path: Path) -> tuple[EventStore, str, list[Event], list[str]]:
    """A run of 8 events, its audit's hashes (a :class:`Verified`) and its events read apart."""
    store = EventStore.open(tmp_path / "tether.db")
    run = make_run(store, n=7)
    hashes = store.verify_run(run).hashes
    assert type(hashes) is Verified and len(hashes) == 8
    return store, run, store.events(run), list(hashes)


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The seqs ``unverified`` hashes (``contents_hash`` counted)."""
    seen: list[int] = []
    real = store_module.contents_hash

    def counted(e: Event, prev: str) -> str:
        seen.append(e.seq)
        return real(e, prev)

    monkeypatch.setattr(store_module, "contents_hash", counted)
    return seen


def test_an_intact_logs_events_are_not_hashed_again(
    audited: tuple[EventStore, str, list[Event], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    store, run, events, _ = audited
    hashes = store.verify_run(run).hashes
    seen = _hashed(monkeypatch)
    assert unverified(events, hashes) is None and seen == []
    assert unverified(events, list(hashes)) is None and seen == list(range(8))  # without the rows: each hashed


def _changed(e: Event, field: str, value: Any) -> Event:
    row: dict[str, Any] = {"run_id": e.run_id, "seq": e.seq, "ts": e.ts, "kind": e.kind, "text": e._text}
    row["prev"] = e.prev_hash
    row[field] = value
    return Event.from_row(row["run_id"], row["seq"], row["ts"], row["kind"], row["text"], row["prev"], e.hash)


class _Str(str):
    """Equal to its text, of another type: the audit hashed exact strings only."""


CHANGES = (
    ("ts", lambda v: v.replace("T", " ")),
    ("ts", lambda v: v[:-1] + ("0" if v[-1] != "0" else "1")),
    ("kind", lambda v: "tool.proposed" if v != "tool.proposed" else "run.started"),
    ("text", lambda v: v[:-1] + ', "x": 1}'),
    ("text", lambda v: v + " "),
    ("text", _Str),
    ("ts", _Str),
    ("kind", _Str),
    ("run_id", lambda v: v + "x"),
    ("run_id", _Str),
)


@pytest.mark.parametrize(("field", "change"), CHANGES)
@pytest.mark.parametrize("at", [0, 3, 7])
def test_an_event_that_is_not_its_row_is_judged_as_by_its_hash(
    audited: tuple[EventStore, str, list[Event], list[str]], field: str, change: Any, at: int
) -> None:
    store, run, events, plain_hashes = audited
    hashes = store.verify_run(run).hashes
    value = {"ts": events[at].ts, "kind": events[at].kind, "text": events[at]._text, "run_id": events[at].run_id}[field]
    forged = [*events[:at], _changed(events[at], field, change(value)), *events[at + 1 :]]
    assert unverified(forged, hashes) == unverified(forged, plain_hashes)
    if type(change(value)) is not _Str:  # a str of another type hashes as its text: the same hash, not a forgery
        assert unverified(forged, hashes) == at


def test_a_hash_column_or_a_seq_not_the_audits_is_refused_as_before(
    audited: tuple[EventStore, str, list[Event], list[str]],
) -> None:
    store, run, events, plain_hashes = audited
    hashes = store.verify_run(run).hashes
    e = events[4]
    other_hash = Event.from_row(e.run_id, e.seq, e.ts, e.kind, e._text or "", e.prev_hash, events[5].hash)
    moved = Event.from_row(e.run_id, 5, e.ts, e.kind, e._text or "", e.prev_hash, e.hash)
    for forged in ([*events[:4], other_hash, *events[5:]], [*events[:4], moved]):
        assert unverified(forged, hashes) == unverified(forged, plain_hashes) is not None
    assert unverified(events[5:], hashes) is None  # a fold from a checkpoint's head on


def test_a_bool_seq_is_hashed_as_its_json_writes_it(audited: tuple[EventStore, str, list[Event], list[str]]) -> None:
    """``True == 1``, but the head's JSON writes ``true``: an event whose seq is a bool is not its row."""
    store, run, events, plain_hashes = audited
    hashes = store.verify_run(run).hashes
    e = events[1]
    forged = [events[0], Event.from_row(e.run_id, True, e.ts, e.kind, e._text or "", e.prev_hash, e.hash)]
    assert unverified(forged, hashes) == unverified(forged, plain_hashes) == 1
