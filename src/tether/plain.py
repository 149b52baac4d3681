"""The base the envelope's and the event payloads' classes are declared on: pydantic's, or plain records.

Importing pydantic, building its model classes and their validators is over half of a cold hook call's
instructions (docs/hook-latency.md, "The plain path"), yet a cold PreToolUse whose envelope is kept (guard/envcache.py)
validates nothing but the payloads it writes and reads back, all of a few JSON shapes. So the model modules
(``envelope/schema.py``, ``events/payload.py`` and the kinds, ``kernel/outcome.py``) take ``BaseModel``,
``Field``, ``ConfigDict``, ``field_validator``, ``model_validator``, ``ValidationError`` and
``PydanticSerializationError`` from here: pydantic's own in every process, except one that called
:func:`choose` before any model module was imported (the hook's entry, :mod:`tether.hooks.entry`). There they are
the plain stand-ins of :mod:`tether.plainrecord`, built from the very same class statements.

A plain process decides only what it can decide exactly as pydantic would: whatever it cannot vouch for (a value
pydantic would coerce, a field missing or unknown, a constraint or validator that does not pass, a class or an
option it does not mirror, any import of pydantic at all) raises :class:`Unsure`, a ``BaseException`` that no
``except Exception`` swallows, and the hook runs the call again on the full path (hooks/entry.py) — unless it
wrote an event already (:data:`wrote`), when it refuses instead: an event is never written twice.
The model modules take typing's ``Any``, ``ClassVar`` and ``Literal`` from here too (:data:`TYPING`): typing's
own, or in a plain process :mod:`tether.plainrecord`'s stand-ins, so that a plain process does not import typing
for its annotations. mypy sees pydantic's and typing's names (``TYPE_CHECKING``).
"""

from __future__ import annotations

import sys

from tether.plainrecord import Unsure as Unsure

TYPE_CHECKING = False  # not typing's: a plain process does not import typing (tether/typeless.py)
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Any as Any
    from typing import ClassVar as ClassVar
    from typing import Literal as Literal

    from pydantic import BaseModel as BaseModel
    from pydantic import ConfigDict as ConfigDict
    from pydantic import Field as Field
    from pydantic import ValidationError as ValidationError
    from pydantic import field_validator as field_validator
    from pydantic import model_validator as model_validator
    from pydantic_core import PydanticSerializationError as PydanticSerializationError

#: typing's names a model module's annotations use that would import typing, the one library of a plain process
#: that only names types: in a plain process :mod:`tether.plainrecord`'s stand-ins (``TYPING_NAMES``), else typing's.
TYPING = ("Any", "ClassVar", "Literal")
#: The names this module gives, from pydantic or from :mod:`tether.plainrecord`.
NAMES = frozenset(
    {
        "BaseModel",
        "ConfigDict",
        "Field",
        "ValidationError",
        "field_validator",
        "model_validator",
        "PydanticSerializationError",
        *TYPING,
    }
)
#: Modules whose import means the models are built already (one way or the other): too late to choose.
MODEL_MODULES = ("tether.envelope.schema", "tether.events.payload", "tether.kernel.outcome", "pydantic")
#: The libraries a plain process never imports: an import of either is :class:`Unsure`.
FORBIDDEN = ("pydantic", "pydantic_core")

_plain = False
#: Set by the event stores when a plain process opens a write transaction: after it, an :class:`Unsure` refuses the
#: call instead of running it again (the events may be written).
wrote = False


def active() -> bool:
    """Is this a plain process (:func:`choose` was called)?"""
    return _plain


def choose() -> bool:
    """Make this process plain: the model modules imported from now on declare plain records. False (and nothing
    changed) when it is too late: a model module, or pydantic, is imported already."""
    global _plain
    if _plain:
        return True
    if any(name in sys.modules for name in MODEL_MODULES):
        return False
    _plain = True
    sys.meta_path.insert(0, _NoPydantic())
    return True


def unsure(why: str) -> None:
    """In a plain process, :class:`Unsure` (``why``): what follows is the full path's. Elsewhere nothing."""
    if _plain:
        raise Unsure(why)


def writing() -> None:
    """An event store is about to write (:data:`wrote`): called by the stores' write transactions."""
    global wrote
    if _plain:
        wrote = True


class _NoPydantic:
    """A meta path finder that refuses pydantic in a plain process: whatever would import it is the full path's."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if name.partition(".")[0] in FORBIDDEN:
            raise Unsure(f"a plain hook process does not import {name}")
        return None


def __getattr__(name: str) -> Any:
    """pydantic's ``name``, or in a plain process :mod:`tether.plainrecord`'s (PEP 562: imported at first use)."""
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _plain:
        from tether import plainrecord

        value = plainrecord.TYPING_NAMES[name] if name in TYPING else getattr(plainrecord, name)
    elif name in TYPING:
        import typing

        value = getattr(typing, name)
    elif name == "PydanticSerializationError":
        from pydantic_core import PydanticSerializationError as value
    else:
        import pydantic

        value = getattr(pydantic, name)
    globals()[name] = value  # the mode cannot change once a model module took a name
    return value
