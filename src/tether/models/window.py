"""The context window: how much a model can read and write in one call, and what to do when it is full.

Three jobs, all pure:

* the **limits** of a call — the model's window and output limit (tokens): ``tether run --context-window``,
  else ``agent.context_window`` / ``agent.max_output_tokens``, else the model table's entry
  (:mod:`tether.models.catalog`: the envelope's ``pricing``, its price file, the built-in table);
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

from tether.envelope.schema import Price
from tether.errors import ContextOverflow
from tether.models.base import Message, ToolSpec
from tether.models.catalog import entries_for, first_stated

CHARS_PER_TOKEN = 3.5
MIN_OUTPUT_TOKENS = 256
"""Below this an assistant turn cannot hold a useful tool call: report, do not call."""
UNKNOWN_WINDOW_OUTPUT = 2048
"""``max_tokens`` for a model whose window nobody stated (a local server): an overflow then teaches it."""
OVERFLOW_MARGIN = 16


@dataclass(frozen=True)
class Limits:
    """A model's window and output limit; ``None`` where nobody knows (a local model not in the table)."""

    window: int | None
    max_output: int | None


def limits_for(
    model: str,
    overrides: Mapping[str, Price] | None = None,
    *,
    window: int | None = None,
    max_output: int | None = None,
) -> Limits:
    """The run's settings where given (``window`` and ``max_output``: the CLI flag or ``agent.*``), else the
    model table's entry for ``model``, overrides first (:mod:`tether.models.catalog`), each limit on its own."""
    entries = entries_for(model, overrides)
    return Limits(
        window or first_stated(entries, "context_window"), max_output or first_stated(entries, "max_output_tokens")
    )


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
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolSpec],
    overrides: Mapping[str, Price] | None = None,
    *,
    window: int | None,
    max_output: int | None,
) -> OutputBudget:
    """The output budget of one call to ``model`` with these messages and tools, under the run's settings."""
    limits = limits_for(model, overrides, window=window, max_output=max_output)
    return output_budget(limits, prompt_estimate(messages, tools))


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
