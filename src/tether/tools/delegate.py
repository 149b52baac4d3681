"""The ``delegate`` built-in: hand a sub-task to a child run under a narrower envelope (docs/delegation.md).

Like ``finish``, the tool itself holds no power: the kernel runs the child (``ToolContext.delegate``), under an
envelope derived from the caller's by :func:`tether.envelope.narrow.narrow` — fewer tools, a smaller write set,
a share of the budgets — where every action is gated, sandboxed and verified as the caller's would be. Its
contract says ``exec`` (the child runs tools that execute and write), so the gate asks a human by default; an
envelope that wants autonomous delegation allows it by a rule (``rule: delegate``).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from tether.envelope.narrow import NarrowingError, narrow
from tether.envelope.schema import Envelope

from .context import Delegation, ToolContext
from .contract import tool
from .result import ToolFailure, ToolResult

Task = Annotated[str, Field(min_length=1, max_length=20_000)]
Tools = Annotated[list[str] | None, Field(max_length=64)]
Globs = Annotated[list[Annotated[str, Field(min_length=1, max_length=500)]] | None, Field(max_length=64)]
Share = Annotated[float, Field(gt=0, le=1)]
Hosts = Annotated[list[Annotated[str, Field(min_length=1, max_length=260)]] | None, Field(max_length=64)]


#: Tools every child has when its parent has them: without ``finish`` a child could never complete.
ALWAYS = ("finish",)


def child_tools(envelope: Envelope, asked: list[str] | None) -> list[str] | None:
    """The tools a child gets for ``asked``: those, plus :data:`ALWAYS` where the caller has them (None: all)."""
    if asked is None:
        return None
    have = {t.name for t in envelope.tools}
    return list(dict.fromkeys([*asked, *(t for t in ALWAYS if t in have)]))


def _preview(
    ctx: ToolContext, task: Task, tools: Tools, write: Globs, budget_share: Share = 0.5, network: Hosts = None
) -> str:
    """What an approver sees: the sub-task and the envelope the child would run under (or why it cannot)."""
    try:
        child = narrow(
            ctx.envelope,
            tools=child_tools(ctx.envelope, tools),
            write=write,
            network=network,
            budget_share=budget_share,
        )
    except NarrowingError as e:
        return f"delegate: {task}\nrefused, it would widen the envelope:\n" + "\n".join(f"- {w}" for w in e.widenings)
    fs = child.environment.filesystem
    budgets = {k: v for k, v in child.budgets.model_dump().items() if v is not None}
    return (
        f"delegate a sub-task to a child run:\n{task}\n\n"
        f"tools: {', '.join(t.name for t in child.tools)}\n"
        f"write: {fs.write if fs is not None else []}\n"
        f"network: {child.environment.network.allow if child.environment.network else []}\n"
        f"budgets (a {budget_share:g} share, at most what is left): {budgets}"
    )


@tool(
    effects=["exec"],
    idempotent=True,
    timeout_s=3600,
    evidence=["the child run's id, status, summary and verified evidence", "delegate.started / delegate.finished"],
    rollback="the child's own undo records (tether undo CHILD_RUN)",
    preview=_preview,
)
def delegate(
    ctx: ToolContext,
    task: Task,
    tools: Tools = None,
    write: Globs = None,
    budget_share: Share = 0.5,
    network: Hosts = None,
) -> ToolResult:
    """Start a child run for a sub-task under a narrower envelope; returns its verified receipt.

    Args:
        task: The sub-task, stated fully: the child sees only this, not your conversation.
        tools: The tools the child may use (a subset of yours; finish is always included); default: yours.
        write: The globs the child may write (covered by your own); default: yours.
        budget_share: The share of each of your budgets the child gets (0 to 1), capped by what you have left.
        network: The hosts the child may reach (covered by your own); default: yours.
    """
    if ctx.delegate is None:
        raise ToolFailure("no_host", "delegate runs only inside a tether run (the kernel starts the child run)")
    return ctx.delegate(Delegation(task, tools, write, budget_share, network))
