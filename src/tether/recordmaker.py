"""The methods :mod:`tether.records` gives a class, and its own maker of the classes it can make whole.

The methods (``__eq__``, ``__repr__``, ``__hash__``, a frozen class's ``__setattr__``/``__delattr__``) are the same
for every class: closures over the class's field names, compiled once, in this module's cached bytecode, doing what
the standard library's generated ones do (see :mod:`tether.records`).

:func:`make` makes a class without importing ``dataclasses`` at all (with ``inspect``, ``ast``, ``dis`` and
``tokenize``, ~14 ms of a cold hook call, whose 45 classes it makes): only on Python 3.11, whose standard maker it
mirrors, and only a class of the shape tether's are — a docstring of its own, no base but ``object``, no
``ClassVar``/``InitVar``/``KW_ONLY`` annotation, no ``order``, ``unsafe_hash``, ``kw_only``, ``weakref_slot``,
fields made by this module's :func:`field` or plain defaults (none mutable), no field
without a default after one with. Anything else returns None from :func:`plan`, and :mod:`tether.records` hands
the class to the standard maker: never a silently different class. The ``__init__`` is the standard one's text,
compiled through :mod:`tether.compiled` (so the table serves it as it serves the standard maker's), with a
default factory's marker of the same ``repr`` (``<factory>``). ``__dataclass_fields__`` and
``__dataclass_params__`` are made by ``dataclasses`` itself the first time anything reads them
(``dataclasses.fields``, ``replace``, ``asdict``, ``is_dataclass``), so every reader that has imported
``dataclasses`` sees what the standard maker records. ``tests/test_records.py`` and
``tests/hooks/test_cold_dataclasses.py`` compare every class made here with the standard making of it.
"""

from __future__ import annotations

import _thread
import abc
import sys
from _operator import attrgetter  # operator's very functions, without the Python module
from types import FunctionType, MemberDescriptorType

from tether import compiled

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any


class _Marker:
    def __init__(self, text: str) -> None:
        self._text = text

    def __repr__(self) -> str:
        return self._text


#: No default: the standard ``MISSING``'s stand-in, never seen outside this module (mapped back for ``dataclasses``).
MISSING: Any = _Marker("<dataclasses.MISSING>")
#: The marker of a default factory in ``__init__``'s signature: ``repr`` as the standard one's.
HAS_DEFAULT_FACTORY: Any = _Marker("<factory>")
#: The annotations :func:`plan` leaves to the standard maker (pseudo-fields it reads by name).
_PSEUDO = ("ClassVar", "InitVar", "KW_ONLY")


class Field:
    """What ``field(...)`` states, until the class is made (by :func:`make`, or turned into the standard one's
    ``dataclasses.field`` when the standard maker makes the class)."""

    __slots__ = ("compare", "default", "default_factory", "hash", "init", "kw_only", "metadata", "repr")

    def __init__(
        self, default: Any, default_factory: Any, init: bool, repr: bool, hash: bool | None, compare: bool,
        metadata: Any, kw_only: Any,
    ) -> None:  # fmt: skip
        self.default, self.default_factory, self.init, self.repr = default, default_factory, init, repr
        self.hash, self.compare, self.metadata, self.kw_only = hash, compare, metadata, kw_only

    def standard(self) -> Any:
        """``dataclasses.field`` of the same arguments."""
        return _standard_field(self, self.kw_only)


def _standard_field(stated: Field | Spec, kw_only: Any) -> Any:
    """``dataclasses.field`` of what ``stated`` holds, this module's :data:`MISSING` the standard one's."""
    import dataclasses

    def given(value: Any) -> Any:
        return dataclasses.MISSING if value is MISSING else value

    return dataclasses.field(
        default=given(stated.default), default_factory=given(stated.default_factory), init=stated.init,
        repr=stated.repr, hash=stated.hash, compare=stated.compare, metadata=stated.metadata, kw_only=given(kw_only),
    )  # fmt: skip


def field(
    *,
    default: Any = MISSING,
    default_factory: Any = MISSING,
    init: bool = True,
    repr: bool = True,
    hash: bool | None = None,
    compare: bool = True,
    metadata: Any = None,
    kw_only: Any = MISSING,
) -> Any:
    """``dataclasses.field``, without importing ``dataclasses`` (see :class:`Field`)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(
        default=default,
        default_factory=default_factory,
        init=init,
        repr=repr,
        hash=hash,
        compare=compare,
        metadata=metadata,
        kw_only=kw_only,
    )


class Spec:
    """One field as :func:`make` makes it: what the standard maker's ``Field`` holds. Most fields have a plain
    default or none, and ``field()``'s options: theirs are this class's attributes, so making one sets three (a
    cold hook call makes ~280); one stated by :func:`field` has its options copied (:meth:`stated`)."""

    default_factory: Any = MISSING
    init: bool = True
    repr: bool = True
    hash: bool | None = None
    compare: bool = True
    metadata: Any = None
    #: Stated by :func:`field`: the class attribute of its name is that ``Field`` until :func:`make` replaces it.
    from_field: bool = False
    #: Stated by :func:`field` with ``init``, ``repr``, ``hash`` or ``compare`` other than its defaults.
    options: bool = False

    def __init__(self, name: str, type: Any, default: Any) -> None:
        self.name, self.type, self.default = name, type, default

    def stated(self, given: Field) -> Spec:
        """This field with ``given``'s options."""
        self.default_factory, self.init, self.repr, self.hash = (
            given.default_factory,
            given.init,
            given.repr,
            given.hash,
        )
        self.compare, self.metadata, self.from_field = given.compare, given.metadata, True
        self.options = not (given.init is True and given.repr is True and given.hash is None and given.compare is True)
        return self


def _getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    """``obj -> (obj.a, obj.b, …)``: the tuple the generated methods build, for any number of names."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)  # a tuple for two or more names


def _name(cls: type, fn: Any, name: str) -> Any:
    fn.__name__ = name
    fn.__qualname__ = f"{cls.__qualname__}.{name}"
    return fn


def compared(fields: Iterable[Any]) -> tuple[str, ...]:
    """The names of the fields ``__eq__`` compares."""
    return tuple([f.name for f in fields if f.compare])


def shown(fields: Iterable[Any]) -> tuple[str, ...]:
    """The names of the fields ``__repr__`` shows."""
    return tuple([f.name for f in fields if f.repr])


def hashed(fields: Iterable[Any]) -> tuple[str, ...]:
    """The names of the fields ``__hash__`` hashes."""
    return tuple([f.name for f in fields if (f.compare if f.hash is None else f.hash)])


def eq_method(cls: type, names: tuple[str, ...]) -> Callable[[Any, Any], Any]:
    """``__eq__`` comparing the fields ``names`` (:func:`compared`)."""
    key = _getter(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return key(self) == key(other)
        return NotImplemented

    return _name(cls, __eq__, "__eq__")  # type: ignore[no-any-return]


def repr_method(cls: type, names: tuple[str, ...]) -> Callable[[Any], str]:
    """``__repr__`` showing the fields ``names`` (:func:`shown`)."""
    running: set[tuple[int, int]] = set()
    get_ident = _thread.get_ident

    def __repr__(self: Any) -> str:
        key = id(self), get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            inner = ", ".join([f"{n}={getattr(self, n)!r}" for n in names])
            return f"{self.__class__.__qualname__}({inner})"
        finally:
            running.discard(key)

    return _name(cls, __repr__, "__repr__")  # type: ignore[no-any-return]


def hash_method(cls: type, names: tuple[str, ...]) -> Callable[[Any], int]:
    """``__hash__`` of the fields ``names`` (:func:`hashed`)."""
    key = _getter(names)

    def __hash__(self: Any) -> int:
        return hash(key(self))

    return _name(cls, __hash__, "__hash__")  # type: ignore[no-any-return]


def _refused(message: str) -> BaseException:
    import dataclasses  # the error a frozen class raises is the standard library's own

    return dataclasses.FrozenInstanceError(message)


def frozen_methods(cls: type, fields: list[Any], globals: Any = None) -> tuple[Any, Any]:
    """What ``dataclasses._frozen_get_del_attr`` returns, without compiling: ``cls`` as the standard one takes
    it (with ``slots=True``, the class before its slotted copy, as there)."""
    return _frozen(cls, tuple([f.name for f in fields]))


def _frozen(cls: type, names: tuple[str, ...]) -> tuple[Any, Any]:
    """:func:`frozen_methods` of the fields ``names``."""

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise _refused(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise _refused(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __setattr__, __delattr__


def _mutable(value: Any) -> bool:
    return value is not MISSING and value.__class__.__hash__ is None  # the standard maker refuses such a default


def _shaped(cls: type, frozen: bool) -> bool:
    """Whether the class itself is of the shape :func:`make` mirrors (3.11 only): a docstring of its own (the
    standard maker writes one from the signature otherwise), no base but ``object``, no metaclass, no slots of its
    own, and, frozen, no ``__setattr__`` or ``__delattr__`` of its own (the standard maker refuses those)."""
    own = cls.__dict__
    if sys.version_info[:2] != (3, 11) or own.get("__doc__") is None or cls.__bases__ != (object,):
        return False
    if type(cls) is not type or "__slots__" in own:
        return False
    return not (frozen and ("__setattr__" in own or "__delattr__" in own))


def _pseudo(annotations: dict[str, Any]) -> bool:
    """Whether a field is one :func:`make` leaves to the standard maker: its annotation names a pseudo-field
    (:data:`_PSEUDO`, found by its text), or it is named ``self`` or as a dunder. Asked of all the fields at once:
    the words have no line break, so none is found across two annotations of the one text; only a name that
    begins with ``__`` is asked whether it ends so."""
    text = "\n".join([a if isinstance(a, str) else repr(a) for a in annotations.values()])
    if "ClassVar" in text or "InitVar" in text or "KW_ONLY" in text or "self" in annotations:
        return True
    return "\n__" in "\n" + "\n".join(annotations) and any(n.startswith("__") and n.endswith("__") for n in annotations)


def plan(cls: type, *, frozen: bool) -> list[Spec] | None:
    """The fields :func:`make` gives ``cls``, or None when the class is not one it makes (see the module)."""
    if not _shaped(cls, frozen):
        return None
    own = cls.__dict__
    annotations = own.get("__annotations__", {})
    if _pseudo(annotations):
        return None
    specs, defaulted, stated = [], False, 0
    for name, annotation in annotations.items():
        value = own.get(name, MISSING)
        if isinstance(value, Field):
            if value.kw_only not in (MISSING, False) or _mutable(value.default):
                return None
            spec = Spec(name, annotation, value.default).stated(value)
            stated += 1
        elif value is not MISSING and (  # _mutable(value), written out: most fields have no default
            value.__class__.__hash__ is None
            or isinstance(value, MemberDescriptorType)
            or type(value).__module__ == "dataclasses"
        ):
            return None
        else:
            spec = Spec(name, annotation, value)  # a plain default, or none
        if spec.default is MISSING and spec.default_factory is MISSING:
            if spec.init and defaulted:
                return None  # the standard maker raises its TypeError
        elif spec.init:
            defaulted = True
        specs.append(spec)
    if stated != sum(map(isinstance, own.values(), [Field] * len(own))):
        return None  # a field() not annotated: the standard maker raises its TypeError
    return specs


def _lines(specs: list[Spec], frozen: bool, slots: bool, locals: dict[str, Any]) -> tuple[list[str], list[str]]:
    """``__init__``'s body and parameters, as ``dataclasses._field_init`` and ``_init_param`` write them (3.11), and
    each default and factory they name put in ``locals``."""
    body, args = [], ["self"]
    for f in specs:
        name = f.name
        default_name = f"_dflt_{name}"
        if f.default_factory is not MISSING:
            locals[default_name] = f.default_factory
            value = f"{default_name}() if {name} is _HAS_DEFAULT_FACTORY else {name}" if f.init else f"{default_name}()"
        elif f.init:
            if f.default is not MISSING:
                locals[default_name] = f.default
            value = name
        elif slots and f.default is not MISSING:
            locals[default_name] = f.default
            value = default_name
        else:
            continue  # no line, and no parameter: not init
        body.append(
            f"  __dataclass_builtins_object__.__setattr__(self,{name!r},{value})"
            if frozen
            else f"  self.{name}={value}"
        )
        if not f.init:
            continue
        if f.default is not MISSING:
            args.append(f"{name}:_type_{name}={default_name}")
        elif f.default_factory is not MISSING:
            args.append(f"{name}:_type_{name}=_HAS_DEFAULT_FACTORY")
        else:
            args.append(f"{name}:_type_{name}")
    return body, args


def _init(cls: type, specs: list[Spec], frozen: bool, slots: bool) -> Any:
    """``__init__``, from the text ``dataclasses._init_fn`` writes, compiled through :mod:`tether.compiled`."""
    locals: dict[str, Any] = {f"_type_{f.name}": f.type for f in specs}
    locals.update({"MISSING": MISSING, "_HAS_DEFAULT_FACTORY": HAS_DEFAULT_FACTORY})
    locals["__dataclass_builtins_object__"] = object
    body, args = _lines(specs, frozen, slots, locals)
    if hasattr(cls, "__post_init__"):
        body.append("  self.__post_init__()")
    locals["_return_type"] = None
    lines = "\n".join(body or ["  pass"])
    inner = f" def __init__({','.join(args)})->_return_type:\n{lines}\n"
    text = f"def __create_fn__({', '.join(locals)}):\n{inner} return __init__"
    module = sys.modules.get(cls.__module__)
    ns: dict[str, Any] = {}
    compiled.exec_cached(text, module.__dict__ if module is not None else {}, ns)
    # by position: the text lists the parameters in the order of ``locals``. By keyword (as ``dataclasses`` calls
    # it), each of these freshly built names, not the code's interned ones, was matched by comparing strings with
    # every parameter in turn: ~100 us for RunState's 124, more than the rest of its making.
    return ns["__create_fn__"](*locals.values())


def _set(cls: type, name: str, value: Any) -> None:
    """``dataclasses._set_new_attribute``: only a name the class does not define, a function named for it."""
    if name in cls.__dict__:
        return
    if isinstance(value, FunctionType):
        value.__qualname__ = f"{cls.__qualname__}.{value.__name__}"
    setattr(cls, name, value)


#: The classes made here and their fields: what :func:`replace` reads (a plain dict: tether's classes live as long
#: as the process; ``weakref`` is not imported for it).
_MADE: dict[type, tuple[Spec, ...]] = {}


class _Recorded:
    """``__dataclass_fields__`` or ``__dataclass_params__`` of a class made here: made by ``dataclasses`` itself
    the first time it is read, then the class's plain attribute (this descriptor replaced)."""

    def __init__(self, cls: type, name: str, make: Callable[[], Any]) -> None:
        self._cls, self._name, self._make = cls, name, make

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        value = self._make()
        type.__setattr__(self._cls, self._name, value)
        return value


def _standard_fields(specs: tuple[Spec, ...]) -> dict[str, Any]:
    import dataclasses

    fields = {}
    for s in specs:
        made = _standard_field(s, MISSING)
        made.name, made.type, made.kw_only = s.name, s.type, False
        made._field_type = dataclasses._FIELD  # type: ignore[attr-defined]
        fields[s.name] = made
    return fields


def _standard_params(init: bool, repr: bool, eq: bool, frozen: bool) -> Any:
    import dataclasses

    return dataclasses._DataclassParams(init, repr, eq, False, False, frozen)  # type: ignore[attr-defined]


def _slotted(cls: type, names: tuple[str, ...], frozen: bool) -> type:
    """``dataclasses._add_slots`` for a class whose only base is ``object``; a frozen one gets the standard
    ``__getstate__``/``__setstate__`` (the fields' values as a list), unless it has its own. ``names``: the
    fields'."""
    own = dict(cls.__dict__)
    own["__slots__"] = names
    for name in (*names, "__dict__", "__weakref__"):
        own.pop(name, None)
    qualname = cls.__qualname__
    made = type(cls)(cls.__name__, cls.__bases__, own)
    made.__qualname__ = qualname
    if frozen:
        if "__getstate__" not in own:
            type.__setattr__(made, "__getstate__", _dataclass_getstate)
        if "__setstate__" not in own:
            type.__setattr__(made, "__setstate__", _dataclass_setstate)
    return made


def _state_fields(obj: Any) -> Iterable[Any]:
    """``dataclasses.fields(obj)``: the fields of the object's own class (a subclass may have more)."""
    specs = _MADE.get(type(obj))
    if specs is None:
        import dataclasses

        return dataclasses.fields(obj)
    return specs


def _dataclass_getstate(self: Any) -> list[Any]:
    """``dataclasses._dataclass_getstate``: a frozen slotted record's pickled state."""
    return [getattr(self, f.name) for f in _state_fields(self)]


def _dataclass_setstate(self: Any, state: list[Any]) -> None:
    """``dataclasses._dataclass_setstate``: the state back, through ``object.__setattr__`` (the class is frozen)."""
    for f, value in zip(_state_fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


def make(
    cls: type, specs: list[Spec], *, init: bool, repr: bool, eq: bool, frozen: bool, match_args: bool, slots: bool
) -> type:
    """``cls`` made as ``dataclasses.dataclass`` makes it with these parameters, from :func:`plan`'s fields."""
    given = False  # a field() with other options than field()'s own: each method's names are worked out apart
    for f in specs:  # a field()'s class attribute: its default, or none (the standard maker's step)
        if f.from_field:
            given = given or f.options
            if f.default is MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    names = tuple([f.name for f in specs])  # what each method names, unless a field() says otherwise (given)
    own = cls.__dict__
    class_hash = own.get("__hash__", MISSING)
    explicit_hash = not (class_hash is MISSING or (class_hash is None and "__eq__" in own))
    if init:
        _set(cls, "__init__", _init(cls, specs, frozen, slots))
    if repr:
        _set(cls, "__repr__", repr_method(cls, shown(specs) if given else names))
    if eq:
        _set(cls, "__eq__", eq_method(cls, compared(specs) if given else names))
    if frozen:
        for method in _frozen(cls, names):
            _set(cls, method.__name__, method)
    if eq and not explicit_hash and frozen:
        cls.__hash__ = hash_method(cls, hashed(specs) if given else names)  # type: ignore[assignment,method-assign]
    elif eq and not explicit_hash:
        cls.__hash__ = None  # type: ignore[assignment]
    if match_args:
        _set(cls, "__match_args__", tuple([f.name for f in specs if f.init]) if given else names)
    if slots:
        cls = _slotted(cls, names, frozen)
    abc.update_abstractmethods(cls)
    kept = tuple(specs)
    type.__setattr__(
        cls, "__dataclass_fields__", _Recorded(cls, "__dataclass_fields__", lambda: _standard_fields(kept))
    )
    params = _Recorded(cls, "__dataclass_params__", lambda: _standard_params(init, repr, eq, frozen))
    type.__setattr__(cls, "__dataclass_params__", params)
    _MADE[cls] = kept
    return cls


def replace(obj: Any, /, **changes: Any) -> Any:
    """``dataclasses.replace``: for a class made here without importing ``dataclasses``, else the standard one."""
    specs = _MADE.get(type(obj))
    if specs is None:
        import dataclasses

        return dataclasses.replace(obj, **changes)
    for f in specs:
        if not f.init:
            if f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
            continue
        if f.name not in changes:
            changes[f.name] = getattr(obj, f.name)
    return obj.__class__(**changes)
