"""The cold path: a tool call decided in a fresh process (``--no-daemon``) imports only what deciding needs.

Each module the decision does not need costs every cold call its import (and pydantic models their class
construction), so a module that creeps back onto the path fails here, named. The probe is a real
``tether hook claude-code --no-daemon`` entry in a new interpreter, on a session whose run exists (its first
call, which takes the test baseline, is made before).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hookkit import payload

from tether import records

#: Not imported to decide a PreToolUse: the CLI and its libraries, the YAML loader, signing, the kernel's
#: runtime and strict loader, sensors and the test surface (a stop's), sandboxes, the model adapters and
#: tables, the event kinds of graphs/schedules/workers/egress/MCP, of the kernel's own runs and the test
#: baseline (a session's log holds one: read as text, events/store.py ``from_row``), every kind module but those
#: of one call and of the session (the run's lifecycle, model calls, approvals, verification, control, context,
#: delegates, carried plans, pre-flight: ``PAYLOADS_ON_THE_COLD_PATH`` below), the store ``Protocol`` (a type only:
#: events/protocol.py), the daemon's and
#: installer's modules, observability, the fold checkpoint's reader and writer while a session has none (and
#: pickle with them), pathspec while no path is matched against a pattern (policy/globs.py ``GitIgnoreSpec``),
#: pydantic's plugin loader's ``importlib.metadata`` (hooks/entry.py), a lease's ``socket``; what
#: ``tree_sitter_bash``'s package ``__init__`` imports for a highlight query tether never reads
#: (``importlib.resources``, ``tempfile``, ``shutil``, ``bz2``, ``lzma``: policy/grammar.py skips it).
NOT_ON_THE_COLD_PATH = (
    "typer",
    "rich",
    "yaml",
    "cryptography",
    "httpx",
    "mcp",
    "tether.cli",
    "tether.console",
    "tether.observe",
    "tether.graph",
    "tether.distributed",
    "tether.sandbox",
    "tether.kernel.runtime",
    "tether.kernel.session",
    "tether.verify.cascade",
    "tether.verify.testsurface",
    "tether.hooks.integrity",
    "tether.hooks.install",
    "tether.hooks.command",
    "tether.hooks.settings",
    "tether.hooks.trust",
    "tether.hooks.import_roots",
    "tether.hooks.acl",
    "tether.hooks.daemon",
    "tether.events.kinds_graph",
    "tether.events.kinds_schedule",
    "tether.events.kinds_egress",
    "tether.events.kinds_mcp",
    "tether.events.kinds_distributed",
    "tether.events.kinds_kernel",
    "tether.events.kinds_baseline",
    "tether.events.kinds",
    "tether.events.kinds_control",
    "tether.events.kinds_context",
    "tether.events.kinds_delegate",
    "tether.events.kinds_knowledge",
    "tether.events.kinds_verify",
    "tether.events.kinds_guard",
    "tether.events.kinds_hooks",
    "tether.events.protocol",
    "tether.models",
    "tether.guard.checkpoint",
    "pathspec",
    "importlib.metadata",
    "socket",
    "pickle",
    "importlib.resources",
    "tempfile",
    "shutil",
    "bz2",
    "lzma",
)

PROBE = """
import dataclasses, gc, json, os, sys
if os.environ.get("PROBE_GC") == "off":
    gc.disable()
compiled = []
standard = getattr(dataclasses, "_create_fn", None)  # 3.11, 3.12: what compiles each generated method
def counting(name, *args, globals=None, **kwargs):
    compiled.append(f"{(globals or {}).get('__name__')}.{name}")
    return standard(name, *args, globals=globals, **kwargs)
if standard:
    dataclasses._create_fn = counting
maker = dataclasses.dataclass
from tether.hooks.entry import main
code = main(["claude-code", "--no-daemon"])
schema = sys.modules.get("tether.envelope.schema")
def subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from subclasses(sub)
from pydantic import BaseModel
models = sorted({f"{c.__module__}.{c.__qualname__}" for c in subclasses(BaseModel) if c.__module__[:7] == "tether."})
index = sys.modules.get("tether.policy.provenance")
patterns = index._pattern.cache_info().currsize if index else None
print(json.dumps({"exit": code, "modules": sorted(sys.modules), "gc": [gc.isenabled(), gc.get_freeze_count()],
                  "patterns": patterns,
                  "compiled": compiled, "maker": dataclasses.dataclass is maker,
                  "envelope_built": bool(schema and schema.Envelope.__pydantic_complete__), "models": models}))
"""


def cold(data: dict[str, object], env: dict[str, str]) -> tuple[str, dict[str, Any]]:
    """The hook's answer (its stdout) and what the probe saw, from one call in a new interpreter."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE], input=json.dumps(data), capture_output=True, text=True, env=env, timeout=120
    )
    answer, _, probe = out.stdout.rstrip("\n").rpartition("\n")
    assert probe.startswith("{"), out.stdout + out.stderr
    return answer, json.loads(probe)


def test_a_cold_tool_call_imports_only_what_deciding_needs(tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    _, started = cold(payload("claude-code.SessionStart", tmp_path), env)  # creates the run: its baseline
    assert started["exit"] == 0
    answer, probe = cold(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}), env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert probe["exit"] == 0
    modules = set(probe["modules"])
    loaded = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NOT_ON_THE_COLD_PATH))
    assert loaded == [], f"imported on the cold path: {loaded}"
    assert "tree_sitter_bash" not in modules and "tree_sitter_bash._binding" in modules  # the grammar, no __init__
    assert "tether.guard.session" in modules and "pydantic" in modules  # the probe did decide in-process
    assert probe["envelope_built"] is False, "the envelope kept by the session's first call: no validator built"
    enabled, frozen = probe["gc"]
    assert enabled and frozen > 10_000  # the imports frozen (hooks/entry.py import_deciding_code), the collector on
    assert probe["maker"] is True, "dataclasses.dataclass is not the standard one after the cold call"
    if not records.MIRRORED:
        return  # a Python whose generated methods tether.records does not mirror: the standard maker, as ever
    # tether's dataclasses are made by tether.records: of their methods, only __init__ is compiled (each other one
    # cost ~0.5 M instructions; ~116 M of a cold call before)
    ours = sorted(m for m in probe["compiled"] if m.startswith("tether.") and not m.endswith(".__init__"))
    assert ours == [], f"dataclass methods compiled on the cold path (use tether.records.dataclass): {ours}"
    # (on 3.11 tether.recordmaker makes them whole, without dataclasses' _create_fn: tests/test_records.py and
    # hooks/test_cold_dataclasses.py compare them with the standard making; their __init__s are counted below)
    # and so are the libraries' (pydantic, annotated_types, pathspec: 56 classes, 187 methods compiled before),
    # records' maker standing in for dataclasses.dataclass while the deciding code is imported, and only then
    theirs = sorted(m for m in probe["compiled"] if not m.startswith("tether.") and not m.endswith(".__init__"))
    assert theirs == [], f"the libraries' dataclass methods compiled on the cold path (hooks/entry.py): {theirs}"
    assert sum(not m.startswith("tether.") for m in probe["compiled"]) >= 50


ENVELOPE = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["**"]}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
""" % ("0" * 64)


def test_a_cold_call_with_a_kept_envelope_neither_parses_yaml_nor_builds_a_validator(tmp_path: Path) -> None:
    """A project's envelope file, kept by the session's first call (guard/envcache.py): the next cold call reads
    it back. Without the kept file the same call imports yaml and builds the envelope's validator, as before."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(ENVELOPE)
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    _, started = cold(payload("claude-code.SessionStart", tmp_path), env)
    assert started["exit"] == 0 and "yaml" in started["modules"] and started["envelope_built"]
    call = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"})
    answer, probe = cold(call, env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "tether.guard.session" in probe["modules"] and "tether.policy.gate" in probe["modules"]
    assert probe["envelope_built"] is False and "yaml" not in probe["modules"]
    assert "pickle" not in probe["modules"] and "_pickle" in probe["modules"]  # the C unpickler alone
    for kept in (tmp_path / ".tether" / "tether.db.folds").glob("*.env"):
        kept.unlink()
    answer_again, validating = cold(call, env)
    assert answer_again == answer
    assert validating["envelope_built"] is True and "yaml" in validating["modules"]


def test_the_collector_is_left_as_the_caller_had_it(tmp_path: Path) -> None:
    """The collector is paused only for the import: a process that had it disabled finds it disabled, and the
    decision is the same."""
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path), "PROBE_GC": "off"}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    answer, probe = cold(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}), env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert probe["exit"] == 0 and probe["gc"][0] is False and probe["gc"][1] > 10_000


def test_the_collector_is_restored_when_the_import_fails() -> None:
    """An import that fails half-way (a module of the deciding code missing) leaves the collector on, and
    ``dataclasses.dataclass`` the standard one."""
    probe = """
import dataclasses, gc, json, sys
maker = dataclasses.dataclass
sys.modules["tether.hooks.session"] = None  # importing the deciding code fails at this module
from tether.hooks.entry import import_deciding_code
try:
    import_deciding_code()
    failed = False
except ImportError:
    failed = True
print(json.dumps([failed, gc.isenabled(), dataclasses.dataclass is maker]))
"""
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(out.stdout) == [True, True, True]  # and the standard dataclass maker is back


def test_pydantic_takes_only_get_plugins_from_its_plugin_loader() -> None:
    """hooks/entry.py stands in for ``pydantic.plugin._loader`` with a module that has only ``get_plugins``
    (plugins disabled): that holds while pydantic takes nothing else from it. A pydantic that does fails here,
    by name, rather than in every hook call."""
    import ast

    import pydantic

    from tether.hooks.entry import PLUGIN_LOADER

    root = Path(pydantic.__file__).parent
    taken: set[str] = set()
    for source in root.rglob("*.py"):
        package = ".".join(("pydantic", *source.parent.relative_to(root).parts))
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = package.rsplit(".", node.level - 1)[0] if node.level else ""
                module = ".".join(p for p in (base, node.module or "") if p)
                if module == PLUGIN_LOADER:
                    taken |= {alias.name for alias in node.names}
            elif isinstance(node, ast.Import) and any(a.name == PLUGIN_LOADER for a in node.names):
                taken.add("(the module itself)")
    assert taken == {"get_plugins"}, f"pydantic takes {taken} from its plugin loader; the stand-in has get_plugins"


def test_the_stand_in_loader_finds_no_plugins_only_when_they_are_disabled(tmp_path: Path) -> None:
    """The stand-in is installed only under ``PYDANTIC_DISABLE_PLUGINS=__all__`` (set by the hook unless the
    user set it otherwise) and before pydantic loads its own; a model still validates with it."""
    probe = """
import os, sys
from tether.hooks.entry import PLUGIN_LOADER, no_pydantic_plugins
no_pydantic_plugins()
from pydantic import BaseModel
class M(BaseModel):
    x: int
assert M.model_validate({"x": "1"}).x == 1
loader = sys.modules[PLUGIN_LOADER]
print(list(loader.get_plugins()), "importlib.metadata" in sys.modules, (loader.__doc__ or "").startswith("pydantic's"))
"""

    def run(**env: str) -> str:
        base = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
        out = subprocess.run(
            [sys.executable, "-c", probe], env={**base, **env}, capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "[] False True"
    assert run(PYDANTIC_DISABLE_PLUGINS="__all__") == "[] False True"
    assert run(PYDANTIC_DISABLE_PLUGINS="some_plugin") == "[] True False"  # pydantic's own loader, not ours


def test_no_payload_or_envelope_model_takes_a_builtin_default_factory() -> None:
    """``Field(default_factory=list)`` costs ~0.15 ms each time pydantic builds the model's validator (it parses
    the builtin's text signature, in vain): ``new_list``/``new_dict`` (events/payload.py) instead."""
    import inspect

    from pydantic import BaseModel

    import tether.envelope.schema as envelope_schema
    from tether.events.payload import REGISTRY

    models = {cls for cls in REGISTRY.values()}
    models |= {m for m in vars(envelope_schema).values() if inspect.isclass(m) and issubclass(m, BaseModel)}
    for cls in list(models):
        for field in cls.model_fields.values():  # the nested models the payloads name
            for arg in (field.annotation, *getattr(field.annotation, "__args__", ())):
                if inspect.isclass(arg) and issubclass(arg, BaseModel) and arg.__module__.startswith("tether."):
                    models.add(arg)
    builtin = {
        f"{cls.__module__}.{cls.__qualname__}.{name}"
        for cls in models
        for name, field in cls.model_fields.items()
        if field.default_factory in (list, dict, set, tuple, frozenset)
    }
    assert len(models) > 100
    assert builtin == set(), f"builtin default factories: {sorted(builtin)}"


#: The model modules a cold call imports (and those a hook session imports when it meets one of their kinds: an
#: approval, a stop's verification, a continued session). Their annotations are evaluated when the class is made:
#: pydantic compiled each string annotation (``typing.ForwardRef``) when it built a model class, ~740 of them on a
#: cold call (~43 M instructions, 3.5 %), while these modules used ``from __future__ import annotations``.
MODELS_ON_THE_COLD_PATH = (
    "tether.envelope.schema",
    "tether.events.payload",
    "tether.events.kinds_calls",
    "tether.events.kinds",
    "tether.events.kinds_context",
    "tether.events.kinds_control",
    "tether.events.kinds_delegate",
    "tether.events.kinds_guard",
    "tether.events.kinds_hooks",
    "tether.events.kinds_knowledge",
    "tether.events.kinds_verify",
)


def test_the_models_a_cold_call_builds_have_no_string_annotations() -> None:
    import __future__

    import importlib

    lazy = [
        n
        for n in MODELS_ON_THE_COLD_PATH
        if importlib.import_module(n).__dict__.get("annotations") is __future__.annotations
    ]
    assert lazy == [], f"from __future__ import annotations in {lazy}: pydantic compiles every annotation"


#: The payload classes (``tether.events``) a cold PreToolUse and PostToolUse build: the base, the kinds of one
#: governed call and of the session (events/kinds_calls.py: ``session.opened``, ``hook.received``). Each is a kind
#: a session writes and folds, or a field of one (``AcceptedRisk`` of ``run.started``; ``RuleHit``, ``TaintHit``
#: of ``action.decided``): the ~48 other payload classes are built when a kind of theirs is first read or written
#: (events/payload.py ``LATER``), never for a hook's tool call (91 model classes were built before, 47, then 44
#: since ``session.ended``, ``hook.stop`` and ``hook.bypassed`` are later kinds: a stop or a bypass writes them).
PAYLOADS_ON_THE_COLD_PATH = frozenset(
    {
        "payload.Payload",
        "kinds_calls.AcceptedRisk",
        "kinds_calls.RunStarted",
        "kinds_calls.ActionProposed",
        "kinds_calls.RuleHit",
        "kinds_calls.TaintHit",
        "kinds_calls.ActionDecided",
        "kinds_calls.ActionStarted",
        "kinds_calls.ActionCompleted",
        "kinds_calls.ActionFailed",
        "kinds_calls.DiagnosticsComputed",
        "kinds_calls.ReviewGate",
        "kinds_calls.SessionOpened",
        "kinds_calls.HookReceived",
    }
)


def payloads_built(probe: dict[str, Any]) -> set[str]:
    return {m.removeprefix("tether.events.") for m in probe["models"] if m.startswith("tether.events.")}


def test_a_cold_tool_call_builds_only_the_payload_classes_it_uses(tmp_path: Path) -> None:
    """A cold PreToolUse (which decides) and PostToolUse (which records the receipt), each in a new interpreter,
    build exactly the payload classes named above; a kind module a fold or the guard imports at the top again
    (rather than by its kind's string, under ``TYPE_CHECKING``, or where an event of it is made) fails here,
    naming its classes. The session's log is read whole by both (the run state and the control layer's fold)."""
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    _, started = cold(payload("claude-code.SessionStart", tmp_path), env)
    assert started["exit"] == 0
    for i in range(2):  # the second pair folds a log that holds the first's receipt and diagnostics
        ran = {"tool_input": {"command": f"grep -n needle{i} README.md"}, "tool_use_id": f"toolu_built_{i}"}
        answer, decided = cold(payload("claude-code.PreToolUse", tmp_path, **ran), env)
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
        _, recorded = cold(payload("claude-code.PostToolUse", tmp_path, **ran), env)
        assert decided["exit"] == recorded["exit"] == 0
        for probe in (decided, recorded):
            assert payloads_built(probe) == PAYLOADS_ON_THE_COLD_PATH, sorted(
                payloads_built(probe) ^ PAYLOADS_ON_THE_COLD_PATH
            )
    import sqlite3

    with sqlite3.connect(tmp_path / ".tether" / "tether.db") as db:
        kinds = {k for (k,) in db.execute("SELECT kind FROM events")}
    assert {"action.decided", "action.completed", "diagnostics.computed", "review.gate"} <= kinds


#: The gate and what only it uses: a call the gate does not judge (a PostToolUse, a prompt, a stop) records
#: without them (guard/session.py ``load_gate``; ~100 M instructions, a tenth of a cold call), nor pathspec,
#: which rates paths (control/risk.py, imported at the first path rated: ~45 M more).
THE_GATE = (
    "tether.policy.decide",
    "tether.policy.gate",
    "tether.policy.profile",
    "tether.policy.knowledge",
    "tether.policy.shell",
    "tether.policy.provenance",
    "tether.review.execution",
    "tree_sitter_bash",
    "pathspec",  # the gate's path sets, and the control layer's risk ratings of paths (control/risk.py)
)


def gate_modules(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in THE_GATE))


def test_a_call_the_gate_does_not_judge_does_not_import_it(tmp_path: Path) -> None:
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    _, started = cold(payload("claude-code.SessionStart", tmp_path), env)
    assert started["exit"] == 0 and gate_modules(started["modules"]) == []
    ran = {"tool_input": {"command": "ls"}, "tool_use_id": "toolu_cold_1"}
    answer, decided = cold(payload("claude-code.PreToolUse", tmp_path, **ran), env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert "tether.policy.gate" in decided["modules"]  # the one event that decides imports it
    _, recorded = cold(payload("claude-code.PostToolUse", tmp_path, **ran), env)
    assert recorded["exit"] == 0 and gate_modules(recorded["modules"]) == []
    _, prompt = cold(payload("claude-code.UserPromptSubmit", tmp_path), env)
    assert prompt["exit"] == 0 and gate_modules(prompt["modules"]) == []
    # what PostToolUse recorded is what the one that imports the gate records: the receipt of the allowed call
    import sqlite3

    with sqlite3.connect(tmp_path / ".tether" / "tether.db") as db:
        kinds = [k for (k,) in db.execute("SELECT kind FROM events ORDER BY seq")]
    assert kinds.count("action.completed") == 1 and kinds.index("action.completed") > kinds.index("action.decided")


#: What a PreToolUse decides without (guard/session.py ``load_observer``; the control state, the escalation and the
#: refused reviews are the run state's): the control layer's fold and its stages, the approvals and their getpass.
#: Only ``tether.control.risk`` (the execution review's rating) and the package's lazy root are imported.
NOT_TO_DECIDE = (
    "tether.control.beliefs",
    "tether.control.diagnostics",
    "tether.control.fold",
    "tether.control.hypotheses",
    "tether.control.loop",
    "tether.control.planning",
    "tether.control.receipts",
    "tether.control.recovery",
    "tether.control.resolver",
    "tether.control.stuck",
    "tether.kernel.approvals",
    "getpass",
    "termios",
)


def test_a_cold_command_is_decided_without_the_control_layer(tmp_path: Path) -> None:
    """A command the gate allows is reviewed (``review.gate``) and decided under the control state the log holds,
    without importing the control layer, nor compiling a provenance pattern while no output was untrusted; a
    PostToolUse imports the control layer (before the call, with the collector paused) to add the receipt's view."""
    import sqlite3

    from tether.events.store import EventStore

    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    assert cold(payload("claude-code.SessionStart", tmp_path), env)[1]["exit"] == 0
    ran = {"tool_input": {"command": "touch notes.txt"}, "tool_use_id": "toolu_cold_1"}
    answer, decided = cold(payload("claude-code.PreToolUse", tmp_path, **ran), env)
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert [m for m in NOT_TO_DECIDE if m in decided["modules"]] == []
    assert "tether.control.risk" in decided["modules"] and "tether.policy.gate" in decided["modules"]
    assert decided["patterns"] == 0  # a session of the workspace's tools only: provenance searched no text
    _, recorded = cold(payload("claude-code.PostToolUse", tmp_path, **ran), env)
    assert recorded["exit"] == 0 and "tether.control.loop" in recorded["modules"]
    db = tmp_path / ".tether" / "tether.db"
    with sqlite3.connect(db) as conn:
        kinds = [k for (k,) in conn.execute("SELECT kind FROM events ORDER BY seq")]
        (run_id,) = conn.execute("SELECT run_id FROM runs").fetchone()
    assert "review.gate" in kinds and "diagnostics.computed" in kinds  # reviewed; the receipt's view recorded
    store = EventStore.open(db)
    try:
        changed = {"previous": "NORMAL", "state": "BLOCKED", "tier": "critical", "reason": "test", "dimension": "d"}
        store.append(run_id, "control.changed", changed)
    finally:
        store.close()
    again = {"tool_input": {"command": "touch other.txt"}, "tool_use_id": "toolu_cold_2"}
    answer, blocked = cold(payload("claude-code.PreToolUse", tmp_path, **again), env)
    out = json.loads(answer)["hookSpecificOutput"]
    assert out["permissionDecision"] == "deny" and "control state BLOCKED" in out["permissionDecisionReason"], out
    assert [m for m in NOT_TO_DECIDE if m in blocked["modules"]] == []


#: The reader's code stamp is the test's, which wrote the checkpoint (test_fold_checkpoint's racers say why).
RESTORED = """
import json, sys
import tether.guard.checkpoint as ck
loaded = []
standard = ck.load
def load(*args):
    loaded.append(standard(*args))
    return loaded[-1]
ck.load = load
from tether.hooks.entry import main
code = main(["claude-code", "--no-daemon"])
print(json.dumps({"exit": code, "loaded": loaded, "modules": sorted(sys.modules)}))
"""


def test_a_call_without_the_gate_still_restores_the_fold_checkpoint(tmp_path: Path) -> None:
    """The checkpoint pickles the provenance index's sources (policy/provenance.py): a PostToolUse, which does not
    import the gate, imports that module before reading one, or every recording call would refold the log."""
    from hookkit import Hook

    import tether.guard.log as guard_log
    import tether.hooks.session as hook_session
    from tether.control import fold as control_fold

    hook = Hook(tmp_path)
    every, guard_log.EVERY = guard_log.EVERY, 8
    try:
        for i in range(6):
            hook.bash(f"grep -n needle{i} src/app.py", call_id=f"toolu_{i}")
    finally:
        guard_log.EVERY = every
        hook_session._CACHE.clear()
        control_fold.clear()
    assert list((tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt"))
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    data = payload("claude-code.PostToolUse", tmp_path, tool_input={"command": "grep -n needle5 src/app.py"})
    data["tool_use_id"] = "toolu_5"
    out = subprocess.run(
        [sys.executable, "-c", RESTORED],
        input=json.dumps(data),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    probe = json.loads(out.stdout.rstrip("\n").rpartition("\n")[2])
    assert probe["exit"] == 0 and probe["loaded"] == [True], out.stderr
    assert "tether.policy.gate" not in probe["modules"]


#: A cold call whose dataclasses' ``__init__`` code comes from tether.compiled's table (its path the test's), the
#: texts it compiled all the same counted.
KEPT = """
import json, sys
import tether.compiled as kept
kept.location = sys.argv[1]
sys.dont_write_bytecode = False
compiled = []
def counting(text, *args, **kwargs):
    compiled.append(text.split("\\n")[1])
    return compile(text, *args, **kwargs)
kept.compile = counting
from tether.hooks.entry import main
code = main(["claude-code", "--no-daemon"])
print(json.dumps({"exit": code, "compiled": compiled, "used": len(kept._used)}))
"""


def test_a_cold_call_compiles_no_init_the_table_holds(tmp_path: Path) -> None:
    """The first cold PreToolUse compiles each dataclass ``__init__`` and writes the table at exit; the second
    compiles none of them (tether.compiled): every text it makes is in the table."""
    if not records.MIRRORED:
        return  # nothing is stood in for: the standard maker compiles, as ever
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    env.pop("TETHER_DB", None)
    env.pop("TETHER_ENVELOPE", None)
    table = tmp_path / "__pycache__" / "table.marshal"
    table.parent.mkdir()
    probes = []
    for n in range(2):
        data = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"}, tool_use_id=f"toolu_{n}")
        out = subprocess.run(
            [sys.executable, "-c", KEPT, str(table)],
            input=json.dumps(data),
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        answer, _, probe = out.stdout.rstrip("\n").rpartition("\n")
        assert probe.startswith("{"), out.stdout + out.stderr
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
        probes.append(json.loads(probe))
    first, second = probes
    assert first["exit"] == second["exit"] == 0
    # tether's and the libraries' __init__s (92: 102 before the control layer left a PreToolUse's path)
    assert len(first["compiled"]) >= 85 and table.exists()
    assert second["compiled"] == [], f"compiled again though the table holds them: {second['compiled'][:3]}"
    # the second uses all but what only a session's first call makes (its opener's name: kernel.approvals' two)
    assert first["used"] - 2 <= second["used"] <= first["used"] and second["used"] >= 85
