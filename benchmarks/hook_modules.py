"""Where a cold PreToolUse's instructions go, module by module (callgrind): the map of what is left to take off.

    python benchmarks/hook_modules.py [--top N] [--event PreToolUse|PostToolUse] [--tool Bash|Write]

Needs ``valgrind``. A session is made in a temporary directory with three calls through the launcher (``python -I
-S …/hooks/launch.py claude-code --no-daemon``: the session begun, its envelope kept, bytecode written). One more
call then runs under ``valgrind --tool=callgrind --dump-before=os_getppid`` in this file's harness (``python -I -S
hook_modules.py --harness SRC LABELS …``), which does what the launcher does when no daemon answers (the collector
paused, ``tether.hooks.entry.main`` with ``own_process``, then ``finish``) with a marker call (``os.getppid``)
before and after each module's body runs (``SourceFileLoader.exec_module``, which unmarshals its code too, and an
extension module's ``create_module``). So each stretch between two markers belongs to one module (its own body and
what it does itself, not the modules it imports) or to the phase around the imports: ``<start>`` (the interpreter
and the input), ``<entry>`` (what the launcher runs before and between the imports: ``site`` or the lean path, the
finders of modules found but frozen or built in), ``<call>`` (the call's own work once the deciding code is
imported: the envelope read back, the log read and checked, the decision, the durable append, the reply). A module
imported during the call is its own row. The markers add ~2 % (~4 M instructions).

Prints each row's millions of instructions and share of the harnessed call, the rows ``--top`` first (30 by
default); then the sums for tether's modules, the standard library's and the rest. No thresholds; figures only.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # not typing's: the harness imports nothing before its markers are in place
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def harness(argv: list[str]) -> None:
    """Run as ``python -I -S hook_modules.py --harness SRC LABELS AGENT [options] < INPUT``: the launcher's
    in-process path with a marker around each module's body; the stretch labels are written to LABELS."""
    src, labels_path = argv[0], argv[1]
    import gc
    import posix
    from _frozen_importlib_external import ExtensionFileLoader, SourceFileLoader

    labels: list[str] = []
    stack = ["<start>"]

    def mark() -> None:
        labels.append(stack[-1])
        posix.getppid()

    def wrap(cls: Any, method: str, name: Callable[[Any], str]) -> None:
        original = getattr(cls, method)

        def wrapped(self: Any, arg: Any) -> Any:
            mark()
            stack.append(name(arg))
            try:
                return original(self, arg)
            finally:
                mark()
                stack.pop()

        setattr(cls, method, wrapped)

    wrap(SourceFileLoader, "exec_module", lambda module: str(module.__name__))
    wrap(ExtensionFileLoader, "create_module", lambda spec: str(spec.name))
    raw = sys.stdin.buffer.read()
    mark()
    stack[-1] = "<entry>"
    collecting = gc.isenabled()
    gc.disable()  # as hooks/launch.py
    sys.path.append(src)
    from tether.hooks import entry

    imported = entry.import_deciding_code

    def importing(*args: Any, **kwargs: Any) -> None:  # the call begins once the deciding code is imported
        imported(*args, **kwargs)
        mark()
        stack[-1] = "<call>"

    entry.import_deciding_code = importing
    code = entry.main(argv[2:], raw, own_process=True, collecting=collecting)
    mark()
    with open(labels_path, "w") as f:
        f.write("\n".join(labels))
    entry.finish(code)


def main() -> None:
    import argparse
    import collections
    import glob
    import json
    import re
    import subprocess
    import sysconfig
    import tempfile
    from pathlib import Path

    import tether

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--event", choices=("PreToolUse", "PostToolUse"), default="PreToolUse")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--tool", choices=("Bash", "Write"), default="Bash", help="a command, or a Write of a new file")
    args = parser.parse_args()
    src = str(Path(tether.__file__).resolve().parent.parent)
    with tempfile.TemporaryDirectory(prefix="tether-hook-modules-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TETHER_", "PYTHON"))}
        env.update(CLAUDE_PROJECT_DIR=tmp, TETHER_HOOK_SOCKET=f"{tmp}/no-daemon", PYTHONHASHSEED="0")

        def call(i: int, event: str, cmd: list[str]) -> None:
            data: dict[str, object] = {"session_id": "modules", "cwd": tmp, "hook_event_name": event}
            given = (
                {"file_path": f"{tmp}/w{i}.py", "content": f"x = {i}\n"}
                if args.tool == "Write"
                else {"command": f"grep -n needle{i} src/app.py"}
            )
            data.update(tool_name=args.tool, tool_input=given, tool_use_id=f"toolu_{i}")
            if event == "PostToolUse":
                data["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
            done = subprocess.run(cmd, input=json.dumps(data).encode(), capture_output=True, env=env, check=False)
            if done.returncode != 0:
                raise SystemExit(f"the call failed: {done.stderr.decode()[-800:]}")

        launcher = [sys.executable, "-I", "-S", f"{src}/tether/hooks/launch.py", "claude-code", "--no-daemon"]
        for i in range(3):
            call(i, "PreToolUse", launcher)
        if args.event == "PostToolUse":
            call(3, "PreToolUse", launcher)
        out, labels_path = f"{tmp}/callgrind.out", f"{tmp}/labels"
        grind = ["valgrind", "--tool=callgrind", "--dump-before=os_getppid", f"--callgrind-out-file={out}.%p"]
        harnessed = [sys.executable, "-I", "-S", __file__, "--harness", src, labels_path, *launcher[4:]]
        call(3, args.event, [*grind, *harnessed])
        labels = Path(labels_path).read_text().split("\n")
        by_pid = collections.defaultdict(list)  # the process's dumps (a forked trial child writes its own)
        for path in glob.glob(out + ".*"):
            by_pid[path[len(out) + 1 :].split(".")[0]].append(path)
        dumps = max(by_pid.values(), key=len)
        rows: collections.Counter[str] = collections.Counter()
        for path in dumps:
            part = path[len(out) + 1 :].split(".")
            label = labels[int(part[1]) - 1] if len(part) > 1 and int(part[1]) <= len(labels) else "<exit>"
            with open(path) as f:
                found = re.search(r"^summary: (\d+)", f.read(), re.M)
            rows[label] += int(found.group(1)) if found else 0
    total = sum(rows.values())
    stdlib = sysconfig.get_paths()["stdlib"]
    print(f"{args.event}: {total / 1e6:.1f} M instructions in all (harnessed); millions, share")
    for label, cost in rows.most_common(args.top):
        print(f"  {label:40s} {cost / 1e6:7.2f} {cost / total:7.1%}")
    groups: collections.Counter[str] = collections.Counter()
    for label, cost in rows.items():
        if label.startswith("<"):
            groups["phases (<start>, <entry>, <call>, <exit>)"] += cost
        elif label == "tether" or label.startswith("tether."):
            groups["tether's modules"] += cost
        elif _in_stdlib(label, stdlib):
            groups["the standard library's modules"] += cost
        else:
            groups["other modules"] += cost
    for group, cost in groups.most_common():
        print(f"  {group:40s} {cost / 1e6:7.2f} {cost / total:7.1%}")


def _in_stdlib(name: str, stdlib: str) -> bool:
    """Whether top-level module ``name`` is the standard library's (a file or package in it, or in its
    ``lib-dynload``)."""
    top = name.partition(".")[0]
    return any(
        os.path.exists(os.path.join(folder, candidate))
        for folder in (stdlib, os.path.join(stdlib, "lib-dynload"))
        for candidate in (top, f"{top}.py")
    ) or any(f.startswith(f"{top}.") for f in os.listdir(os.path.join(stdlib, "lib-dynload")))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--harness"]:
        harness(sys.argv[2:])
    else:
        main()
