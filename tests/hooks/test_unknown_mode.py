"""An ALLOW in a Claude Code permission mode tether does not know is left to Claude Code, as in plan mode. A hook's
``allow`` skips Claude Code's permission flow; in ``plan`` that flow is what holds the session to reading, and a mode
tether does not know (a later release's, a value that is no string) may hold it so too. Before, only the exact
``plan`` was: an edit in ``Plan`` or ``5`` was sent as ``allow``, though the same payload's ASK was refused as a mode
not known (fail closed one way, open the other). A payload without the field is ``default``, as before."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload

from tether.hooks.answer import answer

EDIT = {"file_path": "src/app.py", "old_string": "a", "new_string": "b"}
MISSING = object()


def _decision(hook: Hook, mode: Any, call_id: str) -> str:
    data = payload("claude-code.PreToolUse", hook.workspace, tool_name="Edit", tool_input=EDIT, tool_use_id=call_id)
    if mode is MISSING:
        data.pop("permission_mode", None)
    else:
        data["permission_mode"] = mode
    out = answer(hook.request, data).stdout
    return json.loads(out)["hookSpecificOutput"]["permissionDecision"] if out else "(none)"


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("a = 1\n")
    return Hook(tmp_path)


@pytest.mark.parametrize("mode", ["plan", "Plan", "readOnly", "", "default ", 5, None, ["default"]])
def test_an_allow_in_plan_or_a_mode_not_known_is_no_decision(hook: Hook, mode: Any) -> None:
    assert _decision(hook, mode, "e1") == "(none)", mode


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "auto", "dontAsk", "bypassPermissions", MISSING])
def test_an_allow_in_a_known_mode_is_sent(hook: Hook, mode: Any) -> None:
    assert _decision(hook, mode, "e2") == "allow", mode
