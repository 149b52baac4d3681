"""``FunctionModel`` — a Python callable as a model, for library users and tests.

The callable sees exactly what a provider would (the conversation and the
tools) and answers with a full :class:`ModelResponse`, or just a string for a
plain final answer. It is the smallest possible way to drive the kernel from
code without a script file or a server.

:func:`reply` and :func:`call` build the answer without spelling out its six fields::

    FunctionModel(lambda messages, tools: reply(calls=[call("read_file", path="src/app.py")]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from tether.models.base import Message, ModelResponse, Termination, ToolCall, ToolSpec, Usage

ModelFunction = Callable[[Sequence[Message], Sequence[ToolSpec]], "ModelResponse | str"]


def call(name: str, /, **args: Any) -> ToolCall:
    """A tool call: ``call("bash", command="pytest -q")``. Its id is left empty: the kernel assigns one
    unique in the run (a model's own ids may repeat across turns)."""
    return ToolCall("", name, args)


def reply(
    text: str = "",
    calls: Sequence[ToolCall] = (),
    *,
    termination: Termination | None = None,
    usage: Usage | None = None,
    model: str = "",
) -> ModelResponse:
    """One assistant turn: ``termination`` is ``tool_request`` when there are calls, else ``complete``;
    ``usage`` defaults to none billed; ``model`` (empty) becomes the :class:`FunctionModel`'s name."""
    return ModelResponse(
        text=text,
        tool_calls=tuple(calls),
        termination=termination or ("tool_request" if calls else "complete"),
        raw_stop_reason=None,
        usage=usage or Usage(),
        model=model,
    )


class FunctionModel:
    """Calls ``fn(messages, tools)`` for every turn. Exceptions from ``fn`` propagate unchanged."""

    def __init__(self, fn: ModelFunction, *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or f"function:{getattr(fn, '__name__', type(fn).__name__)}"

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        result = self.fn(messages, tools)
        if isinstance(result, str):
            return reply(result, model=self.name)
        if not isinstance(result, ModelResponse):
            raise TypeError(f"{self.name} returned {type(result).__name__}; expected a ModelResponse or a str")
        return result if result.model else replace(result, model=self.name)
