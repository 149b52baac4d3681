"""An Event's payload, data and id are slots filled when first read (issue 18: a set one is read with no Python
frame). These try the paths that fill them: each of the three ways an event is made, a payload that does not fit
its kind, a row that is not JSON, an event made with neither, and the immutability the slots must not open."""

from __future__ import annotations

import json

import pytest

from tether.errors import LogCorrupt
from tether.events.kinds import RunStarted
from tether.events.store import Event

STARTED = {"task": "t", "plan_hash": "p"}


def _started() -> RunStarted:
    return RunStarted.model_validate(STARTED)


def test_an_event_from_its_model_dumps_its_payload_once() -> None:
    e = Event.of("r", 0, "ts", _started())
    assert e.data == _started()
    first = e.payload
    assert first == _started().model_dump(mode="json")
    assert e.payload is first  # kept in the slot


def test_an_event_from_its_text_reads_both_from_the_text() -> None:
    text = json.dumps(_started().model_dump(mode="json"))
    e = Event.from_row("r", 3, "ts", RunStarted.KIND, text, "p", "h")
    assert e.data == _started()
    assert e.payload == json.loads(text)
    assert e.id == "r#3" and e.id is e.id


def test_an_event_from_its_payload_parses_its_model_once() -> None:
    payload = _started().model_dump(mode="json")
    e = Event("r", 1, "ts", RunStarted.KIND, payload)
    assert e.payload is payload
    assert e.data == _started() and e.data is e.data


def test_a_payload_that_does_not_fit_fails_closed_on_every_read() -> None:
    e = Event.from_row("r", 2, "ts", RunStarted.KIND, json.dumps({"task": 5}), "p", "h")
    assert e.payload == {"task": 5}
    for _ in range(2):  # nothing is kept from a failed read
        with pytest.raises(LogCorrupt, match="seq 2"):
            e.data  # noqa: B018


def test_a_row_that_is_not_a_json_object_is_refused() -> None:
    with pytest.raises(LogCorrupt):
        Event.from_row("r", 2, "ts", RunStarted.KIND, "[1, 2]", "p", "h")


def test_an_event_with_neither_payload_nor_model_raises_instead_of_recursing() -> None:
    e = Event("r", 4, "ts", RunStarted.KIND, None)  # type: ignore[arg-type]
    with pytest.raises(LogCorrupt, match="neither"):
        e.payload  # noqa: B018
    with pytest.raises(LogCorrupt):
        e.data  # noqa: B018


def test_slots_stay_immutable_and_other_names_are_missing() -> None:
    e = Event.of("r", 0, "ts", _started())
    for name in ("payload", "data", "id", "seq"):
        with pytest.raises(AttributeError):
            setattr(e, name, None)
        with pytest.raises(AttributeError):
            delattr(e, name)
    with pytest.raises(AttributeError, match="nope"):
        e.nope  # type: ignore[attr-defined]  # noqa: B018
    assert not hasattr(e, "__deepcopy__")
    assert e == Event.of("r", 0, "ts", _started())  # equality reads the payload on both sides
