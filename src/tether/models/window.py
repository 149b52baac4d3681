"""The context window: how much a model can read and write in one call, and what to do when it is full.

Three jobs, all pure:

* the **model table** — each known model's window and output limit (tokens), overridable in the
  envelope (``agent.context_window``, ``agent.max_output_tokens``);
* the **output budget** of a call — ``max_tokens`` defaults to what fits: the output limit, or the
  room the prompt leaves in the window, whichever is smaller; a prompt that leaves less than
  :data:`MIN_OUTPUT_TOKENS` is reported *before* calling;
* **recognising an overflow** — providers say "context too long" in many words
  (``context_length_exceeded``, HTTP 413, "prompt is too long", "exceeds the available context
  size" …); :func:`overflow_from` turns them into a typed :class:`ContextOverflow` (never an
  outage), keeping the window and prompt size when the message states them, and :func:`shrink`
  says what output budget to retry with, once.

The run's own calls count their prompt with :mod:`tether.models.tokens` (tiktoken for OpenAI's models);
:func:`estimate_tokens` is the fallback for everyone else, and :func:`budget_for` (the reviewer's call)
uses it alone: one token per :data:`CHARS_PER_TOKEN` characters of the request, which overestimates
English prose and code, so the check errs towards leaving room. Providers' own counts, when they give
them, are recorded after the call.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether.errors import ContextOverflow
from tether.models.base import Message, ToolSpec
from tether.models.pricing import longest_prefix, split_provider

CHARS_PER_TOKEN = 3.5
MIN_OUTPUT_TOKENS = 256
"""Below this an assistant turn cannot hold a useful tool call: report, do not call."""
UNKNOWN_WINDOW_OUTPUT = 2048
"""``max_tokens`` for a model whose window nobody stated (a local server): an overflow then teaches it."""
OVERFLOW_MARGIN = 16

# (context window, output limit) in tokens, as published by the providers when this was written.
MODEL_LIMITS: dict[str, tuple[int, int]] = {
    # OpenAI
    "gpt-5.1": (400_000, 128_000),
    "gpt-5": (400_000, 128_000),
    "gpt-5-pro": (400_000, 272_000),
    "gpt-5-mini": (400_000, 128_000),
    "gpt-5-nano": (400_000, 128_000),
    "gpt-4.1": (1_047_576, 32_768),
    "gpt-4.1-mini": (1_047_576, 32_768),
    "gpt-4.1-nano": (1_047_576, 32_768),
    "gpt-4o": (128_000, 16_384),
    "gpt-4o-mini": (128_000, 16_384),
    "o1": (200_000, 100_000),
    "o3": (200_000, 100_000),
    "o3-pro": (200_000, 100_000),
    "o3-mini": (200_000, 100_000),
    "o4-mini": (200_000, 100_000),
    # Anthropic
    "claude-opus-4-5": (200_000, 64_000),
    "claude-opus-4-1": (200_000, 32_000),
    "claude-opus-4": (200_000, 32_000),
    "claude-sonnet-4-5": (200_000, 64_000),
    "claude-sonnet-4": (200_000, 64_000),
    "claude-3-7-sonnet": (200_000, 64_000),
    "claude-haiku-4-5": (200_000, 64_000),
    "claude-3-5-haiku": (200_000, 8_192),
    "claude-3-haiku": (200_000, 4_096),
}


@dataclass(frozen=True)
class Limits:
    """A model's window and output limit; ``None`` where nobody knows (a local model not in the table)."""

    window: int | None
    max_output: int | None


def limits_for(model: str, *, window: int | None = None, max_output: int | None = None) -> Limits:
    """The envelope's settings where given, else the model table (longest listed prefix of a dated name)."""
    _, bare = split_provider(model)
    key = bare if bare in MODEL_LIMITS else longest_prefix(bare, MODEL_LIMITS)
    table_window, table_output = MODEL_LIMITS[key] if key is not None else (None, None)
    return Limits(window or table_window, max_output or table_output)


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def prompt_estimate(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> int:
    """Estimated input tokens of a request: every message's text and calls, and every tool's schema."""
    parts: list[str] = []
    for m in messages:
        parts.append(m.content)
        parts += [c.name + json.dumps(c.args) for c in m.tool_calls]
    parts += [t.name + t.description + json.dumps(t.input_schema) for t in tools]
    return estimate_tokens("".join(parts)) + 4 * len(messages)  # a few tokens of framing per message


@dataclass(frozen=True)
class OutputBudget:
    """``max_tokens`` for one call, or why the call cannot be made (``problem``, naming the settings)."""

    max_tokens: int
    prompt_tokens: int
    window: int | None
    problem: str = ""


def output_budget(limits: Limits, prompt_tokens: int) -> OutputBudget:
    """What fits: the output limit, capped by the room the prompt leaves in the window."""
    cap = limits.max_output or (None if limits.window else UNKNOWN_WINDOW_OUTPUT)
    if limits.window is None:
        return OutputBudget(cap or UNKNOWN_WINDOW_OUTPUT, prompt_tokens, None)
    room = limits.window - prompt_tokens
    if room < MIN_OUTPUT_TOKENS:
        return OutputBudget(
            0,
            prompt_tokens,
            limits.window,
            problem=f"the conversation (~{prompt_tokens} tokens, estimated) leaves {max(room, 0)} of the model's "
            f"{limits.window}-token window for output; at least {MIN_OUTPUT_TOKENS} are needed",
        )
    return OutputBudget(min(cap, room) if cap else room, prompt_tokens, limits.window)


def budget_for(
    model: str, messages: Sequence[Message], tools: Sequence[ToolSpec], *, window: int | None, max_output: int | None
) -> OutputBudget:
    """The output budget of one call to ``model`` with these messages and tools, under the envelope's settings."""
    return output_budget(limits_for(model, window=window, max_output=max_output), prompt_estimate(messages, tools))


# ---- overflow ------------------------------------------------------------------------------

_OVERFLOW_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length exceeded",
    "context window",
    "contextwindowexceeded",
    "context size",
    "exceed_context_size",
    "prompt is too long",
    "input is too long",
    "exceed context limit",
    "too many tokens",
    "reduce the length of the messages",
)
_WINDOW = (
    r"maximum context length is (\d+)",
    r"context length is only (\d+)",
    r"> (\d+) maximum",
    r"\+ \d+ > (\d+)",
    r'"n_ctx":\s*(\d+)',
)
_PROMPT = (
    r"\((\d+) in the messages",
    r"request has (\d+) input tokens",
    r"prompt is too long: (\d+) tokens",
    r"(\d+) \+ \d+ > \d+",
    r'"n_prompt_tokens":\s*(\d+)',
)


def overflow_from(status: int | None, message: str, body: Any = None, *, who: str) -> ContextOverflow | None:
    """A :class:`ContextOverflow` when a provider's error says the request did not fit, else None."""
    text = message + " " + (json.dumps(body) if body is not None else "")
    lowered = text.lower()
    if status != 413 and not any(w in lowered for w in _OVERFLOW_WORDS):
        return None
    if status is not None and status >= 500 and "context" not in lowered:
        return None
    return ContextOverflow(
        f"{who}: context overflow (HTTP {status}): {message}",
        status=status,
        window=_first_int(_WINDOW, text),
        prompt_tokens=_first_int(_PROMPT, text),
    )


def _first_int(patterns: Sequence[str], text: str) -> int | None:
    for pattern in patterns:
        m = re.search(pattern, text, flags=re.IGNORECASE)
        if m:
            return int(m.group(1))
    return None


def shrink(err: ContextOverflow, max_tokens: int) -> int | None:
    """The smaller output budget to retry with once, or None when no smaller one can fit.

    With the window and prompt size stated, exactly the room left (less a small margin);
    otherwise half of what was asked. Never below :data:`MIN_OUTPUT_TOKENS`.
    """
    if err.window is not None and err.prompt_tokens is not None:
        smaller = err.window - err.prompt_tokens - OVERFLOW_MARGIN
    else:
        smaller = max_tokens // 2
    return smaller if MIN_OUTPUT_TOKENS <= smaller < max_tokens else None


def learned_window(records: Sequence[Mapping[str, Any]]) -> int | None:
    """The last window a provider stated in an overflow (from ``model.retried``/``model.failed`` payloads)."""
    for payload in reversed(records):
        if payload.get("window"):
            return int(payload["window"])
    return None
