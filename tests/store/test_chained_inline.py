"""The append path's inlined steps give what the functions they stand for give (issue 18).

``chained`` writes out ``canonical_json``, ``event_hash`` and the ``Event`` it returns in one loop, and
``canonical_tree`` calls the C encoder without ``JSONEncoder.encode``'s layers; the golden test fixes one
step's bytes, these try every text and JSON value: a hostile run id, kind or timestamp, escapes, non-ASCII,
floats, huge integers, nesting, and the errors of values JSON cannot hold.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.canonical import canonical_json, canonical_tree, sha256_hex
from tether.events import store as store_module
from tether.events.chain import event_hash
from tether.events.store import chained

TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # any text UTF-8 can encode
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4))
OBJECTS = st.dictionaries(TEXT, JSON, max_size=6)


@settings(max_examples=300, deadline=None)
@given(value=OBJECTS)
def test_the_tree_encoder_writes_the_canonical_json(value: dict[str, Any]) -> None:
    assert canonical_tree(value) == canonical_json(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_float_json_cannot_hold_fails_as_before(bad: float) -> None:
    with pytest.raises(ValueError):
        canonical_json({"x": [bad]})
    with pytest.raises(ValueError):
        canonical_tree({"x": [bad]})


def test_a_value_of_no_json_type_fails_as_before() -> None:
    for encode in (canonical_json, canonical_tree):
        with pytest.raises(TypeError, match="not JSON serializable"):
            encode({"x": {"y": object()}})


@settings(max_examples=200, deadline=None)
@given(
    run_id=TEXT,
    kinds=st.lists(TEXT, min_size=1, max_size=4),
    stamps=st.lists(TEXT, min_size=4, max_size=4),
    payloads=st.lists(OBJECTS, min_size=4, max_size=4),
    base=st.integers(min_value=-1, max_value=2**62),
)
def test_chained_rows_are_the_chain_s_definition(
    run_id: str, kinds: list[str], stamps: list[str], payloads: list[dict[str, Any]], base: int
) -> None:
    clock = iter(stamps)
    original = store_module.now_iso
    store_module.now_iso = lambda: next(clock)  # a hostile clock: any text
    try:
        prepared = [(kind, payload, None) for kind, payload in zip(kinds, payloads, strict=False)]
        out = chained(run_id, prepared, (base, "0" * 64))
    finally:
        store_module.now_iso = original
    prev = "0" * 64
    for n, ((row, event), (kind, payload, _)) in enumerate(zip(out, prepared, strict=True)):
        seq, ts, body = base + 1 + n, stamps[n], canonical_json(payload)
        head = canonical_json({"run_id": run_id, "seq": seq, "ts": ts, "kind": kind})
        h = sha256_hex(prev + head + body)
        assert row == (run_id, seq, ts, kind, body, prev, h)
        assert h == event_hash(prev, run_id, seq, ts, kind, body)
        assert (event.run_id, event.seq, event.ts, event.kind, event.prev_hash, event.hash) == (*row[:4], prev, h)
        assert event.payload is payload
        prev = h
    assert store_module.stored_rows(out) == [store_module.stored(row) for row, _ in out]  # the batch's rows


def test_chained_hashes_a_head_of_other_types_through_the_canonical_json() -> None:
    """A run id or kind that is not a plain ``str`` (a caller's subclass) takes ``event_hash``'s general path."""

    class Text(str):
        pass

    out = chained(Text("r"), [(Text("k"), {"a": 1}, None)], (-1, "0" * 64))
    ((row, event),) = out
    assert row[6] == event_hash("0" * 64, "r", 0, row[2], "k", '{"a":1}') == event.hash


def test_a_lone_surrogate_in_a_kind_fails_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        chained("r", [("k\ud800", {}, None)], (-1, "0" * 64))


@pytest.mark.parametrize("base", [(True, "0" * 64), (-1.0, "0" * 64)])
def test_chained_after_a_head_of_another_type_hashes_as_event_hash_does(base: tuple[Any, str]) -> None:
    ((row, _),) = chained("r", [("k", {}, None)], base)
    assert row[6] == event_hash("0" * 64, "r", row[1], row[2], "k", "{}")
