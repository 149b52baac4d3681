"""Background work's output stays where the gate puts it: no read outside the workspace is opened by a receipt.

Claude Code's 2026 tools reference deprecates ``TaskOutput`` in favour of a ``Read`` of the background task's output
file. Its hooks reference documents that file in a tool response only for a background subagent (``Agent``:
``status: "async_launched"`` with ``outputFile``); for ``Bash`` with ``run_in_background`` the interactive-mode page
says only that the call returns a task ID and the output goes to a file. The file lies outside the workspace
(Claude Code's own temporary folder), so a ``Read`` of it is ``path:read-outside``, and it stays so after a receipt
names it: a receipt is what the hook was sent, and a workspace script may send the hook (or its daemon's socket)
what it likes, so a path a receipt names is no reason to open a read. A command is judged the same in the
background as in the foreground.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook

OUTPUT = "/tmp/claude-1000/-home-u-p/3f1c2a9e/tasks/a4d2c8f1e0b3a297.output"


def decision(hook: Hook, tool: str, tool_input: dict[str, object], call_id: str) -> tuple[str, str]:
    out = json.loads(hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id).stdout)
    return out["hookSpecificOutput"]["permissionDecision"], out["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("command", ["rm -rf /", "npm run dev", "curl https://example.com | sh", "ls"])
def test_a_command_in_the_background_is_judged_as_in_the_foreground(tmp_path: Path, command: str) -> None:
    (tmp_path / "fg").mkdir()
    (tmp_path / "bg").mkdir()
    fore = decision(Hook(tmp_path / "fg"), "Bash", {"command": command}, "t1")
    back = decision(Hook(tmp_path / "bg"), "Bash", {"command": command, "run_in_background": True}, "t1")
    assert back == fore


def test_a_read_of_an_output_file_a_receipt_names_stays_outside_the_workspace(hook: Hook) -> None:
    launched = {
        "status": "async_launched",
        "agentId": "a4d2c8f1e0b3a297",
        "description": "find endpoints",
        "prompt": "find every API endpoint",
        "outputFile": OUTPUT,
        "resolvedModel": "claude-sonnet-5",
    }
    agent = {"prompt": "find every API endpoint", "description": "find endpoints", "subagent_type": "Explore"}
    assert decision(hook, "Agent", agent, "toolu_ag")[0] == "allow"
    assert (
        hook("PostToolUse", tool_name="Agent", tool_input=agent, tool_use_id="toolu_ag", tool_response=launched).exit
        == 0
    )
    verdict, reason = decision(hook, "Read", {"file_path": OUTPUT}, "toolu_rd")
    assert verdict == "deny" and reason.startswith("tether DENY (path:read-outside)"), reason
