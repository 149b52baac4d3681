"""The intent tools: ``plan`` and ``hypothesis``.

Both only record intent (effects: read): the tool returns what the model said, and the control
layer, above this one, folds their action events into the plan and the hypotheses
(``tether.control.planning``, ``tether.control.hypotheses``); refused plan transitions reach
the model through ``guidance``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from .contract import tool
from .result import ToolResult


class TaskUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: Annotated[str, Field(min_length=1, max_length=80)]
    title: str | None = None
    status: Literal["PENDING", "ACTIVE", "VERIFYING", "COMPLETE", "FAILED", "BLOCKED"] | None = None
    depends_on: list[str] | None = None
    files: list[str] | None = Field(None, description="Globs of the files this task may change (its scope).")


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=5,
    evidence=["the task list as folded from the log (plan.updated)"],
    rollback="not needed (records intent only)",
)
def plan(tasks: Annotated[list[TaskUpdate], Field(min_length=1, max_length=50)]) -> ToolResult:
    """Add or update tasks in your plan (id, title, status, depends_on, files); the host enforces the state machine.

    Args:
        tasks: Tasks to add or update. Status moves PENDING -> ACTIVE -> VERIFYING -> COMPLETE, or to FAILED /
            BLOCKED; a task becomes ACTIVE only after its dependencies are COMPLETE.
    """
    lines = [f"- {t.id}: {t.status or '(status unchanged)'} {t.title or ''}".rstrip() for t in tasks]
    return ToolResult(
        ok=True,
        content="plan update recorded (the host applies it; refused transitions are reported next turn):\n"
        + "\n".join(lines),
        data={"tasks": [t.model_dump(exclude_none=True) for t in tasks]},
    )


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=5,
    evidence=["the hypothesis and its score from current beliefs (hypothesis.recorded)"],
    rollback="not needed (records intent only)",
)
def hypothesis(
    id: Annotated[str, Field(min_length=1, max_length=80)],
    statement: str | None = None,
    files: list[str] | None = None,
    tests: list[str] | None = None,
    act: bool = False,
) -> ToolResult:
    """Record a candidate explanation of the problem; set act=true on the one you are acting on.

    Args:
        id: A short name for the hypothesis; reuse it to update the same one.
        statement: The explanation, e.g. "parse() drops the last token".
        files: Files the hypothesis blames (the reviewer checks the final diff touches them).
        tests: Failing tests it explains (it is scored by whether they fail).
        act: Mark this hypothesis as the one being acted on (replaces any earlier one).
    """
    verb = "acting on" if act else "recorded"
    return ToolResult(
        ok=True,
        content=f"hypothesis {id} {verb}; it is scored against the current beliefs",
        data={"id": id, "act": act},
    )
