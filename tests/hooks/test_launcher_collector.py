"""The launcher pauses the cyclic collector before it imports anything of tether, and the hook's entry enables it
again (as it was) once the deciding code is imported and frozen (``gc.freeze``): the imports before the deciding
code's (``typing``, ``contextlib``, ``json``, the plain records) ran ~5 young collections, ~3 M instructions of a
cold PreToolUse. A real launcher process, run as the installed hook runs it (``-I -S``, as
``__main__``), with a ``gc.callbacks`` watcher: no collection while tether is imported and nothing is frozen yet;
the collector enabled at exit (restored for the call, and after a refusal that decides nothing); left disabled
when the process had it disabled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import payload

import tether.hooks.launch as launch

WATCHED = """
import atexit, gc, json, sys
collections = []  # [anything frozen yet, generation] of each collection once tether is being imported
def watch(phase, info):
    if phase == "start" and "tether" in sys.modules:
        collections.append([gc.get_freeze_count() > 0, info["generation"]])
gc.callbacks.append(watch)
if sys.argv[1] == "off":
    gc.disable()
atexit.register(lambda: print(json.dumps({"collections": collections, "enabled": gc.isenabled()})))
sys.argv = sys.argv[2:]
with open(sys.argv[0]) as f:
    code = compile(f.read(), sys.argv[0], "exec")
exec(code, {"__name__": "__main__", "__file__": sys.argv[0], "__builtins__": __builtins__})
"""


def launched(project: Path, request: object, collector: str) -> tuple[str, dict[str, object]]:
    """One call through the launcher (the collector ``on`` or ``off`` before it starts): its answer and the probe;
    a refusal (exit 2) answers nothing on stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN")}
    env |= {"TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(project)}
    argv = [sys.executable, "-I", "-S", "-c", WATCHED, collector, launch.__file__, "claude-code", "--no-daemon"]
    stdin = request if isinstance(request, str) else json.dumps(request)
    done = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env, timeout=120)
    *answer, probe = done.stdout.rstrip("\n").split("\n")
    assert probe.startswith("{"), done.stdout + done.stderr
    assert done.returncode == (2 if "tether refused" in done.stderr else 0), done.stderr
    return "\n".join(answer) or done.stderr, json.loads(probe)


@pytest.mark.parametrize("event", ["PreToolUse", "PostToolUse"])
def test_nothing_is_collected_before_the_deciding_code_is_frozen(tmp_path: Path, event: str) -> None:
    launched(tmp_path, payload("claude-code.SessionStart", tmp_path, session_id="s-gc"), "on")
    fields: dict[str, object] = {"session_id": "s-gc", "tool_input": {"command": "ls"}, "tool_use_id": "toolu_1"}
    if event == "PostToolUse":
        fields["tool_response"] = {"stdout": "", "stderr": "", "interrupted": False}
    answer, probe = launched(tmp_path, payload(f"claude-code.{event}", tmp_path, **fields), "on")
    if event == "PreToolUse":
        assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert probe["enabled"] is True  # restored for the call
    collections = probe["collections"]
    assert isinstance(collections, list)
    assert [c for c in collections if not c[0]] == [], collections  # none before the freeze


def test_a_refusal_that_decides_nothing_restores_the_collector(tmp_path: Path) -> None:
    answer, probe = launched(tmp_path, "{not json", "on")
    assert "tether refused" in answer, answer
    assert probe["enabled"] is True


def test_a_process_that_had_the_collector_disabled_keeps_it_so(tmp_path: Path) -> None:
    launched(tmp_path, payload("claude-code.SessionStart", tmp_path, session_id="s-off"), "off")
    request = payload(
        "claude-code.PreToolUse", tmp_path, session_id="s-off", tool_input={"command": "ls"}, tool_use_id="toolu_1"
    )
    answer, probe = launched(tmp_path, request, "off")
    assert json.loads(answer)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert probe["enabled"] is False
