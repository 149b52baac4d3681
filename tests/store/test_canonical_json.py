"""``canonical_json`` calls the C encoder itself (issue 18): it must still be, for any value, what its definition
(``json.dumps`` with sorted keys, compact separators, UTF-8 text and no NaN) writes, and fail where it fails.

Every hash in tether is over this text (plans, contracts, approvals, observations, messages), so a byte of
difference would change a hash a log already holds.
"""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_chained_inline import LEAVES, TEXT

from tether.canonical import canonical_json, content_hash, sha256_hex
from tether.kernel import context
from tether.models import tokens
from tether.models.base import Message, ToolCall

VALUES = st.recursive(
    LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(TEXT | st.integers() | st.booleans() | st.none(), inner, max_size=4)
    ),
)


def definition(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@settings(max_examples=400, deadline=None)
@given(value=VALUES)
def test_any_value_is_written_as_the_definition_writes_it(value: Any) -> None:
    """Top-level scalars and strings too (``encode`` has a shortcut for a string), tuples, non-string keys."""
    try:
        expected = definition(value)
    except (TypeError, ValueError) as e:  # keys of mixed types cannot be sorted: the same error, both ways
        with pytest.raises(type(e)):
            canonical_json(value)
        return
    assert canonical_json(value) == expected


class Text(str):
    """A subclass of ``str``: not the shortcut's exact type, written the same."""


class Number(int):
    pass


def test_subclasses_and_ordered_dicts_are_written_as_before() -> None:
    for value in (Text("é\n\u2028"), {"b": Number(2), "a": Text("x")}, OrderedDict([("z", 1), ("a", 2)]), [Text("")]):
        assert canonical_json(value) == definition(value)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_float_json_cannot_hold_fails(bad: float) -> None:
    for value in (bad, [bad], {"x": {"y": bad}}):
        with pytest.raises(ValueError):
            canonical_json(value)


def test_a_cycle_fails_and_leaves_nothing_for_the_next_call() -> None:
    """The cycle check is kept (a fresh ``markers`` per call): a cycle raises ``ValueError``, not ``RecursionError``,
    and a value seen during the failed call is not taken for a cycle in the next one."""
    shared: dict[str, Any] = {"k": [1, 2]}
    loop: list[Any] = [shared]
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(loop)
    cyclic: dict[str, Any] = {"a": shared}
    cyclic["self"] = cyclic
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(cyclic)
    assert canonical_json([shared, shared, {"again": shared}]) == definition([shared, shared, {"again": shared}])


def test_a_value_of_no_json_type_fails_naming_it() -> None:
    for value in (object(), {"x": [object()]}, {1.5j: 1}):
        with pytest.raises(TypeError):
            canonical_json(value)


def test_the_hashed_text_is_the_definition_s() -> None:
    """The text hashed is the definition's, byte for byte (a stored log's hashes are over it)."""
    value = {"tool": "bash", "args": {"command": "true 1", "n": [1, 2.5, None, True]}, "é": "ü"}
    assert content_hash(value) == "sha256:" + sha256_hex(definition(value))
    assert canonical_json(value) == '{"args":{"command":"true 1","n":[1,2.5,null,true]},"tool":"bash","é":"ü"}'


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(TEXT, VALUES, max_size=5))
def test_the_shared_sorted_encoders_write_what_dumps_wrote(value: dict[str, Any]) -> None:
    """The transcript's tool-result JSON and the token counter's text: ``json.dumps(value, sort_keys=True)``."""
    try:
        expected = json.dumps(value, sort_keys=True)
    except TypeError:
        return
    assert context._json(value) == expected
    call = ToolCall("c1", "bash", value)
    counted = tokens.ESTIMATOR.message(Message("assistant", "x", tool_calls=(call,)))
    assert counted == tokens.ESTIMATOR.count("x" + "bash" + expected) + tokens.MESSAGE_FRAMING
