"""Where a cold hook call's instructions go: phases of one process, and pydantic's share of each (callgrind).

    python benchmarks/hook_phases.py [--event PreToolUse|PostToolUse] [--only-models PREFIX]

Needs ``valgrind``. A session is made in a temporary directory with three cold calls of each event through the
launcher (``tether hook claude-code --no-daemon``, as ``tether hook install`` writes it: the kept envelope and the
``__init__`` table are warm). Then one more call runs under ``valgrind --tool=callgrind`` in this file's harness
(``python -I -S hook_phases.py --harness SRC …``), which does what ``hooks/entry.py`` does for a call decided
in-process, in this order, with a marker call (``os.getppid``, ``--dump-before``) between phases:

* start: the bare interpreter (``-I -S``) and the harness's own script, reading the input;
* site and ``tether.hooks.entry`` (``full_path``, ``no_pydantic_plugins``);
* the floor's libraries: ``sqlite3``, ``json``, ``hashlib``, ``re`` and the Bash grammar's parser built by its
  path, as ``benchmarks/hook.py``'s floor row imports them (so the next phase is pydantic's alone);
* pydantic's import as the hook imports it: the collector paused and the libraries' dataclasses made by
  ``tether.records`` (``import_deciding_code``);
* tether's deciding modules (``import_deciding_code``);
* the call (``entry.main``: the kept envelope read back, the log read and folded, the decision, the durable
  append, the reply);
* the interpreter's exit.

Within a phase, pydantic's work is measured as the inclusive cost of a C builtin each kind of work is run under
(the outermost such call only): model class creation (``ModelMetaclass.__new__``, under ``functools.reduce``),
validator and serializer builds (``complete_model_class``, ``TypeAdapter``; under ``itertools.starmap``, or
``filterfalse`` when a first validation builds them), validation and dumps (``BaseModel.__init__``,
``model_validate*``, ``model_dump*``, ``model_copy``, ``TypeAdapter``'s; under ``takewhile``, the builds inside
included), and every dataclass made (``dataclasses._process_class``, under ``dropwhile``). ``--only-models
PREFIX``: count only the model classes of modules under PREFIX (e.g. ``tether.envelope``). The wrappers and
markers add ~4 % to the process (672 M against 644 M for the same call unharnessed, 2026-12-02). Prints one row
per phase, in millions of instructions. No thresholds; figures only.
"""

from __future__ import annotations

import os
import sys

CATEGORIES = {  # the C function each kind of work runs under, and how its inclusive cost is labelled
    "functools_reduce": "model classes",
    "starmap_next": "validator builds",
    "takewhile_next": "validation",
    "filterfalse_next": "builds at first validation",
    "dropwhile_next": "dataclasses",
}
PHASES = ["start", "site, hooks.entry", "floor libraries", "pydantic import", "tether modules", "the call", "exit"]


def harness(argv: list[str]) -> None:
    """Run as ``python -I -S hook_phases.py --harness SRC AGENT [options] < INPUT`` (standard library only
    until the phases import what they measure)."""
    src, only = argv[0], os.environ.get("HOOK_PHASES_ONLY", "")
    sys.path.append(src)
    raw = sys.stdin.buffer.read()
    os.getppid()  # marker: start
    import tether.hooks.entry as entry

    entry.full_path()
    entry.no_pydantic_plugins()
    os.getppid()  # marker: site, hooks.entry
    import functools
    import gc
    import itertools
    from collections.abc import Callable
    from typing import Any

    def once(f: Callable[[], object], kind: str) -> None:
        if kind == "model classes":
            functools.reduce(lambda a, b: f(), [None], None)
        elif kind == "validator builds":
            list(itertools.starmap(f, [()]))
        elif kind == "validation":
            list(itertools.takewhile(lambda x: bool(f()) and False, [0]))
        elif kind == "builds at first validation":
            list(itertools.filterfalse(lambda x: bool(f()) or True, [0]))
        else:
            list(itertools.dropwhile(lambda x: bool(f()) and False, [0]))

    active: list[str] = []

    def wrap(kind: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*a: Any, **k: Any) -> Any:
            if kind == "model classes" and only and not str(a[3].get("__module__", "")).startswith(only):
                return fn(*a, **k)
            if active and not (kind == "validator builds" and active == ["validation"]):
                return fn(*a, **k)
            label = "builds at first validation" if active else kind
            box: list[Any] = []
            active.append(kind)
            try:
                once(lambda: box.append(fn(*a, **k)), label)
            finally:
                active.pop()
            return box[0]

        return wrapped

    gc.disable()  # as import_deciding_code imports
    import hashlib  # noqa: F401
    import json  # noqa: F401
    import re  # noqa: F401
    import sqlite3  # noqa: F401
    from _frozen_importlib_external import SourceFileLoader

    grammar = type(sys)("bench_grammar")
    grammar.__file__ = os.path.join(src, "tether", "policy", "grammar.py")
    SourceFileLoader(grammar.__name__, grammar.__file__).exec_module(grammar)
    grammar.parser()
    os.getppid()  # marker: floor libraries
    import dataclasses

    dataclasses._process_class = wrap("dataclasses", dataclasses._process_class)  # type: ignore[attr-defined]
    from tether.records import standing_in

    with standing_in():
        from pydantic import BaseModel, Field  # noqa: F401  (as benchmarks/hook.py's pydantic row)
        from pydantic import main as models
        from pydantic import type_adapter as adapters
        from pydantic._internal import _model_construction as construction
    os.getppid()  # marker: pydantic import
    construction.ModelMetaclass.__new__ = wrap("model classes", construction.ModelMetaclass.__new__)
    construction.complete_model_class = wrap("validator builds", construction.complete_model_class)
    adapters.TypeAdapter._init_core_attrs = wrap("validator builds", adapters.TypeAdapter._init_core_attrs)
    for name in ("__init__", "model_validate", "model_validate_json", "model_dump", "model_dump_json", "model_copy"):
        f = models.BaseModel.__dict__[name]
        if isinstance(f, classmethod):
            setattr(models.BaseModel, name, classmethod(wrap("validation", f.__func__)))
        else:
            setattr(models.BaseModel, name, wrap("validation", f))
    for name in ("validate_python", "validate_json", "validate_strings", "dump_python", "dump_json"):
        setattr(adapters.TypeAdapter, name, wrap("validation", getattr(adapters.TypeAdapter, name)))
    gc.enable()
    entry.import_deciding_code(gate=b'"PreToolUse"' in raw)
    os.getppid()  # marker: tether modules
    code = entry.main(argv[1:], raw)
    os.getppid()  # marker: the call
    sys.exit(code)


def main() -> None:
    import argparse
    import glob
    import json
    import re
    import subprocess
    import tempfile
    from pathlib import Path

    import tether

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--event", choices=("PreToolUse", "PostToolUse"), default="PreToolUse")
    parser.add_argument("--only-models", default="", help="count only model classes of modules under this prefix")
    args = parser.parse_args()
    src = str(Path(tether.__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="tether-hook-phases-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "PYTHON"))}
        env.update(CLAUDE_PROJECT_DIR=tmp, TETHER_HOOK_SOCKET=f"{tmp}/no-daemon", PYTHONHASHSEED="0")
        env.update(TETHER_HOOK_DAEMON="0", HOOK_PHASES_ONLY=args.only_models)

        def call(i: int, event: str, cmd: list[str]) -> subprocess.CompletedProcess[bytes]:
            data = {"session_id": "phases", "cwd": tmp, "hook_event_name": event, "tool_name": "Bash"}
            data.update(tool_input={"command": f"grep -n needle{i} src/app.py"}, tool_use_id=f"toolu_{i}")
            if event == "PostToolUse":
                data["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
            done = subprocess.run(cmd, input=json.dumps(data).encode(), capture_output=True, env=env, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the call failed: {done.stderr.decode()[-800:]}")
            return done

        launcher = [sys.executable, "-I", "-S", f"{src}/tether/hooks/launch.py", "claude-code", "--no-daemon"]
        for i in range(3):
            call(i, "PreToolUse", launcher)
            call(i, "PostToolUse", launcher)
        if args.event == "PostToolUse":
            call(3, "PreToolUse", launcher)
        out = f"{tmp}/callgrind.out"
        grind = ["valgrind", "--tool=callgrind", "--dump-before=os_getppid", f"--callgrind-out-file={out}"]
        call(3, args.event, [*grind, sys.executable, "-I", "-S", __file__, "--harness", src, *launcher[4:]])
        dumps = [*sorted(glob.glob(out + ".*"), key=lambda p: int(p.rsplit(".", 1)[1])), out]
        total = 0
        only = f" (model classes of {args.only_models} only)" if args.only_models else ""
        print(f"{args.event}, millions of instructions{only}")
        for phase, dump in zip(PHASES, dumps, strict=True):
            text = subprocess.run(
                ["callgrind_annotate", "--inclusive=yes", dump], capture_output=True, text=True
            ).stdout
            found = re.search(r"([\d,]+) \([\d.]+%\)\s+PROGRAM TOTALS", text)
            cost = int(found.group(1).replace(",", "")) if found else 0
            total += cost
            parts = []
            for fn, label in CATEGORIES.items():
                hit = re.search(rf"^\s*([\d,]+) \(\s*[\d.]+%\)\s+\S*:{fn} ", text, re.M)
                if hit:
                    parts.append(f"{label} {int(hit.group(1).replace(',', '')) / 1e6:.1f}")
            print(f"  {phase:18s} {cost / 1e6:7.1f}   {', '.join(parts)}")
        print(f"  {'total':18s} {total / 1e6:7.1f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--harness"]:
        harness(sys.argv[2:])
    else:
        main()
