"""A cache file's body may name only allowed globals (guard/cachefile.py ``unpickler``), but what it names is shared:
pickle's ``BUILD`` sets attributes on whatever object it is given. A class named (``BUILD`` of ``(None, {...})`` is a
``setattr`` on the class: an enum's value lookup remapped), an enum's member that calling its class returns (its
``_value_``, its ``__class__``: the process's one ``Effect.EXEC``), an allowed function's defaults. Each would alter
the process that reads the body — the hook that then decides, the trial's child passing it because nothing raised.
Each is refused by both readers and put back; a kept envelope carrying one is a miss, and the envelope validated."""

from __future__ import annotations

import io
import pickle
from typing import Any

import pytest
from test_kept_envelope import SOURCE, cold, kept_files, project
from test_kept_envelope_bounds import forge

import tether.guard.checkpoint as checkpoint
import tether.guard.envcache as envcache
from tether.envelope.schema import ApprovalClass, Effect, Envelope


def by_checkpoint(body: bytes) -> Any:
    return checkpoint._load(io.BytesIO(body))


READERS = {"checkpoint": by_checkpoint, "envelope": envcache._unpickle}


def build_on_global(module: str, name: str, attrs: dict[str, Any]) -> bytes:
    """A body whose one value is the global ``module.name`` given ``attrs`` by ``BUILD`` (a slot state: setattr)."""
    state = pickle.dumps(attrs, protocol=2)[2:-1]
    ref = f"c{module}\n{name}\n".encode()
    return b"\x80\x02}X\x01\x00\x00\x00k" + ref + b"N" + state + pickle.TUPLE2 + pickle.BUILD + pickle.SETITEM + b"."


class Member:
    """Pickled as the member ``Effect(value)`` of the process, then given ``attrs`` (``BUILD``)."""

    def __init__(self, value: str, attrs: dict[str, Any]) -> None:
        self.value, self.attrs = value, attrs

    def __reduce__(self) -> tuple[Any, ...]:
        return (Effect, (self.value,), (None, self.attrs))


def intact() -> None:
    assert Effect("exec") is Effect.EXEC and type(Effect.EXEC) is Effect and Effect.EXEC.value == "exec"
    assert Effect._value2member_map_["read"] is Effect.READ and not hasattr(Effect, "planted")
    assert not hasattr(Envelope, "planted") and checkpoint._event.__defaults__ is None


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(
    ("module", "name", "attrs"),
    [
        ("tether.envelope.schema", "Effect", {"_value2member_map_": {}}),
        ("tether.envelope.schema", "Effect", {"planted": 1}),
        ("tether.envelope.schema", "Envelope", {"planted": "x"}),
    ],
)
def test_a_body_may_not_set_an_attribute_of_a_class_it_names(
    reader: str, module: str, name: str, attrs: dict[str, Any]
) -> None:
    with pytest.raises((pickle.UnpicklingError, TypeError)):  # a model's own __setstate__ refuses a class
        READERS[reader](build_on_global(module, name, attrs))
    intact()


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("attrs", [{"_value_": "read"}, {"__class__": ApprovalClass}, {"planted": 1}])
def test_a_body_may_not_alter_an_enum_member(reader: str, attrs: dict[str, Any]) -> None:
    with pytest.raises(pickle.UnpicklingError, match="may not alter"):
        READERS[reader](pickle.dumps({"k": Member("exec", attrs)}, protocol=5))
    intact()


def test_a_checkpoint_may_not_give_its_event_maker_defaults() -> None:
    with pytest.raises(pickle.UnpicklingError, match="may not alter"):
        by_checkpoint(build_on_global("tether.guard.checkpoint", "_event", {"__defaults__": (1, 2)}))
    intact()


@pytest.mark.parametrize("reader", sorted(READERS))
def test_the_members_and_classes_still_load(reader: str) -> None:
    got = READERS[reader](pickle.dumps({"k": [Effect.EXEC, Effect.READ, frozenset({1})]}, protocol=5))
    assert got["k"][0] is Effect.EXEC and got["k"][1] is Effect.READ
    intact()


def test_a_kept_envelope_that_alters_a_member_is_a_miss(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept body is the real envelope and its dump, and a member given another class: its trial's child passed it
    (nothing raised), and the reading hook's ``Effect.EXEC`` became an ``ApprovalClass``."""
    monkeypatch.setattr(envcache, "TRIAL_S", 3.0)
    hook = project(tmp_path, SOURCE)
    assert cold(hook, "ls", "t0")[0] == "allow"
    [path] = kept_files(hook)
    obj = envcache._unpickle(path.read_bytes()[len(envcache.MAGIC) :].partition(b"\n")[2])
    forge(path, pickle.dumps({**obj, "x": Member("exec", {"__class__": ApprovalClass})}, protocol=5))
    assert cold(hook, "echo x > a.txt", "t1")[0] == "deny", "validated again, and decided as ever"
    intact()


NAMES_OUTSIDE_DICT = [
    ("tether.envelope.schema", "Envelope", {"__qualname__": "Effect"}),
    ("tether.envelope.schema", "Effect", {"__name__": "Other"}),
    ("tether.control.fold", "RunFold", {"__qualname__": "Planted"}),
    ("collections", "Counter", {"__qualname__": "OrderedDict"}),
    ("tether.guard.checkpoint", "_event", {"__module__": "this"}),
    ("tether.guard.checkpoint", "_event", {"__qualname__": "Event"}),
    ("tether.guard.checkpoint", "_event", {"__name__": "x", "__doc__": "planted"}),
    ("tether.guard.checkpoint", "_event", {"__annotations__": {"run_id": "int"}}),
    ("tether.guard.checkpoint", "_event", {"__kwdefaults__": {"x": 1}}),
    ("copyreg", "_reconstructor", {"__module__": "antigravity"}),
]


def _outside_dict(module: str, name: str) -> tuple[Any, ...]:
    import importlib

    obj = getattr(importlib.import_module(module), name)
    keys = ["__name__", "__qualname__", "__module__", "__doc__"]
    if not isinstance(obj, type):
        keys += ["__annotations__", "__kwdefaults__", "__defaults__", "__code__"]
    return tuple((k, getattr(obj, k)) for k in keys)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize(("module", "name", "attrs"), NAMES_OUTSIDE_DICT)
def test_a_body_may_not_rename_or_remodule_what_it_names(
    reader: str, module: str, name: str, attrs: dict[str, Any]
) -> None:
    """A class's or function's ``__name__``, ``__qualname__`` (and a function's ``__module__``, ``__doc__``,
    ``__annotations__``) are kept outside its ``__dict__``: setting them went unnoticed. Renamed, ``Envelope`` is
    called ``Effect`` in every message and schema of the process; a function's ``__module__`` is what pickle
    imports when it writes the function, so the checkpoint this process writes next would import a module the
    body named (``this``, ``antigravity``: a browser opened)."""
    import sys

    if reader == "envelope" and module != "tether.envelope.schema":
        return  # the envelope's reader refuses every other name outright
    before = _outside_dict(module, name)
    with pytest.raises((pickle.UnpicklingError, TypeError)):
        READERS[reader](build_on_global(module, name, attrs))
    assert _outside_dict(module, name) == before
    intact()
    event = checkpoint._event("r", 1, "t", "k", {}, "p", "h")
    pickler = io.BytesIO()
    p = pickle.Pickler(pickler, protocol=5)
    p.dispatch_table = {**__import__("copyreg").dispatch_table, type(event): checkpoint._reduce_event}
    p.dump(event)
    assert "this" not in sys.modules and "antigravity" not in sys.modules
