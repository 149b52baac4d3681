"""A command the agent asks to run outside its own sandbox asks a human. Claude Code reruns a command that failed in its
sandbox with ``dangerouslyDisableSandbox`` (unasked, by default); tether's ALLOW answered that too, so its hook turned
the silent fallback into an allowed one. Now it is a floor of ASK (``shell:unsandboxed``); a DENY stays DENY."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook


def decide(hook: Hook, **tool_input: object) -> tuple[str, str]:
    out = json.loads(hook("PreToolUse", tool_name="Bash", tool_input=tool_input, tool_use_id="u").stdout)
    spec = out["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


@pytest.mark.parametrize("flag", [True, "true", 1])
def test_claude_codes_unsandboxed_rerun_asks(hook: Hook, flag: object) -> None:
    decision, reason = decide(hook, command="ls", dangerouslyDisableSandbox=flag)
    assert (decision, "shell:unsandboxed" in reason) == ("ask", True), reason


def test_a_sandboxed_call_is_judged_as_before_and_a_deny_stays_a_deny(hook: Hook) -> None:
    assert decide(hook, command="ls")[0] == "allow"
    assert decide(hook, command="ls", dangerouslyDisableSandbox=False)[0] == "allow"
    assert decide(hook, command="rm -rf /", dangerouslyDisableSandbox=True)[0] == "deny"


@pytest.mark.parametrize(
    "escalation", [{"with_escalated_permissions": True}, {"sandbox_permissions": "require_escalated"}]
)
def test_codexs_escalated_call_is_refused_pending_approval(tmp_path: Path, escalation: dict[str, object]) -> None:
    hook = Hook(tmp_path, "codex")
    refused = hook("PreToolUse", tool_input={"command": "ls", **escalation})
    assert refused.exit == 2 and "shell:unsandboxed" in refused.stderr and "tether approve" in refused.stderr, refused
    assert hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="call_2").exit == 0
