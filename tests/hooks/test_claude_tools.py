"""Claude Code's tools as its reference lists them in 2026 (code.claude.com/docs/en/tools-reference), through the
hook's answer (what the command and the daemon run): each has the verdict its effect calls for, never the blanket
DENY of an undeclared tool that every one of them got before — a session could not start a subagent (``Agent``,
formerly ``Task``), keep its task list (``TaskCreate``…), ask its user a question or load a skill."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook

#: What each tool amounts to: the agent's own bookkeeping (a read), a read of one file, work in another checkout
#: (refused, saying why), and the ones tether cannot judge (undeclared: denied).
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    ("Agent", {"description": "d", "prompt": "p", "subagent_type": "Explore"}, "allow", "agent_internal"),
    ("Agent", {"description": "d", "prompt": "p", "isolation": "worktree"}, "deny", "worktree"),
    ("Agent", {"description": "d", "prompt": "p", "isolation": "remote"}, "deny", "agent_elsewhere"),
    ("Agent", {"description": "d", "prompt": "p", "isolation": ["remote"]}, "deny", "agent_elsewhere"),
    ("Agent", {"description": "d", "prompt": "p", "isolation": None, "cwd": "/tmp"}, "allow", "agent_internal"),
    ("Task", {"description": "d", "prompt": "p", "subagent_type": "general-purpose"}, "allow", "agent_internal"),
    ("AskUserQuestion", {"questions": [{"question": "Which?", "options": []}]}, "allow", "agent_internal"),
    ("TaskCreate", {"subject": "s", "description": "d"}, "allow", "agent_internal"),
    ("TaskGet", {"taskId": "1"}, "allow", "agent_internal"),
    ("TaskList", {}, "allow", "agent_internal"),
    ("TaskUpdate", {"taskId": "1", "status": "completed"}, "allow", "agent_internal"),
    ("TaskOutput", {"task_id": "b1", "block": True, "timeout": 30000}, "allow", "agent_internal"),
    ("TaskStop", {"task_id": "b1"}, "allow", "agent_internal"),
    ("CronCreate", {"cron": "*/5 * * * *", "prompt": "check the build"}, "allow", "agent_internal"),
    ("CronList", {}, "allow", "agent_internal"),
    ("CronDelete", {"id": "c1"}, "allow", "agent_internal"),
    ("EnterPlanMode", {}, "allow", "agent_internal"),
    ("ExitPlanMode", {"plan": "do it"}, "allow", "agent_internal"),
    ("Skill", {"skill": "pdf"}, "allow", "agent_internal"),
    ("ToolSearch", {"query": "select:WebFetch"}, "allow", "agent_internal"),
    ("SendMessage", {"to": "a1", "message": "go on"}, "allow", "agent_internal"),
    ("ExitWorktree", {"action": "keep"}, "allow", "agent_internal"),
    ("LSP", {"operation": "hover", "filePath": "src/app.py", "line": 3, "character": 5}, "allow", "read_file"),
    ("NotebookRead", {"notebook_path": "nb.ipynb"}, "allow", "read_file"),
    ("EnterWorktree", {"name": "feature"}, "deny", "worktree"),
    ("EnterWorktree", {"path": ".claude/worktrees/feature"}, "deny", "worktree"),
    ("ExitWorktree", {"action": "remove", "discard_changes": True}, "deny", "worktree"),
    ("ExitWorktree", {}, "deny", "worktree"),  # not "keep": it may remove
    ("ExitWorktree", {"action": "KEEP"}, "deny", "worktree"),
    ("PowerShell", {"command": "Remove-Item -Recurse C:\\\\"}, "deny", "PowerShell"),
    ("ReadMcpResourceTool", {"server": "fs", "uri": "file:///etc/passwd"}, "ask", "mcp_undeclared"),
    ("ListMcpResourcesTool", {}, "ask", "mcp_undeclared"),
]


def _decide(hook: Hook, tool: str, tool_input: dict[str, Any], call_id: str) -> tuple[str, str]:
    out = hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id)
    answer = json.loads(out.stdout)["hookSpecificOutput"]
    return answer["permissionDecision"], answer["permissionDecisionReason"]


@pytest.mark.parametrize(("tool", "tool_input", "decision", "contract"), CASES)
def test_each_tool_of_claude_codes_reference_has_the_verdict_its_effect_calls_for(
    hook: Hook, tool: str, tool_input: dict[str, Any], decision: str, contract: str
) -> None:
    verdict, reason = _decide(hook, tool, tool_input, f"c-{tool}")
    assert verdict == decision, reason
    if contract == "worktree":
        assert "hooks:worktree" in reason and "start a session in that worktree" in reason
    elif contract == "mcp_undeclared":
        assert "hooks:mcp-undeclared" in reason
    elif contract == "agent_elsewhere":
        assert "hooks:agent-elsewhere" in reason and "outside this hook" in reason
    elif decision == "deny":
        assert "envelope:undeclared-tool" in reason and repr(contract) in reason


def test_a_file_read_through_lsp_or_notebookread_is_judged_as_a_read_of_that_file(hook: Hook) -> None:
    for i, (tool, field) in enumerate((("LSP", "filePath"), ("NotebookRead", "notebook_path"))):
        verdict, reason = _decide(hook, tool, {"operation": "hover", field: "/etc/shadow", "line": 1}, f"s{i}")
        assert verdict == "deny" and "/etc/shadow is a credential file" in reason, reason
        verdict, reason = _decide(hook, tool, {"operation": "documentSymbol"}, f"m{i}")
        assert verdict == "deny" and "hook:malformed-call" in reason, "no file named: malformed, not a free pass"


def test_a_worktree_path_is_a_write_there(hook: Hook) -> None:
    for i, path in enumerate(("/tmp/elsewhere", "../elsewhere", "")):
        verdict, reason = _decide(hook, "EnterWorktree", {"path": path}, f"w{i}")
        assert verdict == "deny", reason
        assert ("path:write-outside" if path else "hook:malformed-call") in reason


def test_a_write_inside_a_worktree_of_claude_codes_is_a_dotfile_write(hook: Hook) -> None:
    """Why a worktree is refused rather than asked: an approved move would meet a DENY at every edit there."""
    target = {"file_path": ".claude/worktrees/feature/src/app.py", "content": "x = 1\n"}
    verdict, reason = _decide(hook, "Write", target, "ww")
    assert verdict == "deny" and "path:dotfile" in reason, reason


def test_the_worktree_ask_is_the_hooks_own_envelope_only(tmp_path: Path) -> None:
    """A project's own envelope governs the tool names it declares: without ``worktree`` it is undeclared there."""
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(
        'version: 1\nplan: {path: plan.yaml, hash: "sha256:%s"}\n'
        'environment: {filesystem: {read: ["**"], write: ["**"]}}\n'
        "tools:\n  - {name: agent_internal, purpose: Bookkeeping., effects: [read]}\n" % ("0" * 64)
    )
    hook = Hook(tmp_path)
    assert _decide(hook, "EnterWorktree", {"name": "x"}, "w")[0] == "deny"
    assert _decide(hook, "Agent", {"description": "d", "prompt": "p"}, "a")[0] == "allow"


def test_a_call_that_reads_and_writes_is_allowed_as_a_write_and_says_so(hook: Hook) -> None:
    """An Edit reads its file and writes it: allowed by the write's default (inside the writable set), and its reason
    names that rule, not the read's (both allow; of findings of one verdict the first decides). A Read still says it
    is a read."""
    cases = [
        ("Edit", {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}, "default:write"),
        ("MultiEdit", {"file_path": "src/app.py", "edits": [{"old_string": "a", "new_string": "b"}]}, "default:write"),
        ("Write", {"file_path": "src/app.py", "content": "x = 1\n"}, "default:write"),
        ("Read", {"file_path": "src/app.py"}, "default:read"),
    ]
    for i, (tool, tool_input, rule) in enumerate(cases):
        verdict, reason = _decide(hook, tool, tool_input, f"rw{i}")
        assert verdict == "allow" and f"({rule})" in reason, (tool, reason)
