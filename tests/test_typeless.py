"""tether.typeless: typing's four run-time names, as the cold path's modules rely on them, without typing."""

from __future__ import annotations

import json
import subprocess
import sys

from tether import typeless


def test_in_a_process_the_stand_ins_do_what_the_modules_rely_on() -> None:
    probe = """
import json, sys
from tether import typeless as t
def f(x): return x
class Base(t.Generic):
    pass
class Sub(Base):
    pass
T = t.TypeVar("T", bound="Later")
print(json.dumps({
    "typing": "typing" in sys.modules,
    "overload": t.overload(f) is f,
    "cast": t.cast("int", "v") == "v",
    "generic": Base[T] is Base and Sub[int] is Sub and Sub.__mro__[1:] == (Base, t.Generic, object),
    "typevar": [T.__name__, repr(T)],
    "union": (type[int] | T) is T and (T | None) is T,
}))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert json.loads(out.stdout) == {
        "typing": False,  # the stand-ins, not typing's (which the type checker sees)
        "overload": True,
        "cast": True,
        "generic": True,
        "typevar": ["T", "~T"],
        "union": True,  # a model module's ``type[X] | D`` (evaluated at run time): nothing reads it
    }


def test_a_class_on_the_stand_in_generic_keeps_no_state_of_it() -> None:
    """``Generic`` adds no slots and no ``__dict__``: a subclass with ``__slots__`` stays without one."""

    class Slotted(typeless.Generic):
        __slots__ = ("a",)

    one = Slotted()
    assert not hasattr(one, "__dict__")
