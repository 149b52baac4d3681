"""The wire formats: every recorded payload parses; malformed, truncated and oversized input fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import PAYLOADS

from tether.hooks.wire import MAX_INPUT_BYTES, HookInputError, Outcome, parse, reply


@pytest.mark.parametrize("path", sorted(PAYLOADS.glob("*.json")), ids=lambda p: p.stem)
def test_every_recorded_payload_parses(path: Path) -> None:
    data = parse(path.read_bytes())
    assert data["hook_event_name"] == path.stem.split(".")[1]


GOOD = (PAYLOADS / "claude-code.PreToolUse.json").read_bytes()


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        GOOD[: len(GOOD) // 2],  # truncated
        b"[1, 2]",
        b'"PreToolUse"',
        b"\xff\xfe not utf-8",
        json.dumps({"hook_event_name": "PreToolUse", "cwd": "/w"}).encode(),  # no session
        json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/w", "tool_input": {}}).encode(),
        json.dumps({"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/w", "tool_name": "Bash"}).encode(),
        json.dumps(
            {"hook_event_name": "PreToolUse", "session_id": "s", "cwd": "/w", "tool_name": "Bash", "tool_input": "ls"}
        ).encode(),
        json.dumps({"hook_event_name": 7, "session_id": "s", "cwd": "/w"}).encode(),
    ],
    ids=[
        "empty",
        "truncated",
        "array",
        "string",
        "bytes",
        "no-session",
        "no-tool",
        "no-input",
        "input-str",
        "event-int",
    ],
)
def test_malformed_input_is_refused(raw: bytes) -> None:
    with pytest.raises(HookInputError):
        parse(raw)


def test_oversized_input_is_refused_before_parsing() -> None:
    with pytest.raises(HookInputError, match="over tether's limit"):
        parse(b" " * (MAX_INPUT_BYTES + 1))


def test_claude_pre_tool_use_answers_in_the_documented_shape() -> None:
    for verdict, word in (("ALLOW", "allow"), ("ASK", "ask"), ("DENY", "deny"), ("BOGUS", "deny")):
        out = reply("claude-code", "PreToolUse", Outcome(verdict, "why", "rule:x"))
        spec = json.loads(out.stdout)["hookSpecificOutput"]
        assert out.exit == 0 and spec["hookEventName"] == "PreToolUse"
        assert spec["permissionDecision"] == word and "rule:x" in spec["permissionDecisionReason"]


def test_codex_has_no_ask_an_ask_is_a_refusal_naming_the_approve_command() -> None:
    assert reply("codex", "PreToolUse", Outcome("ALLOW", "ok", "r")).exit == 0
    asked = reply("codex", "PreToolUse", Outcome("ASK", "git push talks to a remote", "coding:ask", approve="ap-1"))
    assert asked.exit == 2 and "tether approve ap-1" in asked.stderr and asked.stdout == ""
    assert reply("codex", "PreToolUse", Outcome("DENY", "no", "r")).exit == 2


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_blocked_stop_is_decision_block_with_a_reason(agent: str) -> None:
    out = json.loads(reply(agent, "Stop", Outcome("BLOCK", "tests fail", "verify:required")).stdout)
    assert out["decision"] == "block" and "tests fail" in out["reason"]
    assert reply(agent, "Stop", Outcome("PASS")).stdout == ""


def _with_input(tool_input: str) -> bytes:
    """A PreToolUse whose ``tool_input`` is the JSON text given (escapes as written)."""
    return (
        '{"session_id": "s", "hook_event_name": "PreToolUse", "cwd": "/w", "tool_name": "Bash", '
        f'"tool_input": {tool_input}}}'
    ).encode()


@pytest.mark.parametrize(
    ("tool_input", "field"),
    [
        ('{"command": "echo \\ud800"}', "tool_input.command"),
        ('{"command": "echo \\uDFFF x"}', "tool_input.command"),
        ('{"command": "echo \\ude00\\ud83d"}', "tool_input.command"),  # a pair in the wrong order is two halves
        ('{"edits": [{"old": "a", "new": "\\udc80"}]}', "tool_input.edits[0].new"),
        ('{"\\ud800": "x"}', "tool_input.\\ud800 (its name)"),
    ],
)
def test_a_lone_surrogate_is_refused_naming_its_field(tool_input: str, field: str) -> None:
    """JSON may spell half of a UTF-16 pair; no UTF-8 text holds one. The call could be neither judged by its text
    nor logged: it was refused by an internal error whose reason was a traceback."""
    with pytest.raises(HookInputError, match="surrogate") as caught:
        parse(_with_input(tool_input))
    assert f"field {field!r}" in str(caught.value)
    str(caught.value).encode("utf-8")  # the reason itself can be printed


def test_a_whole_surrogate_pair_and_other_escapes_are_text() -> None:
    data = parse(_with_input('{"command": "echo \\ud83d\\ude00 \\u00e9 \\u001b"}'))
    assert data["tool_input"] == {"command": "echo \U0001f600 \u00e9 \x1b"}


def test_a_lone_surrogate_in_a_tools_output_is_recorded_not_refused() -> None:
    """Only the call's arguments are judged by their text: a tool's output may hold anything (binary bytes read as
    text), and its receipt records it escaped (tests/hooks/test_plain_receipts.py plays one through both paths)."""
    raw = _with_input('{"command": "cat x"}').replace(
        b', "tool_input"', b', "tool_response": {"stdout": "\\ud800"}, "tool_input"'
    )
    data = parse(raw.replace(b'"PreToolUse"', b'"PostToolUse"'))
    assert data["tool_response"] == {"stdout": "\ud800"}


@pytest.mark.parametrize("field", ["session_id", "cwd", "tool_use_id", "tool_name", "hook_event_name"])
def test_a_lone_surrogate_in_a_field_that_names_the_session_or_the_call_is_refused_naming_it(field: str) -> None:
    """The store keys runs and calls by these, the gate judges a tool by its name: half a UTF-16 pair there was a
    traceback (exit 2) on the first write."""
    data = json.loads(GOOD)
    data[field] = str(data[field]) + "\udc80"
    with pytest.raises(HookInputError, match="surrogate") as caught:
        parse(json.dumps(data).encode())
    assert f"field {field!r}" in str(caught.value)


@pytest.mark.parametrize("field", ["prompt", "error", "message", "reason", "transcript_path"])
def test_a_lone_surrogate_in_free_text_parses(field: str) -> None:
    data = {**json.loads(GOOD), field: "x \ud800"}
    assert parse(json.dumps(data).encode())[field] == "x \ud800"
