"""In plan mode tether leaves what it allows to Claude Code. A hook's ``allow`` skips Claude Code's permission flow,
and in plan mode that flow is what keeps the session to reading until the user approves the plan: tether's ALLOW of
an Edit sent as ``allow`` would have let the edit through plan mode. Such an ALLOW is now sent as no decision
(Claude Code's own flow decides: plan mode holds the edit); DENY and ASK are sent as ever, and the log keeps what
the gate said."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hookkit import Hook, payload

from tether.events.store import EventStore
from tether.hooks.answer import answer
from tether.hooks.session import run_id_for
from tether.state import RunState


def _answer(hook: Hook, mode: str | None, tool: str, tool_input: dict[str, Any], call_id: str) -> tuple[str, int]:
    data = payload("claude-code.PreToolUse", hook.workspace, tool_name=tool, tool_input=tool_input, tool_use_id=call_id)
    if mode is None:
        data.pop("permission_mode", None)
    else:
        data["permission_mode"] = mode
    reply = answer(hook.request, data)
    return reply.stdout, reply.exit


def _decision(stdout: str) -> str:
    return json.loads(stdout)["hookSpecificOutput"]["permissionDecision"] if stdout else "(none)"


CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "allow"),
    ("Write", {"file_path": "src/new.py", "content": "x = 1\n"}, "allow"),
    ("Bash", {"command": "sed -i s/a/b/ src/app.py"}, "allow"),
    ("Read", {"file_path": "src/app.py"}, "allow"),
    ("Bash", {"command": "rm -rf /"}, "deny"),
    ("WebFetch", {"url": "https://example.com/", "prompt": "read"}, "ask"),
]


@pytest.mark.parametrize(("tool", "tool_input", "gate"), CALLS)
def test_in_plan_mode_an_allow_is_left_to_claude_code(
    hook: Hook, tool: str, tool_input: dict[str, Any], gate: str
) -> None:
    stdout, code = _answer(hook, "plan", tool, tool_input, f"p-{tool}-{gate}")
    assert code == 0
    assert _decision(stdout) == ("(none)" if gate == "allow" else gate), stdout
    stdout, code = _answer(hook, "default", tool, tool_input, f"d-{tool}-{gate}")
    assert (code, _decision(stdout)) == (0, gate), "outside plan mode the gate's answer is sent"


def test_the_log_keeps_the_gates_allow_and_the_mode(hook: Hook) -> None:
    _answer(hook, "plan", "Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "e1")
    with EventStore.open(hook.workspace / ".tether" / "tether.db") as store:
        run = next(
            r
            for r in store.runs()
            if r.run_id == run_id_for("claude-code", payload("claude-code.PreToolUse", hook.workspace)["session_id"])
        )
        log = store.events(run.run_id)
    assert RunState.from_events(log).actions["e1"].verdict == "ALLOW"
    received = [e.payload for e in log if e.kind == "hook.received" and e.payload.get("event") == "PreToolUse"]
    assert received and received[-1].get("detail", {}).get("permission_mode") == "plan", received[-1]
