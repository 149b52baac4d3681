"""The ``finish`` built-in: the model's claim that the task is done. A claim, not authority."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .contract import tool
from .result import ToolResult


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=5,
    evidence=["the model's completion claim and summary"],
    rollback="not needed (executes nothing)",
)
def finish(summary: Annotated[str, Field(min_length=1, max_length=20_000)]) -> ToolResult:
    """Claim the task is complete, with a summary of what was done; the host then runs verification.

    Args:
        summary: What was changed and why, and how it was checked.
    """
    return ToolResult(
        ok=True,
        content="completion claim recorded; the host now runs the required verification, which decides the outcome",
        data={"claim": summary},
    )
