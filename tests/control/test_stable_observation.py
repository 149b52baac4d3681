"""An action's observation hash ignores volatile parts of its result data (control/receipts._stable). The
function keeps plain scalars of a dict without a call for each (issue 18); this holds it to the definition it had
(recurse into dicts and lists, normalise strings, drop volatile keys, return anything else as it is) for any
nested value, including the subclasses of int and str the shortcut must not treat as plain."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tether.control.receipts import _VOLATILE_KEYS, _stable, normalise_text


def reference(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: reference(v) for k, v in data.items() if k not in _VOLATILE_KEYS}
    if isinstance(data, list):
        return [reference(v) for v in data]
    if isinstance(data, str):
        return normalise_text(data, 400)
    return data


class Code(IntEnum):
    OK = 0


class Text(str):
    pass


leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.sampled_from(["took 3.2s", " 0xdeadbeef ", "in 1.25s ok"]),
    st.just(Code.OK),
    st.builds(Text, st.sampled_from(["  12 ms  ", "plain"])),
)
keys = st.one_of(st.sampled_from(sorted(_VOLATILE_KEYS)), st.text(max_size=8))
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4))


@given(values)
def test_stable_is_the_reference_for_any_value(data: Any) -> None:
    got, want = _stable(data), reference(data)
    assert got == want
    assert repr(got) == repr(want)  # the same types too (a str subclass normalised, not kept)


def test_a_str_subclass_in_a_dict_is_normalised() -> None:
    assert _stable({"out": Text(" done in 12 ms "), "code": Code.OK, "n": 3, "x": None}) == {
        "out": "done in #",
        "code": Code.OK,
        "n": 3,
        "x": None,
    }
