"""The OpenAI adapter through the real ``openai`` SDK against a wire-format server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tether.errors import ProviderError
from tether.models.base import Message, ToolCall, ToolSpec
from tether.models.openai_adapter import OpenAIModel, TokenParam
from tether.models.retry import complete_with_retries
from tether.models.testing import (
    PROXY_ENV_VARS,
    OpenAIWireServer,
    Reply,
    drop_connection,
    openai_chat,
    openai_error,
)

BASH = ToolSpec("bash", "Run a shell command.", {"type": "object", "properties": {"command": {"type": "string"}}})
READ = ToolSpec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
USER = [Message("system", "You fix bugs."), Message("user", "Fix the failing test.")]


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


@pytest.fixture
def server() -> Iterator[OpenAIWireServer]:
    with OpenAIWireServer() as s:
        yield s


def model_for(
    server: OpenAIWireServer, *, timeout_s: float = 10.0, token_param: TokenParam | None = None
) -> OpenAIModel:
    return OpenAIModel(
        "gpt-test", api_key="test", base_url=server.base_url, timeout_s=timeout_s, token_param=token_param
    )


def no_sleep(_: float) -> None:
    pass


def test_tool_calls_are_parsed_and_request_is_in_chat_completions_form(server: OpenAIWireServer) -> None:
    server.push(
        openai_chat(
            "Looking around.",
            tool_calls=[("call_a", "bash", {"command": "ls"}), ("call_b", "read_file", {"path": "x.py"})],
            usage=(42, 7),
            model="gpt-test-2025-01-01",
        )
    )
    r = model_for(server).complete(USER, [BASH, READ], max_tokens=256)

    assert r.termination == "tool_request"
    assert r.raw_stop_reason == "tool_calls"
    assert r.text == "Looking around."
    assert r.tool_calls == (
        ToolCall("call_a", "bash", {"command": "ls"}),
        ToolCall("call_b", "read_file", {"path": "x.py"}),
    )
    assert (r.usage.input_tokens, r.usage.output_tokens) == (42, 7)
    assert r.model == "gpt-test-2025-01-01"

    sent = server.requests[0]
    assert sent.headers["authorization"] == "Bearer test"
    assert sent.headers["x-stainless-retry-count"] == "0"
    assert sent.body["model"] == "gpt-test"
    assert sent.body["max_tokens"] == 256 and "max_completion_tokens" not in sent.body
    assert sent.body["messages"] == [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "Fix the failing test."},
    ]
    assert sent.body["tools"][0] == {
        "type": "function",
        "function": {"name": "bash", "description": BASH.description, "parameters": BASH.input_schema},
    }


def test_a_whole_tool_round_trip_satisfies_the_pairing_rules(server: OpenAIWireServer) -> None:
    call_a, call_b = ToolCall("call_a", "bash", {"command": "ls"}), ToolCall("call_b", "bash", {"command": "pwd"})
    transcript = [
        *USER,
        Message("assistant", "", tool_calls=(call_a, call_b)),
        Message("tool", "a.py\nb.py", tool_call_id="call_a", name="bash"),
        Message("tool", "/work", tool_call_id="call_b", name="bash"),
    ]
    server.push(openai_chat("All done."))
    r = model_for(server).complete(transcript, [BASH], max_tokens=100)

    assert (r.termination, r.text, r.tool_calls) == ("complete", "All done.", ())
    assistant = server.requests[0].body["messages"][2]
    assert assistant["content"] == ""  # never null: llama-cpp-python answers a null with HTTP 500
    assert json.loads(assistant["tool_calls"][1]["function"]["arguments"]) == {"command": "pwd"}
    assert server.requests[0].body["messages"][3] == {"role": "tool", "tool_call_id": "call_a", "content": "a.py\nb.py"}


def test_a_broken_transcript_is_rejected_by_the_server_as_the_provider_would(server: OpenAIWireServer) -> None:
    """Guards the server itself: a missing tool result must not pass silently."""
    call = ToolCall("call_a", "bash", {"command": "ls"})
    server.push(openai_chat("unused"))
    with pytest.raises(ProviderError) as info:
        model_for(server).complete([*USER, Message("assistant", tool_calls=(call,))], [BASH], max_tokens=10)
    assert info.value.status == 400 and not info.value.transient
    assert "never answered" in str(info.value)


def test_cut_off_arguments_are_a_plain_problem_and_written_back_as_an_empty_object(server: OpenAIWireServer) -> None:
    server.push(openai_chat(tool_calls=[("call_x", "bash", '{"command": "ls')]), openai_chat("ok"))
    model = model_for(server)
    r = model.complete(USER, [BASH], max_tokens=50)
    (call,) = r.tool_calls
    assert call.args == {} and "cut off at the token limit" in call.problem
    assert "__raw__" not in json.dumps(call.args) + call.problem
    assert r.termination == "tool_request"

    model.complete(
        [*USER, r.as_message(), Message("tool", "invalid args", tool_call_id="call_x")], [BASH], max_tokens=5
    )
    echoed = server.requests[1].body["messages"][2]["tool_calls"][0]["function"]["arguments"]
    assert echoed == "{}"  # a server that parses arguments (to render its chat template) can read it


@pytest.mark.parametrize(
    ("arguments", "finish_reason", "problem"),
    [
        ('{"command": "ls"', "tool_calls", "cut off at the token limit"),  # what llama.cpp sends at the limit
        ('{"command": "ls", "x', "tool_calls", "cut off at the token limit"),
        ('{"command": "ls" oops}', "length", "cut off at the token limit"),  # the provider said it was cut
        ('{"command": "ls" oops}', "tool_calls", "not valid JSON"),
        ("[1, 2]", "tool_calls", "must be a JSON object, got list"),
        ('"ls"', "tool_calls", "must be a JSON object, got str"),
    ],
)
def test_unusable_arguments_are_told_plainly(
    server: OpenAIWireServer, arguments: str, finish_reason: str, problem: str
) -> None:
    server.push(openai_chat(tool_calls=[("c1", "bash", arguments)], finish_reason=finish_reason))
    (call,) = model_for(server).complete(USER, [BASH], max_tokens=50).tool_calls
    assert call.args == {} and problem in call.problem


def test_empty_arguments_are_an_empty_object(server: OpenAIWireServer) -> None:
    server.push(openai_chat(tool_calls=[("c2", "bash", "")]))
    (call,) = model_for(server).complete(USER, [BASH], max_tokens=50).tool_calls
    assert (call.args, call.problem) == ({}, "")


def test_output_limit_truncates(server: OpenAIWireServer) -> None:
    server.push(openai_chat("one two three four five six seven eight"))
    r = model_for(server).complete(USER, [], max_tokens=3)
    assert r.termination == "truncated"
    assert r.raw_stop_reason == "length"
    assert r.text == "one two three"
    assert r.usage.output_tokens == 3
    assert "tools" not in server.requests[0].body


def test_max_completion_tokens_is_used_for_the_real_api_style(server: OpenAIWireServer) -> None:
    server.push(openai_chat("fine"))
    model_for(server, token_param="max_completion_tokens").complete(USER, [], max_tokens=64)
    body = server.requests[0].body
    assert body["max_completion_tokens"] == 64 and "max_tokens" not in body


def test_message_refusal_is_a_refusal_even_with_finish_reason_stop(server: OpenAIWireServer) -> None:
    server.push(openai_chat(None, refusal="I can't help with that.", finish_reason="stop"))
    r = model_for(server).complete(USER, [BASH], max_tokens=50)
    assert r.termination == "refusal"
    assert r.text == "I can't help with that."
    assert r.raw_stop_reason == "stop"


def test_content_filter_is_a_refusal(server: OpenAIWireServer) -> None:
    server.push(openai_chat("", finish_reason="content_filter"))
    assert model_for(server).complete(USER, [], max_tokens=50).termination == "refusal"


def test_lenient_server_stop_with_tool_calls_is_a_tool_request(server: OpenAIWireServer) -> None:
    server.push(openai_chat(tool_calls=[("c1", "bash", {"command": "ls"})], finish_reason="stop"))
    assert model_for(server).complete(USER, [BASH], max_tokens=50).termination == "tool_request"


def test_429_then_success_is_retried(server: OpenAIWireServer) -> None:
    server.push(openai_error(429, "Rate limit reached", "rate_limit_error"), openai_chat("hello"))
    retries: list[tuple[int, ProviderError]] = []
    sleeps: list[float] = []
    r, attempts = complete_with_retries(
        model_for(server),
        USER,
        [],
        max_tokens=10,
        max_attempts=3,
        backoff_s=0.5,
        backoff_max_s=8,
        sleep=sleeps.append,
        on_retry=lambda n, e, _: retries.append((n, e)),
    )
    assert (r.text, attempts) == ("hello", 2)
    assert [(n, e.status, e.transient) for n, e in retries] == [(1, 429, True)]
    assert "Rate limit reached" in str(retries[0][1])
    assert len(sleeps) == 1 and 0 <= sleeps[0] <= 0.5
    assert len(server.requests) == 2


def test_repeated_500s_end_in_a_transient_provider_error_after_max_attempts(server: OpenAIWireServer) -> None:
    server.push(*[openai_error(500, "upstream exploded")] * 3)
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model_for(server), USER, [], max_tokens=10, max_attempts=3, backoff_s=0.1, backoff_max_s=1, sleep=no_sleep
        )
    assert info.value.transient and info.value.status == 500
    assert "upstream exploded" in str(info.value)
    assert len(server.requests) == 3
    assert info.value.__cause__ is not None  # the SDK error is chained, not swallowed


def test_400_is_raised_at_once(server: OpenAIWireServer) -> None:
    server.push(openai_error(400, "bad tool schema", "invalid_request_error"), openai_chat("never"))
    with pytest.raises(ProviderError) as info:
        complete_with_retries(
            model_for(server), USER, [], max_tokens=10, max_attempts=5, backoff_s=0.1, backoff_max_s=1, sleep=no_sleep
        )
    assert not info.value.transient and info.value.status == 400
    assert len(server.requests) == 1


def test_401_is_not_transient(server: OpenAIWireServer) -> None:
    server.push(openai_error(401, "Incorrect API key", "invalid_request_error"))
    with pytest.raises(ProviderError) as info:
        model_for(server).complete(USER, [], max_tokens=10)
    assert (info.value.status, info.value.transient) == (401, False)


def test_dropped_connection_is_transient(server: OpenAIWireServer) -> None:
    server.push(drop_connection(), openai_chat("back"))
    r, attempts = complete_with_retries(
        model_for(server), USER, [], max_tokens=10, max_attempts=2, backoff_s=0, backoff_max_s=0, sleep=no_sleep
    )
    assert (r.text, attempts) == ("back", 2)


def test_timeout_is_transient(server: OpenAIWireServer) -> None:
    server.push(Reply(200, openai_chat("late").body, delay_s=2.0))
    with pytest.raises(ProviderError) as info:
        model_for(server, timeout_s=0.2).complete(USER, [], max_tokens=10)
    assert info.value.transient and info.value.status is None


def test_no_choices_is_a_provider_error(server: OpenAIWireServer) -> None:
    body = openai_chat("x").body
    server.push(Reply(200, {**body, "choices": []}))
    with pytest.raises(ProviderError, match="no choices"):
        model_for(server).complete(USER, [], max_tokens=10)


def test_lenient_servers_missing_ids_and_types_still_yield_usable_calls(server: OpenAIWireServer) -> None:
    body = openai_chat(tool_calls=[("x", "bash", {"command": "ls"}), ("y", "bash", {"command": "pwd"})]).body
    for call in body["choices"][0]["message"]["tool_calls"]:
        del call["id"], call["type"]
    body["choices"][0]["message"]["tool_calls"][1]["function"]["arguments"] = {"command": "pwd"}
    server.push(Reply(200, body))
    r = model_for(server).complete(USER, [BASH], max_tokens=50)
    # no id is made up here: the host gives each call one of its own (kernel.turn.fresh_ids), unique in the run
    assert [(c.id, c.args) for c in r.tool_calls] == [("", {"command": "ls"}), ("", {"command": "pwd"})]
