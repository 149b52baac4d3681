"""``openai:MODEL`` — chat completions with function tools, through the official SDK.

Works with OpenAI and with OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio, LiteLLM)
via ``base_url``; what differs between them is a :class:`~tether.models.profiles.Profile`. The
SDK's own retries are off (``max_retries=0``): :mod:`tether.models.retry` owns retrying so that
every attempt is visible to the host and the total number of requests is bounded.

Writers are conservative, readers tolerant, because real servers are not the spec:

* assistant ``content`` is always a string (``""``), never null or absent — llama-cpp-python
  answers a null with HTTP 500;
* a call sent both in ``tool_calls`` and the legacy ``function_call`` is one call (``tool_calls``
  wins; ``function_call`` is read only when there are none) — llama-cpp-python sends both;
* a call with no name, or arguments that are cut off or not a JSON object, is kept with a plain
  ``problem`` for the host to tell the model, and is written back with ``{}`` arguments;
* missing or null ``usage`` is *unreported*, never a crash;
* any other shape we cannot read is a :class:`ProviderError` with ``malformed`` set.

The response is read from the raw JSON (not the SDK's typed model) so every field is checked
here. SDK exceptions become :class:`ProviderError` with ``raise … from`` (:func:`tether.models.sdk.failure`,
as for Anthropic):

    context too long (400 context_length_exceeded, 413, …) → ContextOverflow (never retried as-is)
    openai.APIStatusError 408/409/429/5xx  → ProviderError(transient=True, status)
    openai.APIStatusError other            → ProviderError(transient=False, status)
    openai.APIConnectionError / timeout    → ProviderError(transient=True); the connection is closed
    any other openai.OpenAIError           → ProviderError(transient=False)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import openai
from openai.types.chat import (
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)

from tether.errors import ProviderError
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage, is_count
from tether.models.httpclient import http_client
from tether.models.profiles import PROFILES, Profile, TokenParam, detect, simplify_schema
from tether.models.sdk import failure, json_body
from tether.models.termination import openai_termination
from tether.models.window import overflow_from

__all__ = ["OpenAIModel", "TokenParam", "from_openai_completion", "parse_args", "to_openai_messages"]

UNNAMED = "unnamed_call"
"""The name a call without one is written back under (the wire wants a name; the log keeps ``""``)."""


class OpenAIModel:
    """One chat-completions call per :meth:`complete`.

    ``profile`` (default: detected from ``base_url``) decides how the output limit is sent and
    whether tool schemas are simplified; ``token_param`` overrides the profile's choice.
    ``timeout_s`` bounds each request as a whole; on a timeout the SDK closes the connection,
    so the server sees the request abandoned rather than finishing it for nobody.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        profile: Profile | None = None,
        token_param: TokenParam | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.profile = profile or detect("openai", base_url)
        self.token_param: TokenParam = token_param or self.profile.token_param
        self.timeout_s = timeout_s
        self.client = client or openai.OpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=timeout_s,
            max_retries=0,
            http_client=http_client(openai, timeout_s),  # bounded: no redirect, size, encoding, time
        )

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        who = f"openai {self.model}"
        wire_tools = to_openai_tools(tools, self.profile)
        try:
            raw = self.client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=to_openai_messages(messages),
                tools=wire_tools if wire_tools else openai.omit,
                max_tokens=max_tokens if self.token_param == "max_tokens" else openai.omit,
                max_completion_tokens=max_tokens if self.token_param == "max_completion_tokens" else openai.omit,
            )
            text = raw.http_response.text
        except openai.OpenAIError as exc:
            raise failure(exc, openai, who, self.timeout_s) from exc
        return from_openai_completion(json_body(text, who), requested_model=self.model)


def to_openai_tools(
    tools: Sequence[ToolSpec], profile: Profile = PROFILES["openai"]
) -> list[ChatCompletionFunctionToolParam]:
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": simplify_schema(t.object_schema(), profile),
            },
        }
        for t in tools
    ]


def to_openai_messages(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    """Our transcript in chat-completions form (system/user/assistant+tool_calls/tool); content always a string."""
    out: list[ChatCompletionMessageParam] = []
    for m in messages:
        if m.role == "system":
            out.append({"role": "system", "content": m.content})
        elif m.role == "user":
            out.append({"role": "user", "content": m.content})
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        elif m.tool_calls:
            calls: list[ChatCompletionMessageFunctionToolCallParam] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name or UNNAMED, "arguments": json.dumps(c.args, ensure_ascii=False)},
                }
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content, "tool_calls": calls})
        else:
            out.append({"role": "assistant", "content": m.content})
    return out


def parse_args(text: object, *, cut_off: bool = False) -> tuple[dict[str, Any], str]:
    """``(arguments, problem)``: a JSON object and ``""``, or ``{}`` and what is wrong in plain words.

    The wire says a JSON *string*; a lenient server that sends an object is taken at its word.
    ``cut_off`` (the response stopped at the token limit) makes unparseable arguments "cut off".
    """
    if isinstance(text, dict):
        return dict(text), ""
    if text is None or (isinstance(text, str) and not text.strip()):
        return {}, ""
    if not isinstance(text, str):
        return {}, f"arguments must be a JSON object, got {type(text).__name__}"
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        if cut_off or _ends_early(text, err):
            return {}, (
                f"arguments were cut off at the token limit ({len(text)} characters arrived, "
                "the JSON is unfinished); call the tool again with complete, shorter arguments"
            )
        return {}, f"arguments are not valid JSON ({err.msg} at character {err.pos}); send a JSON object"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return value, ""


def _ends_early(text: str, err: json.JSONDecodeError) -> bool:
    """The JSON stopped before it was finished (as opposed to being wrong somewhere in the middle)."""
    return err.msg.startswith("Unterminated") or err.pos >= len(text.rstrip())


def from_openai_completion(data: Any, *, requested_model: str) -> ModelResponse:
    """The first choice of a chat.completion body; any shape we cannot read is a malformed ProviderError."""
    who = f"openai {requested_model}"

    def malformed(what: str) -> ProviderError:
        return ProviderError(f"{who}: malformed response: {what}", malformed=True)

    if not isinstance(data, dict):
        raise malformed(f"expected a JSON object, got {type(data).__name__}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        error = data.get("error")
        if error:
            overflow = overflow_from(None, json.dumps(error), who=who)
            if overflow is not None:
                raise overflow
            raise malformed(f"an error in a successful response: {json.dumps(error)[:300]}")
        raise malformed("response has no choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise malformed("choices[0].message: expected an object")
    finish_reason = choice.get("finish_reason")
    if finish_reason is not None and not isinstance(finish_reason, str):
        raise malformed(f"choices[0].finish_reason: expected a string, got {finish_reason!r}")
    cut_off = finish_reason == "length"
    calls = _calls(message, cut_off=cut_off, malformed=malformed)
    refusal = message.get("refusal")
    refused = isinstance(refusal, str) and bool(refusal)
    text = _text(message.get("content"), malformed) or (refusal if refused else "")
    model = data.get("model")
    return ModelResponse(
        text=str(text),
        tool_calls=tuple(calls),
        termination=openai_termination(finish_reason, refused=refused, has_tool_calls=bool(calls)),
        raw_stop_reason=finish_reason,
        usage=_usage(data.get("usage")),
        model=model if isinstance(model, str) and model else requested_model,
    )


def _text(content: Any, malformed: Any) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text")
    raise malformed(f"choices[0].message.content: expected a string, got {type(content).__name__}")


def _calls(message: dict[str, Any], *, cut_off: bool, malformed: Any) -> list[ToolCall]:
    """``tool_calls``, or the legacy single ``function_call`` only when there are none (never both)."""
    raw_calls = message.get("tool_calls")
    if raw_calls is None or raw_calls == []:
        legacy = message.get("function_call")
        raw_calls = [{"type": "function", "function": legacy}] if legacy is not None else []
    if not isinstance(raw_calls, list):
        raise malformed(f"choices[0].message.tool_calls: expected an array, got {type(raw_calls).__name__}")
    calls: list[ToolCall] = []
    for i, call in enumerate(raw_calls):
        if not isinstance(call, dict):
            raise malformed(f"choices[0].message.tool_calls[{i}]: expected an object")
        call_id = _str(call.get("id"))  # none: the host gives one (kernel.turn.fresh_ids)
        if call.get("type") == "custom":  # a free-text tool call: we never offer those
            name = _str(_obj(call.get("custom")).get("name"))
            calls.append(ToolCall(call_id, name, {}, "free-text (custom) tool calls are not offered; use a function"))
            continue
        fn = _obj(call.get("function"))
        name = _str(fn.get("name"))
        args, problem = parse_args(fn.get("arguments"), cut_off=cut_off)
        if not name.strip():
            name, args, problem = "", {}, "the call has no function name; name one of the offered tools"
        calls.append(ToolCall(call_id, name, args, problem))
    return calls


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _usage(usage: Any) -> Usage:
    """Token counts when both are counts (:func:`~tether.models.base.is_count`); otherwise unreported (the host
    estimates)."""
    if not isinstance(usage, dict):
        return Usage(reported=False)
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if is_count(prompt) and is_count(completion):
        return Usage(prompt, completion)
    return Usage(reported=False)
