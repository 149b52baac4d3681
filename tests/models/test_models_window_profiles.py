"""The pure parts of provider handling: the model table, output budgets, overflow recognition, profiles."""

from __future__ import annotations

import pytest

from tether.errors import ContextOverflow
from tether.models.anthropic_adapter import from_anthropic_message, to_anthropic_messages
from tether.models.base import Message, ToolCall
from tether.models.profiles import PROFILES, detect, simplify_schema
from tether.models.window import (
    MIN_OUTPUT_TOKENS,
    UNKNOWN_WINDOW_OUTPUT,
    Limits,
    limits_for,
    output_budget,
    overflow_from,
    shrink,
)


def test_the_model_table_knows_dated_snapshots_and_the_envelope_overrides_it() -> None:
    assert limits_for("anthropic:claude-sonnet-4-5-20250929") == Limits(200_000, 64_000)
    assert limits_for("openai:gpt-4.1-mini") == Limits(1_047_576, 32_768)
    assert limits_for("openai:gpt-4.1", window=8_000, max_output=500) == Limits(8_000, 500)
    assert limits_for("openai:smollm2") == Limits(None, None)  # a local model: nobody knows


def test_the_output_budget_is_what_fits() -> None:
    assert output_budget(Limits(4096, None), 1000).max_tokens == 3096
    assert output_budget(Limits(4096, 1024), 1000).max_tokens == 1024
    assert output_budget(Limits(None, None), 10_000).max_tokens == UNKNOWN_WINDOW_OUTPUT
    assert output_budget(Limits(None, 300), 10_000).max_tokens == 300
    full = output_budget(Limits(4096, 4096), 4096 - MIN_OUTPUT_TOKENS + 1)
    assert full.problem and "4096-token window" in full.problem and full.max_tokens == 0


@pytest.mark.parametrize(
    ("status", "message", "window", "prompt"),
    [
        (
            400,
            "This model's maximum context length is 4096 tokens. However, you requested 8219 tokens "
            "(4123 in the messages, 4096 in the completion).",
            4096,
            4123,
        ),
        (
            400,
            "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is "
            "8192 tokens and your request has 5000 input tokens (4096 > 8192 - 5000).",
            8192,
            5000,
        ),
        (400, "prompt is too long: 208000 tokens > 200000 maximum", 200_000, 208_000),
        (400, "input length and `max_tokens` exceed context limit: 198000 + 21333 > 200000", 200_000, 198_000),
        (
            400,
            'the request exceeds the available context size {"type": "exceed_context_size_error", '
            '"n_prompt_tokens": 5000, "n_ctx": 4096}',
            4096,
            5000,
        ),
        (400, "litellm.ContextWindowExceededError: litellm.BadRequestError: mock", None, None),
        (413, "Request Entity Too Large", None, None),
    ],
)
def test_providers_words_for_a_full_window_are_an_overflow(
    status: int, message: str, window: int | None, prompt: int | None
) -> None:
    err = overflow_from(status, message, who="p")
    assert isinstance(err, ContextOverflow) and not err.transient
    assert (err.window, err.prompt_tokens) == (window, prompt)


@pytest.mark.parametrize(
    ("status", "message"),
    [(429, "rate limit exceeded"), (500, "internal error"), (401, "invalid api key"), (400, "unknown model")],
)
def test_other_errors_are_not_overflows(status: int, message: str) -> None:
    assert overflow_from(status, message, who="p") is None


def test_shrink_uses_the_stated_room_or_halves_and_never_goes_below_the_minimum() -> None:
    assert shrink(ContextOverflow("x", window=4096, prompt_tokens=3000), 4096) == 4096 - 3000 - 16
    assert shrink(ContextOverflow("x", window=4096, prompt_tokens=4123), 4096) is None
    assert shrink(ContextOverflow("x"), 2048) == 1024
    assert shrink(ContextOverflow("x"), MIN_OUTPUT_TOKENS + 1) is None


@pytest.mark.parametrize(
    ("provider", "url", "chosen", "profile"),
    [
        ("openai", None, None, "openai"),
        ("anthropic", None, None, "anthropic"),
        ("openai", "https://api.openai.com/v1", None, "openai"),
        ("openai", "http://127.0.0.1:8080/v1", None, "llama.cpp"),
        ("openai", "http://localhost:11434/v1", None, "ollama"),
        ("openai", "http://127.0.0.1:1234/v1", None, "lmstudio"),
        ("anthropic", "http://127.0.0.1:4000", None, "litellm"),
        ("openai", "http://127.0.0.1:8000/v1", None, "local"),
        ("openai", "http://127.0.0.1:8000/v1", "vllm", "vllm"),
        ("openai", None, "llama.cpp", "llama.cpp"),
    ],
)
def test_profiles_are_chosen_or_detected_from_the_url(
    provider: str, url: str | None, chosen: str | None, profile: str
) -> None:
    assert detect(provider, url, chosen).name == profile  # type: ignore[arg-type]


def test_local_profiles_strip_length_limits_but_not_properties_with_those_names() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "pattern": "^a", "maxLength": 9},
            "items": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 3},
        },
        "required": ["pattern"],
    }
    local = simplify_schema(schema, PROFILES["llama.cpp"])
    assert local == {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "items": {"type": "array", "items": {"type": "string"}}},
        "required": ["pattern"],
    }
    assert simplify_schema(schema, PROFILES["openai"]) is schema


def test_anthropic_never_gets_an_empty_or_blank_text_block() -> None:
    call = ToolCall("t1", "bash", {"command": "ls"})
    _, wire = to_anthropic_messages(
        [
            Message("user", "go"),
            Message("assistant", "  \n", tool_calls=(call,)),
            Message("tool", "", tool_call_id="t1"),
            Message("assistant", ""),
            Message("user", " "),
        ]
    )
    blocks = [b for m in wire for b in m["content"]]
    assert all(str(b.get("text", "x")).strip() for b in blocks if isinstance(b, dict))
    assert [m["role"] for m in wire] == ["user", "assistant", "user"]


def test_anthropic_reader_is_tolerant() -> None:
    r = from_anthropic_message(
        {
            "content": [
                {"type": "tool_use", "id": "a", "input": {}},
                {"type": "tool_use", "id": "b", "name": "bash", "input": "ls"},
                {"type": "text", "text": None},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": None, "output_tokens": 3},
        },
        requested_model="m",
    )
    assert "no tool name" in r.tool_calls[0].problem and "JSON object" in r.tool_calls[1].problem
    assert not r.usage.reported and r.text == "" and r.model == "m"
