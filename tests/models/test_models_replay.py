"""The adapters against answers a real server gave: llama-cpp-python 0.3.36, recorded (tests/fixtures/providers/).

The server replays the recorded responses over HTTP and refuses what the real server refused
(:class:`tether.models.testing.LlamaCppServer`), so each test fails on the behaviour that broke real
runs: doubled calls, ``content: null``, schemas that crash the server, a full window read as an outage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.errors import ContextOverflow, ProviderError
from tether.models.base import Message, ToolSpec
from tether.models.openai_adapter import OpenAIModel
from tether.models.profiles import PROFILES
from tether.models.retry import complete_with_retries
from tether.models.testing import PROXY_ENV_VARS, Exchange, LlamaCppServer, Reply, load_exchanges
from tether.models.window import shrink

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "providers" / "llama-cpp-python-0.3.36"
LEGACY = load_exchanges(FIXTURES / "tool-calls-plus-legacy-function-call.jsonl")
NULL_500 = load_exchanges(FIXTURES / "forced-tool-choice_content-null-500.jsonl")
OVERFLOW = load_exchanges(FIXTURES / "chatml-function-calling_context-exceeded.jsonl")
USER = [Message("system", "You fix bugs."), Message("user", "Fix the failing test.")]
TOOLS = [
    ToolSpec("list_dir", "List a directory.", {"type": "object", "properties": {"path": {"type": "string"}}}),
    ToolSpec(
        "finish",
        "Claim completion.",
        {"type": "object", "properties": {"summary": {"type": "string", "maxLength": 20_000}}},
    ),
    ToolSpec(
        "search",
        "Search.",
        {"type": "object", "properties": {"pattern": {"type": "string", "minLength": 1, "maxLength": 2_000_000}}},
    ),
]


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, "OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def ok(exchanges: list[Exchange]) -> list[Reply]:
    return [e.reply for e in exchanges if e.status == 200]


@pytest.fixture
def server() -> Iterator[LlamaCppServer]:
    with LlamaCppServer(null_content_error=NULL_500[1].response) as s:
        yield s


def llama(server: LlamaCppServer) -> OpenAIModel:
    return OpenAIModel("smollm2", api_key="x", base_url=server.base_url, timeout_s=10, profile=PROFILES["llama.cpp"])


def test_the_recordings_show_what_the_tests_claim() -> None:
    """Guards the fixtures: every recorded tool call is doubled in function_call; null content got a 500."""
    for e in ok(LEGACY):
        message = e.body["choices"][0]["message"]
        assert message["tool_calls"] and message["function_call"] == message["tool_calls"][0]["function"]
    assert NULL_500[1].status == 500 and "Input should be a valid string" in json.dumps(NULL_500[1].response)
    assert [e.status for e in OVERFLOW if e.status == 400] == [400, 400]


def test_a_call_sent_in_tool_calls_and_function_call_is_one_call(server: LlamaCppServer) -> None:
    server.push(*ok(LEGACY))
    model, transcript = llama(server), list(USER)
    for recorded in ok(LEGACY):
        r = model.complete(transcript, TOOLS, max_tokens=512)
        want = recorded.body["choices"][0]["message"]["tool_calls"][0]
        assert len(r.tool_calls) == 1 and r.tool_calls[0].id == want["id"]
        assert r.tool_calls[0].name == want["function"]["name"] and not r.tool_calls[0].problem
        assert r.text == "" and r.termination == "tool_request"
        transcript += [r.as_message(), Message("tool", "ok", tool_call_id=r.tool_calls[0].id)]
    assert server.pending == 0 and not server.crashed


def test_only_legacy_function_call_still_counts_once(server: LlamaCppServer) -> None:
    body = json.loads(json.dumps(ok(LEGACY)[0].body))
    del body["choices"][0]["message"]["tool_calls"]
    server.push(Reply(200, body))
    (call,) = llama(server).complete(USER, TOOLS, max_tokens=512).tool_calls
    assert call.name == "list_dir" and call.args == {"path": "/tmp/tutorial-8032196d7f.csv"}


def test_assistant_content_is_sent_as_an_empty_string_so_turn_two_is_not_a_500(server: LlamaCppServer) -> None:
    server.push(ok(NULL_500)[0], *ok(LEGACY)[1:2])
    model = llama(server)
    first = model.complete(USER, TOOLS, max_tokens=512)
    (call,) = first.tool_calls
    second = model.complete(
        [*USER, first.as_message(), Message("tool", "x", tool_call_id=call.id)], TOOLS, max_tokens=512
    )
    assert second.tool_calls[0].name == "read_file"
    sent = server.requests[1].body["messages"][2]
    assert sent["role"] == "assistant" and sent["content"] == ""


def test_a_null_content_really_is_refused_by_the_replayed_server(server: LlamaCppServer) -> None:
    """Guards the server double: the recorded 500 comes back for what the real server refused."""
    import openai

    client = openai.OpenAI(api_key="x", base_url=server.base_url, max_retries=0)
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": None}]
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(model="m", messages=messages, max_tokens=10)  # type: ignore[arg-type]
    assert "Input should be a valid string" in str(info.value)


def test_llama_cpp_profile_strips_the_lengths_that_crash_the_server_and_keeps_property_names(
    server: LlamaCppServer,
) -> None:
    server.push(*ok(LEGACY)[:1])
    llama(server).complete(USER, TOOLS, max_tokens=512)
    assert not server.crashed
    tools = {t["function"]["name"]: t["function"]["parameters"] for t in server.requests[0].body["tools"]}
    assert "maxLength" not in json.dumps(tools) and "minLength" not in json.dumps(tools)
    assert tools["search"]["properties"]["pattern"] == {"type": "string"}  # a property called pattern survives


def test_the_hosted_profile_would_have_crashed_it(server: LlamaCppServer) -> None:
    """The same tools with the hosted-API profile (schemas untouched) reproduce the recorded crash."""
    server.push(*ok(LEGACY)[:2])
    hosted = OpenAIModel("smollm2", api_key="x", base_url=server.base_url, timeout_s=5, profile=PROFILES["openai"])
    with pytest.raises(ProviderError) as info:
        hosted.complete(USER, TOOLS, max_tokens=512)
    assert info.value.transient and server.crashed


def test_the_recorded_overflow_is_a_context_overflow_with_the_servers_numbers(server: LlamaCppServer) -> None:
    recorded = next(e for e in OVERFLOW if e.status == 400)
    server.push(recorded.reply)
    with pytest.raises(ContextOverflow) as info:
        llama(server).complete(USER, TOOLS, max_tokens=512)
    err = info.value
    assert (err.window, err.prompt_tokens, err.status, err.failure) == (4096, 4123, 400, "context_overflow")
    assert not err.transient and "key" not in str(err).lower()
    assert shrink(err, 4096) is None  # the messages alone exceed the window: no output budget can fit


def test_an_overflow_with_room_left_is_retried_once_with_the_output_that_fits() -> None:
    with LlamaCppServer(ok(OVERFLOW)[:1], n_ctx=4096) as server:
        retries: list[tuple[int, str, int]] = []
        r, attempts = complete_with_retries(
            llama(server),
            USER,
            TOOLS,
            max_tokens=4096,
            max_attempts=3,
            backoff_s=0,
            backoff_max_s=0,
            on_retry=lambda n, e, m: retries.append((n, e.failure, m)),
        )
    assert attempts == 2 and r.termination == "complete"
    sent = [req.body["max_tokens"] for req in server.requests]
    assert sent[0] == 4096 and sent[1] < 4096 and retries == [(1, "context_overflow", sent[1])]


def test_an_overflow_is_not_retried_as_an_outage() -> None:
    recorded = next(e for e in OVERFLOW if e.status == 400)
    with LlamaCppServer([recorded.reply] * 3) as server, pytest.raises(ContextOverflow) as info:
        complete_with_retries(llama(server), USER, TOOLS, max_tokens=512, max_attempts=3, backoff_s=0, backoff_max_s=0)
    assert len(server.requests) == 1 and info.value.attempts == 1


@pytest.mark.parametrize(
    "usage", [None, {"prompt_tokens": None, "completion_tokens": None}, {"prompt_tokens": 5}, "n/a"], ids=str
)
def test_null_or_missing_usage_is_unreported_not_a_crash(server: LlamaCppServer, usage: object) -> None:
    body = json.loads(json.dumps(ok(LEGACY)[0].body))
    body["usage"] = usage
    server.push(Reply(200, body))
    r = llama(server).complete(USER, TOOLS, max_tokens=512)
    assert not r.usage.reported and r.usage.total_tokens == 0 and len(r.tool_calls) == 1


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        (lambda m: m["tool_calls"][0]["function"].pop("name"), "no function name"),
        (lambda m: m["tool_calls"][0]["function"].update(name=None), "no function name"),
        (lambda m: m["tool_calls"][0]["function"].update(name="  "), "no function name"),
        (lambda m: m["tool_calls"][0]["function"].update(arguments='{ "path": "/tmp/x'), "cut off at the token limit"),
        (lambda m: m["tool_calls"][0]["function"].update(arguments="{path: x}"), "not valid JSON"),
    ],
)
def test_unusable_calls_carry_a_plain_problem(server: LlamaCppServer, mutate: object, problem: str) -> None:
    body = json.loads(json.dumps(ok(LEGACY)[0].body))
    mutate(body["choices"][0]["message"])  # type: ignore[operator]
    server.push(Reply(200, body))
    (call,) = llama(server).complete(USER, TOOLS, max_tokens=512).tool_calls
    assert problem in call.problem and call.args == {} and "__raw__" not in call.problem


@pytest.mark.parametrize(
    "body",
    [
        {"choices": []},
        {"choices": [{"message": "hi"}]},
        {"choices": [{"message": {"content": 42}}]},
        {"choices": [{"message": {"tool_calls": "list_dir"}}]},
        {"choices": [{"message": {"tool_calls": ["x"]}}]},
        {"choices": [{"message": {"content": "x"}, "finish_reason": 7}]},
        [1, 2],
        "plain text",
        {"error": {"message": "model is loading"}},
    ],
    ids=lambda b: json.dumps(b)[:40],
)
def test_malformed_answers_are_a_malformed_provider_error(server: LlamaCppServer, body: object) -> None:
    server.push(Reply(200, body))
    with pytest.raises(ProviderError) as info:
        llama(server).complete(USER, TOOLS, max_tokens=512)
    assert info.value.failure == "malformed" and not info.value.transient
