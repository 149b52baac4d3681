"""Plain records: the part of pydantic's ``BaseModel`` a cold hook call uses, built without pydantic.

:mod:`tether.plain` hands these out in a process that chose them (a cold hook call: docs/hook-latency.md, "The plain
path"). A class statement written for pydantic (annotations, defaults, ``Field(default_factory=…, ge=…,
pattern=…)``, ``field_validator``, ``model_validator(mode="after")``, ``ConfigDict``) makes a plain record with:
keyword construction and ``model_validate``/``model_validate_json`` of a mapping, attribute reads, frozen
instances, equality and hashing over the fields, ``model_dump()`` and ``model_dump(mode="json")`` giving what
pydantic gives, and pickles in pydantic's own state format both ways (a pickle written by pydantic loads here, and
one written here loads there).

What it checks, it checks exactly, or not at all: a value is taken when pydantic would take it unchanged, or change
it in the few ways mirrored here (an ``int`` to a ``float`` field, a list from a tuple, a ``str`` enum's value, an
enum from its value, a nested record from a mapping); anything else — a field missing or unknown, a value
pydantic might coerce or refuse, a constraint or a validator that does not pass, an annotation or an option not
mirrored, any other pydantic API (``model_*``, ``__pydantic_*``) — raises :class:`Unsure`, and the call is the full
path's (hooks/entry.py). A plain record never raises a validation error of its own: its message would differ
from pydantic's. ``tests/test_plain_records.py`` holds every payload kind and the envelope schema to pydantic.
"""

from __future__ import annotations

import enum
import math
import sys
import types

from tether import jsonc

TYPE_CHECKING = False  # not typing's: a plain process does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    import re
    from collections.abc import Callable
    from typing import Any, ClassVar, TypeAlias


class Unsure(BaseException):
    """A plain process met something it cannot decide exactly as pydantic would: the call is the full path's.

    A ``BaseException``, so that no ``except Exception`` (a cache read's, the hook's own refusal) takes it for
    an ordinary failure."""


class ValidationError(ValueError):
    """Named so that the model modules' ``except ValidationError`` reads the same; a plain record raises
    :class:`Unsure` instead."""


class PydanticSerializationError(ValueError):
    """Likewise, for ``except PydanticSerializationError``."""


_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()
#: ``Field`` options that change nothing a plain record does, and the constraints it checks.
INERT = frozenset({"description", "title", "examples"})
CONSTRAINTS = frozenset({"ge", "gt", "le", "lt", "min_length", "max_length", "pattern"})
Check: TypeAlias = "Callable[[Any, bool], Any]"  # (value, exact) -> the value as validation leaves it; or Unsure


class _Form:
    """``typing``'s ``Any``, ``ClassVar[…]``, ``Literal[…]`` and a union with ``Any`` or a ``Literal``, as a plain
    process's model modules name them (from :mod:`tether.plain`, whose names these are in a plain process): so a
    cold call need not import ``typing`` (~10 M instructions) for the annotations of its records. :func:`checker`
    reads these and ``typing``'s own (a model module that imports typing, or a class declared elsewhere)."""

    __slots__ = ("args", "name")

    def __init__(self, name: str, args: tuple[Any, ...] = ()) -> None:
        self.name, self.args = name, args

    def __getitem__(self, args: Any) -> _Form:
        if self.name not in ("Literal", "ClassVar") or self.args:
            raise TypeError(f"{self!r} is not subscriptable")
        return _Form(self.name, args if type(args) is tuple else (args,))

    def __or__(self, other: Any) -> _Form:
        return _Form("Union", (*_members(self), *_members(other)))

    def __ror__(self, other: Any) -> _Form:
        return _Form("Union", (*_members(other), *_members(self)))

    def __eq__(self, other: object) -> bool:
        return type(other) is _Form and (self.name, self.args) == (other.name, other.args)

    def __hash__(self) -> int:
        return hash((self.name, self.args))

    def __repr__(self) -> str:
        return self.name + (f"[{', '.join(map(repr, self.args))}]" if self.args else "")


def _members(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (``X | Y`` of types, or of :class:`_Form`), flattened; anything else alone."""
    if type(annotation) is _Form and annotation.name == "Union":
        return annotation.args
    if type(annotation) is types.UnionType:
        return tuple(annotation.__args__)
    return (type(None),) if annotation is None else (annotation,)


_ANY = _Form("Any")
#: The typing names a plain process's model modules take from :mod:`tether.plain` (``plain.__getattr__``).
TYPING_NAMES: dict[str, Any] = {"Any": _ANY, "ClassVar": _Form("ClassVar"), "Literal": _Form("Literal")}


class FieldInfo:
    """One field: its annotation, default or factory, and constraints (``Field(...)``'s stand-in)."""

    __slots__ = ("annotation", "constraints", "default", "default_factory", "other")

    def __init__(self, default: Any = _MISSING, *, default_factory: Callable[[], Any] | None = None, **options: Any):
        self.annotation: Any = _ANY
        self.default, self.default_factory = default, default_factory
        if not options or options.keys() <= INERT:  # most fields (a default, a description): what the two lines
            self.constraints: dict[str, Any] = {}  # below make of options none of which is a constraint or other
            self.other: list[str] = []
            return
        self.constraints = {k: v for k, v in options.items() if k in CONSTRAINTS}
        self.other = sorted(k for k in options if k not in CONSTRAINTS and k not in INERT)

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def value(self) -> Any:
        """The default, as pydantic gives it: a factory's result, a mutable default copied."""
        if self.default_factory is not None:
            return self.default_factory()
        default = self.default
        return default.copy() if type(default) in (list, dict, set) else default


def Field(default: Any = _MISSING, **options: Any) -> Any:
    return FieldInfo(default, **options)


def ConfigDict(**options: Any) -> dict[str, Any]:
    return dict(options)


class _Validator:
    """A ``field_validator`` (``fields``) or ``model_validator`` (``fields`` None) in a class body."""

    def __init__(self, func: Any, fields: tuple[str, ...] | None, mode: str) -> None:
        self.func, self.fields, self.mode = func, fields, mode


def field_validator(*fields: str, mode: str = "after", **options: Any) -> Callable[[Any], Any]:
    return lambda func: _Validator(func, fields, "unsupported" if options else mode)


def model_validator(*, mode: str) -> Callable[[Any], Any]:
    return lambda func: _Validator(func, None, mode)


def _unsure(why: str) -> Any:
    raise Unsure(why)


#: The prefixes of pydantic's API (``model_*``, ``__pydantic_*``, ``__get_pydantic_*``).
_PYDANTIC_API = ("model_", "__pydantic", "__get_pydantic")


def _not_mirrored(cls: type, name: str) -> None:
    """A name of pydantic's API that a record or its class lacks is :class:`Unsure`: an ``AttributeError`` would
    let a ``getattr(…, default)`` or ``hasattr`` take the default where pydantic has an answer."""
    if name.startswith(_PYDANTIC_API):
        raise Unsure(f"{cls.__name__}.{name}: pydantic's, not a plain record's")


class _Kind(type):
    """The records' metaclass: pydantic's class-level API that is not mirrored here is :class:`Unsure`."""

    def __getattr__(cls, name: str) -> Any:
        _not_mirrored(cls, name)
        raise AttributeError(f"type object {cls.__name__!r} has no attribute {name!r}")


_set = object.__setattr__


class BaseModel(metaclass=_Kind):
    """A plain record; see the module docstring."""

    __slots__ = ("__dict__", "__pydantic_extra__", "__pydantic_fields_set__", "__pydantic_private__")
    model_config: ClassVar[dict[str, Any]] = {}
    model_fields: ClassVar[dict[str, FieldInfo]] = {}
    #: Each validator's attribute name and the fields it validates (None: a model validator), the bases' first:
    #: pydantic's collection, by name (a base's met again through another base is still one).
    __plain_declared__: ClassVar[dict[str, tuple[str, ...] | None]] = {}
    #: What validation reads of that: each field's validators, then the model's, in that order.
    __plain_validators__: ClassVar[tuple[dict[str, tuple[str, ...]], tuple[str, ...]]] = ({}, ())

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _declare(cls)

    def __init__(self, /, **data: Any) -> None:
        _fill(self, data)

    @classmethod
    def model_validate(cls, obj: Any) -> Any:
        if isinstance(obj, cls):
            return obj  # pydantic's default: an instance is not validated again
        if type(obj) is not dict or not _STR_ONLY.issuperset(map(type, obj)):  # every key exactly a str
            raise Unsure(f"{cls.__name__}: only a mapping of names is validated plainly")
        record = cls.__new__(cls)
        _fill(record, obj)
        return record

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Any:
        return cls.model_validate(loads(text))

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        if mode == "json":
            return _json_record(self)
        if mode != "python":
            raise Unsure(f"model_dump(mode={mode!r})")
        return {name: _python(value) for name, value in _values(self)}

    def __getattr__(self, name: str) -> Any:
        _not_mirrored(type(self), name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise Unsure(f"{type(self).__name__} is frozen (setting {name})")

    def __delattr__(self, name: str) -> None:
        raise Unsure(f"{type(self).__name__} is frozen (deleting {name})")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseModel):
            return NotImplemented
        if type(self) is not type(other) or self.__pydantic_private__ != other.__pydantic_private__:
            return False
        if (self.__pydantic_extra__ or {}) != (other.__pydantic_extra__ or {}):
            return False
        mine, theirs = self.__dict__, other.__dict__
        return mine == theirs or all(mine.get(n, _MISSING) == theirs.get(n, _MISSING) for n in self.model_fields)

    def __hash__(self) -> int:
        return hash(tuple(value for _, value in _values(self)))

    def __iter__(self) -> Any:
        yield from _values(self)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={v!r}' for n, v in _values(self))})"

    def __str__(self) -> str:
        return " ".join(f"{n}={v!r}" for n, v in _values(self))

    def __getstate__(self) -> dict[str, Any]:
        """pydantic's state, exactly (a fold checkpoint written here is read by pydantic, and the other way)."""
        return {
            "__dict__": self.__dict__,
            "__pydantic_extra__": self.__pydantic_extra__,
            "__pydantic_fields_set__": self.__pydantic_fields_set__,
            "__pydantic_private__": self.__pydantic_private__,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        """As pydantic restores a pickled model: the state as it is (the readers check it: guard/envcache.py)."""
        _set(self, "__pydantic_fields_set__", state.get("__pydantic_fields_set__", {}))
        _set(self, "__pydantic_extra__", state.get("__pydantic_extra__", {}))
        _set(self, "__pydantic_private__", state.get("__pydantic_private__", {}))
        _set(self, "__dict__", state.get("__dict__", {}))

    def __copy__(self) -> Any:
        """As pydantic copies a model: its own ``__dict__`` (a copy through the pickle state would share it)."""
        return _copied(self, None)

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Any:
        return _copied(self, {} if memo is None else memo)


def _copied(record: BaseModel, memo: dict[int, Any] | None) -> Any:
    """A shallow copy of ``record`` (``memo`` None) or a deep one. (``copy`` is imported here, where a record is
    copied: a hook call copies none, and ``copy`` imports ``weakref``.)"""
    import copy

    def how(value: Any) -> Any:
        return copy.copy(value) if memo is None else copy.deepcopy(value, memo)

    cls = type(record)
    new = cls.__new__(cls)
    if memo is not None:
        memo[id(record)] = new
    _set(new, "__dict__", how(record.__dict__))
    _set(new, "__pydantic_extra__", how(record.__pydantic_extra__))
    _set(new, "__pydantic_fields_set__", copy.copy(record.__pydantic_fields_set__))
    private = record.__pydantic_private__
    _set(new, "__pydantic_private__", None if private is None else how(private))
    return new


# ---- declaring ------------------------------------------------------------------------------------------------


def _declare(cls: type[BaseModel]) -> None:
    """The class's fields (its bases' first, in declaration order, as pydantic orders them), its config and its
    validators, from the class statement; field defaults leave the class (pydantic's do too)."""
    fields, config, declared = _inherited(cls)
    namespace = cls.__dict__  # a live view (the deletions below show), asked for once
    config.update(namespace.get("model_config", {}))
    own = namespace.get("__annotations__", {})  # not inspect.get_annotations: its import costs a cold call ~8 ms
    for name, annotation in own.items():
        if _class_var(annotation) or name == "model_config":
            continue
        value = namespace.get(name, _MISSING)
        info = value if isinstance(value, FieldInfo) else FieldInfo(value)
        info.annotation = annotation
        if name.startswith("_"):
            info.other = [*info.other, "private attribute"]
        fields[name] = info
        if value is not _MISSING:
            delattr(cls, name)
    for attr, value in list(namespace.items()):
        if isinstance(value, _Validator):
            setattr(cls, attr, value.func)
            if value.mode != "after":
                raise TypeError(f"{cls.__name__}.{attr}: a plain record mirrors only mode='after' validators")
            declared[attr] = value.fields
    by_field: dict[str, tuple[str, ...]] = {}
    after: tuple[str, ...] = ()
    for attr, names in declared.items():
        if names is None:
            after = (*after, attr)
        for name in names or ():
            by_field[name] = (*by_field.get(name, ()), attr)
    cls.model_fields, cls.model_config, cls.__plain_declared__ = fields, config, declared
    cls.__plain_validators__ = (by_field, after)


def _inherited(
    cls: type[BaseModel],
) -> tuple[dict[str, FieldInfo], dict[str, Any], dict[str, tuple[str, ...] | None]]:
    """What the record bases of ``cls`` declare, the farthest first: fields, config and validators, each by name (a
    base's declarations hold its own bases', as pydantic's do), in new objects for ``cls`` to add its own to."""
    fields: dict[str, FieldInfo] = {}
    config: dict[str, Any] = {}
    declared: dict[str, tuple[str, ...] | None] = {}
    for base in reversed(cls.__mro__[1:]):
        if isinstance(base, _Kind) and base is not BaseModel:
            fields.update(base.model_fields)
            config.update(base.model_config)
            declared.update(base.__plain_declared__)
    return fields, config, declared


def _class_var(annotation: Any) -> bool:
    if type(annotation) is type:  # a plain class (str, int, datetime …): never ClassVar
        return False
    if isinstance(annotation, str):
        return annotation.startswith(("ClassVar", "typing.ClassVar"))
    if type(annotation) is _Form:
        return annotation.name == "ClassVar"
    typing = sys.modules.get("typing")  # typing's ClassVar exists only where typing is imported already
    return typing is not None and (annotation is typing.ClassVar or _origin(annotation) is typing.ClassVar)


def _origin(annotation: Any) -> Any:
    """``typing.get_origin`` of the annotations :func:`checker` reads: ``list[X]``'s ``list``, a typing form's
    origin (``Literal``, ``Union``, ``ClassVar``); None for anything else (a class, a union of types)."""
    return getattr(annotation, "__origin__", None) if type(annotation) is not type else None


# ---- validating -----------------------------------------------------------------------------------------------


#: The one key type a mapping validated plainly has (``issuperset`` of its keys' types: one C call, no frame a key).
_STR_ONLY = frozenset({str})


def _fill(record: BaseModel, data: dict[str, Any]) -> None:
    """Validate ``data`` into ``record`` (a new instance), then run the model's after-validators."""
    cls = type(record)
    steps, after = _plan_of(cls)
    values: dict[str, Any] = {}
    for name, check, info, direct in steps:
        if name in data:
            value = check(data[name], False)
            values[name] = value if direct else _field(cls, name, info, value)
        elif info.is_required():
            raise Unsure(f"{cls.__name__}: field {name} is missing")
        else:
            values[name] = info.value()
    if len(data) > len(values) or not data.keys() <= values.keys():  # values: every field's
        raise Unsure(f"{cls.__name__}: unknown fields {sorted(set(data) - set(cls.model_fields))}")
    _set(record, "__dict__", values)
    _set(record, "__pydantic_fields_set__", set(data))
    _set(record, "__pydantic_extra__", None)
    _set(record, "__pydantic_private__", None)
    for attr in after:
        if _validating(getattr(record, attr)) is not record:
            raise Unsure(f"{cls.__name__}.{attr} returned another object")


def _plan_of(cls: type[BaseModel]) -> tuple[tuple[tuple[str, Check, FieldInfo, bool], ...], tuple[str, ...]]:
    """How :func:`_fill` validates ``cls``, worked out at its first validation and kept: each field's name, check
    and info, and whether its checked value is its value as it is (no option :func:`_field` refuses, no constraint,
    no validator of the field: what :func:`_field` would return unchanged, without asking); then the
    after-validators. A record is validated for every event a call reads (issue 15): its class's attributes are read
    once, not for each field of each record."""
    found = cls.__dict__.get("__plain_plan__")
    if found is None:
        checks = _checks_of(cls)
        by_field, after = cls.__plain_validators__
        steps = tuple(
            (name, checks[name], info, not info.other and not info.constraints and not by_field.get(name))
            for name, info in cls.model_fields.items()
        )
        found = (steps, after)
        type.__setattr__(cls, "__plain_plan__", found)
    return found


def _field(cls: type[BaseModel], name: str, info: FieldInfo, value: Any) -> Any:
    """A checked value through the field's constraints and its validators."""
    if info.other:
        raise Unsure(f"{cls.__name__}.{name}: Field options not mirrored: {info.other}")
    if value is not None:
        for key, limit in info.constraints.items():
            if not _within(key, limit, value):
                raise Unsure(f"{cls.__name__}.{name}: {key}={limit!r}")
    for attr in cls.__plain_validators__[0].get(name, ()):
        value = _validating(getattr(cls, attr), value)
    return value


def _validating(call: Callable[..., Any], *args: Any) -> Any:
    try:
        return call(*args)
    except (ValueError, AssertionError, TypeError) as e:  # pydantic's error: its message, not ours
        raise Unsure(f"a validator refused: {e}") from None


def _within(key: str, limit: Any, value: Any) -> bool:
    import re

    if key == "pattern":  # pydantic's regex engine: for text without a line break, as Python's search
        return type(value) is str and "\n" not in value and re.search(limit, value) is not None
    if key in ("min_length", "max_length"):
        return bool(len(value) >= limit) if key == "min_length" else bool(len(value) <= limit)
    if type(value) not in (int, float):
        return False
    return bool({"ge": value >= limit, "gt": value > limit, "le": value <= limit, "lt": value < limit}[key])


def _checks_of(cls: type[BaseModel]) -> dict[str, Check]:
    """Each field's check, built at the class's first validation and kept."""
    found = cls.__dict__.get("__plain_checks__")
    if found is None:
        namespace = vars(sys.modules[cls.__module__])
        found = {name: checker(info.annotation, namespace) for name, info in cls.model_fields.items()}
        type.__setattr__(cls, "__plain_checks__", found)
    return found


def checker(annotation: Any, namespace: dict[str, Any]) -> Check:
    """The check of one annotation (see the module docstring for what it takes)."""
    typing = sys.modules.get("typing")  # typing's forms exist only where typing is imported already
    if isinstance(annotation, str):
        try:  # the names a module may take under TYPE_CHECKING only: typing's, else the plain stand-ins
            annotation = eval(annotation, {**(TYPING_NAMES if typing is None else vars(typing)), **namespace})
        except Exception:
            return _never(annotation)
    if annotation is _ANY or annotation is object or (typing is not None and annotation is typing.Any):
        return _anything
    simple = _SIMPLE.get(annotation)
    if simple is not None:
        return simple
    form, args = _form(annotation, typing)
    if form == "Literal":
        return _literal(args)
    if form == "Union":
        return _union([checker(a, namespace) for a in args if a is not type(None)], type(None) in args)
    if form is list:
        return _list(checker(args[0] if args else _ANY, namespace))
    if form is dict:
        if args and args[0] is not str:
            return _never(annotation)
        return _dict(checker(args[1] if args else _ANY, namespace))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _record(annotation)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum(annotation)
    return _never(annotation)


def _form(annotation: Any, typing: Any) -> tuple[Any, tuple[Any, ...]]:
    """What :func:`checker` reads of a form: ``("Literal", values)``, ``("Union", members)``, ``(list, args)``,
    ``(dict, args)`` (a bare ``list`` or ``dict`` with none); ``(None, ())`` for anything else."""
    if type(annotation) is _Form:
        return annotation.name, annotation.args
    if type(annotation) is types.UnionType:
        return "Union", annotation.__args__
    if annotation is list or annotation is dict:
        return annotation, ()
    origin = _origin(annotation)
    if origin is list or origin is dict:
        return origin, annotation.__args__
    if typing is not None and origin in (typing.Literal, typing.Union):
        return ("Literal" if origin is typing.Literal else "Union"), annotation.__args__
    return None, ()


def _never(annotation: Any) -> Check:
    return lambda value, exact: _unsure(f"a field of type {annotation!r} is not checked plainly")


def _anything(value: Any, exact: bool) -> Any:
    return value


def _str(value: Any, exact: bool) -> Any:
    if type(value) is str:
        return value
    if not exact and isinstance(value, str) and isinstance(value, enum.Enum) and type(value.value) is str:
        return value.value  # pydantic keeps a str enum's value
    raise Unsure(f"not a str: {type(value).__name__}")


def _int(value: Any, exact: bool) -> Any:
    return value if type(value) is int else _unsure(f"not an int: {type(value).__name__}")


def _float(value: Any, exact: bool) -> Any:
    if type(value) is float and math.isfinite(value):
        return value
    if not exact and type(value) is int and abs(value) <= 2**53:
        return float(value)
    raise Unsure(f"not a finite float: {type(value).__name__}")


def _bool(value: Any, exact: bool) -> Any:
    return value if type(value) is bool else _unsure(f"not a bool: {type(value).__name__}")


def _none(value: Any, exact: bool) -> Any:
    return value if value is None else _unsure(f"not None: {type(value).__name__}")


_SIMPLE: dict[Any, Check] = {str: _str, int: _int, float: _float, bool: _bool, None: _none, type(None): _none}


def _literal(allowed: tuple[Any, ...]) -> Check:
    def check(value: Any, exact: bool) -> Any:
        for choice in allowed:
            if type(value) is type(choice) and value == choice:
                return value
            if not exact and isinstance(value, str) and isinstance(value, enum.Enum) and value.value == choice:
                return choice  # a str enum's member only: pydantic refuses any other enum's (redteam5)
        raise Unsure(f"not one of {allowed!r}: {value!r}"[:200])

    return check


def _union(members: list[Check], nullable: bool) -> Check:
    """``X | None`` is X or None (pydantic's nullable); a union of several takes a value one member takes
    unchanged (pydantic's smart mode does too, first), else it is not sure."""
    if len(members) == 1:
        only = members[0]
        return lambda value, exact: None if value is None and nullable else only(value, exact)

    def check(value: Any, exact: bool) -> Any:
        if value is None and nullable:
            return None
        for member in members:
            try:
                return member(value, True)
            except Unsure:
                continue
        raise Unsure(f"no member of the union takes {type(value).__name__} unchanged")

    return check


def _list(item: Check) -> Check:
    def check(value: Any, exact: bool) -> Any:
        if type(value) is list or (type(value) is tuple and not exact):
            return [item(v, exact) for v in value]
        raise Unsure(f"not a list: {type(value).__name__}")

    return check


def _dict(item: Check) -> Check:
    def check(value: Any, exact: bool) -> Any:
        if type(value) is not dict or any(type(k) is not str for k in value):
            raise Unsure(f"not a mapping of str: {type(value).__name__}")
        return {k: item(v, exact) for k, v in value.items()}

    return check


def _record(cls: type[BaseModel]) -> Check:
    def check(value: Any, exact: bool) -> Any:
        if type(value) is cls:  # a subclass's instance: pydantic would dump it as ``cls`` (not mirrored)
            return value
        if type(value) is dict and not exact:
            return cls.model_validate(value)
        raise Unsure(f"not a {cls.__name__}: {type(value).__name__}")

    return check


def _enum(cls: type[enum.Enum]) -> Check:
    def check(value: Any, exact: bool) -> Any:
        if isinstance(value, cls):
            return value
        if not exact and type(value) in (str, int):
            for member in cls:
                if type(member.value) is type(value) and member.value == value:
                    return member
        raise Unsure(f"not a {cls.__name__}: {value!r}"[:200])

    return check


# ---- reading JSON, dumping ------------------------------------------------------------------------------------


def loads(text: str | bytes) -> Any:
    """JSON as pydantic's parser reads it, or :class:`Unsure`: no duplicate keys, no NaN or infinity, UTF-8
    bytes only (Python's json also reads UTF-16 and -32 and skips a byte order mark), and no lone surrogate, raw or
    escaped (Python's json keeps one in the string; pydantic refuses the text)."""
    try:
        if not isinstance(text, str):
            text = bytes(text).decode("utf-8")
        elif not text.isascii():
            text.encode("utf-8")  # a raw lone surrogate cannot be encoded: pydantic refuses it
        data = jsonc.loads(text, object_pairs_hook=_pairs, parse_constant=_unsure)
    except ValueError as e:  # UnicodeError is one
        raise Unsure(f"not JSON: {e}") from None
    if "\\u" in text and _surrogate_escape().search(text) and _lone_surrogate(data):
        raise Unsure("a lone surrogate escaped in JSON")
    if len(text) > 2 * JSON_DEPTH and text.count("[") + text.count("{") > JSON_DEPTH and _deeper(data, JSON_DEPTH):
        raise Unsure(f"JSON nested deeper than {JSON_DEPTH}: pydantic's parser refuses it")
    return data


#: How deep (arrays and objects, the outermost one too) JSON is read plainly: pydantic's parser (jiter) refuses
#: nesting past its recursion limit (201 arrays in an object: refused, 200: read); Python's json reads ~1,000.
JSON_DEPTH = 200


def _deeper(data: Any, limit: int) -> bool:
    """Is ``data`` (parsed JSON) nested more than ``limit`` arrays and objects deep? Without recursion."""
    level: list[Any] = [data]
    for _ in range(limit):
        level = [v for c in level for v in (c.values() if type(c) is dict else c) if type(v) in (list, dict)]
        if not level:
            return False
    return True


def _surrogate_escape() -> re.Pattern[str]:
    """An escape of a UTF-16 surrogate: a pair's halves become one character, a lone one stays a surrogate.
    Compiled at the first text that holds a ``\\u`` escape, not at import (few texts do); ``re`` keeps it."""
    import re

    return re.compile(r"\\u[dD][89a-fA-F]")


def _lone_surrogate(value: Any) -> bool:
    """Does a string anywhere in ``value`` (parsed JSON) hold a surrogate, a key too?"""
    if type(value) is str:
        return not value.isascii() and any("\ud800" <= c <= "\udfff" for c in value)
    if type(value) is list:
        return any(_lone_surrogate(v) for v in value)
    if type(value) is dict:
        return any(_lone_surrogate(k) or _lone_surrogate(v) for k, v in value.items())
    return False


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Unsure("a JSON object with a key twice")
    return out


def _values(record: BaseModel) -> list[tuple[str, Any]]:
    """The fields' values in order. A field missing from the state (a pickle that lacks it: pydantic hashes and
    dumps it without the field) is Unsure, not a KeyError a reader's ``except Exception`` would take for a bad file."""
    state = record.__dict__
    try:
        return [(name, state[name]) for name in type(record).model_fields]
    except KeyError as e:
        raise Unsure(f"{type(record).__name__}: field {e} missing from its state") from None


def _json_record(record: BaseModel) -> dict[str, Any]:
    return {name: _json(value) for name, value in _values(record)}


def _json(value: Any) -> Any:
    """``model_dump(mode="json")`` of one value: JSON's types, by what the value is."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else _unsure("a float that is not finite")
    if kind is list or kind is tuple:
        return [_json(v) for v in value]
    if kind is dict:
        if any(type(k) is not str for k in value):
            raise Unsure("a mapping key that is not a str")
        return {k: _json(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        return _json_record(value)
    if isinstance(value, enum.Enum):
        return _json(value.value)
    raise Unsure(f"a {kind.__name__} is not dumped plainly")


def _python(value: Any) -> Any:
    """``model_dump()`` of one value: records as mappings, containers anew, the rest as it is."""
    kind = type(value)
    if isinstance(value, BaseModel):
        return value.model_dump()
    if kind is list:
        return [_python(v) for v in value]
    if kind is dict:
        return {k: _python(v) for k, v in value.items()}
    if kind is tuple:
        return tuple(_python(v) for v in value)
    return value
