"""The Anthropic adapter through the real ``anthropic`` SDK against a wire-format server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tether.errors import ProviderError
from tether.models.anthropic_adapter import AnthropicModel
from tether.models.base import Message, ToolCall, ToolSpec
from tether.models.retry import complete_with_retries
from tether.models.testing import (
    PROXY_ENV_VARS,
    AnthropicWireServer,
    Reply,
    anthropic_error,
    anthropic_message,
    drop_connection,
)

BASH = ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}}})
USER = [Message("system", "You fix bugs."), Message("user", "Fix the failing test.")]


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture
def server() -> Iterator[AnthropicWireServer]:
    with AnthropicWireServer() as s:
        yield s


def model_for(server: AnthropicWireServer, *, timeout_s: float = 10.0) -> AnthropicModel:
    return AnthropicModel("claude-test", api_key="test", base_url=server.base_url, timeout_s=timeout_s)


def no_sleep(_: float) -> None:
    pass


def test_tool_use_is_parsed_and_system_prompt_is_separate(server: AnthropicWireServer) -> None:
    server.push(
        anthropic_message(
            "I'll list the files.",
            tool_uses=[("toolu_1", "bash", {"command": "ls"}), ("toolu_2", "bash", {"command": "pwd"})],
            usage=(100, 20),
            model="claude-test-20250101",
        )
    )
    r = model_for(server).complete(USER, [BASH], max_tokens=512)

    assert r.termination == "tool_request"
    assert r.raw_stop_reason == "tool_use"
    assert r.text == "I'll list the files."
    assert r.tool_calls == (
        ToolCall("toolu_1", "bash", {"command": "ls"}),
        ToolCall("toolu_2", "bash", {"command": "pwd"}),
    )
    assert (r.usage.input_tokens, r.usage.output_tokens) == (100, 20)
    assert r.model == "claude-test-20250101"

    body = server.requests[0].body
    assert body["system"] == "You fix bugs."
    assert body["max_tokens"] == 512
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "Fix the failing test."}]}]
    assert body["tools"] == [{"name": "bash", "description": BASH.description, "input_schema": BASH.input_schema}]
    assert server.requests[0].headers["x-stainless-retry-count"] == "0"


def test_consecutive_tool_results_are_merged_into_one_user_message(server: AnthropicWireServer) -> None:
    a, b = ToolCall("toolu_1", "bash", {"command": "ls"}), ToolCall("toolu_2", "bash", {"command": "pwd"})
    transcript = [
        *USER,
        Message("assistant", "Looking.", tool_calls=(a, b)),
        Message("tool", "a.py", tool_call_id="toolu_1", name="bash"),
        Message("tool", "", tool_call_id="toolu_2", name="bash"),
        Message("user", "Also check the README."),
    ]
    server.push(anthropic_message("Done."))
    r = model_for(server).complete(transcript, [BASH], max_tokens=100)
    assert (r.termination, r.text) == ("complete", "Done.")

    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}},
        {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"command": "pwd"}},
    ]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"},
        {"type": "tool_result", "tool_use_id": "toolu_2"},
        {"type": "text", "text": "Also check the README."},
    ]


def test_the_server_rejects_unanswered_tool_use(server: AnthropicWireServer) -> None:
    """Guards the server itself: a missing tool_result must not pass silently."""
    call = ToolCall("toolu_1", "bash", {"command": "ls"})
    server.push(anthropic_message("unused"))
    with pytest.raises(ProviderError) as info:
        model_for(server).complete(
            [*USER, Message("assistant", tool_calls=(call,)), Message("user", "hm")], [BASH], max_tokens=10
        )
    assert (info.value.status, info.value.transient) == (400, False)
    assert "toolu_1" in str(info.value)


def test_a_tool_without_parameters_gets_an_object_schema(server: AnthropicWireServer) -> None:
    server.push(anthropic_message("ok"))
    model_for(server).complete(USER, [ToolSpec("finish", "Claim completion.", {})], max_tokens=10)
    schema = server.requests[0].body["tools"][0]["input_schema"]
    assert schema == {"type": "object", "properties": {}}


def test_max_tokens_truncates(server: AnthropicWireServer) -> None:
    server.push(anthropic_message("one two three four five six"))
    r = model_for(server).complete(USER, [], max_tokens=2)
    assert (r.termination, r.raw_stop_reason, r.text) == ("truncated", "max_tokens", "one two")
    assert r.usage.output_tokens == 2
    assert "tools" not in server.requests[0].body


@pytest.mark.parametrize(
    ("stop_reason", "termination"),
    [("refusal", "refusal"), ("stop_sequence", "complete"), ("end_turn", "complete"), ("pause_turn", "unknown")],
)
def test_stop_reasons(server: AnthropicWireServer, stop_reason: str, termination: str) -> None:
    server.push(anthropic_message("I can't help with that.", stop_reason=stop_reason))
    r = model_for(server).complete(USER, [], max_tokens=100)
    assert (r.termination, r.raw_stop_reason) == (termination, stop_reason)


def test_429_then_success_is_retried(server: AnthropicWireServer) -> None:
    server.push(anthropic_error(429, "Number of requests has exceeded your rate limit", "rate_limit_error"))
    server.push(anthropic_message("hello"))
    retries: list[int] = []
    r, attempts = complete_with_retries(
        model_for(server),
        USER,
        [],
        max_tokens=10,
        max_attempts=3,
        backoff_s=0.5,
        backoff_max_s=8,
        sleep=no_sleep,
        on_retry=lambda n, e, _: retries.append(e.status or 0),
    )
    assert (r.text, attempts, retries) == ("hello", 2, [429])


def test_repeated_overloaded_529_ends_in_a_transient_error(server: AnthropicWireServer) -> None:
    server.push(*[anthropic_error(529, "Overloaded", "overloaded_error")] * 2)
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model_for(server), USER, [], max_tokens=10, max_attempts=2, backoff_s=0, backoff_max_s=0, sleep=no_sleep
        )
    assert (info.value.status, info.value.transient) == (529, True)
    assert len(server.requests) == 2


def test_repeated_500s_end_in_a_transient_error(server: AnthropicWireServer) -> None:
    server.push(*[anthropic_error(500, "Internal server error")] * 4)
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model_for(server), USER, [], max_tokens=10, max_attempts=4, backoff_s=1, backoff_max_s=2, sleep=no_sleep
        )
    assert (info.value.status, info.value.transient) == (500, True)
    assert len(server.requests) == 4


def test_400_is_raised_at_once(server: AnthropicWireServer) -> None:
    server.push(anthropic_error(400, "messages: field required", "invalid_request_error"), anthropic_message("x"))
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model_for(server), USER, [], max_tokens=10, max_attempts=3, backoff_s=0, backoff_max_s=0, sleep=no_sleep
        )
    assert (info.value.status, info.value.transient) == (400, False)
    assert "field required" in str(info.value)
    assert len(server.requests) == 1


def test_dropped_connection_and_timeout_are_transient(server: AnthropicWireServer) -> None:
    server.push(drop_connection(), Reply(200, anthropic_message("late").body, delay_s=2.0))
    model = model_for(server, timeout_s=0.2)
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            model.complete(USER, [], max_tokens=10)
        assert info.value.transient and info.value.status is None
