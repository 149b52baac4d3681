"""tether.memo against functools: ``cache`` keys, counts, clears and names as ``functools.cache``, and
``cached_property`` computes once, is the instance's afterwards and refuses as ``functools.cached_property``."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether import memo


def calls_of(cache: Any) -> tuple[list[Any], list[Any], Any]:
    seen: list[Any] = []

    def f(a: Any, b: Any = 0, *, c: Any = None) -> Any:
        """Doc."""
        seen.append((a, b, c))
        return (a, b, c)

    cached = cache(f)
    answers = [cached(*args, **kwargs) for args, kwargs in CALLS]
    return answers, seen, cached


#: Calls as keys: positional and keyword spellings, equal values of other types (1 and 1.0 and True: one key
#: without ``typed``), an unhashable argument (TypeError, not cached).
CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1,), {}),
    ((1,), {}),
    ((1, 0), {}),
    ((1,), {"b": 0}),
    ((), {"a": 1}),
    ((1.0,), {}),
    ((True,), {}),
    (("x",), {"c": 2}),
    (("x",), {"c": 2}),
    ((None,), {"c": None}),
]


def test_cache_keys_and_counts_as_functools() -> None:
    theirs, mine = calls_of(functools.cache), calls_of(memo.cache)
    assert mine[0] == theirs[0] and mine[1] == theirs[1]
    assert mine[2].cache_info() == theirs[2].cache_info() and tuple(mine[2].cache_info()) == (3, 7, None, 7)
    assert mine[2].cache_info().currsize == 7 and repr(mine[2].cache_info()) == repr(theirs[2].cache_info())
    with pytest.raises(TypeError):
        mine[2]([1])  # unhashable: as functools
    mine[2].cache_clear()
    assert mine[2].cache_info().currsize == 0
    for name in ("__name__", "__qualname__", "__doc__", "__module__"):
        assert getattr(mine[2], name) == getattr(theirs[2], name), name
    assert mine[2].__wrapped__.__qualname__ == theirs[2].__wrapped__.__qualname__ == "calls_of.<locals>.f"
    assert mine[2].cache_parameters() == theirs[2].cache_parameters()


def test_cached_property_as_functools() -> None:
    def counted(self: Any) -> int:
        """Counted."""
        self.n += 1
        return int(self.n)

    def make(prop: Any) -> Any:
        class Thing:
            value = prop(counted)

            def __init__(self) -> None:
                self.n = 0

        return Thing

    for kind in (functools.cached_property, memo.cached_property):
        thing_class = make(kind)
        thing = thing_class()
        assert (thing.value, thing.value, thing.n) == (1, 1, 1)  # computed once
        thing.value = 7  # the instance's own now: set, then deleted, then computed again
        assert thing.value == 7
        del thing.value
        assert (thing.value, thing.n) == (2, 2)
        assert isinstance(vars(thing_class)["value"], kind) and thing_class.value.__doc__ == "Counted."


def test_cached_property_refuses_as_functools() -> None:
    def refusal(kind: Any, case: str) -> str:
        try:
            if case == "slots":

                class Slotted:
                    __slots__ = ()
                    value = kind(lambda self: 1)

                Slotted().value  # noqa: B018
            elif case == "two names":

                def f(self: Any) -> int:
                    return 1

                shared = kind(f)
                type("Two", (), {"a": shared, "b": shared})
            else:
                unnamed = kind(lambda self: 1)
                unnamed.__get__(object(), object)
        except (TypeError, RuntimeError) as e:
            cause = e.__cause__ or e  # 3.11 wraps an error of __set_name__ in a RuntimeError
            return f"{type(cause).__name__}: {cause}"
        return "no refusal"

    for case in ("slots", "two names", "no name"):
        assert refusal(memo.cached_property, case) == refusal(functools.cached_property, case), case


def test_a_process_with_them_imports_no_functools() -> None:
    probe = (
        "import sys\nsys.path.insert(0, sys.argv[1])\nfrom tether import memo\n"
        "f = memo.cache(lambda x: x * 2)\n"
        "class T:\n    @memo.cached_property\n    def v(self):\n        return 3\n"
        "assert f(2) == 4 and f(2) == 4 and f.cache_info().hits == 1 and T().v == 3\n"
        "print(','.join(m for m in ('functools', 'collections', 'typing') if m in sys.modules))"  # json imports re
    )
    src = str(Path(memo.__file__).parents[1])
    out = subprocess.run([sys.executable, "-I", "-S", "-c", probe, src], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
