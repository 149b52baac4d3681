"""Claude Code's hook payloads as its hooks reference documents them in 2026, each answered as that event wants.

The recorded payloads (``payloads/claude-code.*.json``) carry every common input field the reference lists
(``session_id``, ``prompt_id``, ``transcript_path``, ``cwd``, ``permission_mode``, ``effort``,
``hook_event_name``) and each event's own (PreToolUse ``tool_use_id``; PostToolUse ``tool_response`` and
``duration_ms``; PostToolUseFailure ``error``, ``is_interrupt``; Stop ``stop_hook_active``,
``last_assistant_message``, ``background_tasks``, ``session_crons``; SessionStart ``source``, ``model``; SessionEnd
``reason``; UserPromptSubmit ``prompt``); a call made inside a subagent carries ``agent_id`` and ``agent_type``
besides (``claude-code.PreToolUse.subagent.json``). None is refused; what tether keeps of each is in its
``hook.received``, and ``tether show`` names the subagent that acted. Those two fields, malformed, are refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import PAYLOADS, Hook, in_process, payload
from typer.testing import CliRunner

from tether.cli.main import app
from tether.events.store import EventStore
from tether.hooks.session import run_id_for

SESSION = str(json.loads((PAYLOADS / "claude-code.PreToolUse.json").read_text())["session_id"])


def received(hook: Hook) -> list[dict[str, Any]]:
    """The ``hook.received`` payloads of the session's run, its chain verified first."""
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id_for("claude-code", SESSION))
        return [e.payload for e in store.events(run_id_for("claude-code", SESSION)) if e.kind == "hook.received"]


def test_a_whole_2026_session_is_answered_and_kept(hook: Hook) -> None:
    assert hook("SessionStart").exit == 0
    assert hook("UserPromptSubmit").exit == 0
    out = json.loads(hook("PreToolUse").stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow", out
    assert hook("PostToolUse").stdout == ""
    assert hook("PostToolUseFailure").stdout == ""
    assert hook("Stop").stdout == "", "a stop with a background task in flight is judged as any stop"
    assert hook("SessionEnd").exit == 0
    by_event = {p["event"]: p["detail"] for p in received(hook)}
    assert by_event["SessionStart"]["source"] == "startup"
    assert by_event["SessionStart"]["model"] == "claude-sonnet-5", "the model the session ran on is kept"
    assert by_event["UserPromptSubmit"]["prompt"] == "fix the failing test in calc.py"
    assert by_event["PreToolUse"]["tool_use_id"] == "toolu_01A"
    assert by_event["PostToolUseFailure"]["is_interrupt"] is False, "whether the user interrupted it is kept"
    assert by_event["Stop"]["stop_hook_active"] is False
    assert by_event["SessionEnd"]["reason"] == "prompt_input_exit"
    assert all("agent_id" not in d for d in by_event.values()), "the main thread is not a subagent"


def test_a_subagents_call_is_attributed_to_it_and_shown(hook: Hook) -> None:
    hook("SessionStart")
    out = json.loads(hook("PreToolUse.subagent").stdout)["hookSpecificOutput"]
    assert out["permissionDecision"] == "allow", out
    sub = payload("claude-code.PreToolUse.subagent", hook.workspace, hook_event_name="PostToolUse", tool_response={})
    assert in_process("claude-code", hook.workspace, json.dumps(sub).encode()).exit == 0
    kept = [(p["event"], p["detail"].get("agent_id"), p["detail"].get("agent_type")) for p in received(hook)]
    assert kept == [
        ("SessionStart", None, None),
        ("PreToolUse", "a7e3c1d2", "Explore"),
        ("PostToolUse", "a7e3c1d2", "Explore"),
    ]
    db = str(hook.workspace / ".tether" / "tether.db")
    shown = CliRunner().invoke(app, ["show", run_id_for("claude-code", SESSION), "--db", db])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    marked = [i for i, line in enumerate(lines) if "by subagent Explore (a7e3c1d2): PreToolUse Grep" in line]
    assert marked and "search" in lines[marked[0] + 1], shown.output


@pytest.mark.parametrize(
    ("field", "value"),
    [("agent_id", 7), ("agent_id", ""), ("agent_type", None), ("agent_type", ["Explore"]), ("agent_id", "a\ud800")],
)
@pytest.mark.parametrize("event", ["PreToolUse", "Stop"])
def test_a_malformed_subagent_field_is_refused_naming_it(tmp_path: Path, field: str, value: Any, event: str) -> None:
    data = payload(f"claude-code.{event}", tmp_path, **{field: value})
    if event == "PreToolUse":
        data["tool_input"] = {"command": "ls"}
    out = in_process("claude-code", tmp_path, json.dumps(data).encode())
    assert out.exit == 2 and f"hook input field {field!r}" in out.stderr, out
    assert not (tmp_path / ".tether" / "tether.db").exists(), "nothing recorded for input tether could not read"


@pytest.mark.parametrize("value", [5, {"a": 1}, ["toolu_1"], "", None, True])
def test_a_call_id_that_is_not_a_string_is_refused_naming_it(tmp_path: Path, value: Any) -> None:
    """The reference gives ``tool_use_id`` as a string; before, ``{"a": 1}`` was judged under the id "{'a': 1}".
    A receipt's is recorded as ever (tests/hooks/test_plain_receipts.py): refused, what ran would be missing."""
    data = payload("claude-code.PreToolUse", tmp_path, tool_use_id=value)
    out = in_process("claude-code", tmp_path, json.dumps(data).encode())
    assert out.exit == 2 and "hook input field 'tool_use_id': expected a non-empty string" in out.stderr, out
    ran = payload("claude-code.PostToolUse", tmp_path, tool_use_id=value)
    assert in_process("claude-code", tmp_path, json.dumps(ran).encode()).exit == 0
