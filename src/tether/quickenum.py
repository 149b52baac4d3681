"""Plain enum classes made in one pass: what :class:`enum.EnumType` makes, without its member-by-member protocol.

Python 3.11 makes an enum class member by member in Python code (each name set checked by ``_EnumDict``, then a
``_proto_member`` whose ``__set_name__`` makes the member and searches the bases for a descriptor of its name):
~0.7 M instructions for a ``StrEnum`` of five members, the dearest class a cold hook call makes (16 of tether's
enums are on its path). ``class X(StrEnum, metaclass=Quick)`` makes, for a *plain* enum, the same class in ~0.33 M:
metaclass :class:`enum.EnumType`, the same bases, attributes and members, each made by the base's own
``_new_member_``, named, numbered and mapped as ``_proto_member.__set_name__`` does, then ``__str__``,
``__format__``, ``__repr__``, ``__reduce_ex__`` and ``__new__`` settled as ``EnumType.__new__`` settles them
(callgrind of a cold PreToolUse on the plain path, the 16 enums made so: ~5 M instructions fewer, 1.5 %).

Plain: its one base is ``StrEnum``, ``IntEnum`` or ``Enum``; no class keywords; every member's value exactly a
``str`` (``int`` for ``IntEnum``) and no two alike (no aliases); no member named as an attribute of the base (nor
``mro``, nor a name that is not an identifier); besides its members, the body holds only its docstring and
functions or properties (no ``_ignore_``, ``_order_``, ``_missing_``, ``__new__``, nested class …); no name set
twice or deleted. Any other class statement gets the ``_EnumDict`` it would have had, filled by the body's steps
in their order, and ``EnumType.__new__`` itself: made, or refused, as ever. ``tests/test_quickenum.py`` makes every
enum of tether that names :class:`Quick` both ways and compares them, and holds each way of not being plain to it.
"""

from __future__ import annotations

import sys
from enum import Enum, EnumType, IntEnum, StrEnum
from types import FunctionType

from tether.memo import cache

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from typing import Any

    _Namespace = dict[str, Any]
else:
    _Namespace = dict  # the same class: ``dict[str, Any]`` is the type checker's

#: The Python whose ``EnumType.__new__`` and ``_proto_member.__set_name__`` this mirrors (3.12 and later make members
#: otherwise): elsewhere every class statement is made the standard way.
MIRRORED = sys.version_info[:2] == (3, 11)
#: The bases a plain enum may have (exactly one), and the exact type of its members' values.
_PLAIN: dict[type, type] = {StrEnum: str, IntEnum: int, Enum: str}
#: What a class statement's namespace holds besides the members that a plain enum may hold.
_KNOWN = frozenset({"__module__", "__qualname__", "__doc__", "_generate_next_value_"})
#: The methods ``EnumType.__new__`` takes from the enum base when the class's own would be the data type's.
_SETTLED = ("__repr__", "__str__", "__format__", "__reduce_ex__")


class Quick(EnumType):
    """The metaclass of a class statement only: the class it makes is an :class:`enum.EnumType`'s."""

    @classmethod
    def __prepare__(metacls, cls: str, bases: tuple[type, ...], /, **kwds: Any) -> _Body:  # type: ignore[override]
        """The body's namespace: a dict that keeps the order of what is set (``_EnumDict`` checks each name as it is
        set: that costs); a class that is not plain gets its ``_EnumDict`` in :meth:`__new__`, filled by the same
        steps in the same order (a name set twice, ``del``), so it fails or succeeds as it would have."""
        return _Body()

    def __new__(metacls, cls: str, bases: tuple[type, ...], classdict: Any, **kwds: Any) -> Any:
        members = _members(bases, classdict) if MIRRORED and not kwds else None
        if members is None:
            return EnumType.__new__(EnumType, cls, bases, _enum_dict(cls, bases, classdict, kwds), **kwds)
        return _made(cls, bases, classdict, members)


class _Body(_Namespace):
    """A class body's namespace that keeps its steps: ``(name, value)`` set, ``(name, _DELETED)`` deleted."""

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[tuple[str, Any]] = []

    def __setitem__(self, key: str, value: Any) -> None:
        self.steps.append((key, value))
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self.steps.append((key, _DELETED))
        dict.__delitem__(self, key)


_DELETED = object()
#: ``Enum.__init__``, which ``EnumType.__new__`` calls on each member and which does nothing (``pass``).
_NO_INIT = Enum.__init__


def _enum_dict(cls: str, bases: tuple[type, ...], body: _Body, kwds: dict[str, Any]) -> Any:
    """The namespace ``EnumType.__prepare__`` would have given the class statement, after the body's steps."""
    namespace = EnumType.__prepare__(cls, bases, **kwds)
    for key, value in body.steps:
        if value is _DELETED:
            del namespace[key]
        else:
            namespace[key] = value
    return namespace


def _members(bases: tuple[type, ...], body: _Body) -> dict[str, Any] | None:
    """The members of a plain enum (name: value, in order), None when the class is not plain."""
    if len(bases) != 1 or bases[0] not in _PLAIN or len(body.steps) != len(body):  # a name set twice, or deleted
        return None
    kind = _PLAIN[bases[0]]
    taken = _names(bases[0])
    members = {}
    for key, value in body.items():
        if key in _KNOWN:
            continue
        if key.startswith("_"):
            return None
        if type(value) is kind:
            if not key.isidentifier() or key == "mro" or key in taken:
                return None
            members[key] = value
        elif type(value) not in (FunctionType, property):  # a nested class, a classmethod …: as ever
            return None
    if not members or len(set(members.values())) != len(members):
        return None
    return members


@cache
def _names(base: type) -> frozenset[str]:
    """Every name an attribute of ``base`` or of a class of its MRO holds (a member may not take one), asked of the
    one base a plain enum has (``StrEnum``, ``IntEnum``, ``Enum``: the standard library's, not changed later) once,
    not for each member."""
    return frozenset(name for klass in base.__mro__ for name in vars(klass))


@cache
def _of(base: type) -> tuple[Any, ...]:
    """What ``EnumType.__new__`` finds for a plain enum of ``base`` (the class's name and namespace do not change
    it: a plain body has no ``__new__``): the member type, the enum base, its ``_new_member_``, whether that was
    saved as ``__new_member__``, whether it takes the value, the value's repr, ``_generate_next_value_``."""
    meta: Any = EnumType  # its helpers are private: typeshed does not name them
    member_type, first_enum = meta._get_mixins_(base.__name__, (base,))
    new, save_new, use_args = meta._find_new_({}, member_type, first_enum)
    value_repr = meta._find_data_repr_(base.__name__, (base,))
    return member_type, first_enum, new, save_new, use_args, value_repr, first_enum._generate_next_value_


def _made(cls: str, bases: tuple[type, ...], body: _Body, members: dict[str, Any]) -> Any:
    """``EnumType.__new__``'s class, from the body without the members, then the members themselves."""
    member_type, first_enum, new, save_new, use_args, value_repr, generate = _of(bases[0])
    namespace = {"_generate_next_value_": generate}
    namespace.update((key, value) for key, value in body.items() if key not in members)
    names: list[str] = []
    by_name: dict[str, Any] = {}
    by_value: dict[Any, Any] = {}
    namespace.update(_new_member_=new, _use_args_=use_args, _member_names_=names, _member_map_=by_name)
    namespace.update(_value2member_map_=by_value, _unhashable_values_=[], _member_type_=member_type)
    namespace["_value_repr_"] = value_repr
    enum_class: Any = type.__new__(EnumType, cls, bases, namespace)
    init = enum_class.__init__
    for name, value in members.items():
        member = new(enum_class, value) if use_args else new(enum_class)
        if not hasattr(member, "_value_"):
            member._value_ = value if member_type is object else member_type(value)
        member._name_ = name
        member.__objclass__ = enum_class
        if init is not _NO_INIT:  # Enum's own __init__ does nothing: not called for each member
            member.__init__(value)
        member._sort_order_ = len(names)
        names.append(name)
        type.__setattr__(enum_class, name, member)
        by_name[name] = member
        by_value.setdefault(member._value_, member)
    own = vars(enum_class)
    for name in _SETTLED:
        found = getattr(enum_class, name)
        if name not in own and found in (getattr(member_type, name), getattr(object, name)):
            type.__setattr__(enum_class, name, getattr(first_enum, name))
    if save_new:
        type.__setattr__(enum_class, "__new_member__", new)
    type.__setattr__(enum_class, "__new__", Enum.__new__)
    return enum_class
