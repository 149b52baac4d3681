"""The recorded Codex payloads carry exactly the fields Codex sends today, and tether answers each of them.

OpenAI publishes no Python package of Codex's hook input types; Codex's own JSON schemas of them
(openai/codex ``codex-rs/hooks/schema/generated/<event>.command.input.schema.json``, every field required, no
other field allowed) are restated below as field lists, so a fixture that drifts from what Codex sends fails here.
A tool event fired inside a sub-agent also carries ``agent_id`` and ``agent_type`` (``SubagentCommandInputFields``);
Codex sends ``null`` for a transcript or last message it does not have. Well-formed, each is answered (exit 0 for a
harmless call); malformed (cut short, a field of the wrong type, an event tether does not answer), each is refused
with exit 2 and a reason, which Codex enforces.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import PAYLOADS, Hook, in_process, payload

BASE = {"session_id", "transcript_path", "cwd", "hook_event_name", "model", "permission_mode"}
TURN = BASE | {"turn_id"}
CODEX_FIELDS: dict[str, set[str]] = {
    "SessionStart": BASE | {"source"},
    "UserPromptSubmit": TURN | {"prompt"},
    "PreToolUse": TURN | {"tool_name", "tool_input", "tool_use_id"},
    "PermissionRequest": TURN | {"tool_name", "tool_input"},
    "PostToolUse": TURN | {"tool_name", "tool_input", "tool_response", "tool_use_id"},
    "Stop": TURN | {"stop_hook_active", "last_assistant_message"},
    "SubagentStart": TURN | {"agent_id", "agent_type"},
    "SubagentStop": TURN
    | {"agent_id", "agent_type", "agent_transcript_path", "stop_hook_active", "last_assistant_message"},
    "PreCompact": (TURN - {"permission_mode"}) | {"trigger"},
}
FIXTURES = sorted(p.name.removeprefix("codex.").removesuffix(".json") for p in PAYLOADS.glob("codex.*.json"))


def test_every_codex_event_tether_answers_has_a_fixture() -> None:
    assert set(FIXTURES) == set(CODEX_FIELDS)


@pytest.mark.parametrize("event", FIXTURES)
def test_a_fixture_carries_exactly_the_fields_codex_sends(event: str) -> None:
    data = json.loads((PAYLOADS / f"codex.{event}.json").read_text())
    assert set(data) == CODEX_FIELDS[event] and data["hook_event_name"] == event


def raw(data: dict[str, Any]) -> bytes:
    return json.dumps(data).encode()


@pytest.mark.parametrize("event", FIXTURES)
def test_a_well_formed_payload_is_answered_not_refused(tmp_path: Path, event: str) -> None:
    out = in_process("codex", tmp_path, raw(payload(f"codex.{event}", tmp_path)))
    assert out.exit == 0, out


@pytest.mark.parametrize(
    ("event", "fields"),
    [
        ("Stop", {"last_assistant_message": None}),
        ("SubagentStop", {"last_assistant_message": None, "agent_transcript_path": "/tmp/t.jsonl"}),
        ("PreToolUse", {"transcript_path": "/home/u/.codex/sessions/rollout.jsonl", "permission_mode": "plan"}),
        ("PostToolUse", {"tool_response": {"output": "calc.py\n", "exit_code": 0}}),
        ("PostToolUse", {"tool_response": None}),
        ("PostToolUse", {"tool_response": [{"type": "text", "text": "ok"}]}),
        ("SessionStart", {"source": "resume"}),
        ("PreCompact", {"trigger": "manual"}),
    ],
)
def test_the_values_codex_may_send_are_answered(tmp_path: Path, event: str, fields: dict[str, Any]) -> None:
    out = in_process("codex", tmp_path, raw(payload(f"codex.{event}", tmp_path, **fields)))
    assert out.exit == 0, out


def test_a_subagents_calls_are_judged_as_the_main_agents(tmp_path: Path) -> None:
    hook, who = Hook(tmp_path, "codex"), {"agent_id": "0199a3b4-2222-7e8f-9a0b-1c2d3e4f5a6c", "agent_type": "worker"}
    assert hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="s1", **who).exit == 0
    out = hook("PreToolUse", tool_input={"command": "rm -rf /"}, tool_use_id="s2", **who)
    assert out.exit == 2 and out.stderr.strip(), out


def cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


@pytest.mark.parametrize("event", FIXTURES)
def test_a_payload_cut_short_is_refused(tmp_path: Path, event: str) -> None:
    out = in_process("codex", tmp_path, cut(raw(payload(f"codex.{event}", tmp_path))))
    assert out.exit == 2 and "not JSON" in out.stderr, out


@pytest.mark.parametrize(
    ("event", "fields", "named"),
    [
        ("PreToolUse", {"tool_input": ["ls"]}, "tool_input"),
        ("PreToolUse", {"tool_input": "ls"}, "tool_input"),
        ("PreToolUse", {"tool_name": None}, "tool_name"),
        ("PostToolUse", {"tool_input": None}, "tool_input"),
        ("Stop", {"session_id": ""}, "session_id"),
        ("UserPromptSubmit", {"prompt_cwd": 7}, "cwd"),
        ("PreToolUse", {"agent_id": ""}, "agent_id"),
        ("PreCompact", {"hook_event_name": "PostCompact"}, "PostCompact"),
        ("Stop", {"hook_event_name": "StopFailure", "error": "rate_limit", "error_details": None}, "StopFailure"),
    ],
)
def test_a_malformed_payload_is_refused_naming_what(
    tmp_path: Path, event: str, fields: dict[str, Any], named: str
) -> None:
    data = payload(f"codex.{event}", tmp_path, **fields)
    if "prompt_cwd" in data:
        data["cwd"] = data.pop("prompt_cwd")
    out = in_process("codex", tmp_path, raw(data))
    assert out.exit == 2 and named in out.stderr, out


def test_an_oversized_payload_is_refused(tmp_path: Path) -> None:
    big = payload("codex.PreToolUse", tmp_path, tool_input={"command": "echo " + "x" * (9 * 1024 * 1024)})
    out = in_process("codex", tmp_path, raw(big))
    assert out.exit == 2 and "limit" in out.stderr, out
