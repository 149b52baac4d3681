"""tether.quickenum: an enum made by ``metaclass=Quick`` is the class ``enum.EnumType`` makes of the same statement.

Every class statement of tether's that names ``Quick`` is run again here both ways (its source, in a copy of its
module's namespace): with ``Quick``, which must take its quick path, and without it, the standard making; the two
classes must agree in everything (``vars``, members, lookups, pickling, ``enum._test_simple_enum``). Statements that
are not plain (aliases, ``auto``, ``_ignore_``, ``_missing_``, a name set twice, a base attribute's name, values of
another type, class keywords) must be made, or refused, exactly as without ``Quick``.
"""

from __future__ import annotations

import ast
import enum
import importlib
import pickle
import textwrap
from pathlib import Path
from typing import Any

import pytest

import tether.quickenum as quickenum
from tether.quickenum import Quick

SRC = Path(quickenum.__file__).parent


def quick_statements() -> list[tuple[str, str, str]]:
    """(module, class name, source) of every class statement in tether that says ``metaclass=Quick``."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "metaclass=Quick" not in text:
            continue
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts)
        for node in ast.parse(text).body:
            if isinstance(node, ast.ClassDef) and any(
                k.arg == "metaclass" and ast.unparse(k.value) == "Quick" for k in node.keywords
            ):
                found.append((module, node.name, ast.get_source_segment(text, node) or ""))
    return found


STATEMENTS = quick_statements()


def made(source: str, namespace: dict[str, Any], name: str, quick: bool) -> Any:
    """The class ``source`` makes in (a copy of) ``namespace``, with ``Quick`` or without it."""
    if not quick:
        source = source.replace(", metaclass=Quick)", ")")
    scope = dict(namespace)
    exec(compile(source, "<statement>", "exec"), scope)
    return scope[name]


def same(quick: Any, standard: Any) -> None:
    """The two classes agree in every attribute and every behaviour an enum has."""
    assert type(quick) is type(standard) is enum.EnumType
    assert quick.__bases__ == standard.__bases__ and len(quick.__mro__) == len(standard.__mro__)
    assert set(vars(quick)) == set(vars(standard))
    for key, mine in vars(quick).items():
        theirs = vars(standard)[key]
        if isinstance(mine, enum.Enum):
            assert type(mine) is quick and type(theirs) is standard
            assert (mine._name_, mine._value_, mine._sort_order_, str(mine), format(mine), repr(mine), hash(mine)) == (
                theirs._name_,
                theirs._value_,
                theirs._sort_order_,
                str(theirs),
                format(theirs),
                repr(theirs),
                hash(theirs),
            ), key
            assert vars(mine).keys() == vars(theirs).keys(), key
        elif key in ("_member_map_", "_value2member_map_"):
            assert [(k, v._name_) for k, v in mine.items()] == [(k, v._name_) for k, v in theirs.items()], key
        elif key == "_member_names_":
            assert mine == theirs
        elif hasattr(mine, "__code__"):
            assert mine.__code__.co_code == theirs.__code__.co_code, key
        elif isinstance(mine, property):
            assert mine.fget is not None and theirs.fget is not None
            assert mine.fget.__code__.co_code == theirs.fget.__code__.co_code, key
        else:
            assert mine == theirs, key
    enum._test_simple_enum(standard, quick)  # the standard library's own check of an enum made another way
    for member, twin in zip(quick, standard, strict=True):
        assert quick(member.value) is member and quick[member.name] is member
        assert (member.name, member.value) == (twin.name, twin.value)
        assert (member == member.value) == (twin == twin.value)
    with pytest.raises(ValueError) as mine_error:
        quick("not a value of it")
    with pytest.raises(ValueError) as their_error:
        standard("not a value of it")
    assert str(mine_error.value) == str(their_error.value)


@pytest.mark.parametrize(("module", "name", "source"), STATEMENTS, ids=[f"{m}.{n}" for m, n, _ in STATEMENTS])
def test_each_quick_enum_of_tether_is_the_standard_one(
    module: str, name: str, source: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = vars(importlib.import_module(module))
    quick_ones: list[str] = []
    making = quickenum._made

    def counted(cls: str, *args: Any) -> Any:
        quick_ones.append(cls)
        return making(cls, *args)

    monkeypatch.setattr(quickenum, "_made", counted)
    mine = made(source, namespace, name, quick=True)
    assert quick_ones == ([name] if quickenum.MIRRORED else []), f"{module}.{name} is not plain: made the standard way"
    same(mine, made(source, namespace, name, quick=False))
    same(namespace[name], made(source, namespace, name, quick=False))  # the module's own class too


#: The modules of a cold PreToolUse (tests/hooks/test_cold_path.py) that define enums: 16 of them, all plain.
COLD_ENUM_MODULES = (
    "tether.status",
    "tether.envelope.schema",
    "tether.policy.decision",
    "tether.policy.provenance",
    "tether.policy.programs",
    "tether.policy.envvars",
    "tether.guard.session",
)


def test_every_enum_a_cold_call_makes_is_quick() -> None:
    quick = {(module, name) for module, name, _ in STATEMENTS}
    defined = {
        (module, name)
        for module in COLD_ENUM_MODULES
        for name, value in vars(importlib.import_module(module)).items()
        if isinstance(value, enum.EnumType) and value.__module__ == module
    }
    assert len(defined) == 16 and defined <= quick, sorted(defined - quick)


def test_members_pickle_to_themselves() -> None:
    from tether.policy.decision import Verdict
    from tether.status import RunStatus

    for member in (*RunStatus, *Verdict):
        assert pickle.loads(pickle.dumps(member)) is member


NOT_PLAIN = {
    "alias": 'class X(StrEnum, metaclass=Quick):\n    A = "a"\n    B = "a"\n',
    "auto": "class X(StrEnum, metaclass=Quick):\n    A = auto()\n    B = auto()\n",
    "ignore": 'class X(Enum, metaclass=Quick):\n    _ignore_ = ["T"]\n    T = 1\n    A = "a"\n',
    "missing": (
        'class X(StrEnum, metaclass=Quick):\n    A = "a"\n\n'
        "    @classmethod\n    def _missing_(cls, value):\n        return cls.A\n"
    ),
    "set twice": 'class X(StrEnum, metaclass=Quick):\n    A = "a"\n    A = "b"\n',
    "deleted": 'class X(StrEnum, metaclass=Quick):\n    A = "a"\n    T = "t"\n    del T\n',
    "a base's name": 'class X(Enum, metaclass=Quick):\n    name = "a"\n',
    "a name of str's": 'class X(StrEnum, metaclass=Quick):\n    upper = "a"\n    B = "b"\n',
    "a name of int's": "class X(IntEnum, metaclass=Quick):\n    real = 1\n    B = 2\n",
    "int in a StrEnum": "class X(StrEnum, metaclass=Quick):\n    A = 1\n",
    "bool in an IntEnum": "class X(IntEnum, metaclass=Quick):\n    A = True\n    B = 2\n",
    "str subclass": "class X(StrEnum, metaclass=Quick):\n    A = Sub('a')\n",
    "tuple value": "class X(Enum, metaclass=Quick):\n    A = (1, 2)\n",
    "two bases": 'class X(str, Enum, metaclass=Quick):\n    A = "a"\n',
    "a Flag": "class X(enum.Flag, metaclass=Quick):\n    A = 1\n    B = 2\n",
    "no member": "class X(Enum, metaclass=Quick):\n    pass\n",
    "a private name": 'class X(StrEnum, metaclass=Quick):\n    _x = 1\n    A = "a"\n',
    "a nested class": 'class X(StrEnum, metaclass=Quick):\n    A = "a"\n    class Inner:\n        pass\n',
    "a reserved name": 'class X(Enum, metaclass=Quick):\n    mro = "a"\n',
    "an empty name": 'class X(StrEnum, metaclass=Quick):\n    A = "a"\n    locals()[""] = "b"\n',
    "a keyword": 'class X(StrEnum, metaclass=Quick, boundary=None):\n    A = "a"\n',
}


class Sub(str):
    pass


SCOPE = {
    "enum": enum,
    "Enum": enum.Enum,
    "StrEnum": enum.StrEnum,
    "IntEnum": enum.IntEnum,
    "auto": enum.auto,
    "Quick": Quick,
    "Sub": Sub,
    "__name__": "tests.quickenum_cases",
}


def outcome(source: str, quick: bool) -> tuple[str, Any]:
    try:
        return "made", made(source, SCOPE, "X", quick)
    except Exception as e:  # the standard making's refusal, which Quick must give alike
        return type(e).__name__, str(e)


@pytest.mark.parametrize("case", sorted(NOT_PLAIN))
def test_a_statement_that_is_not_plain_is_made_or_refused_as_ever(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    source = textwrap.dedent(NOT_PLAIN[case])
    quick_ones: list[str] = []
    making = quickenum._made
    monkeypatch.setattr(quickenum, "_made", lambda cls, *a: quick_ones.append(cls) or making(cls, *a))
    mine, theirs = outcome(source, quick=True), outcome(source, quick=False)
    assert quick_ones == [], f"{case}: taken as plain"
    assert mine[0] == theirs[0], (case, mine, theirs)
    if mine[0] == "made":
        assert type(mine[1]) is type(theirs[1])
        assert [(m.name, m.value) for m in mine[1]] == [(m.name, m.value) for m in theirs[1]]
        assert set(vars(mine[1])) == set(vars(theirs[1]))
    else:
        assert mine[1] == theirs[1]
