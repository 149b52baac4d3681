"""A payload built and marked in one expression (``fresh(Kind(...))``) is folded as it is, its dump not validated
again, only where that validation could not change it (issue 18): the stored bytes are the same, and the folded
object equals what a reader parses, value for value and type for type. Everything else is validated as before."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import Field, ValidationError, field_validator

from tether.events import payload as payload_module
from tether.events.kinds import ActionProposed, ModelResponded
from tether.events.kinds_calls import ActionCompleted, ActionDecided, ActionStarted, DiagnosticsComputed, ReviewGate
from tether.events.kinds_kernel import MessageRecord, ModelRequested
from tether.events.payload import FRESH_MAX, InvalidPayload, Payload, exact, fresh, prepare
from tether.events.store import EventStore

HOT = (ActionStarted, ActionDecided, DiagnosticsComputed, ModelRequested, ReviewGate)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same type at every level (1 == 1.0 == True, but not here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, (Payload, MessageRecord)):
        return all(same(getattr(a, k), getattr(b, k)) for k in type(a).model_fields)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_the_step_kinds_it_marks_are_exact_and_those_with_any_are_not() -> None:
    assert all(exact(k) for k in HOT)
    assert not any(exact(k) for k in (ActionCompleted, ActionProposed, ModelResponded))


def test_a_field_that_validation_could_change_makes_a_class_inexact() -> None:
    class Colour(enum.Enum):
        RED = "red"

    class Checked(Payload):
        name: str

        @field_validator("name")
        @classmethod
        def lower(cls, v: str) -> str:
            return v.lower()

    class Aliased(Payload):
        name: str = Field(alias="Name")

    class Nested(Payload):
        inner: list[dict[str, Any]]

    class Enumerated(Payload):
        colour: Colour

    class Tupled(Payload):
        pair: tuple[int, int]

    class Bounded(Payload):
        n: int = Field(ge=0)
        names: list[str] = Field(default_factory=list, max_length=3)

    assert not any(exact(k) for k in (Checked, Aliased, Nested, Enumerated, Tupled))
    assert exact(Bounded)


SETTINGS = settings(max_examples=60, deadline=None)


@SETTINGS
@given(data=st.data(), which=st.sampled_from(HOT))
def test_a_fresh_payload_stores_the_same_bytes_and_folds_what_a_reader_parses(
    data: st.DataObject, which: type[Payload]
) -> None:
    fields: dict[str, Any] = data.draw(st.builds(dict, **_fields_of(which)))
    try:
        item = which(**fields)
    except ValidationError:
        assume(False)
    kind, stored, folded = prepare(which(**fields))  # unmarked: dumped and validated again, as before
    kind2, stored2, folded2 = prepare(fresh(item))
    assert (kind2, stored2) == (kind, stored)
    assert folded2 is item
    assert same(folded2, folded) and same(folded2, which.model_validate_json(which(**fields).model_dump_json()))


def _fields_of(cls: type[Payload]) -> dict[str, st.SearchStrategy[Any]]:
    """Values of the field types and of others validation accepts for them (an int for a float, a tuple for a list,
    True for an int), so that the object built is of the validated types, whatever it was given."""
    text = st.text(max_size=8)
    number = st.integers(-5, 10**12) | st.booleans()
    real = st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 10**6)
    records: st.SearchStrategy[list[dict[str, Any]]] = st.lists(
        st.builds(
            dict,
            role=text,
            tokens=st.integers(0, 10**6),
            hash=text,
            seqs=st.lists(st.integers(0, 99), max_size=3) | st.tuples(st.integers(0, 99)),
        ),
        max_size=3,
    )
    hit: st.SearchStrategy[dict[str, Any]] = st.builds(dict, id=text, verdict=text, reason=text)
    hits: st.SearchStrategy[list[dict[str, Any]]] = st.lists(hit, max_size=2)
    taints: st.SearchStrategy[list[dict[str, Any]]] = st.lists(
        st.builds(dict, arg=text, kind=text, value=text, source_seq=st.integers(0, 99), source_tool=text), max_size=2
    )
    table: dict[type[Payload], dict[str, st.SearchStrategy[Any]]] = {
        ActionStarted: {
            "call_id": text,
            "tool": text,
            "args_hash": text,
            "attempt": number,
            "idempotent": st.booleans(),
        },
        ActionDecided: {
            "call_id": text,
            "verdict": text,
            "deciding_rule": text,
            "reason": text,
            "rules": hits,
            "taints": taints,
        },
        DiagnosticsComputed: {
            "dimensions": st.dictionaries(text, real, max_size=4),
            "notes": st.dictionaries(text, text, max_size=3),
            "through": text,
        },
        ModelRequested: {
            "turn": number,
            "model": text,
            "n_messages": st.integers(0, 99),
            "max_tokens": st.none() | st.integers(1, 10**6),
            "worst_case_usd": st.none() | real,
            "counter": text,
            "tools_tokens": st.integers(0, 10**6),
            "manifest": records,
            "manifest_kept": st.integers(0, 10),
        },
        ReviewGate: {
            "call_id": text,
            "tool": text,
            "ok": st.booleans(),
            "risk": st.sampled_from(["LOW", "MEDIUM", "HIGH"]),
            "reasons": st.lists(text, max_size=3) | st.tuples(text),
        },
    }
    return table[cls]


def test_an_object_not_built_by_its_constructor_is_validated_again(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t")
    good = fresh(ActionStarted(call_id="c1", tool="bash", args_hash="h"))
    with pytest.raises(InvalidPayload, match="attempt"):  # a copy is not the object marked
        store.append(run, good.model_copy(update={"attempt": "twice"}))
    with pytest.raises(InvalidPayload, match="attempt"):  # built without validation, never marked
        bad: Any = "x"
        store.append(run, ActionStarted.model_construct(call_id="c1", tool="bash", args_hash="h", attempt=bad))
    assert store.events(run)[1:] == []
    store.append(run, good)
    assert store.events(run)[-1].data == good


def test_a_mark_is_used_once_and_the_marks_are_bounded() -> None:
    payload_module._FRESH.clear()
    item = fresh(ReviewGate(call_id="c", tool="bash", ok=True, risk="LOW", reasons=["r"]))
    assert prepare(item)[2] is item
    assert prepare(item)[2] is not item  # the second time: validated from its dump, as an unmarked object
    for i in range(3 * FRESH_MAX):  # built and never appended: not held for ever
        fresh(ActionStarted(call_id=f"c{i}", tool="bash", args_hash="h"))
    assert len(payload_module._FRESH) <= FRESH_MAX
    payload_module._FRESH.clear()


def test_an_inexact_class_is_not_marked() -> None:
    item = fresh(ActionProposed(call_id="c", tool="bash", args={"argv": ("a", "b")}, args_hash="h", turn=1))
    folded = prepare(item)[2]
    assert folded is not item and isinstance(folded, ActionProposed)
    assert folded.args == {"argv": ["a", "b"]}  # what a reader parses: the tuple is a list


def test_a_step_appended_from_fresh_payloads_reads_back_as_it_was_folded(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    run = store.create_run("t")
    items = [
        fresh(ActionStarted(call_id="c1", tool="bash", args_hash="h", attempt=True)),
        fresh(ReviewGate(call_id="c1", tool="bash", ok=False, risk="HIGH", reasons=("a", "b"))),
        fresh(DiagnosticsComputed(dimensions={"x": 1, "y": 0.25}, notes={"x": "n"}, through="e1")),
        fresh(
            ModelRequested(
                turn=1,
                model="m",
                n_messages=2,
                counter="c",
                tools_tokens=3,
                manifest=[MessageRecord(role="user", tokens=1, hash="ab", seqs=[0])],
                manifest_kept=0,
            )
        ),
    ]
    live = store.append_many(run, items)
    read = store.events(run)[-len(items) :]
    for e, r in zip(live, read, strict=True):
        assert e.hash == r.hash and same(e.data, r.data)


def test_a_nested_record_built_without_validation_does_not_reach_the_log_through_a_mark(tmp_path: Path) -> None:
    """An outer constructor takes a nested record *instance* as it is (pydantic's revalidate_instances 'never'), so
    ``fresh(Kind(..., rules=[RuleHit.model_construct(...)]))`` was 'validated as built' while its nested values were
    never validated: its dump was stored as it was and the log's reader refused the event. A nested record is
    validated again as the outer is built, so the mark cannot carry an unvalidated value."""
    from tether.events.kinds_calls import RuleHit

    wrong: dict[str, Any] = {"id": 7, "verdict": None, "reason": ["not", "text"]}
    bad = RuleHit.model_construct(**wrong)
    with pytest.raises(ValidationError):
        fresh(ActionDecided(call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok", rules=[bad]))
    good = RuleHit.model_validate({f: "x" for f in RuleHit.model_fields})
    kept = fresh(ActionDecided(call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok", rules=[good]))
    kind, data, folded = prepare(kept)
    assert folded is kept and same(folded, payload_module.parse(kind, data))
    for cls in (ActionDecided, ModelRequested):
        assert exact(cls)


def test_a_nested_record_reaches_a_mark_only_validated_and_copied() -> None:
    """What else 1265a14's revalidation holds, attacked: a nested record changed by ``model_copy(update=...)``, a
    subclass's instance carrying a field of its own, a list holding one ``model_construct`` record among valid ones,
    each refused as the outer is built; the lists and dicts a constructor is given are copied, so a caller changing
    its own afterwards changes nothing the mark covers."""
    from tether.events.kinds_calls import RuleHit

    class Wider(RuleHit):
        extra: int = 5

    good = RuleHit(id="a", verdict="ALLOW", reason="r")
    seven: Any = 7
    nested: list[Any] = [
        [good.model_copy(update={"id": seven})],
        [Wider(id="a", verdict="ALLOW", reason="r")],
        [good, RuleHit.model_construct(id="b", verdict="DENY", reason=seven), good],
    ]
    for rules in nested:
        with pytest.raises(ValidationError):
            fresh(ActionDecided(call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok", rules=rules))
    given: list[Any] = [good]
    dims: dict[str, Any] = {"x": 1.0}
    decided = fresh(ActionDecided(call_id="c1", verdict="ALLOW", deciding_rule="r", reason="ok", rules=given))
    diagnosed = fresh(DiagnosticsComputed(dimensions=dims, notes={}, through="e1"))
    given.append(RuleHit.model_construct(id=seven, verdict="x", reason="x"))
    given[0] = RuleHit.model_construct(id=seven, verdict="x", reason="x")
    dims["y"] = "not a number"
    for item in (decided, diagnosed):
        kind, data, folded = prepare(item)
        assert folded is item and same(folded, payload_module.parse(kind, data))
    assert [r.id for r in decided.rules] == ["a"] and diagnosed.dimensions == {"x": 1.0}
