"""An index restored in part (guard/partial.py) answers exactly as the whole index would, or raises ``Incomplete``:
every name of a dict held to one or the other, and random sequences of reads and writes run on a whole dict and on a
part of it side by side."""

from __future__ import annotations

import copy
import json
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether import jsonc
from tether.guard.partial import Bulk, Incomplete, Partial
from tether.plainrecord import Unsure

#: The names of a dict a part answers exactly: the reads and writes by key, the length, the last key; dict's own
#: lookup (``__getitem__``, which asks ``__missing__`` on a miss); and what every object has and means nothing of its
#: contents (ordering comparisons are dict's ``TypeError`` for the whole index too).
EXACT = {
    "get", "__contains__", "__getitem__", "__setitem__", "setdefault", "pop", "__delitem__", "__len__",
    "__reversed__", "__init__", "__new__", "__class__", "__class_getitem__", "__doc__", "__hash__", "__sizeof__",
    "__getattribute__", "__setattr__", "__delattr__", "__dir__", "__init_subclass__", "__subclasshook__",
    "__lt__", "__le__", "__gt__", "__ge__",
}  # fmt: skip
#: Each of dict's other names, used as a caller would: each raises Incomplete.
WHOLE: dict[str, Callable[[dict[str, Any]], object]] = {
    "__iter__": list,
    "keys": lambda d: d.keys(),
    "values": lambda d: d.values(),
    "items": lambda d: d.items(),
    "popitem": lambda d: d.popitem(),
    "copy": lambda d: d.copy(),
    "clear": lambda d: d.clear(),
    "update": lambda d: d.update({"x": 1}),
    "fromkeys": lambda d: type(d).fromkeys(["x"]),
    "__eq__": lambda d: d == {},
    "__ne__": lambda d: d != {},
    "__or__": lambda d: d | {},
    "__ror__": lambda d: {} | d,
    "__ior__": lambda d: d.__ior__({}),
    "__repr__": repr,
    "__str__": str,
    "__format__": lambda d: f"{d}",
    "__reduce__": pickle.dumps,
    "__reduce_ex__": copy.copy,
    "__getstate__": copy.deepcopy,
}


def part(whole: dict[str, Any], held: list[str], last: bool = True) -> Partial:
    """A part of ``whole`` holding the keys ``held``, knowing the others as the checkpoint's writer names them."""
    mine = {k: whole[k] for k in whole if k in held}
    return Partial(mine, Bulk(frozenset(whole).difference(mine)), len(whole) - len(mine), last=last)


def test_every_name_of_a_dict_is_answered_exactly_or_is_incomplete() -> None:
    """A name a later Python adds to dict fails this until it is put in one list or the other."""
    assert set(dir(dict)) == EXACT | set(WHOLE), set(dir(dict)) ^ (EXACT | set(WHOLE))
    for name, use in WHOLE.items():
        p = part({"a": 1, "b": 2}, ["b"])
        with pytest.raises(Incomplete):
            use(p)
        assert dict.__len__(p) == 1, f"{name} changed what the part holds"


@pytest.mark.parametrize(
    "use",
    [
        dict,
        lambda d: {**d},
        lambda d: dict({}, **d),
        lambda d: sorted(d),
        lambda d: set(d),
        lambda d: json.dumps(d),
        lambda d: jsonc.dumps(d),
        lambda d: "{a}".format_map(d),
        lambda d: [*d],
        lambda d: next(iter(d)),
        lambda d: max(d),
        lambda d: {}.update(d),
    ],
)
def test_what_reads_a_dict_in_c_is_incomplete_too(use: Callable[[dict[str, Any]], object]) -> None:
    """The C functions that take a dict's contents without its methods take a subclass's by its methods: none reads
    the part as if it were the whole."""
    with pytest.raises(Incomplete):
        use(part({"a": 1, "b": 2}, ["b"]))


def test_incomplete_is_no_exception_a_reader_would_swallow() -> None:
    assert issubclass(Incomplete, Unsure) and not issubclass(Incomplete, Exception)


def test_the_last_key_alone_and_only_when_it_is_the_wholes() -> None:
    whole = {"a": 1, "b": 2, "c": 3}
    assert next(reversed(part(whole, ["c"]))) == "c"
    it = reversed(part(whole, ["a", "c"]))
    assert next(it) == "c"
    with pytest.raises(Incomplete):
        next(it)  # "b" is the whole's next: not held
    with pytest.raises(Incomplete):
        reversed(part(whole, ["a"], last=False))
    p = part(whole, ["a", "c"])
    p.pop("c")
    with pytest.raises(Incomplete):
        reversed(p)  # the whole's last is "b" now


def test_a_key_left_out_is_incomplete_and_one_never_named_is_absent() -> None:
    whole = {"toolu_1": 1, "toolu_2": 2, 'we"ird\u00e9': 3}
    p = part(whole, ["toolu_2"])
    assert p.get("toolu_9") is None and "toolu_9" not in p and len(p) == 3
    for key in ("toolu_1", 'we"ird\u00e9'):
        with pytest.raises(Incomplete):
            p.get(key)
    with pytest.raises(Incomplete):
        p.get(1)  # not a string: no key the part names
    assert part(whole, ["toolu_2"]).get("toolu_") is None, "a prefix of a key is not the key"
    p["toolu_9"] = 9
    assert p["toolu_9"] == 9 and len(p) == 4
    same = Partial({}, Bulk(hashes=frozenset({"sha256:0123456789abcdef"})), 1)
    with pytest.raises(Incomplete):
        same.get(("bash", "sha256:0123456789abcdef" + "0" * 48))
    with pytest.raises(Incomplete):
        same.get(("bash", "sha256:0123456789abcdef" + "f" * 48))  # another hash of the same start: may be
    assert same.get(("bash", "sha256:f123456789abcdef" + "0" * 48)) is None


OPS = st.lists(
    st.tuples(
        st.sampled_from(["get", "in", "getitem", "set", "setdefault", "pop", "popd", "del", "len", "last"]),
        st.sampled_from([f"k{i}" for i in range(8)]),
    ),
    max_size=30,
)


@settings(max_examples=300, deadline=None)
@given(
    keys=st.lists(st.sampled_from([f"k{i}" for i in range(6)]), unique=True, min_size=1),
    held=st.sets(st.integers(0, 5)),
    ops=OPS,
)
def test_a_part_answers_as_the_whole_index_or_raises(keys: list[str], held: set[int], ops: list[Any]) -> None:
    """Any reads and writes by key, the length and the last key, on a whole dict and a part of it holding its last
    key: each answered alike, or the part raises Incomplete (and the sequence ends there, as the caller makes the
    state whole)."""
    whole = {k: i for i, k in enumerate(keys)}
    mine = [k for i, k in enumerate(keys) if i in held or k == keys[-1]]
    p = part(whole, mine)
    for n, (op, key) in enumerate(ops):
        try:
            got = _run(p, op, key, n)
        except Incomplete:
            return
        assert got == _run(whole, op, key, n), (op, key)
        assert all(whole.get(k, object()) == v for k, v in dict.items(p)), "what the part holds is the whole's"


def _run(d: dict[str, Any], op: str, key: str, n: int) -> object:
    try:
        if op == "get":
            return d.get(key, "none")
        if op == "in":
            return key in d
        if op == "getitem":
            return d[key]
        if op == "set":
            d[key] = 100 + n
            return None
        if op == "setdefault":
            return d.setdefault(key, 100 + n)
        if op == "pop":
            return d.pop(key)
        if op == "popd":
            return d.pop(key, "none")
        if op == "del":
            del d[key]
            return None
        if op == "len":
            return len(d)
        return next(reversed(d), "empty")
    except KeyError as e:
        return ("KeyError", e.args)
