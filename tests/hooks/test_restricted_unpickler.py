"""The fold checkpoints' and the kept envelopes' readers are made by one maker (guard/cachefile.py ``unpickler``),
each with its own allowlist: a body that names a global outside it is refused by both, whatever the global is (a
function to call, a standard class the other one allows, a class of tether's that is not data, a name re-exported
by the schema, a dotted name), while what each allows still loads."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest

import tether.guard.checkpoint as checkpoint
import tether.guard.envcache as envcache
from tether.envelope.schema import Envelope


def global_ref(module: str, name: str) -> bytes:
    """A body whose one object is the global ``module.name`` (protocol 4's ``STACK_GLOBAL``), wrapped in a dict."""
    name_op = pickle.SHORT_BINUNICODE + bytes([len(name.encode())]) + name.encode()
    module_op = pickle.SHORT_BINUNICODE + bytes([len(module.encode())]) + module.encode()
    key = pickle.SHORT_BINUNICODE + b"\x01k"
    return (
        pickle.PROTO + b"\x04" + pickle.EMPTY_DICT + key + module_op + name_op + pickle.STACK_GLOBAL
        + pickle.SETITEM + pickle.STOP
    )  # fmt: skip


def by_checkpoint(body: bytes) -> Any:
    return checkpoint._load(io.BytesIO(body))


READERS = {"checkpoint": by_checkpoint, "envelope": envcache._unpickle}

OUTSIDE = [
    ("posix", "system"),  # a function to call
    ("builtins", "eval"),
    ("builtins", "getattr"),
    ("os", "system"),
    ("subprocess", "Popen"),
    ("tether.guard.session", "Guard"),  # tether's, not data
    ("tether.envelope.schema", "Path"),  # imported by the schema, not its own
    ("tether.envelope.schema", "Envelope.__init__"),  # dotted
    ("tether.envelope.schema", "__builtins__"),
    ("copyreg", "_reconstructor.__globals__"),
    ("tether.plain", "BaseModel"),  # the base itself, defined elsewhere
]


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("module", "name"), OUTSIDE)
def test_a_global_outside_the_allowlist_is_refused(reader: str, module: str, name: str) -> None:
    with pytest.raises(pickle.UnpicklingError, match="may not name"):
        READERS[reader](global_ref(module, name))


def test_what_each_allows_is_not_what_the_other_allows() -> None:
    """The checkpoint's standard types are not the kept envelope's: one maker, two allowlists."""
    body = global_ref("collections", "OrderedDict")
    assert by_checkpoint(body)["k"] is __import__("collections").OrderedDict
    with pytest.raises(pickle.UnpicklingError, match=r"a kept envelope may not name collections\.OrderedDict"):
        envcache._unpickle(body)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_schema_classes_load_by_both(reader: str) -> None:
    assert READERS[reader](global_ref("tether.envelope.schema", "Envelope"))["k"] is Envelope
    assert READERS[reader](global_ref("builtins", "frozenset"))["k"] is frozenset


def test_the_checkpoint_takes_exactly_the_classes_dataclasses_calls_dataclasses() -> None:
    """The reader asks a class whether it is a dataclass from its method order's dictionaries, not by reading
    ``__dataclass_fields__`` (on a class tether.records made, that read imports ``dataclasses``): the same answer as
    ``dataclasses.is_dataclass`` for every class of tether's imported here, dataclasses made by records and by the
    standard maker, their subclasses, and classes that are none (a model, an enum, a fold, an exception)."""
    import dataclasses
    import sys

    checkpoint._classes_imported(fold=True)  # the folds' classes and the provenance index's

    classes = {
        obj
        for name, module in list(sys.modules.items())
        if name == "tether" or name.startswith("tether.")
        for obj in list(vars(module).values())
        if isinstance(obj, type)
    }
    asked = {cls: checkpoint._is_dataclass(cls) for cls in classes}  # before anything reads the attribute
    assert sum(asked.values()) > 50 and len(asked) - sum(asked.values()) > 50
    assert asked == {cls: dataclasses.is_dataclass(cls) for cls in classes}

    @dataclasses.dataclass
    class Standard:
        x: int = 0

    class Sub(Standard):
        pass

    class Meta(type):
        __dataclass_fields__: dict[str, object] = {}  # found by hasattr, in no class of the method order

    class ByMeta(metaclass=Meta):
        pass

    assert checkpoint._is_dataclass(Standard) and checkpoint._is_dataclass(Sub)
    assert dataclasses.is_dataclass(ByMeta) and not checkpoint._is_dataclass(ByMeta), "no wider than is_dataclass"


def test_the_standard_types_are_the_ones_pickle_names() -> None:
    """Each standard type a checkpoint may name is the object its module hands out under that name (datetime's
    classes are taken from ``_datetime``, without the Python module: the same classes), and a body naming one loads
    as the type itself."""
    import importlib

    std = checkpoint._std()
    assert len(std) == 16
    for (module, name), found in std.items():
        assert getattr(importlib.import_module(module), name) is found, (module, name)
        if isinstance(found, type) and module != "copyreg":
            assert by_checkpoint(global_ref(module, name)) == {"k": found}
