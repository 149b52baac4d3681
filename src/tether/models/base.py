"""The provider-neutral vocabulary between the kernel and any model.

The kernel only ever sees these plain frozen values, never an SDK object, so a
run's transcript means the same thing whichever provider produced it, and a
test double is a few lines. Adapters translate both ways at their edge.

``Model`` is deliberately one method: given the conversation so far and the
tools on offer, return one assistant turn. Retrying, pricing, budgets and what
to do with the turn are the host's business, not the model's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeGuard, runtime_checkable

Termination = Literal["complete", "tool_request", "truncated", "refusal", "error", "unknown"]
"""Why the model stopped, normalised across providers. The host decides what follows.

Adapters never return ``"error"``: a failed call raises ``ProviderError``. The
value exists so the host can record a turn that ended in a provider failure
with the same vocabulary as every other turn.
"""

COMPACTED_HEAD = "[{turns} earlier turns were compacted"
"""How the message standing for compacted turns begins (tether.kernel.compaction), with how many turns it replaced:
a model that counts its turns from the conversation (the scripted one) adds them back."""

TERMINATIONS: tuple[Termination, ...] = ("complete", "tool_request", "truncated", "refusal", "error", "unknown")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call the model proposed. ``id`` pairs it with its result message.

    ``problem`` is set by an adapter when the call cannot run as proposed (no
    function name, arguments cut off at the token limit, arguments that are not a
    JSON object); ``args`` is then empty. The call is not dropped: the host tells
    the model the problem in plain words as the call's result, which is more useful
    (and more honest in the log) than pretending it never asked.
    """

    id: str
    name: str
    args: dict[str, Any] = field(default_factory=dict)
    problem: str = ""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model is told about it: a name, what it is for, a JSON schema."""

    name: str
    description: str
    input_schema: dict[str, Any]

    def object_schema(self) -> dict[str, Any]:
        """The schema as providers require it: a JSON-schema *object* (Anthropic rejects ``{}``)."""
        if self.input_schema.get("type") == "object":
            return self.input_schema
        return {"type": "object", "properties": {}, **self.input_schema}


@dataclass(frozen=True, slots=True)
class Message:
    """One conversation entry. ``tool`` messages answer the call named by ``tool_call_id``."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None


MAX_COUNT = 2**53
"""The largest token count a provider's usage may state: past it JSON's numbers are no longer exact, no call was
ever billed so many, and a price of one (10**400 tokens) does not fit a float. More is not a count."""


def is_count(n: object) -> TypeGuard[int]:
    """Whether a usage field a server sent is a token count: an integer (not a bool) from 0 to :data:`MAX_COUNT`."""
    return isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= MAX_COUNT


@dataclass(frozen=True)
class Usage:
    """Tokens billed for one call (input includes any cached-prompt tokens).

    ``reported`` is False when the provider sent no usage (or null fields): the
    counts are then 0 here and the host records an estimate, saying it is one.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reported: bool = True

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.reported and other.reported,
        )


@dataclass(frozen=True)
class ModelResponse:
    """One assistant turn: what it said, what it asked for, and why it stopped.

    ``raw_stop_reason`` keeps the provider's own word (``"length"``,
    ``"end_turn"`` …) for the log; ``termination`` is what the host acts on.
    ``model`` is the model the provider says answered (may be a dated snapshot).
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    termination: Termination
    raw_stop_reason: str | None
    usage: Usage
    model: str

    def as_message(self) -> Message:
        """The assistant message to append to the transcript for this turn."""
        return Message(role="assistant", content=self.text, tool_calls=self.tool_calls)


@runtime_checkable
class Model(Protocol):
    """Anything that can produce the next assistant turn.

    ``complete`` raises :class:`tether.errors.ProviderError` (with ``transient``
    set for failures worth retrying) and nothing else on provider failure.
    """

    name: str
    """The spec it was loaded from, e.g. ``"openai:gpt-4.1"`` or ``"scripted:trajectory.yaml"``."""

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse: ...
