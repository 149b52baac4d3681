"""Events are filled as ``_Filling`` records and handed out as ``Event`` (``__class__`` assignment, issue 18).

What could go wrong: an event left a ``_Filling`` (settable, not an ``Event`` to ``isinstance``), a slot left
unset or set to another field's value, an event that can be changed after it is made, or ``Event`` gaining a slot
that the filling class does not have (then the class assignment would fail, or the slot be lost).
"""

from __future__ import annotations

import pytest

from tether.events import store as store_module
from tether.events.kinds import RunFinished
from tether.events.store import Event, chained


def _fields(e: Event) -> tuple[object, ...]:
    return e.run_id, e.seq, e.ts, e.kind, e.prev_hash, e.hash, e.payload, e._text


def test_every_way_an_event_is_made_gives_an_immutable_event_of_the_same_fields() -> None:
    data = RunFinished(status="COMPLETE", result="done")
    text = '{"result":"done","status":"COMPLETE"}'
    made = {
        "init": Event("r", 3, "t", "run.finished", {"a": 1}, "p", "h"),
        "of": Event.of("r", 3, "t", data, "p", "h"),
        "from_row": Event.from_row("r", 3, "t", "run.finished", text, "p", "h"),
        "from_row, no fit": Event.from_row("r", 3, "t", "run.finished", '{"x":1}', "p", "h"),
        "chained": chained("r", [("run.finished", {"status": "COMPLETE"}, data)], (2, "p"))[0][1],
    }
    for how, e in made.items():
        assert type(e) is Event, how
        assert (e.run_id, e.seq, e.kind, e.prev_hash) == ("r", 3, "run.finished", "p"), how
        assert e.ts == "t" or how == "chained"
        for name in ("seq", "payload", "data", "__class__", "_text"):
            with pytest.raises(AttributeError):
                setattr(e, name, None)
        with pytest.raises(AttributeError):
            del e.kind
        assert type(e) is Event, how
    assert made["of"].data is data and made["of"]._text is None
    assert made["of"].payload == data.model_dump(mode="json")
    assert made["from_row"]._text == text and made["from_row"].data == data
    assert made["from_row, no fit"].payload == {"x": 1}
    assert made["chained"].payload == {"status": "COMPLETE"} and made["chained"].data is data
    assert _fields(made["init"]) == ("r", 3, "t", "run.finished", "p", "h", {"a": 1}, None)


def test_an_event_made_without_data_has_no_data_slot_set() -> None:
    """``data`` left empty (not None) when the append had no model: read, it is parsed from the payload."""
    e = chained("r", [("run.finished", {"status": "COMPLETE"}, None)], (0, "p"))[0][1]
    assert isinstance(e.data, RunFinished) and e.data.status == "COMPLETE"


def test_the_filling_class_has_exactly_event_s_slots() -> None:
    assert store_module._Filling.__slots__ == Event.__slots__
    assert store_module._Filling.__bases__ == Event.__bases__ == (object,)
    filling = store_module._Filling()
    with pytest.raises(AttributeError):
        filling.not_a_slot = 1  # type: ignore[attr-defined]
