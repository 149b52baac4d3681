"""The four names of :mod:`typing` that tether's cold-path modules use at run time, without importing ``typing``.

``typing`` (with the ``re``, ``enum``, ``contextlib``, ``functools`` and ``collections`` it imports) was ~10 M
instructions of a cold hook call (benchmarks/hook_modules.py), for names that do nothing at run time in tether:
``overload`` (the variants are for the type checker; tether never calls ``typing.get_overloads``), ``cast`` (the
value itself), ``TypeVar`` (annotations are strings: ``from __future__ import annotations``) and ``Generic`` (a
class subscripted only in a base list or an annotation). So mypy sees ``typing``'s own (``TYPE_CHECKING``) and a
process gets these stand-ins; the modules a cold call imports take them from here, and name every other ``typing``
name under ``if TYPE_CHECKING:`` (a module-level ``TYPE_CHECKING = False``: importing typing to read its
``TYPE_CHECKING`` would defeat it). ``tests/test_typeless.py`` holds them to what the modules rely on, and
``tests/hooks/test_cold_libraries.py`` fails when a cold call imports ``typing`` again.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Generic as Generic
    from typing import TypeVar as TypeVar
    from typing import cast as cast
    from typing import overload as overload
else:

    def overload(func):
        """The variant itself: the implementation defined after it replaces it (typing's keeps a registry)."""
        return func

    def cast(kind, value):
        """``value`` unchanged, as ``typing.cast``."""
        return value

    class TypeVar:
        """A type variable's name (its bound and constraints are the type checker's only)."""

        __slots__ = ("__name__",)

        def __init__(self, name, *constraints, bound=None, covariant=False, contravariant=False):
            self.__name__ = name

        def __repr__(self):
            return f"~{self.__name__}"

        def __or__(self, other):  # ``X | T`` in an annotation evaluated at run time (a model module's): the union
            return self  # is the type checker's; nothing reads it here

        __ror__ = __or__

    class Generic:
        """A base whose subscription (``Generic[T]``, and ``Sub[X]`` of a subclass) is the class itself."""

        __slots__ = ()

        def __class_getitem__(cls, params):
            return cls
