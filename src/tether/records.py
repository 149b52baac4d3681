"""``dataclass``, the standard library's, without compiling ``__repr__``, ``__eq__``, ``__hash__`` or a frozen
class's ``__setattr__`` and ``__delattr__`` for each class.

The standard ``dataclasses.dataclass`` writes each method it adds as source text and compiles it (``exec``)
when the class is made. On Python 3.11 that is ~0.5 M instructions per method: a frozen class with eq and repr
compiles six, ~4 M instructions, and a fresh process that decides one hook call (``tether hook … --no-daemon``)
makes ~60 of tether's dataclasses on its way, so this compiling was ~18 % of a cold call (``docs/hook-latency.md``).

Here the class is made by ``dataclasses.dataclass`` itself — fields, ``__init__`` (compiled, as it must be to
stay as fast to call), ``__match_args__``, slots, the docstring, ``dataclasses.fields``/``replace``/``asdict``
all as ever — and the other methods are the same for every class: closures over the class's field names,
whose code is compiled once, in this module's cached bytecode. They do exactly what the generated ones do on
the Python versions this applies to (3.11 and 3.12, whose generated methods these mirror):
``__eq__`` compares the tuples of the compared fields of two objects of the same class, else
``NotImplemented``; ``__repr__`` is ``Class(field=repr, …)`` of the fields with ``repr=True``, ``...`` for a
recursive call; ``__hash__`` (frozen with eq, unless the class defines one) hashes the tuple of the hashed
fields, and a non-frozen class with eq gets ``__hash__ = None``; a frozen class's ``__setattr__``/``__delattr__``
raise ``FrozenInstanceError`` for its own instances or a field name and defer to the base otherwise. A method
the class defines itself is kept, as the standard one keeps it. Anything else (``order``, ``unsafe_hash``,
another Python version, a parameter a later Python adds) is left to the standard ``dataclass`` unchanged, and so
is the check for abstract methods the class's new methods implement (``abc.update_abstractmethods``, run again
once they are added, as the standard one runs it last). ``tests/test_records.py`` compares each class made here
with the standard library's making of the same class.

:func:`standing_in` makes the libraries' dataclasses the same way while a process imports them:
``dataclasses.dataclass`` is this module's maker within it (pydantic and annotated_types make their dataclasses as a
hook process imports what decides, pathspec its own when policy/globs.py imports it at the first path matched against
a pattern: with pathspec, 187 methods compiled besides ``__init__``), the standard one
again on leaving, whatever happens. A module that took the name within (``from dataclasses import dataclass``)
keeps a maker that hands every class to the standard one after it. ``tests/hooks/test_cold_dataclasses.py``
compares every class made during that import both ways.

The ``__init__`` the standard maker still compiles is compiled once per interpreter, not once per process: while a
class is made here, ``dataclasses``' ``exec`` runs the code :mod:`tether.compiled` kept for the exact text (in the
package's ``__pycache__``, as a ``.pyc``), compiling only a text it has not seen.

On Python 3.11 a class of tether's own of the shape its classes are (see :mod:`tether.recordmaker`) is made
whole there, without importing ``dataclasses`` (and with it ``inspect``, ``ast``, ``dis``, ``tokenize``): a cold
plain-path hook call makes its 45 classes so and imports none of them. :func:`field` and :func:`replace` are
``dataclasses.field`` and ``dataclasses.replace`` for such classes (a ``field()`` of a class the standard maker
makes is turned into the standard one's). Anything else goes the way described above.

For type checkers this *is* ``dataclasses.dataclass`` (and ``field``, ``replace`` are the standard ones).
"""

from __future__ import annotations

import _thread  # threading's locks are _thread's: importing threading costs a cold hook call ~0.6 ms
import abc
import builtins
import sys

from tether import compiled, plain, recordmaker
from tether.recordmaker import compared, eq_method, frozen_methods, hash_method, hashed, repr_method, shown
from tether.scoped import contextmanager

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

#: Whether this interpreter's generated methods are the ones mirrored here (see the module docstring).
MIRRORED = (3, 11) <= sys.version_info[:2] <= (3, 12)
#: The standard library's maker of a frozen class's ``__setattr__``/``__delattr__``, stood in for while a class is
#: made here (:func:`_made`); present, with this signature, on the versions above.
_FROZEN_MAKER = "_frozen_get_del_attr"
#: Whether a class of the shape :mod:`tether.recordmaker` makes whole is made there, without importing
#: ``dataclasses`` (tests switch it off to make the same classes with the standard maker and compare).
OWN = True


def _dataclasses() -> Any:
    """``dataclasses``, imported at the first class this module hands to it (or :func:`standing_in`), and the
    standard ``dataclass`` held then: while :func:`standing_in`, ``dataclasses.dataclass`` is this module's."""
    global _STANDARD
    import dataclasses

    if _STANDARD is None:
        _STANDARD = dataclasses.dataclass
    return dataclasses


_STANDARD: Any = None
#: The parameters of ``dataclass`` on the versions mirrored: another one (a later Python's) goes to the standard one.
PARAMETERS = frozenset(
    ("init", "repr", "eq", "order", "unsafe_hash", "frozen", "match_args", "kw_only", "slots", "weakref_slot")
)
_frozen_lock = _thread.RLock()  # re-entrant: a class made while another is (slots: a new class) waits for nothing


def _made(cls: type, frozen: bool, params: dict[str, Any]) -> type:
    """``dataclasses.dataclass(cls, repr=False, eq=False, **params)``, a frozen class's two methods made by
    :func:`_frozen`, and the code of the methods it still compiles (``__init__``) taken from the table of
    :mod:`tether.compiled` when it holds their text: the standard maker and ``dataclasses``' ``exec`` stood in for
    under a lock, restored at once (to what they were: a class made while another is).

    ``dataclasses.exec`` is the builtin ``exec`` when not stood in for (what the name finds anyway): the name stays
    in the module's dict, whose values change and keys do not. Adding and removing it for each class changed the
    keys, and every specialised global lookup in ``dataclasses`` missed after each class (~9 M instructions of a
    cold call)."""
    dataclasses = _dataclasses()
    with _frozen_lock:
        standard = getattr(dataclasses, _FROZEN_MAKER)
        own_exec = vars(dataclasses).get("exec", builtins.exec)
        try:
            if frozen:
                setattr(dataclasses, _FROZEN_MAKER, frozen_methods)
            dataclasses.exec = compiled.exec_cached
            made: type = _STANDARD(cls, repr=False, eq=False, frozen=frozen, **params)
            return made
        finally:
            setattr(dataclasses, _FROZEN_MAKER, standard)
            dataclasses.exec = own_exec


def _with_dataclasses(cls: type, params: dict[str, Any]) -> type:
    """A class :mod:`tether.recordmaker` does not make whole: the standard maker's, with this module's methods
    where it mirrors them (see :func:`_made`); ``params``: every parameter of ``dataclass``, by name."""
    for name, value in list(cls.__dict__.items()):  # records' field(): the standard one's, for its maker
        if isinstance(value, recordmaker.Field):
            setattr(cls, name, value.standard())
    dataclasses = _dataclasses()
    if params["order"] or params["unsafe_hash"] or not MIRRORED or not hasattr(dataclasses, _FROZEN_MAKER):
        standard: type = _STANDARD(cls, **params)
        return standard
    repr, eq, frozen = params["repr"], params["eq"], params["frozen"]
    own = cls.__dict__
    has_repr, has_eq = "__repr__" in own, "__eq__" in own
    class_hash = own.get("__hash__", dataclasses.MISSING)
    explicit_hash = not (class_hash is dataclasses.MISSING or (class_hash is None and has_eq))
    kept = {name: params[name] for name in ("init", "match_args", "kw_only", "slots")}
    if params["weakref_slot"]:
        kept["weakref_slot"] = params["weakref_slot"]
    made = _made(cls, frozen, kept)
    fields = dataclasses.fields(made)
    if repr and not has_repr:
        made.__repr__ = repr_method(made, shown(fields))  # type: ignore[assignment,method-assign]
    if eq and not has_eq:
        made.__eq__ = eq_method(made, compared(fields))  # type: ignore[assignment,method-assign]
    if eq and not explicit_hash:
        made.__hash__ = hash_method(made, hashed(fields)) if frozen else None  # type: ignore[assignment,method-assign]
    stated = made.__dataclass_params__  # type: ignore[attr-defined]
    stated.repr, stated.eq = repr, eq  # what was asked, as the standard one records it
    # the methods added here may implement abstract ones: the standard maker's last step, again
    abc.update_abstractmethods(made)
    return made


def _record(
    cls: type | None = None,
    /,
    *,
    init: bool = True,
    repr: bool = True,
    eq: bool = True,
    order: bool = False,
    unsafe_hash: bool = False,
    frozen: bool = False,
    match_args: bool = True,
    kw_only: bool = False,
    slots: bool = False,
    weakref_slot: bool = False,
) -> Any:
    def wrap(cls: type) -> type:
        plain = not (order or unsafe_hash or kw_only or weakref_slot or not init) and OWN and _ours(cls)
        specs = recordmaker.plan(cls, frozen=frozen) if plain else None
        if specs is not None:  # made whole without the dataclasses module (tether/recordmaker.py)
            return recordmaker.make(
                cls, specs, init=init, repr=repr, eq=eq, frozen=frozen, match_args=match_args, slots=slots
            )
        params = {"init": init, "repr": repr, "eq": eq, "order": order, "unsafe_hash": unsafe_hash, "frozen": frozen}
        params.update(match_args=match_args, kw_only=kw_only, slots=slots, weakref_slot=weakref_slot)
        return _with_dataclasses(cls, params)

    return wrap if cls is None else wrap(cls)


#: The packages whose classes :mod:`tether.recordmaker` may make whole: tether's own (a library's class, made while
#: :func:`standing_in`, goes the standard way; tests add their own module to compare the two makings).
OWN_PACKAGES: tuple[str, ...] = ("tether",)


def _ours(cls: type) -> bool:
    module = cls.__module__
    return type(module) is str and any(module == p or module.startswith(p + ".") for p in OWN_PACKAGES)


_standing = False


def _stand_in(cls: type | None = None, /, **params: Any) -> Any:
    """``dataclasses.dataclass`` while :func:`standing_in`: this module's maker for the parameters it knows, the
    standard one for any other, and for every class once the stand-in is over (a module that bound this name
    within keeps it)."""
    if _standing and params.keys() <= PARAMETERS:
        return _record(cls, **params)
    _dataclasses()
    return _STANDARD(cls, **params)


@contextmanager
def standing_in() -> Iterator[bool]:
    """Within, ``dataclasses.dataclass`` is this module's maker (yields True); on leaving, normally or by an
    exception, the standard one again. Nothing is stood in for (yields False) on a Python whose methods are not
    mirrored here, or when ``dataclasses.dataclass`` is not the standard one on entry: another stand-in (this
    one's, in another thread or further up the stack: left to its owner, who restores it)."""
    global _standing
    if plain.active() and "dataclasses" not in sys.modules:
        yield False  # a plain hook process: pydantic is refused, and nothing else it imports makes a dataclass
        return
    dataclasses = _dataclasses()
    if not MIRRORED or dataclasses.dataclass is not _STANDARD or not hasattr(dataclasses, _FROZEN_MAKER):
        yield False
        return
    try:
        dataclasses.dataclass = _stand_in
        _standing = True
        yield True
    finally:
        _standing = False
        dataclasses.dataclass = _STANDARD


if TYPE_CHECKING:
    from dataclasses import dataclass as dataclass
    from dataclasses import field as field
    from dataclasses import replace as replace
else:
    dataclass = _record
    field = recordmaker.field
    replace = recordmaker.replace
