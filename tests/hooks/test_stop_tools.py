"""The stop's sensors in a hook session never run a tool the agent planted in the workspace's virtualenv.

When tether's own environment has no ruff or mypy, ``runner.find_tool`` takes the workspace's ``.venv/bin`` one
(the user's). The loop stamps those files at its test baseline (db72873); a hook session took no such stamps, so a
``.venv/bin/ruff`` the agent wrote mid-session (printing ``[]``) was the stop's lint, and the stop was accepted with
an unused import in it. The session's baseline now stamps them too. The first test failed before.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hookkit import Hook

from tether.verify import sensors

LINTING = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  sandbox: {backend: local, required: false}
  filesystem: {read: ["**"], write: ["**"]}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: write_file, purpose: Write a file., effects: [write]}
verification:
  sensors: [{name: lint, required: true}]
""" % ("0" * 64)


def planted_ruff(ws: Path) -> Path:
    """A ruff in the workspace's virtualenv that finds nothing wrong with anything."""
    shim = ws / ".venv" / "bin" / "ruff"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text('#!/bin/sh\n[ "$1" = --version ] && echo "ruff 0.0.0" && exit 0\necho "[]"\n')
    shim.chmod(0o755)
    return shim


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    """A session whose envelope requires lint, where the only ruff is the workspace's ``.venv/bin/ruff``."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(LINTING)
    monkeypatch.setattr(
        sensors, "find_tool", lambda name, workspace, configured=None: str(tmp_path / ".venv/bin" / name)
    )
    return Hook(tmp_path)


def write(hook: Hook, rel: str, content: str, call_id: str) -> None:
    tool_input = {"file_path": str(hook.workspace / rel), "content": content}
    hook("PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=call_id)
    (hook.workspace / rel).write_text(content)
    hook("PostToolUse", tool_name="Write", tool_input=tool_input, tool_response={}, tool_use_id=call_id)


def test_a_ruff_the_agent_planted_mid_session_is_not_the_stops_lint(hook: Hook) -> None:
    hook("SessionStart")
    write(hook, "calc.py", "import os\n", "w1")
    planted_ruff(hook.workspace)  # the agent's Bash: tether records the command, Claude Code runs it
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and ".venv/bin/ruff" in reply["reason"], reply


def test_the_users_own_ruff_there_at_the_sessions_start_runs(hook: Hook) -> None:
    shim = planted_ruff(hook.workspace)
    hook("SessionStart")
    write(hook, "calc.py", "import os\n", "w1")
    assert hook("Stop").stdout == "", "the user's ruff (here one that finds nothing) is the sensor"
    hook("UserPromptSubmit")
    shim.write_text(shim.read_text().replace("0.0.0", "0.0.1"))  # rewritten since the session began
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and ".venv/bin/ruff" in reply["reason"], reply


SYNTAX = LINTING.replace("[{name: lint, required: true}]", "[{name: syntax, required: true}]")


def test_a_python_file_a_shell_command_broke_is_the_stops_business_too(tmp_path: Path) -> None:
    """The stop's syntax, lint and types sensors look at the changed Python files. Only the file tools' paths were
    counted (a hook session keeps no snapshot), so a module broken by a Bash ``printf >`` was never compiled and
    the stop was accepted. Files touched since the session began (their ctime, which no program sets back) count
    too. Failed before."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(SYNTAX)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "calc.py").write_text("def f():\n    return 1\n")
    (tmp_path / "pkg" / "old.py").write_text("def g(:\n")  # broken before the session: not this session's doing
    time.sleep(0.2)  # past the clock slack: old.py was touched before the session began
    hook = Hook(tmp_path)
    hook("SessionStart")
    assert hook("Stop").stdout == "", "nothing touched: nothing to compile"
    hook("UserPromptSubmit")
    command = {"command": "printf 'def f(:\\n' > pkg/calc.py"}
    hook("PreToolUse", tool_input=command, tool_use_id="b1")
    (tmp_path / "pkg" / "calc.py").write_text("def f(:\n")  # what Claude Code's Bash did
    hook("PostToolUse", tool_input=command, tool_use_id="b1", tool_response={})
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and "syntax" in reply["reason"] and "pkg/calc.py" in reply["reason"], reply
    assert "old.py" not in reply["reason"]


def test_the_folders_a_stop_skips_include_every_one_a_snapshot_skips() -> None:
    from tether.hooks.integrity import NOT_SOURCE
    from tether.snapshot import ALWAYS_SKIPPED

    assert ALWAYS_SKIPPED <= NOT_SOURCE
