"""tether's answers as Codex reads them: a refusal must be one Codex enforces, an allow must not read as a failure.

``codex_reads`` restates the rules of openai/codex's hook output parsing (codex-rs/hooks/src/engine/output_parser.rs
and the PreToolUse and Stop events in codex-rs/hooks/src/events): exit 2 blocks only with a non-empty reason on
stderr; exit 0 with JSON blocks a PreToolUse on ``permissionDecision: deny`` (or legacy ``decision: block``) with a
non-empty reason and a Stop on ``decision: block`` with one; ``ask``, a bare ``allow`` (without ``updatedInput``),
``continue: false``, ``stopReason``, ``suppressOutput`` or a reason-less block make the hook *failed*, which Codex
treats as no objection: the call runs. Any other exit code is failed too.
"""

from __future__ import annotations

import json

import pytest

from tether.hooks.wire import Outcome, Reply, refuse, reply


def codex_reads(event: str, out: Reply) -> str:
    """``block``, ``continue`` (no objection, no error) or ``failed`` (an error shown; Codex goes on)."""
    if out.exit == 2:
        return "block" if out.stderr.strip() else "failed"
    if out.exit != 0:
        return "failed"
    text = out.stdout.strip()
    if not text:
        return "continue"
    try:
        data = json.loads(text)
    except ValueError:
        return "failed" if text.startswith(("{", "[")) else "continue"
    if not isinstance(data, dict):
        return "failed"
    return _pre_tool_use(data) if event == "PreToolUse" else _stop(data)


def _pre_tool_use(data: dict[str, object]) -> str:
    if data.get("continue") is False or "stopReason" in data or data.get("suppressOutput"):
        return "failed"
    spec = data.get("hookSpecificOutput")
    spec = spec if isinstance(spec, dict) else {}
    decision, reason = spec.get("permissionDecision"), spec.get("permissionDecisionReason")
    if decision is not None or reason is not None or "updatedInput" in spec:
        if decision == "deny":
            return "block" if isinstance(reason, str) and reason.strip() else "failed"
        if decision == "allow" and "updatedInput" in spec:
            return "continue"
        return "failed"  # ask, a bare allow, a reason without a decision, updatedInput without allow
    legacy, why = data.get("decision"), data.get("reason")
    if legacy == "block":
        return "block" if isinstance(why, str) and why.strip() else "failed"
    return "failed" if legacy is not None or why is not None else "continue"


def _stop(data: dict[str, object]) -> str:
    if data.get("continue") is False:
        return "stop"
    if data.get("decision") == "block":
        reason = data.get("reason")
        return "block" if isinstance(reason, str) and reason.strip() else "failed"
    return "continue"


OUTCOMES = [
    Outcome("DENY", "rm -rf outside the workspace", "coding:deny-destructive"),
    Outcome("DENY"),
    Outcome("DENY", "   "),
    Outcome("ASK", "git push talks to a remote", "coding:ask-network", approve="ap-1"),
    Outcome("ASK"),
    Outcome("BOGUS", "a verdict tether does not know"),
]


@pytest.mark.parametrize("outcome", OUTCOMES, ids=repr)
def test_every_refusal_is_one_codex_enforces(outcome: Outcome) -> None:
    out = reply("codex", "PreToolUse", outcome)
    assert codex_reads("PreToolUse", out) == "block", out


def test_an_allow_is_no_objection_not_a_failed_hook() -> None:
    for outcome in (Outcome("ALLOW", "ok", "envelope:allow"), Outcome("ALLOW"), Outcome("ALLOW", note="heads up")):
        out = reply("codex", "PreToolUse", outcome)
        assert codex_reads("PreToolUse", out) == "continue", out


@pytest.mark.parametrize("answer", [{"permissionDecision": "ask"}, {"permissionDecision": "allow"}])
def test_what_claude_code_reads_codex_reads_as_a_failed_hook(answer: dict[str, str]) -> None:
    """Why the Codex answer is not Claude Code's: ``ask`` would let the call run, a bare ``allow`` show an error."""
    spec = {"hookEventName": "PreToolUse", **answer, "permissionDecisionReason": "tether ASK (r): why"}
    assert codex_reads("PreToolUse", Reply(json.dumps({"hookSpecificOutput": spec}))) == "failed"


@pytest.mark.parametrize("outcome", [Outcome("BLOCK", "tests fail", "verify:required"), Outcome("BLOCK")], ids=repr)
def test_a_blocked_stop_is_one_codex_enforces(outcome: Outcome) -> None:
    assert codex_reads("Stop", reply("codex", "Stop", outcome)) == "block"


def test_a_stop_let_through_continues_with_its_note() -> None:
    assert codex_reads("Stop", reply("codex", "Stop", Outcome("PASS"))) == "continue"
    noted = reply("codex", "Stop", Outcome("PASS", note="the agent stopped without evidence"))
    assert codex_reads("Stop", noted) == "continue" and "without evidence" in noted.stdout


@pytest.mark.parametrize("event", ["PreToolUse", "Stop"])
def test_a_refusal_of_input_tether_cannot_read_is_enforced(event: str) -> None:
    assert codex_reads(event, refuse("")) == "block"
    assert codex_reads(event, refuse("hook input is not JSON")) == "block"
