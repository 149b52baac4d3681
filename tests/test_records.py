"""tether.records.dataclass makes the same classes as dataclasses.dataclass, without compiling their methods.

Each shape below is made twice from the same class body, once by the standard library and once by
``tether.records``, and the two are compared on everything a caller can see: reprs (recursive ones too), equality
with the same class, another class and a subclass, hashes and unhashability, frozen assignment and deletion (the
errors' messages), ``fields``, ``replace``, ``asdict``, ``__match_args__``, slots, pickling, the recorded params.
"""

from __future__ import annotations

import abc
import dataclasses
import pickle
import re
import subprocess
import sys
import typing
import weakref
from collections.abc import Callable
from dataclasses import InitVar
from typing import Any, ClassVar

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tether import recordmaker, records

Maker = Callable[..., Any]
MAKERS = {"standard": dataclasses.dataclass, "records": records.dataclass}


def shapes(make: Maker, field: Callable[..., Any] = dataclasses.field) -> dict[str, type]:
    """The same class bodies, made by ``make`` (with ``field``: the standard one, or records')."""

    @make(frozen=True)
    class Point:
        x: int
        y: int = 0
        tag: str = field(default="", compare=False, repr=False)
        KIND: ClassVar[str] = "point"

    @make(frozen=True, slots=True)
    class Slotted:
        a: Any
        b: tuple[int, ...] = ()

    @make(frozen=True, slots=True)
    class FrozenSlotted:  # the control fold's Observation
        """FrozenSlotted."""

        a: Any
        b: tuple[int, ...] = ()
        c: str = field(default="c", compare=False)

    @make
    class Mutable:
        """Mutable."""

        name: str
        items: list[int] = field(default_factory=list)
        secret: str = field(default="s", repr=False)
        hashed: int = field(default=0, hash=True, compare=False)

    @make(eq=False)
    class NoEq:
        """NoEq."""

        v: int

    @make(repr=False, frozen=True)
    class NoRepr:
        """NoRepr."""

        v: int

    @make(frozen=True)
    class Empty:
        """Empty."""

        pass

    @make(frozen=True)
    class One:
        """One."""

        only: Any

    @make(frozen=True)
    class OwnMethods:
        """OwnMethods."""

        v: int

        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 7

        def __repr__(self) -> str:
            return "own"

    @make
    class OwnEqOnly:
        """OwnEqOnly."""

        v: int

        def __eq__(self, other: object) -> bool:
            return isinstance(other, OwnEqOnly)

    @make(frozen=True)
    class ChildOfPoint(Point):
        z: int = 1

    @make
    class WithInit:
        base: int
        extra: InitVar[int] = 0
        total: int = field(init=False, default=0)

        def __post_init__(self, extra: int) -> None:
            self.total = self.base + extra

    @make(frozen=True, kw_only=True)
    class KwOnly:
        a: int
        b: str = "b"

    @make(frozen=True)
    class HashField:
        """HashField."""

        a: int
        b: int = field(default=0, hash=False)

    @make
    class OwnHashOnly:  # a hash of its own, no eq of its own: kept (pydantic's PydanticRecursiveRef)
        """OwnHashOnly."""

        v: int
        __hash__ = object.__hash__

    @make(slots=True)
    class SlotsOwnInit:  # an __init__ of its own, slotted (pydantic's AliasPath)
        """SlotsOwnInit."""

        a: int

        def __init__(self, *a: int) -> None:
            self.a = sum(a)

    @make(frozen=True, slots=True, kw_only=True)
    class FrozenSlotsKw:  # annotated_types.Interval
        lo: int | None = None
        hi: int | None = None

    @make(frozen=True)
    class OwnSlots:  # slots of its own, frozen (pathspec's)
        __slots__ = ("a",)
        a: int

    @make(frozen=True)
    class OwnSlotsChild(OwnSlots):
        __slots__ = ("b",)
        b: int

    @make(slots=True, weakref_slot=True)
    class Weak:
        """Weak."""

        a: int

    class Abstract(abc.ABC):
        @abc.abstractmethod
        def __repr__(self) -> str: ...

    @make
    class Concrete(Abstract):  # the generated __repr__ implements the abstract one
        a: int

    @make(order=True)
    class Ordered:  # left to the standard dataclass
        """Ordered."""

        a: int

    @make(unsafe_hash=True)
    class Unsafe:  # left to the standard dataclass
        """Unsafe."""

        a: int

    @make
    class PostInit:
        """A __post_init__ and a field outside __init__ (events/redact.py's Redactor)."""

        base: int
        seen: list[int] = field(default_factory=list)
        total: int = field(init=False, repr=False, compare=False, default=0)
        later: dict[str, int] = field(init=False, default_factory=dict)

        def __post_init__(self) -> None:
            self.total = self.base + 1

    @make(slots=True)
    class SlotsMutable:
        """Slotted, not frozen, a field outside __init__ with a default (state.py's Action)."""

        a: int
        b: int = field(default=2, init=False)
        c: list[int] = field(default_factory=list, metadata={"why": "test"})

    @make(frozen=True, eq=False, repr=False)
    class Identity:
        """Frozen, eq and repr off (policy/rules.py's CompiledRule)."""

        a: int
        b: str = "b"

    @make(frozen=True)
    class Undocumented:
        a: int

    @make(frozen=True)
    class Factories:
        """Frozen, its field()s stating defaults and factories only: every method names every field."""

        a: int
        b: tuple[int, ...] = field(default=())
        c: list[int] = field(default_factory=list)
        d: str = "d"

    return {cls.__name__: cls for cls in locals().values() if isinstance(cls, type)}


STANDARD, RECORDS = shapes(dataclasses.dataclass), shapes(records.dataclass)
#: The same shapes made by records with its own field(), this module counted as tether's: the classes
#: tether.recordmaker makes whole, without the dataclasses module, and the others it hands to the standard maker.
_packages, records.OWN_PACKAGES = records.OWN_PACKAGES, (*records.OWN_PACKAGES, __name__)
try:
    OWN = shapes(records.dataclass, records.field)
finally:
    records.OWN_PACKAGES = _packages
#: The shapes tether.recordmaker made whole (the rest need what it leaves to the standard maker).
MADE_WHOLE = {
    "Mutable", "NoEq", "NoRepr", "Empty", "One", "OwnMethods", "OwnEqOnly", "HashField", "OwnHashOnly", "SlotsOwnInit",
    "PostInit", "SlotsMutable", "Identity", "FrozenSlotted", "Factories",
}  # fmt: skip
VALUES: dict[str, list[dict[str, Any]]] = {
    "Point": [{"x": 1}, {"x": 1, "y": 2, "tag": "t"}, {"x": 1, "tag": "other"}, {"x": float("nan")}],
    "Slotted": [{"a": 1}, {"a": [1]}, {"a": "x", "b": (1, 2)}],
    "FrozenSlotted": [{"a": 1}, {"a": [1]}, {"a": "x", "b": (1, 2), "c": "d"}],
    "Mutable": [{"name": "n"}, {"name": "n", "items": [1, 2], "secret": "x", "hashed": 3}],
    "NoEq": [{"v": 1}],
    "NoRepr": [{"v": 1}],
    "Empty": [{}],
    "One": [{"only": 1}, {"only": (1,)}, {"only": float("nan")}],
    "OwnMethods": [{"v": 1}, {"v": 2}],
    "OwnEqOnly": [{"v": 1}],
    "ChildOfPoint": [{"x": 1}, {"x": 1, "z": 2}],
    "WithInit": [{"base": 1}, {"base": 1, "extra": 2}],
    "KwOnly": [{"a": 1}, {"a": 1, "b": "c"}],
    "HashField": [{"a": 1}, {"a": 1, "b": 2}],
    "OwnHashOnly": [{"v": 1}, {"v": 2}],
    "SlotsOwnInit": [{}],
    "FrozenSlotsKw": [{}, {"lo": 1}, {"lo": 1, "hi": 2}],
    "OwnSlots": [{"a": 1}, {"a": 2}],
    "OwnSlotsChild": [{"a": 1, "b": 2}],
    "Weak": [{"a": 1}],
    "Concrete": [{"a": 1}, {"a": 2}],
    "Ordered": [{"a": 1}, {"a": 2}],
    "Unsafe": [{"a": 1}],
    "PostInit": [{"base": 1}, {"base": 1, "seen": [2]}],
    "SlotsMutable": [{"a": 1}, {"a": 1, "c": [3]}],
    "Identity": [{"a": 1}, {"a": 1, "b": "c"}],
    "Undocumented": [{"a": 1}],
    "Factories": [{"a": 1}, {"a": 1, "b": (2,), "c": [3], "d": "e"}, {"a": 1, "c": []}],
}


def plain(seen: Any) -> str:
    """``seen`` as text without object addresses (``<… object at 0x…>``)."""
    return re.sub(r" at 0x[0-9a-f]+", "", repr(seen))


def outcome(fn: Callable[[], Any]) -> Any:
    """A call's result, or its exception's type and message (so the two makings can be compared)."""
    try:
        return ("ok", fn())
    except Exception as e:
        return ("raised", type(e).__name__, str(e))


def observe(cls: type, kwargs: dict[str, Any], others: list[dict[str, Any]]) -> list[Any]:
    """What a caller can see of one object of ``cls``: comparable between the two makings (no identities)."""
    obj = cls(**kwargs)
    seen: list[Any] = [repr(obj), str(obj), cls.__doc__, cls.__match_args__ if hasattr(cls, "__match_args__") else 0]
    fields = dataclasses.fields(cls)
    seen.append([(f.name, f.default is dataclasses.MISSING, f.compare, f.repr, f.hash) for f in fields])
    seen.append([(f.init, f.kw_only, f.default_factory is dataclasses.MISSING, f.metadata, f.type) for f in fields])
    seen.append([f._field_type is dataclasses._FIELD for f in fields])  # type: ignore[attr-defined]
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    seen.append([getattr(params, p) for p in ("init", "repr", "eq", "order", "unsafe_hash", "frozen")])
    seen.append(outcome(lambda: hash(obj) == hash(cls(**kwargs))))
    seen.append(cls.__hash__ is None)
    seen.append(outcome(lambda: hash(obj) if cls.__dict__.get("__hash__") not in (None, object.__hash__) else 0))
    seen.append("__slots__" in cls.__dict__)
    seen.append([cls.__dict__.get("__slots__"), sorted(getattr(cls, "__abstractmethods__", ()))])
    seen.append(outcome(lambda: weakref.ref(obj)() is obj))
    for other in others:
        twin = cls(**other)
        seen += [obj == twin, obj != twin, obj.__eq__(object()), obj == object()]
    seen.append(outcome(lambda: setattr(obj, "x", 5)))
    seen.append(outcome(lambda: setattr(obj, "not_a_field", 5)))
    seen.append(outcome(lambda: delattr(obj, "not_a_field")))
    for f in dataclasses.fields(cls):
        seen.append(outcome(lambda f=f: delattr(cls(**kwargs), f.name)))
    seen.append(outcome(lambda: dataclasses.asdict(obj)))
    seen.append(outcome(lambda: repr(dataclasses.replace(obj))))
    seen.append(outcome(lambda: repr(pickle.loads(pickle.dumps(obj)))))
    seen.append(outcome(lambda: pickle.loads(pickle.dumps(obj)) == obj))
    return seen


@pytest.mark.parametrize("name", sorted(VALUES))
def test_each_shape_is_made_as_the_standard_library_makes_it(name: str) -> None:
    for kwargs in VALUES[name]:
        standard = observe(STANDARD[name], kwargs, VALUES[name])
        for made in (RECORDS, OWN):
            fast = observe(made[name], kwargs, VALUES[name])
            assert [plain(s) for s in fast] == [plain(s) for s in standard]


def test_the_own_maker_makes_whole_exactly_the_shapes_it_mirrors() -> None:
    """Fail closed: a ClassVar, an InitVar, a base, kw_only, no docstring, slots of its own, order, unsafe_hash,
    weakref_slot, no docstring: the standard maker's class (the comparison above holds either way)."""
    if not records.OWN or sys.version_info[:2] != (3, 11):
        assert not any(cls in recordmaker._MADE for cls in OWN.values())
        return
    assert {name for name, cls in OWN.items() if cls in recordmaker._MADE} == MADE_WHOLE
    assert not any(cls in recordmaker._MADE for cls in RECORDS.values())  # dataclasses.field: the standard maker's


def test_the_own_maker_refuses_what_the_standard_one_refuses() -> None:
    """A mutable default, a field() without an annotation, one without a default after one with: the standard
    maker's error, raised by it (the class is handed to it)."""
    _packages, records.OWN_PACKAGES = records.OWN_PACKAGES, (*records.OWN_PACKAGES, __name__)
    try:
        for fld, make in ((records.field, records.dataclass), (dataclasses.field, dataclasses.dataclass)):
            with pytest.raises(ValueError, match="mutable default"):

                @make
                class Bad:
                    """Doc."""

                    a: list[int] = []

            with pytest.raises(TypeError, match="no type annotation"):

                @make
                class Bare:
                    """Doc."""

                    a = fld(default=1)

            with pytest.raises(TypeError, match="non-default argument"):

                @make
                class Order:
                    """Doc."""

                    a: int = 1
                    b: int = fld()
    finally:
        records.OWN_PACKAGES = _packages


def test_replace_of_a_record_made_whole_is_dataclasses_replace() -> None:
    for made in (STANDARD, OWN):
        post = made["PostInit"](1, [2])
        again = records.replace(post, base=5)
        assert (again.base, again.seen, again.total) == (5, [2], 6)
        with pytest.raises(ValueError, match="init=False"):
            records.replace(post, total=1)
        with pytest.raises(TypeError):
            records.replace(post, nothing=1)
        assert records.replace(made["SlotsMutable"](1), c=[9]) == made["SlotsMutable"](1, [9])


def test_a_subclass_compares_unequal_and_a_recursive_repr_ends() -> None:
    for made in (STANDARD, RECORDS):
        point, child = made["Point"](1), made["ChildOfPoint"](1)
        assert (point == child, child == point) == (False, False)
        box = made["Mutable"]("n")
        box.items.append(box)  # type: ignore[arg-type]
        mutable = made["Mutable"](name=box)  # repr reaches the same object again through a field
        assert repr(mutable).count("...") == 1
    assert repr(RECORDS["Mutable"]("a", [1])) == repr(STANDARD["Mutable"]("a", [1]))


def test_the_methods_are_named_for_their_class() -> None:
    for name in ("__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__"):
        standard, fast = getattr(STANDARD["Point"], name), getattr(RECORDS["Point"], name)
        assert (fast.__name__, fast.__qualname__.split(".<locals>.")[-1]) == (
            standard.__name__,
            standard.__qualname__.split(".<locals>.")[-1],
        )


def test_the_standard_maker_is_restored_and_unused_shapes_go_to_it() -> None:
    assert dataclasses._frozen_get_del_attr.__module__ == "dataclasses"  # type: ignore[attr-defined]
    assert RECORDS["Ordered"].__lt__.__module__ != recordmaker.__name__  # order: the standard dataclass


def test_a_frozen_class_cannot_be_made_from_a_mutable_base_and_the_reverse() -> None:
    for make in MAKERS.values():
        with pytest.raises(TypeError, match="frozen"):

            @make(frozen=True)
            class Frozen(RECORDS["Mutable"] if make is records.dataclass else STANDARD["Mutable"]):  # type: ignore[misc]
                pass


@given(
    st.lists(
        st.one_of(st.integers(), st.text(max_size=5), st.none(), st.floats(allow_nan=True), st.tuples(st.integers())),
        min_size=2,
        max_size=2,
    ),
    st.lists(st.integers(), max_size=3),
)
def test_values_compare_hash_and_print_alike(pair: list[Any], items: list[int]) -> None:
    for name, kwargs in (("Point", {"x": pair[0], "y": pair[1]}), ("One", {"only": pair[0]})):
        a_std, b_std = STANDARD[name](**kwargs), STANDARD[name](**{**kwargs, next(iter(kwargs)): pair[1]})
        a_rec, b_rec = RECORDS[name](**kwargs), RECORDS[name](**{**kwargs, next(iter(kwargs)): pair[1]})
        assert repr(a_rec) == repr(a_std)
        assert (a_rec == b_rec, a_rec == a_rec) == (a_std == b_std, a_std == a_std)
        assert hash(a_rec) == hash(a_std)
    assert repr(RECORDS["Mutable"]("n", items)) == repr(STANDARD["Mutable"]("n", items))


@pytest.mark.skipif(not records.MIRRORED, reason="this Python's generated methods are not mirrored: all standard")
def test_no_method_of_a_record_is_compiled_but_init() -> None:
    """Counted: the standard library compiles six methods for a frozen class with eq and repr; here, one."""
    probe = """
import dataclasses
made = []
standard = dataclasses._create_fn
def counting(name, *a, **k):
    made.append(name)
    return standard(name, *a, **k)
dataclasses._create_fn = counting
from tether.records import dataclass
@dataclass(frozen=True)
class A:
    x: int
    y: int = 0
print(made)
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "['__init__']"


def test_classes_made_in_threads_at_once_are_all_right_and_the_maker_is_restored() -> None:
    """The standard maker is stood in for under a lock while a frozen record is made: threads making records and
    standard frozen dataclasses at once all get working classes, and the standard maker is back afterwards."""
    import threading

    standard_maker = dataclasses._frozen_get_del_attr  # type: ignore[attr-defined]
    made: list[type] = []
    errors: list[BaseException] = []

    def work(make: Maker) -> None:
        try:
            for i in range(30):
                made.append(
                    make(frozen=True)(type(f"T{i}", (), {"__annotations__": {"v": "int"}, "__module__": __name__}))
                )
        except BaseException as e:  # pragma: no cover — reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(m,)) for m in (*MAKERS.values(), *MAKERS.values())]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(made) == 120
    assert dataclasses._frozen_get_del_attr is standard_maker  # type: ignore[attr-defined]
    for cls in made:
        obj = cls(1)
        assert outcome(lambda obj=obj: setattr(obj, "v", 2)) == (
            "raised",
            "FrozenInstanceError",
            "cannot assign to field 'v'",
        )
        assert obj == cls(1) and hash(obj) == hash((1,)) and repr(obj).endswith("(v=1)")


@pytest.mark.skipif(not records.MIRRORED, reason="this Python's generated methods are not mirrored: all standard")
def test_standing_in_makes_dataclasses_with_records_and_gives_the_standard_maker_back() -> None:
    """``standing_in``: ``dataclasses.dataclass`` is records' maker within, the standard one on leaving; a nested
    one leaves it to the outer; a module that took the name within makes the standard way afterwards."""
    standard = dataclasses.dataclass
    with records.standing_in() as stood:
        assert stood is True and dataclasses.dataclass is not standard
        from dataclasses import dataclass as bound  # as a library imported within takes it

        @dataclasses.dataclass(frozen=True)
        class Within:
            x: int

        with records.standing_in() as again:
            assert again is False
        assert dataclasses.dataclass is not standard  # the inner one gave back nothing it had not taken
    assert dataclasses.dataclass is standard
    assert Within.__eq__.__module__ == recordmaker.__name__ and Within(1) == Within(1) and hash(Within(1)) == hash((1,))

    @bound(frozen=True)
    class After:
        x: int

    assert After.__eq__.__module__ == __name__  # compiled by the standard maker, in this module's namespace


def test_standing_in_gives_the_maker_back_when_the_import_fails() -> None:
    standard = dataclasses.dataclass
    with pytest.raises(ImportError), records.standing_in():
        raise ImportError("a module of the deciding code is missing")
    assert dataclasses.dataclass is standard


def test_standing_in_leaves_another_stand_in_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone else's ``dataclasses.dataclass`` (a test's spy, another tool's) is not replaced, nor "restored"."""

    def theirs(*args: Any, **kwargs: Any) -> Any:
        return records._STANDARD(*args, **kwargs)

    monkeypatch.setattr(dataclasses, "dataclass", theirs)
    with records.standing_in() as stood:
        assert stood is False and dataclasses.dataclass is theirs
    assert dataclasses.dataclass is theirs


def test_what_records_does_not_mirror_goes_to_the_standard_maker_within() -> None:
    """order/unsafe_hash, a parameter records does not know, a class the standard maker refuses: within the
    stand-in, exactly what the standard maker does (the same class, the same error)."""

    def bodies() -> list[type]:
        return [
            type("Bad", (), {"__annotations__": {"a": int, "b": int}, "a": 0, "__module__": __name__}),
            type("Empty", (), {"__module__": __name__}),
        ]

    def errors() -> list[Any]:
        bad, empty = bodies()
        return [
            outcome(lambda: dataclasses.dataclass(bad)),
            outcome(lambda: dataclasses.dataclass(empty, future_parameter=True)),  # type: ignore[call-overload]
            outcome(lambda: dataclasses.dataclass(empty, weakref_slot=True)),
        ]

    expected = errors()
    with records.standing_in():
        assert errors() == expected

        @dataclasses.dataclass(order=True)
        class Ordered:
            a: int

        @dataclasses.dataclass(unsafe_hash=True)
        class Unsafe:
            a: int

    assert [e[0] for e in expected] == ["raised"] * 3
    assert Ordered.__lt__.__module__ == __name__ and Unsafe.__hash__.__module__ == __name__  # the standard's
    assert Ordered(1) < Ordered(2) and hash(Unsafe(1)) == hash((1,))


def test_on_a_python_whose_methods_are_not_mirrored_nothing_is_stood_in_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """Another Python (3.13 writes its methods otherwise): records is the standard maker, and ``standing_in``
    leaves ``dataclasses.dataclass`` as it is."""
    monkeypatch.setattr(records, "MIRRORED", False)
    standard = dataclasses.dataclass
    with records.standing_in() as stood:
        assert stood is False and dataclasses.dataclass is standard

        @records.dataclass(frozen=True)
        class Made:
            x: int

    assert dataclasses.dataclass is standard
    assert Made.__eq__.__module__ == __name__ and Made.__setattr__.__module__ == __name__  # the standard's


def _wide(make: Maker, field: Callable[..., Any], frozen: bool) -> type:
    """A class of 70 fields (required, defaulted, factories, one not in ``__init__``): ``__init__``'s outer
    function takes ~150 arguments, bound by position by the own maker (the standard one binds them by keyword)."""
    lines = [f"    r{i}: int" for i in range(20)]
    lines += [f"    d{i}: int = {i}" for i in range(25)]
    lines += [f"    f{i}: list[int] = field(default_factory=lambda: [{i}])" for i in range(20)]
    lines += ["    hidden: int = field(default=7, init=False)", "    last: str = 'z'"]
    body = "\n".join(lines)
    text = f"@make(frozen={frozen})\nclass Wide:\n    '''Wide.'''\n{body}\n"
    space: dict[str, Any] = {"make": make, "field": field, "__name__": __name__}
    exec(text, space)
    return space["Wide"]  # type: ignore[no-any-return]


@pytest.mark.parametrize("frozen", [False, True])
def test_a_wide_class_binds_every_argument_to_its_own_field(frozen: bool) -> None:
    import inspect

    standard = _wide(dataclasses.dataclass, dataclasses.field, frozen)
    saved = records.OWN_PACKAGES
    records.OWN_PACKAGES = (*saved, __name__)
    try:
        own = _wide(records.dataclass, records.field, frozen)
    finally:
        records.OWN_PACKAGES = saved
    assert own in recordmaker._MADE or not records.OWN or sys.version_info[:2] != (3, 11)
    assert str(inspect.signature(own)) == str(inspect.signature(standard))
    given_ = {**{f"r{i}": 100 + i for i in range(20)}, "d3": -3, "f5": [-5], "last": "q"}
    for kwargs in ({f"r{i}": i for i in range(20)}, given_):
        a, b = own(**kwargs), standard(**kwargs)
        assert plain(a) == plain(b)
        assert [getattr(a, f.name) for f in dataclasses.fields(standard)] == [
            getattr(b, f.name) for f in dataclasses.fields(standard)
        ]
    positional = list(range(1000, 1066))
    assert plain(own(*positional)) == plain(standard(*positional))
    assert own(**given_).f0 is not own(**given_).f0  # a factory called for each object


def test_every_pseudo_field_annotation_is_left_to_the_standard_maker() -> None:
    def planned(annotation: object) -> object:
        cls = type("C", (), {"__doc__": "A class.", "__annotations__": {"x": annotation}})
        return recordmaker.plan(cls, frozen=False)

    for word in recordmaker._PSEUDO:
        for annotation in (f"typing.{word}[int]", word, getattr(dataclasses, word, None) or getattr(typing, word)):
            assert planned(annotation) is None, annotation
    assert planned("int") is not None and planned(int) is not None


def test_a_field_named_self_or_as_a_dunder_or_a_field_not_annotated_is_left_to_the_standard_maker() -> None:
    def planned(annotations: dict[str, Any], **attributes: Any) -> object:
        cls = type("C", (), {"__doc__": "A class.", "__annotations__": annotations, **attributes})
        return recordmaker.plan(cls, frozen=False)

    for name in ("self", "__x__", "____", "__"):
        assert planned({"a": int, name: int}) is None, name
        assert planned({name: "int", "a": "int"}) is None, name
    for name in ("__x", "x__", "_x_", "selfish", "_"):
        assert planned({"a": int, name: int}) is not None, name
    assert planned({"a": "list[ClassVar]"}) is None  # a word of a pseudo-field anywhere in one annotation's text
    assert planned({"a": "Class", "b": "Var"}) is not None  # never across two
    one, other = recordmaker.field(default=1), recordmaker.field(default=2)
    assert planned({"x": int}, x=one) is not None
    assert planned({"x": int}, x=one, y=other) is None
    assert planned({"x": int, "y": int}, x=one, y=other) is not None


def test_the_class_shapes_left_to_the_standard_maker() -> None:
    """plan() answers None for a class it does not mirror whole, whatever its fields: each shape alone."""
    if sys.version_info[:2] != (3, 11):
        assert recordmaker.plan(type("C", (), {"__doc__": "C."}), frozen=False) is None
        return

    def planned(frozen: bool = False, bases: tuple[type, ...] = (), meta: type = type, **own: Any) -> object:
        body = {"__doc__": "A class.", "__annotations__": {"x": "int"}, **own}
        return recordmaker.plan(meta("C", bases, body), frozen=frozen)

    def setattr_(self: Any, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def delattr_(self: Any, name: str) -> None:
        object.__delattr__(self, name)

    assert planned() is not None and planned(frozen=True) is not None
    assert planned(__setattr__=setattr_) is not None and planned(__delattr__=delattr_) is not None
    assert planned(frozen=True, __setattr__=setattr_) is None
    assert planned(frozen=True, __delattr__=delattr_) is None
    assert planned(__doc__=None) is None
    assert planned(bases=(dict,)) is None
    assert planned(meta=abc.ABCMeta) is None
    assert planned(__slots__=("x",)) is None
