"""``anthropic:MODEL`` — the Messages API with tool use, through the official SDK.

Our flat transcript becomes Anthropic's shape: system messages go to the
separate ``system`` parameter; assistant tool calls become ``tool_use`` blocks;
tool results become ``tool_result`` blocks in a *user* message, and adjacent
messages that land on the same role (several tool results in a row, or a tool
result followed by a user note) are merged into one message, because the API
wants user and assistant turns to alternate and all results of one assistant
turn in the next user message. Empty or whitespace-only text is never sent as a block (the API
rejects it). The SDK's own retries are off (``max_retries=0``).

The response is read from its raw JSON, tolerantly: a ``tool_use`` without a name or with a
non-object input becomes a call with a plain ``problem``; missing usage is unreported; any other
shape we cannot read is a malformed :class:`ProviderError`. SDK exceptions become
:class:`ProviderError` here, with ``raise … from`` (:func:`tether.models.sdk.failure`, as for OpenAI):

    "prompt is too long", 413, …                  → ContextOverflow (never retried as-is)
    anthropic.APIStatusError 408/409/429/5xx/529 → ProviderError(transient=True, status)
    anthropic.APIStatusError other               → ProviderError(transient=False, status)
    anthropic.APIConnectionError / timeout       → ProviderError(transient=True)
    any other anthropic.AnthropicError           → ProviderError(transient=False)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import anthropic
from anthropic.types import ContentBlockParam, MessageParam, ToolParam, ToolResultBlockParam

from tether.errors import ProviderError
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage, is_count
from tether.models.httpclient import http_client
from tether.models.profiles import PROFILES, Profile, detect, simplify_schema
from tether.models.sdk import failure, json_body
from tether.models.termination import anthropic_termination
from tether.models.window import overflow_from

UNNAMED = "unnamed_call"


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
        profile: Profile | None = None,
        client: anthropic.Anthropic | None = None,
    ) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self.profile = profile or detect("anthropic", base_url)
        self.timeout_s = timeout_s
        self.client = client or anthropic.Anthropic(
            api_key=api_key,
            auth_token=auth_token,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client(anthropic, timeout_s),  # bounded: no redirect, size, encoding, time
        )

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        who = f"anthropic {self.model}"
        system, wire_messages = to_anthropic_messages(messages)
        wire_tools = to_anthropic_tools(tools, self.profile)
        try:
            raw = self.client.messages.with_raw_response.create(
                model=self.model,
                max_tokens=max_tokens,
                messages=wire_messages,
                system=system if system else anthropic.omit,
                tools=wire_tools if wire_tools else anthropic.omit,
            )
            text = raw.http_response.text
        except anthropic.AnthropicError as exc:
            raise failure(exc, anthropic, who, self.timeout_s) from exc
        return from_anthropic_message(json_body(text, who), requested_model=self.model)


def to_anthropic_tools(tools: Sequence[ToolSpec], profile: Profile = PROFILES["anthropic"]) -> list[ToolParam]:
    return [
        {"name": t.name, "description": t.description, "input_schema": simplify_schema(t.object_schema(), profile)}
        for t in tools
    ]


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
            add("user", [{"type": "text", "text": m.content}] if m.content.strip() else [])
        elif m.role == "tool":
            result: ToolResultBlockParam = {"type": "tool_result", "tool_use_id": m.tool_call_id or ""}
            if m.content.strip():
                result["content"] = m.content
            add("user", [result])
        else:
            blocks: list[ContentBlockParam] = [{"type": "text", "text": m.content}] if m.content.strip() else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name or UNNAMED, "input": c.args} for c in m.tool_calls
            ]
            add("assistant", blocks)
    wire: list[MessageParam] = []
    for role, blocks in turns:
        wire.append({"role": "user", "content": blocks} if role == "user" else {"role": "assistant", "content": blocks})
    return "\n\n".join(s for s in system if s), wire


def from_anthropic_message(data: Any, *, requested_model: str) -> ModelResponse:
    """Text blocks joined, ``tool_use`` blocks as calls; other block kinds (thinking …) are not transcript."""
    who = f"anthropic {requested_model}"
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        error = data.get("error") if isinstance(data, dict) else None
        if error:
            overflow = overflow_from(None, json.dumps(error), who=who)
            if overflow is not None:
                raise overflow
        raise ProviderError(f"{who}: malformed response: expected a message with a content array", malformed=True)
    texts: list[str] = []
    calls: list[ToolCall] = []
    for i, block in enumerate(data["content"]):
        if not isinstance(block, dict):
            raise ProviderError(f"{who}: malformed response: content[{i}] is not an object", malformed=True)
        if block.get("type") == "text":
            texts.append(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            calls.append(_tool_use(block))
    stop = data.get("stop_reason")
    stop = stop if isinstance(stop, str) else None
    model = data.get("model")
    return ModelResponse(
        text="".join(texts),
        tool_calls=tuple(calls),
        termination=anthropic_termination(stop, has_tool_calls=bool(calls)),
        raw_stop_reason=stop,
        usage=_usage(data.get("usage")),
        model=model if isinstance(model, str) and model else requested_model,
    )


def _tool_use(block: dict[str, Any]) -> ToolCall:
    call_id = block.get("id") if isinstance(block.get("id"), str) else ""  # none: the host gives one
    name = block.get("name") if isinstance(block.get("name"), str) else ""
    value = block.get("input")
    if not str(name).strip():
        return ToolCall(str(call_id), "", {}, "the call has no tool name; name one of the offered tools")
    if not isinstance(value, dict):
        return ToolCall(str(call_id), str(name), {}, f"arguments must be a JSON object, got {type(value).__name__}")
    return ToolCall(str(call_id), str(name), dict(value))


def _usage(usage: Any) -> Usage:
    """Input includes cache writes and reads; fields missing or not counts (:func:`~tether.models.base.is_count`)
    → unreported."""
    if not isinstance(usage, dict):
        return Usage(reported=False)
    counts = [usage.get(k) for k in ("input_tokens", "output_tokens")]
    cached = [usage.get(k) or 0 for k in ("cache_creation_input_tokens", "cache_read_input_tokens")]
    if not all(is_count(n) for n in [*counts, *cached]):
        return Usage(reported=False)
    return Usage(int(counts[0] or 0) + int(cached[0]) + int(cached[1]), int(counts[1] or 0))
