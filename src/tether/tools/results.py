"""The ``read_result`` built-in: page through a tool result too long to show the model whole.

A long result reaches the model as its head, its tail and a handle (the call id); the whole of it is a
blob in the run's store (``kernel/context.py``). This tool reads a character range of it. The host hands
the tool a lookup limited to the results of the current run, so a handle cannot reach another run's
blobs or any other blob in the store. Its output is marked untrusted: the page may come from a tool
whose output was untrusted, and a page cannot say which (fail closed).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .context import ToolContext
from .contract import tool
from .result import ToolFailure, ToolResult

PAGE_CHARS = 10_000
"""The most one call returns (under the length at which a result is itself shortened)."""


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=10,
    trust="untrusted",
    evidence=["the requested characters of an earlier result of this run, with their offsets and the total"],
    rollback="not needed (read-only)",
)
def read_result(
    ctx: ToolContext,
    handle: Annotated[str, Field(min_length=1, max_length=200)],
    start: Annotated[int, Field(ge=0)] = 0,
    end: Annotated[int | None, Field(ge=1)] = None,
) -> ToolResult:
    """Read part of an earlier tool result that was shown shortened (its head and tail only).

    Args:
        handle: The handle the shortened result names (the id of the call that produced it).
        start: Offset of the first character to read (0-based).
        end: Offset just after the last character; at most 10,000 characters after start (the default).
    """
    text = ctx.stored_result(handle) if ctx.stored_result is not None else None
    if text is None:
        raise ToolFailure(
            "not_found",
            f"no stored result {handle!r} in this run; a handle is the call id a shortened result names",
            handle=handle,
        )
    if start >= len(text):
        raise ToolFailure("invalid_args", f"start {start} is past the end of the result ({len(text)} characters)")
    stop = min(len(text), end if end is not None else start + PAGE_CHARS, start + PAGE_CHARS)
    if stop <= start:
        raise ToolFailure("invalid_args", f"end {end} is not after start {start}")
    page = text[start:stop]
    more = f"; read on with start={stop}" if stop < len(text) else "; this is the end"
    return ToolResult(
        ok=True,
        content=f"[characters {start}-{stop} of {len(text)} of result {handle}{more}]\n{page}",
        data={"handle": handle, "start": start, "end": stop, "total": len(text)},
    )
