"""tether in front of a LangGraph ``ToolNode``: every tool call gated, ASK as a LangGraph interrupt, receipts.

Needs the ``langgraph`` extra (``pip install 'tether[langgraph]'``). Use::

    gate = LangGraphGate(store, "envelope.yaml")
    tools = gate.tool_node([get_weather, send_email])          # a ToolNode; or pass gate.wrap / gate.awrap
    graph = builder.compile(checkpointer=InMemorySaver())        # interrupts need a checkpointer

Each LangGraph thread (``config["configurable"]["thread_id"]``) is one governed session
(:class:`tether.guard.Guard`): one run in tether's log, whatever process runs the graph.

- **ALLOW**: the tool runs between its receipts (``action.started`` before, ``action.completed`` after).
- **DENY**: the tool does not run; the model gets an error ``ToolMessage`` naming the deciding rule.
- **ASK**: :func:`langgraph.types.interrupt` pauses the graph with the call, the rule, the reason and the
  approval id. Resume it with ``Command(resume=ANSWER)``: ``"once"``, ``"run"``, ``"deny"``, ``True`` or
  ``False``, or ``{"choice": ..., "reason": ..., "by": ..., "approval_id": ...}``, or a mapping of approval ids
  to such answers. ``tether approve|deny ID`` or the console may answer meanwhile instead; their answer
  stands (resume with any value to go on). An answer that names another approval, or that cannot be read,
  is applied to nothing: the call is refused for now and its approval stays pending (fail closed).

Which answer belongs to which call: LangGraph hands resume values to a node's interrupts by position, and
re-executes the node from its start on every resume. So the gated ToolNode runs a turn's calls one after
another in the order the model proposed them, and every call that was asked consumes its interrupt on
every pass, answered or not: the k-th resume value is always the answer to the k-th approval the person
was shown. A call that already ran is not run again on a later pass (its recorded result is returned); a
call started and never completed (a crash mid-tool) is refused rather than repeated, its effect unknown.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

from langchain_core.messages import ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command, interrupt

from tether.envelope.schema import Envelope
from tether.events.protocol import Store
from tether.kernel.approvals import whoami
from tether.policy.decision import Verdict
from tether.status import ActionStatus

from .session import Answer, Guard, GuardError

FRAMEWORK = "langgraph"
Choice = Literal["once", "run", "deny"]
ToolResult = ToolMessage | Command[Any]
#: Resume values read as a choice (a bare value is accepted only when one approval is pending).
CHOICES: dict[object, Choice] = {
    True: "once",
    "approve": "once",
    "approved": "once",
    "yes": "once",
    "once": "once",
    "run": "run",
    False: "deny",
    "deny": "deny",
    "denied": "deny",
    "reject": "deny",
    "no": "deny",
}


class LangGraphGate:
    """Gates the tool calls of a LangGraph graph; one governed session per LangGraph thread."""

    def __init__(
        self, store: Store, envelope: Envelope | str | Path, *, workspace: Path | None = None, task: str = ""
    ) -> None:
        self.store, self.envelope, self.workspace, self.task = store, envelope, workspace, task
        self._guards: dict[str, Guard] = {}
        self._lock = threading.Lock()

    def tool_node(self, tools: Sequence[BaseTool | Callable[..., Any]], **kwargs: Any) -> ToolNode:
        """A ``ToolNode`` whose every call passes this gate, one call at a time (sync and async graphs)."""
        return GatedToolNode(tools, wrap_tool_call=self.wrap, awrap_tool_call=self.awrap, **kwargs)

    def guard(self, config: RunnableConfig | Mapping[str, Any]) -> Guard:
        """The governed session of the thread ``config`` names (a graph without a thread id is refused)."""
        thread = (config.get("configurable") or {}).get("thread_id")
        if not thread:
            raise GuardError(
                "tether governs a LangGraph thread: invoke the graph with "
                "config={'configurable': {'thread_id': ...}} (and compile it with a checkpointer)"
            )
        with self._lock:
            guard = self._guards.get(str(thread))
            if guard is None:
                guard = Guard.open(
                    self.store,
                    self.envelope,
                    str(thread),
                    framework=FRAMEWORK,
                    workspace=self.workspace,
                    task=self.task,
                )
                self._guards[str(thread)] = guard
            return guard

    # ---- the wrappers ToolNode calls -------------------------------------------------------

    def wrap(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """``ToolNode(wrap_tool_call=...)``: decide, then run the tool between its receipts, or refuse it."""
        guard, answer, done = self.admit(request)
        if done is not None or not answer.allowed:
            return done or refusal(request, answer)
        guard.started(answer.call_id)
        began = time.monotonic()
        try:
            result = execute(request)
        except BaseException as e:
            guard.completed(answer.call_id, ok=False, error=f"{type(e).__name__}: {e}", duration_s=_since(began))
            raise
        record(guard, answer.call_id, result, _since(began))
        return result

    async def awrap(
        self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        """``ToolNode(awrap_tool_call=...)``: as :meth:`wrap`, awaiting the tool (the log's writes are short
        SQLite transactions, made in place)."""
        guard, answer, done = self.admit(request)
        if done is not None or not answer.allowed:
            return done or refusal(request, answer)
        guard.started(answer.call_id)
        began = time.monotonic()
        try:
            result = await execute(request)
        except BaseException as e:
            guard.completed(answer.call_id, ok=False, error=f"{type(e).__name__}: {e}", duration_s=_since(began))
            raise
        record(guard, answer.call_id, result, _since(began))
        return result

    def admit(self, request: ToolCallRequest) -> tuple[Guard, Answer, ToolMessage | None]:
        """The call's verdict, after the human's answer when it is an ASK (this is where the graph pauses);
        and, for a call that already ran before a resume re-executed the node, its recorded result."""
        call = request.tool_call
        guard = self.guard(request.runtime.config)
        answer = guard.check(call["name"], dict(call["args"]), call_id=call.get("id"))
        if answer.approval_id is not None:  # asked: its interrupt is consumed on every pass (see the docstring)
            reply = interrupt(ask_payload(answer, call["args"]))  # raises until a resume value is there for it
            answer = apply_reply(guard, answer, reply)
        return guard, answer, already_ran(guard, request, answer)


class GatedToolNode(ToolNode):
    """A ``ToolNode`` that runs a turn's calls in the order they were proposed (one worker), so that its
    interrupts line up with LangGraph's positional resume values."""

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        return super().invoke(input, cast(RunnableConfig, {**(config or {}), "max_concurrency": 1}), **kwargs)


def ask_payload(answer: Answer, args: Mapping[str, Any]) -> dict[str, Any]:
    """What the interrupt shows the person who must answer: the exact call, why tether asks, and whether
    the approval was answered already (by ``tether approve``, the console): then any resume value goes on."""
    return {
        "tether": "approval",
        "answered": answer.verdict is not Verdict.ASK,
        "verdict": answer.verdict.name,
        "approval_id": answer.approval_id,
        "run_id": answer.run_id,
        "tool": answer.tool,
        "args": dict(args),
        "rule": answer.rule,
        "reason": answer.reason,
        "resume_with": {"approval_id": answer.approval_id, "choice": "once | run | deny", "reason": "..."},
        "or_run": answer.approve_command,
    }


def apply_reply(guard: Guard, asked: Answer, reply: object) -> Answer:
    """The human's resume value, recorded as their answer to ``asked``'s approval — if it still waits and the
    value is an answer to it."""
    current = guard.verdict(asked.call_id)
    if current.verdict is not Verdict.ASK:  # answered meanwhile (tether approve, the console) or expired
        return current
    approval_id = asked.approval_id or ""
    parsed = parse_reply(reply, approval_id)
    if isinstance(parsed, str):
        why = f"{parsed}; {approval_id} stays pending (tether approve|deny {approval_id})"
        return Answer(Verdict.DENY, "approval:unanswered", why, asked.call_id, asked.run_id, asked.tool, approval_id)
    choice, by, reason = parsed
    return guard.answer(approval_id, choice, by=by, reason=reason)


def parse_reply(reply: object, approval_id: str) -> tuple[Choice, str, str] | str:
    """``(choice, by, reason)`` from a resume value, or why it is no answer to ``approval_id``."""
    if isinstance(reply, Mapping) and approval_id in reply:  # {approval_id: answer, ...}
        return parse_reply(reply[approval_id], approval_id)
    if isinstance(reply, Mapping):
        named = reply.get("approval_id")
        if named is not None and named != approval_id:
            return f"the resume value answers {named}, not {approval_id}"
        raw = reply.get("choice", reply.get("approve"))
        by, reason = str(reply.get("by") or whoami()), str(reply.get("reason") or "")
    else:
        raw, by, reason = reply, whoami(), ""
    choice = CHOICES.get(raw) if isinstance(raw, str | bool) else None
    if choice is None:
        return f"the resume value {raw!r} is not an answer (once, run, deny, true, false)"
    return choice, by, reason


def already_ran(guard: Guard, request: ToolCallRequest, answer: Answer) -> ToolMessage | None:
    """A call the log says ran (or began to) before this execution of the node: never run twice."""
    if not answer.allowed:
        return None
    action = guard.refresh().actions[answer.call_id]
    call = request.tool_call
    if action.status is ActionStatus.COMPLETED:
        content = guard.output(action)
        return ToolMessage(
            content=content, name=call["name"], tool_call_id=call["id"], status="success" if action.ok else "error"
        )
    if action.status is ActionStatus.STARTED:
        why = (
            f"tether: {call['name']} ({answer.call_id}) was started before and never completed; its effect is "
            "unknown, so it is not run again: check whether it took effect"
        )
        return ToolMessage(content=why, name=call["name"], tool_call_id=call["id"], status="error")
    return None


def refusal(request: ToolCallRequest, answer: Answer) -> ToolMessage:
    """The tool error the model reads instead of a result: the verdict, the rule and what a human can do."""
    call = request.tool_call
    return ToolMessage(content=answer.message(), name=call["name"], tool_call_id=call["id"], status="error")


def record(guard: Guard, call_id: str, result: ToolResult, duration_s: float) -> None:
    """The receipt of what the tool returned: an error ``ToolMessage`` (the tool raised and ToolNode caught
    it) is a failed call; a ``Command`` is recorded by what it updates."""
    if isinstance(result, ToolMessage):
        ok = result.status != "error"
        text = result.content if isinstance(result.content, str) else str(result.content)
        guard.completed(call_id, ok=ok, output=text, error="" if ok else text, duration_s=duration_s)
    else:
        update = cast(Any, result).update
        guard.completed(call_id, ok=True, output=f"Command(update={update!r})", duration_s=duration_s)


def _since(began: float) -> float:
    return time.monotonic() - began


__all__ = ["LangGraphGate", "apply_reply", "ask_payload", "parse_reply"]
