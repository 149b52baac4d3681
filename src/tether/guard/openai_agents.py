"""tether in front of the OpenAI Agents SDK's function tools: every call gated, ASK as the SDK's approval.

Needs the ``openai-agents`` extra (``pip install 'tether[openai-agents]'``). Use::

    guard = Guard.open(store, "envelope.yaml", conversation_id, framework=FRAMEWORK)
    agent = Agent(name="assistant", tools=gate_tools(guard, [get_weather, send_email]), model=...)
    result = await Runner.run(agent, "...")
    while result.interruptions:                  # tether asked: the SDK paused the run
        state = result.to_state()
        for item in result.interruptions:
            answer = pending(guard, item)        # the call, tether's rule and reason, the approval id
            approve(guard, state, item, by="alice")   # or reject(guard, state, item, by=..., reason=...)
        result = await Runner.run(agent, state)

:func:`gate_tools` returns copies of the tools whose ``needs_approval`` asks tether and whose
``on_invoke_tool`` runs only what tether allows:

- **ALLOW**: the tool runs between its receipts (``action.started`` before, ``action.completed`` after).
- **DENY**: the tool does not run; the model reads ``tether denied TOOL (RULE): REASON`` as its result.
- **ASK**: ``needs_approval`` says yes, so the SDK interrupts the run with a ``ToolApprovalItem``.
  :func:`approve` / :func:`reject` record the human's answer in tether's log and in the SDK's state; an
  answer given meanwhile with ``tether approve|deny`` or the console is carried into the SDK's state by
  :func:`settle`. A call the SDK runs after its own ``RunState.approve`` (tether not told) is recorded as
  approved through the SDK; one it was never approved for is refused.

A call the log says already ran is not run again (its recorded output is returned); one started and never
completed is refused, its effect unknown.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agents import FunctionTool, RunContextWrapper, RunState, ToolApprovalItem
from agents.tool_context import ToolContext

from tether.kernel.approvals import whoami
from tether.policy.decision import Verdict
from tether.status import ActionStatus

from .session import Answer, Guard, GuardError

FRAMEWORK = "openai-agents"
Invoke = Callable[[ToolContext[Any], str], Awaitable[Any]]


def gate_tools(guard: Guard, tools: Sequence[FunctionTool]) -> list[FunctionTool]:
    """Copies of ``tools`` that ask ``guard`` before every call (the originals are left as they are)."""
    out = []
    for t in tools:
        if not isinstance(t, FunctionTool):
            raise GuardError(f"tether gates function tools; {type(t).__name__} {getattr(t, 'name', '')!r} is not one")
        out.append(dataclasses.replace(t, needs_approval=_asks(guard, t.name), on_invoke_tool=_invoke(guard, t)))
    return out


def pending(guard: Guard, item: ToolApprovalItem) -> Answer:
    """tether's verdict on an interrupted call: the rule, the reason and the approval a human answers."""
    return guard.verdict(_call_id(item))


def approve(guard: Guard, state: RunState[Any, Any], item: ToolApprovalItem, *, by: str | None = None) -> Answer:
    """A human's yes: recorded in tether's log, then in the SDK's state (run again with ``state`` to go on)."""
    answer = _answer(guard, item, "once", by, "")
    _carry(state, item, answer)
    return answer


def reject(
    guard: Guard, state: RunState[Any, Any], item: ToolApprovalItem, *, by: str | None = None, reason: str = ""
) -> Answer:
    """A human's no: recorded in tether's log, and the model is told why (the rule's words or ``reason``)."""
    answer = _answer(guard, item, "deny", by, reason)
    _carry(state, item, answer)
    return answer


def settle(guard: Guard, state: RunState[Any, Any], items: Sequence[ToolApprovalItem]) -> list[ToolApprovalItem]:
    """Carry answers given outside the program (``tether approve|deny``, the console, an expiry) into the SDK's
    state; returns the items still waiting for a human."""
    waiting = []
    for item in items:
        answer = pending(guard, item)
        if answer.verdict is Verdict.ASK:
            waiting.append(item)
        else:
            _carry(state, item, answer)
    return waiting


# ---- the wrapped tool ------------------------------------------------------------------------


def _asks(guard: Guard, name: str) -> Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]:
    """``needs_approval``: the call is decided here, before the SDK would run it; only an ASK pauses the run."""

    async def needs_approval(ctx: RunContextWrapper[Any], params: dict[str, Any], call_id: str) -> bool:
        return guard.check(name, params, call_id=call_id).verdict is Verdict.ASK

    return needs_approval


def _invoke(guard: Guard, tool: FunctionTool) -> Invoke:
    """``on_invoke_tool``: run the original only if tether allows it, between its receipts."""
    original = tool.on_invoke_tool

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> Any:
        try:
            args = json.loads(arguments or "{}")
        except json.JSONDecodeError as e:
            return f"tether refused {tool.name}: its arguments are not JSON ({e})"
        answer = guard.check(tool.name, args if isinstance(args, dict) else {"arguments": args}, ctx.tool_call_id)
        if answer.verdict is Verdict.ASK and ctx.is_tool_approved(tool.name, ctx.tool_call_id) is True:
            answer = guard.answer(answer.approval_id or "", "once", by=f"{whoami()} (the Agents SDK's approval)")
        if not answer.allowed:
            return answer.message()
        action = guard.refresh().actions[answer.call_id]
        if action.status is ActionStatus.COMPLETED:  # ran before (a resumed run): not twice
            return guard.output(action)
        if action.status is ActionStatus.STARTED:
            return f"tether: {tool.name} ({answer.call_id}) was started before and never completed; not run again"
        guard.started(answer.call_id)
        began = time.monotonic()
        try:
            result = await original(ctx, arguments)
        except BaseException as e:
            guard.completed(answer.call_id, ok=False, error=f"{type(e).__name__}: {e}", duration_s=_since(began))
            raise
        guard.completed(answer.call_id, ok=True, output=_text(result), duration_s=_since(began))
        return result

    return on_invoke_tool


def _answer(guard: Guard, item: ToolApprovalItem, choice: Any, by: str | None, reason: str) -> Answer:
    current = pending(guard, item)
    if current.verdict is not Verdict.ASK or current.approval_id is None:
        return current  # answered already (the CLI, the console, another process) or expired: that answer stands
    return guard.answer(current.approval_id, choice, by=by, reason=reason)


def _carry(state: RunState[Any, Any], item: ToolApprovalItem, answer: Answer) -> None:
    """tether's answer, as the SDK's: an allowed call approved, anything else rejected with tether's words."""
    if answer.allowed:
        state.approve(item)
    else:
        state.reject(item, rejection_message=answer.message())


def _call_id(item: ToolApprovalItem) -> str:
    raw = item.raw_item
    call_id = raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
    if not call_id:
        raise GuardError(f"the approval item for {item.tool_name!r} carries no call id")
    return str(call_id)


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)


def _since(began: float) -> float:
    return time.monotonic() - began


__all__ = ["FRAMEWORK", "approve", "gate_tools", "pending", "reject", "settle"]
