"""The libraries' dataclasses a cold hook process makes through ``tether.records`` are the standard library's.

``hooks/entry.py`` imports the deciding code (pydantic, annotated_types, pathspec and tether) with
``dataclasses.dataclass`` stood in for by records' maker (``tether.records.standing_in``). Here that import runs
in two fresh interpreters, once as the hook does it and once with the stand-in switched off, and every dataclass
made during it is compared: the recorded params, every field (name, type, default, factory, init, repr, hash,
compare, kw_only, kind), ``__match_args__``, ``__slots__``, the docstring, the signature, the MRO, which names
the class holds and what they are, its abstract methods, and instances (built by the constructor with values for
its fields, else by ``object.__new__`` and the fields set): repr, equality with an equal, an unequal, a subclass's
and a foreign object, hash, assignment and deletion of a field and of another name (on the class's instance and a
subclass's), ``replace``, ``asdict``, pickling. The models the hook validates (the built-in envelope, a payload
kind) validate, fail, dump and describe themselves alike.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from tether import records

PROBE = r"""
import abc, dataclasses, json, pickle, re, sys

made = []
update = abc.update_abstractmethods  # the last step of the standard maker, and of records'
def seen(cls):
    if not any(c is cls for c in made):  # records runs it again once its methods are added
        made.append(cls)
    return update(cls)
abc.update_abstractmethods = seen
compiled = []
create = getattr(dataclasses, "_create_fn", None)  # 3.11, 3.12: what compiles each generated method
def counting(name, *args, globals=None, **kwargs):
    compiled.append(f"{(globals or {}).get('__name__')}.{name}")
    return create(name, *args, globals=globals, **kwargs)
if create:
    dataclasses._create_fn = counting
standard = dataclasses.dataclass

import tether.records as records
if sys.argv[1] == "standard":
    import contextlib
    records.standing_in = lambda: contextlib.nullcontext(False)  # entry.py takes it from records when it imports
if sys.argv[1] == "whole-off":
    records.OWN = False  # tether's classes through the standard maker (records' methods), not tether.recordmaker
from tether.hooks.entry import import_deciding_code, no_pydantic_plugins
no_pydantic_plugins()
if sys.argv[1] == "daemon":
    from tether.hooks.daemon import Collections
    collections = Collections()
    collections.take()
    collections.give_back()
else:
    import_deciding_code()  # a PreToolUse's: the gate
    import_deciding_code(gate=False)  # and a receipt's: the control layer (the daemon imports both)
from tether.policy.globs import GitIgnoreSpec
GitIgnoreSpec(["src/?.py"]).match_file("src/a.py")  # pathspec: for a pattern tether.wildmatch declines
restored = dataclasses.dataclass is standard
abc.update_abstractmethods = update
if create:
    dataclasses._create_fn = create

ADDRESS = re.compile(r" at 0x[0-9a-f]+")

def text(value):
    return ADDRESS.sub(" at 0x?", repr(value))

def outcome(fn):
    try:
        return ["ok", text(fn())]
    except BaseException as e:
        return ["raised", type(e).__name__, ADDRESS.sub(" at 0x?", str(e))]

def member(value):
    kind = type(value).__name__
    if callable(value) and hasattr(value, "__qualname__"):
        return [kind, value.__name__, value.__qualname__.split(".<locals>.")[-1]]
    if isinstance(value, (classmethod, staticmethod, property)):
        return [kind]
    return [kind, text(value)] if value is None or isinstance(value, (str, tuple, int, bool)) else [kind]

def instance(cls, fields, tag):
    values = {f.name: f"{tag}{i}" for i, f in enumerate(fields)}
    built = outcome(lambda: cls(**{f.name: values[f.name] for f in fields if f.init}))
    try:
        return built, cls(**{f.name: values[f.name] for f in fields if f.init})
    except BaseException:
        obj = object.__new__(cls)
        for name, value in values.items():
            try:
                object.__setattr__(obj, name, value)
            except BaseException:
                pass
        return built, obj

def hashed(obj, same):
    # a hash of the fields as its value (stable: PYTHONHASHSEED=0); one of an id (it differs between processes)
    # as what it is, and whether an equal object has the same
    value = hash(obj)
    if value == object.__hash__(obj):
        return "(identity)"
    names = [f.name for f in dataclasses.fields(obj) if (f.compare if f.hash is None else f.hash)]
    try:
        if value == hash(tuple(getattr(obj, n) for n in names)):
            return ["fields", value]
    except BaseException:
        pass
    return ["own", value == hash(same)]

def behaviour(cls):
    fields = dataclasses.fields(cls)
    first = fields[0].name if fields else "absent"
    built, a = instance(cls, fields, "v")
    _, same = instance(cls, fields, "v")
    _, other = instance(cls, fields, "w")
    seen = {"built": built, "repr": outcome(lambda: repr(a)), "hash": outcome(lambda: hashed(a, same))}
    seen["eq"] = [outcome(lambda: a == same), outcome(lambda: a == other), outcome(lambda: a != same),
                  outcome(lambda: a == object()), outcome(lambda: a.__eq__(1))]
    seen["set"] = [outcome(lambda: setattr(a, first, "x")), outcome(lambda: setattr(a, "not_a_field", 1))]
    seen["del"] = [outcome(lambda: delattr(same, first)), outcome(lambda: delattr(same, "not_a_field"))]
    seen["replace"] = outcome(lambda: dataclasses.replace(other))
    seen["asdict"] = outcome(lambda: dataclasses.asdict(other))
    seen["pickle"] = outcome(lambda: pickle.loads(pickle.dumps(other)) == other)
    try:
        sub = type(cls.__name__ + "Sub", (cls,), {"__module__": cls.__module__})
    except BaseException as e:
        seen["sub"] = ["raised", type(e).__name__]
        return seen
    _, child = instance(sub, fields, "v")
    seen["sub"] = [outcome(lambda: a == child), outcome(lambda: child == a), outcome(lambda: repr(child)),
                   outcome(lambda: hashed(child, a)), outcome(lambda: setattr(child, first, "x")),
                   outcome(lambda: setattr(child, "not_a_field", 1)), outcome(lambda: delattr(child, first))]
    return seen

def field(f):
    return {"name": f.name, "type": text(f.type), "default": text(f.default), "factory": text(f.default_factory),
            "init": f.init, "repr": f.repr, "hash": f.hash, "compare": f.compare, "kw_only": text(f.kw_only),
            "kind": text(f._field_type), "metadata": text(dict(f.metadata))}

def described(cls):
    import inspect
    own = cls.__dict__
    return {
        "params": text(cls.__dataclass_params__),
        "fields": [field(f) for f in cls.__dataclass_fields__.values()],
        "match_args": text(getattr(cls, "__match_args__", "(none)")),
        "slots": text(own.get("__slots__", "(none)")),
        "doc": cls.__doc__,
        "signature": outcome(lambda: str(inspect.signature(cls))),
        "mro": [f"{b.__module__}.{b.__qualname__}" for b in cls.__mro__],
        "members": {name: member(value) for name, value in sorted(own.items())
                    if name not in ("__dataclass_params__", "__dataclass_fields__", "__doc__", "__slots__")},
        "abstract": sorted(getattr(cls, "__abstractmethods__", ())),
        "behaviour": behaviour(cls),
    }

classes = {}
for cls in made:
    if "__dataclass_fields__" in cls.__dict__:
        key = f"{cls.__module__}.{cls.__qualname__}"
        while key in classes:
            key += "'"
        classes[key] = described(cls)

from pydantic import BaseModel, ValidationError
import tether.envelope.schema as schema
from tether.envelope.schema import Envelope
from tether.events.payload import model_of
from tether.hooks.calls import hook_envelope

def errors(model, data):
    try:
        return ["ok", model.model_validate(data).model_dump(mode="json")]
    except ValidationError as e:
        return [text(x) for x in e.errors(include_url=False)]

envelope = hook_envelope()
dumped = envelope.model_dump(mode="json")
ended = model_of("session.ended")
models = [m for m in vars(schema).values() if isinstance(m, type) and issubclass(m, BaseModel)]
validation = {
    "envelope": [dumped, Envelope.model_validate(dumped) == envelope,
                 Envelope.model_validate_json(envelope.model_dump_json()) == envelope],
    "envelope bad": errors(Envelope, {**dumped, "agent": {"max_turns": 0, "request_timeout_s": -1}}),
    "envelope schema": Envelope.model_json_schema(),
    "fields": {m.__qualname__: {n: text(f) for n, f in m.model_fields.items()} for m in models},
    "payload": errors(ended, {"how": "closed", "reason": "done", "used": "1.5"}),
    "payload bad": errors(ended, {"how": "elsewhere", "reason": 3}),
    "payload schema": ended.model_json_schema(),
}
print(json.dumps({"restored": restored, "compiled": compiled, "classes": classes, "validation": validation}))
"""


def imported(mode: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("PYDANTIC_DISABLE_PLUGINS", None)
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert out.returncode == 0, out.stderr[-3000:]
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_every_dataclass_made_while_the_hook_imports_is_the_standard_librarys() -> None:
    standard, stood_in = imported("standard"), imported("records")
    assert standard["restored"] and stood_in["restored"]  # dataclasses.dataclass is the standard one after
    theirs = sorted(k for k in standard["classes"] if not k.startswith("tether."))
    assert len(theirs) >= 50 and any(k.startswith("annotated_types.") for k in theirs)
    assert any(k.startswith("pathspec.") for k in theirs) and any(k.startswith("pydantic.") for k in theirs)
    assert sorted(stood_in["classes"]) == sorted(standard["classes"])  # the same classes, none more or fewer
    for key, described in standard["classes"].items():
        assert stood_in["classes"][key] == described, key
    assert stood_in["validation"] == standard["validation"]
    if records.MIRRORED:  # the comparison was between two makers: the standard one compiled their methods
        methods = [m for m in standard["compiled"] if not m.startswith("tether.") and not m.endswith(".__init__")]
        assert len(methods) > 100
        assert [m for m in stood_in["compiled"] if not m.endswith(".__init__")] == []


def test_tethers_classes_made_whole_are_the_standard_makers() -> None:
    """tether's own dataclasses made by tether.recordmaker, without the dataclasses module (a plain hook process's
    way), against the same classes handed to the standard maker: every field, param, member, the signature, the
    docstring and the instances' behaviour alike; the models validate alike."""
    whole, standard = imported("records"), imported("whole-off")
    ours = sorted(k for k in standard["classes"] if k.startswith("tether."))
    assert len(ours) >= 40 and sorted(whole["classes"]) == sorted(standard["classes"])
    for key in ours:
        assert whole["classes"][key] == standard["classes"][key], key
    assert whole["validation"] == standard["validation"]
    if records.OWN and sys.version_info[:2] == (3, 11):  # nearly all of tether's made whole (see recordmaker.plan)
        handed = [m for m in whole["compiled"] if m.startswith("tether.")]
        assert len(handed) <= 10 and sum(m.startswith("tether.") for m in standard["compiled"]) >= 40 + len(handed)


def test_the_daemon_makes_them_so_at_its_start_too() -> None:
    """The daemon imports the same deciding code when it starts (``Collections.take``), the first call waiting:
    the same classes, made as the standard maker makes them, none of their methods but ``__init__`` compiled."""
    standard, daemon = imported("standard"), imported("daemon")
    assert daemon["restored"] and daemon["classes"] == standard["classes"]
    if records.MIRRORED:
        assert sum(not m.startswith("tether.") for m in daemon["compiled"]) >= 50  # the libraries' were made
        assert [m for m in daemon["compiled"] if not m.endswith(".__init__")] == []
