"""``openai:MODEL`` — chat completions with function tools, through the official SDK.

Works with OpenAI and with OpenAI-compatible local servers (Ollama, vLLM,
llama.cpp server) via ``base_url``. The SDK's own retries are off
(``max_retries=0``): :mod:`tether.models.retry` owns retrying so that every
attempt is visible to the host.

Translation is two pure functions, :func:`to_openai_messages` and
:func:`from_openai_completion`, so the mapping is testable without a socket.
SDK exceptions become :class:`ProviderError` here, with ``raise … from``:

    openai.APIStatusError 408/409/429/5xx  → ProviderError(transient=True, status)
    openai.APIStatusError other            → ProviderError(transient=False, status)
    openai.APIConnectionError / timeout    → ProviderError(transient=True)
    any other openai.OpenAIError           → ProviderError(transient=False)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

import openai
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageFunctionToolCallParam,
    ChatCompletionMessageParam,
)

from tether.errors import ProviderError
from tether.models.base import RAW_ARGS_KEY, Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.retry import is_transient_status
from tether.models.termination import openai_termination

TokenParam = Literal["max_tokens", "max_completion_tokens"]


class OpenAIModel:
    """One chat-completions call per :meth:`complete`.

    ``token_param`` picks how the output limit is sent: OpenAI's current models
    want ``max_completion_tokens``; many compatible local servers only know
    ``max_tokens``. The default follows ``base_url``: none (api.openai.com) →
    ``max_completion_tokens``, a custom server → ``max_tokens``.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout_s: float = 120.0,
        token_param: TokenParam | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.name = f"openai:{model}"
        self.model = model
        self.token_param: TokenParam = token_param or ("max_tokens" if base_url else "max_completion_tokens")
        self.client = client or openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s, max_retries=0)

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        wire_tools = to_openai_tools(tools)
        try:
            completion = self.client.chat.completions.create(
                model=self.model,
                messages=to_openai_messages(messages),
                tools=wire_tools if wire_tools else openai.omit,
                max_tokens=max_tokens if self.token_param == "max_tokens" else openai.omit,
                max_completion_tokens=max_tokens if self.token_param == "max_completion_tokens" else openai.omit,
            )
        except openai.APIStatusError as exc:
            raise ProviderError(
                f"openai {self.model}: HTTP {exc.status_code}: {exc.message}",
                transient=is_transient_status(exc.status_code),
                status=exc.status_code,
            ) from exc
        except openai.APIConnectionError as exc:  # includes APITimeoutError
            raise ProviderError(f"openai {self.model}: {exc.message}", transient=True) from exc
        except openai.OpenAIError as exc:
            raise ProviderError(f"openai {self.model}: {exc}", transient=False) from exc
        return from_openai_completion(completion, requested_model=self.model)


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[ChatCompletionFunctionToolParam]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.object_schema()},
        }
        for t in tools
    ]


def to_openai_messages(messages: Sequence[Message]) -> list[ChatCompletionMessageParam]:
    """Our transcript in chat-completions form (system/user/assistant+tool_calls/tool)."""
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
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": _dump_args(c)}}
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": m.content or None, "tool_calls": calls})
        else:
            out.append({"role": "assistant", "content": m.content})
    return out


def _dump_args(call: ToolCall) -> str:
    """Send arguments back as the model wrote them; unparseable ones verbatim."""
    raw = call.args.get(RAW_ARGS_KEY)
    if isinstance(raw, str) and len(call.args) == 1:
        return raw
    return json.dumps(call.args, ensure_ascii=False)


def parse_args(text: object) -> dict[str, Any]:
    """JSON object arguments, or ``{"__raw__": text}`` when they are not one (kept for the host to report).

    The wire says a JSON *string*; a lenient server that sends an object is taken at its word.
    """
    if isinstance(text, dict):
        return dict(text)
    if not isinstance(text, str):
        return {RAW_ARGS_KEY: json.dumps(text)}
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {RAW_ARGS_KEY: text}
    return value if isinstance(value, dict) else {RAW_ARGS_KEY: text}


def from_openai_completion(completion: ChatCompletion, *, requested_model: str) -> ModelResponse:
    """The first choice as a :class:`ModelResponse`; no choices at all is a provider error."""
    if not completion.choices:
        raise ProviderError(f"openai {requested_model}: response has no choices", transient=False)
    choice = completion.choices[0]
    message = choice.message
    calls: list[ToolCall] = []
    for i, call in enumerate(message.tool_calls or []):
        call_id = call.id or f"call_{i}"  # some compatible servers omit ids; the pairing needs one
        if call.type == "custom":  # a free-text tool call: we never offer those, keep it for the host to reject
            calls.append(ToolCall(id=call_id, name=call.custom.name, args={RAW_ARGS_KEY: call.custom.input}))
        else:  # "function", or missing on lenient servers
            calls.append(ToolCall(id=call_id, name=call.function.name, args=parse_args(call.function.arguments)))
    if message.function_call is not None:  # deprecated single-call form some servers still emit
        fc = message.function_call
        calls.append(ToolCall(id=f"call_{fc.name}", name=fc.name, args=parse_args(fc.arguments)))
    refused = bool(message.refusal)
    text = message.content or (message.refusal if refused else "") or ""
    usage = completion.usage
    return ModelResponse(
        text=text,
        tool_calls=tuple(calls),
        termination=openai_termination(choice.finish_reason, refused=refused, has_tool_calls=bool(calls)),
        raw_stop_reason=choice.finish_reason,
        usage=Usage(usage.prompt_tokens, usage.completion_tokens) if usage else Usage(),
        model=completion.model or requested_model,
    )
