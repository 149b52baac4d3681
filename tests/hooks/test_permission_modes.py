"""A call tether asks about is refused when the session's permission mode may run it without asking anyone.

Claude Code's hooks reference says a PreToolUse ``ask`` prompts the user, with no word on permission modes. The
mode comes in every PreToolUse (``permission_mode``), and Claude Code has run an asked-about call unprompted in
some: ``bypassPermissions`` on 2.1.199 (anthropics/claude-code#77212, fixed by 2.1.233), ``auto`` still
(anthropics/claude-code#89561, open). The hook cannot tell which release it answers, so an ASK is answered
``ask`` only in the modes that prompt (``default``, ``plan``, ``acceptEdits``) and ``deny`` in any other,
naming the mode; ALLOW and DENY are as the gate said. A payload without the field is answered as before.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload
from test_plain_path import call, pre

from tether.events.store import EventStore
from tether.hooks.answer import answer
from tether.hooks.session import run_id_for

FETCH = {"url": "https://example.com/", "prompt": "read it"}  # the built-in envelope asks for the network


def decide(hook: Hook, mode: Any, tool_input: dict[str, Any], tool: str = "WebFetch") -> tuple[str, str]:
    data = payload(
        "claude-code.PreToolUse", hook.workspace, tool_name=tool, tool_input=tool_input, permission_mode=mode
    )
    if mode is None:
        del data["permission_mode"]
    reply = answer(hook.request, {**data, "tool_use_id": f"t-{mode}-{tool}"})
    out = json.loads(reply.stdout)["hookSpecificOutput"]
    return out["permissionDecision"], out["permissionDecisionReason"]


@pytest.mark.parametrize("mode", ["auto", "bypassPermissions", "dontAsk", "yolo", "", 7])
def test_an_ask_in_a_mode_that_may_not_prompt_is_refused_naming_the_mode(hook: Hook, mode: Any) -> None:
    decision, reason = decide(hook, mode, FETCH)
    assert decision == "deny", reason
    assert reason.startswith("tether DENY (") and f"permission mode {mode!r}" in reason, reason


@pytest.mark.parametrize("mode", ["default", "plan", "acceptEdits", None])
def test_an_ask_in_a_mode_that_prompts_is_asked(hook: Hook, mode: Any) -> None:
    assert decide(hook, mode, FETCH)[0] == "ask"


def test_allow_and_deny_are_the_gates_in_any_mode(hook: Hook) -> None:
    assert decide(hook, "auto", {"command": "ls"}, "Bash")[0] == "allow"
    decision, reason = decide(hook, "bypassPermissions", {"command": "rm -rf /"}, "Bash")
    assert decision == "deny" and "permission mode" not in reason, reason


def test_a_receipt_of_a_call_refused_for_its_mode_is_flagged_bypassed(hook: Hook) -> None:
    """Claude Code was told deny; a receipt says the call ran anyway (the fault this answer guards against)."""
    assert decide(hook, "auto", FETCH)[0] == "deny"
    ran = payload(
        "claude-code.PostToolUse", hook.workspace, tool_name="WebFetch", tool_input=FETCH, permission_mode="auto"
    )
    assert answer(hook.request, {**ran, "tool_use_id": "t-auto-WebFetch"}).exit == 0
    assert decide(hook, "default", FETCH)[0] == "ask"
    asked = payload("claude-code.PostToolUse", hook.workspace, tool_name="WebFetch", tool_input=FETCH)
    assert answer(hook.request, {**asked, "tool_use_id": "t-default-WebFetch"}).exit == 0
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        run = run_id_for("claude-code", str(ran["session_id"]))
        flagged = [e.payload["call_id"] for e in store.events(run) if e.kind == "hook.bypassed"]
    assert flagged == ["t-auto-WebFetch"], "the call asked in a prompting mode was the user's to allow"


def test_a_call_that_ran_before_its_proposal_in_such_a_mode_is_flagged(hook: Hook) -> None:
    """Parallel calls: the receipt came first, so the call ran before tether judged it; its ASK is a refusal here."""
    ran = payload(
        "claude-code.PostToolUse", hook.workspace, tool_name="WebFetch", tool_input=FETCH, permission_mode="auto"
    )
    assert answer(hook.request, {**ran, "tool_use_id": "t-auto-WebFetch"}).exit == 0
    assert decide(hook, "auto", FETCH)[0] == "deny"
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        run = run_id_for("claude-code", str(ran["session_id"]))
        flagged = [e.payload for e in store.events(run) if e.kind == "hook.bypassed"]
    assert [(f["call_id"], f["event"], f["verdict"]) for f in flagged] == [("t-auto-WebFetch", "PreToolUse", "ASK")]


def test_a_cold_hook_call_on_either_path_refuses_it_too(tmp_path: Path) -> None:
    """Real hook processes: the first calls create the run and keep the envelope, so the later PreToolUse is decided
    on the plain path (tether/plain.py), once with it switched off; both refuse."""
    for plain in (True, False):
        project = tmp_path / str(plain)
        project.mkdir()
        call(project, "SessionStart")
        call(project, "PreToolUse", **pre("ls"), tool_use_id="t0")
        out, code, full = call(
            project, "PreToolUse", plain=plain, **pre(tool="WebFetch", **FETCH), permission_mode="auto"
        )
        decided = json.loads(out)["hookSpecificOutput"]
        assert (code, decided["permissionDecision"]) == (0, "deny"), out
        assert "permission mode 'auto'" in decided["permissionDecisionReason"]
        assert full is not plain, "the plain path decided it (no pydantic imported), or the full path did"
