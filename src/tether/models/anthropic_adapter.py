"""``anthropic:MODEL`` — the Messages API with tool use, through the official SDK.

Our flat transcript becomes Anthropic's shape: system messages go to the
separate ``system`` parameter; assistant tool calls become ``tool_use`` blocks;
tool results become ``tool_result`` blocks in a *user* message, and adjacent
messages that land on the same role (several tool results in a row, or a tool
result followed by a user note) are merged into one message, because the API
wants user and assistant turns to alternate and all results of one assistant
turn in the next user message. The SDK's own retries are off (``max_retries=0``).

SDK exceptions become :class:`ProviderError` here, with ``raise … from``:

    anthropic.APIStatusError 408/409/429/5xx/529 → ProviderError(transient=True, status)
    anthropic.APIStatusError other               → ProviderError(transient=False, status)
    anthropic.APIConnectionError / timeout       → ProviderError(transient=True)
    any other anthropic.AnthropicError           → ProviderError(transient=False)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import anthropic
from anthropic.types import ContentBlockParam, MessageParam, ToolParam, ToolResultBlockParam
from anthropic.types import Message as AnthropicMessage

from tether.errors import ProviderError
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.retry import is_transient_status
from tether.models.termination import anthropic_termination


class AnthropicModel:
    """One ``messages.create`` call per :meth:`complete`."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        auth_token: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self.client = client or anthropic.Anthropic(
            api_key=api_key, auth_token=auth_token, base_url=base_url, timeout=timeout_s, max_retries=0
        )

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        system, wire_messages = to_anthropic_messages(messages)
        wire_tools = to_anthropic_tools(tools)
        try:
            reply = self.client.messages.create(
                model=self.model,
                max_tokens=max_tokens,
                messages=wire_messages,
                system=system if system else anthropic.omit,
                tools=wire_tools if wire_tools else anthropic.omit,
            )
        except anthropic.APIStatusError as exc:
            raise ProviderError(
                f"anthropic {self.model}: HTTP {exc.status_code}: {exc.message}",
                transient=is_transient_status(exc.status_code),
                status=exc.status_code,
            ) from exc
        except anthropic.APIConnectionError as exc:  # includes APITimeoutError
            raise ProviderError(f"anthropic {self.model}: {exc.message}", transient=True) from exc
        except anthropic.AnthropicError as exc:
            raise ProviderError(f"anthropic {self.model}: {exc}", transient=False) from exc
        return from_anthropic_message(reply, requested_model=self.model)


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[ToolParam]:
    return [{"name": t.name, "description": t.description, "input_schema": t.object_schema()} for t in tools]


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[MessageParam]]:
    """``(system prompt, messages)`` in Messages-API form, same-role neighbours merged."""
    system: list[str] = []
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []

    def add(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> None:
        if not blocks:  # the API rejects empty content; an empty turn carries nothing anyway
            return
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))

    for m in messages:
        if m.role == "system":
            system.append(m.content)
        elif m.role == "user":
            add("user", [{"type": "text", "text": m.content}] if m.content else [])
        elif m.role == "tool":
            result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": m.tool_call_id or ""}
            if m.content:
                result["content"] = m.content
            add("user", [result])
        else:
            blocks: list[ContentBlockParam] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args} for c in m.tool_calls]
            add("assistant", blocks)
    wire: list[MessageParam] = []
    for role, blocks in turns:
        wire.append({"role": "user", "content": blocks} if role == "user" else {"role": "assistant", "content": blocks})
    return "\n\n".join(s for s in system if s), wire


def from_anthropic_message(reply: AnthropicMessage, *, requested_model: str) -> ModelResponse:
    """Text blocks joined, ``tool_use`` blocks as calls; other block kinds (thinking …) are not transcript."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in reply.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, args=dict(block.input)))
    u = reply.usage
    input_tokens = u.input_tokens + (u.cache_creation_input_tokens or 0) + (u.cache_read_input_tokens or 0)
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        termination=anthropic_termination(reply.stop_reason, has_tool_calls=bool(calls)),
        raw_stop_reason=reply.stop_reason,
        usage=Usage(input_tokens, u.output_tokens),
        model=reply.model or requested_model,
    )
