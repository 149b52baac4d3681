"""``FunctionModel`` — a Python callable as a model, for library users and tests.

The callable sees exactly what a provider would (the conversation and the
tools) and answers with a full :class:`ModelResponse`, or just a string for a
plain final answer. It is the smallest possible way to drive the kernel from
code without a script file or a server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tether.models.base import Message, ModelResponse, ToolSpec, Usage

ModelFunction = Callable[[Sequence[Message], Sequence[ToolSpec]], "ModelResponse | str"]


class FunctionModel:
    """Calls ``fn(messages, tools)`` for every turn. Exceptions from ``fn`` propagate unchanged."""

    def __init__(self, fn: ModelFunction, *, name: str | None = None) -> None:
        self.fn = fn
        self.name = name or f"function:{getattr(fn, '__name__', type(fn).__name__)}"

    def complete(self, messages: Sequence[Message], tools: Sequence[ToolSpec], *, max_tokens: int) -> ModelResponse:
        result = self.fn(messages, tools)
        if isinstance(result, ModelResponse):
            return result
        return ModelResponse(
            text=result, tool_calls=(), termination="complete", raw_stop_reason=None, usage=Usage(), model=self.name
        )
