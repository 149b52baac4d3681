"""tether.jsonc is json's ``dumps`` and ``loads`` for the options tether uses: the same text byte for byte (the event
chain hashes it) and the same answer to every input, errors included (their type and message), held to json's own
by hypothesis over JSON values, Python values json cannot encode, and texts near JSON (whitespace, constants, bytes
in each encoding json detects, byte order marks, lone surrogates, huge numbers, deep nesting, trailing data)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether import jsonc

SRC = str(Path(jsonc.__file__).resolve().parents[1])

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([4299, -4299, 4300, 5000]).map(
        lambda n: (-1 if n < 0 else 1) * 10 ** abs(n)
    ),  # about the 4,300-digit limit on str(int)
    st.floats(),  # NaN and the infinities too
    st.text(),  # lone surrogates too
)
KEYS = st.one_of(st.text(max_size=6), st.integers(), st.floats(), st.booleans(), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=12,
)
#: Values json encodes (no int past the limit).
JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12,
)
#: Values json refuses: a set, bytes, a key it cannot encode, an object, mixed keys under ``sort_keys``.
HOSTILE = st.one_of(
    st.just({1, 2}), st.just(b"x"), st.just({(1, 2): 3}), st.just(object()), st.just({"a": 1, 2: 3}), st.just(1j)
)
OPTIONS = st.fixed_dictionaries(
    {},
    optional={
        "sort_keys": st.booleans(),
        "ensure_ascii": st.booleans(),
        "allow_nan": st.booleans(),
        "separators": st.sampled_from([(",", ":"), (", ", ": "), (",", ": "), (" , ", " : ")]),
        "default": st.sampled_from([str, repr, lambda o: sorted(o) if isinstance(o, set) else None]),
    },
)


def outcome(f: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[str, Any]:
    """What a call gives: its value (NaN made comparable) or its error's type and message."""
    try:
        value = f(*args, **kwargs)
    except (ValueError, TypeError, RecursionError, UnicodeError, OverflowError) as e:
        return type(e).__name__, (str(e), getattr(e, "pos", None))
    return "value", repr(value)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(VALUES, HOSTILE, st.lists(HOSTILE, max_size=2)), OPTIONS)
@example(float("nan"), {"allow_nan": False})
@example([float("inf")], {"allow_nan": False})
@example({"é": "\ud800"}, {"ensure_ascii": False, "sort_keys": True})
@example(10**5000, {})
@example({1: 1, "1": 2, 2.0: 3, False: 4, None: 5}, {})
@example({"b": 1, "a": 2}, {"sort_keys": True, "separators": (",", ":")})
def test_dumps_is_json_dumps(value: Any, options: dict[str, Any]) -> None:
    ours, theirs = outcome(jsonc.dumps, value, **options), outcome(json.dumps, value, **options)
    assert ours == theirs
    if ours[0] == "value":
        assert jsonc.dumps(value, **options).encode("utf-8", "surrogatepass") == json.dumps(value, **options).encode(
            "utf-8", "surrogatepass"
        )


def test_dumps_of_a_cycle_and_of_a_str_subclass() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    looped: dict[str, Any] = {}
    looped["a"] = [looped]
    for value in (cycle, looped):
        assert (
            outcome(jsonc.dumps, value)
            == outcome(json.dumps, value)
            == ("ValueError", ("Circular reference detected", None))
        )

    class Name(str):
        pass

    assert jsonc.dumps(Name("é")) == json.dumps(Name("é")) == '"\\u00e9"'
    assert jsonc.dumps([Name("é")], ensure_ascii=False) == json.dumps([Name("é")], ensure_ascii=False)
    assert jsonc.dumps(list(range(3)), default=str) == json.dumps(list(range(3)), default=str)


#: Pieces of text near JSON: tokens, the whitespace json skips and some it does not, constants, bad escapes,
#: lone surrogates raw and escaped, a byte order mark, numbers json reads oddly or not at all.
PIECES = st.sampled_from(
    [
        "{", "}", "[", "]", ",", ":", '"', '"a"', "1", "-0", "1.5e3", "01", "1.", ".5", "true", "false", "null",
        "NaN", "Infinity", "-Infinity", "nan", " ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\\", "\\u", "\\ud800",
        '"\\ud83d\\ude00"', "\ud800", "\ufeff", "é", "\x00", "9" * 4301, "1" * 40, "/*", "'a'",
    ]
)  # fmt: skip
TEXTS = st.one_of(
    st.lists(PIECES, max_size=12).map("".join),
    JSON_VALUES.map(json.dumps),
    st.tuples(
        st.sampled_from(["", " ", "\n\t", "\r\n "]), JSON_VALUES.map(json.dumps), st.sampled_from(["", " ", "x", "]"])
    ).map("".join),
)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate key")
    return dict(pairs)


def _constant(name: str) -> Any:
    raise ValueError(f"constant {name}")


HOOKS = st.fixed_dictionaries(
    {},
    optional={
        "object_pairs_hook": st.sampled_from([_pairs, list]),
        "parse_constant": st.sampled_from([_constant, str]),
    },
)


def loads_outcome(f: Callable[..., Any], text: Any, hooks: dict[str, Any]) -> tuple[str, Any]:
    return outcome(f, text, **hooks)  # a value by its repr: NaN's is "nan" both sides


@settings(max_examples=3000, deadline=None)
@given(TEXTS, HOOKS)
@example("", {})
@example(" \n", {})
@example("[1] 2", {})
@example("1 ", {})
@example("\ufeff[]", {})
@example("[NaN, Infinity, -Infinity]", {})
@example("[NaN]", {"parse_constant": _constant})
@example('{"a": 1, "a": 2}', {})
@example('{"a": 1, "a": 2}', {"object_pairs_hook": _pairs})
@example("9" * 4301, {})
@example('"\\ud800"', {})
@example('"\ud800"', {})
@example("\u00a01", {})
@example("1\x0c", {})
def test_loads_is_json_loads(text: str, hooks: dict[str, Any]) -> None:
    assert loads_outcome(jsonc.loads, text, hooks) == loads_outcome(json.loads, text, hooks)


ENCODINGS = st.sampled_from(
    ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be", "latin-1"]
)


@settings(max_examples=1500, deadline=None)
@given(TEXTS, ENCODINGS, st.booleans(), HOOKS)
@example("1", "utf-16-le", False, {})  # two bytes, the second zero
@example("1", "utf-16-be", False, {})
@example("", "utf-32", False, {})  # a byte order mark only
@example("é", "latin-1", False, {})  # not UTF-8
def test_loads_of_bytes_is_json_loads(text: str, encoding: str, mutable: bool, hooks: dict[str, Any]) -> None:
    try:
        data: bytes | bytearray = text.encode(encoding, "surrogatepass")
    except UnicodeError:
        data = text.encode("utf-8", "surrogatepass")
    if mutable:
        data = bytearray(data)
    assert loads_outcome(jsonc.loads, data, hooks) == loads_outcome(json.loads, data, hooks)


@pytest.mark.parametrize("raw", [b"", b"\x00", b"\x00\x00", b"1\x00", b"\xff\xfe", b"\x00\x001\x00", b"\xff", b"\xc3("])
def test_loads_of_odd_bytes_is_json_loads(raw: bytes) -> None:
    assert loads_outcome(jsonc.loads, raw, {}) == loads_outcome(json.loads, raw, {})


@pytest.mark.parametrize("value", [None, 1, 1.5, ["[]"], memoryview(b"[]")])
def test_loads_of_what_is_not_text_is_json_loads_type_error(value: Any) -> None:
    ours, theirs = outcome(jsonc.loads, value), outcome(json.loads, value)
    assert ours == theirs and ours[0] == "TypeError"


def test_errors_are_json_decode_errors() -> None:
    for text in ("", "[1] 2", "\ufeff1", "[", '{"a" 1}'):
        with pytest.raises(json.JSONDecodeError) as ours:
            jsonc.loads(text)
        with pytest.raises(json.JSONDecodeError) as theirs:
            json.loads(text)
        assert (ours.value.msg, ours.value.pos, ours.value.lineno, ours.value.colno) == (
            theirs.value.msg,
            theirs.value.pos,
            theirs.value.lineno,
            theirs.value.colno,
        )


def test_nan_reads_as_json_reads_it() -> None:
    assert math.isnan(jsonc.loads("NaN")) and jsonc.loads("-Infinity") == -math.inf


def _deepest(f: Callable[[str], Any], opener: str, closer: str) -> int:
    """The deepest nesting ``f`` reads from here (a bisection between 1 and the recursion limit)."""
    low, high = 1, sys.getrecursionlimit() + 10
    while low < high:
        mid = (low + high + 1) // 2
        try:
            f(opener * mid + ("0" if opener.endswith(":") else "") + closer * mid)
        except RecursionError:
            high = mid - 1
        else:
            low = mid
    return low


@pytest.mark.parametrize(("opener", "closer"), [("[", "]"), ('{"a":', "}")])
def test_deep_nesting_is_a_recursion_error_at_json_s_depth(opener: str, closer: str) -> None:
    assert _deepest(jsonc.loads, opener, closer) == _deepest(json.loads, opener, closer) < sys.getrecursionlimit()
    deep = opener * 100_000 + "0" + closer * 100_000
    assert outcome(jsonc.loads, deep)[0] == outcome(json.loads, deep)[0] == "RecursionError"


def test_deep_values_are_a_recursion_error_at_json_s_depth() -> None:
    def nested(n: int) -> Any:
        value: Any = 0
        for _ in range(n):
            value = [value]
        return value

    def deepest(f: Callable[[Any], Any]) -> int:
        return _deepest(lambda text: f(nested(text.count("["))), "[", "]")

    assert deepest(jsonc.dumps) == deepest(json.dumps) < sys.getrecursionlimit()


def test_a_scanner_is_kept_for_module_hooks_only_up_to_a_bound() -> None:
    for _ in range(20):
        assert jsonc.loads('{"a": [1]}', object_pairs_hook=lambda pairs: pairs) == [("a", [1])]
    assert len(jsonc._SCANNERS) <= 8


def test_jsonc_imports_none_of_json_s_python_modules() -> None:
    """In a fresh interpreter: dumps and loads of every kind, and none of json, json.decoder, json.scanner,
    json.encoder or re is imported; an error imports json.decoder, for its JSONDecodeError."""
    code = (
        f"import sys; sys.path.insert(0, {SRC!r}); import tether.jsonc as j\n"
        "v = {'b': [1, 2.5, None, 'é'], 'a': True}\n"
        "t, u = j.dumps(v, sort_keys=True, separators=(',', ':'), ensure_ascii=False), j.dumps(v, default=str)\n"
        "assert j.loads(t.encode()) == j.loads(' ' + u + '\\n', object_pairs_hook=dict) == v\n"
        "print(sorted(m for m in sys.modules if m == 're' or m.startswith(('json', 're.'))))\n"
        "try:\n    j.loads('[1] 2')\nexcept ValueError as e:\n    print(type(e).__module__, type(e).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[]", "json.decoder JSONDecodeError"]
