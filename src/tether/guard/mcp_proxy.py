"""``tether mcp-proxy``: an MCP server that fronts another, with tether's gate, approvals and log in between.

The client (Claude Code, an IDE, any MCP host) talks to the proxy over stdio as to any server; the proxy
talks to the upstream server (a stdio command it starts, or a streamable HTTP URL) as a client, through
the official ``mcp`` SDK on both sides. In between, one governed session (:class:`tether.guard.Guard`,
framework ``mcp-proxy``) per proxy process:

- ``tools/list`` offers only the upstream tools the envelope declares, as ``mcp__<name>__<tool>``
  contracts (``--name``, default ``upstream``). The client sees the upstream's own tool names and schemas,
  and the envelope's ``purpose`` as the description, never the upstream's (where a poisoning instruction
  would hide).
- ``tools/call`` of anything else is refused; a declared call goes through the one decider. DENY is an
  error result naming the deciding rule. ASK asks the person at the client by an MCP elicitation when the
  client supports it (a request mid-call on the handshake-era protocol, an ``InputRequiredResult`` on the
  2026 one; an accept with ``approve: true`` approves this call once; anything else denies);
  otherwise the call waits as a pending approval that ``tether approve|deny`` or the console answers, and
  is denied when ``approvals.timeout_s`` passes. An ALLOW is forwarded, with its receipts before and after.
- Results come back as the upstream sent them, with ``_meta`` naming the run and call and labelling the
  content untrusted (third-party words); the receipt in the log says so too.

A hung upstream costs the call its contract's ``timeout_s``; an upstream that dies fails the call it was
in and every later one, with its stderr's tail; the session's log stays valid either way.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from jsonschema.exceptions import SchemaError
from mcp import StdioServerParameters
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from tether.envelope.schema import mcp_tool_name
from tether.envelope.trust import trust_of
from tether.events.protocol import Store
from tether.kernel.approvals import whoami
from tether.policy.decision import Verdict
from tether.tools.contract import ToolArgsError
from tether.tools.mcp import McpTool
from tether.tools.mcp_client import McpCallFailed, McpConnection

from .session import Answer, BudgetStop, Guard

FRAMEWORK = "mcp-proxy"
#: The key of the approval question in an ``InputRequiredResult`` (the 2026 protocol's elicitation).
ANSWER_KEY = "dev.tether/approval"
Pending = types.InputRequiredResult
Context = ServerRequestContext[Any, Any]
#: Seconds between reads of the log while a call waits for a human's answer (by the CLI or the console).
POLL_S = 0.25
#: The ``_meta`` key of the provenance label on every forwarded result.
META_KEY = "dev.tether/provenance"
#: tether's ``_meta`` keys (the provenance label, a decision, an approval): an upstream's result is passed on without
#: any of its own under this prefix, so a forged decision or label never reaches the client as tether's.
TETHER_META = "dev.tether/"
APPROVE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Approve this call once"}},
    "required": ["approve"],
}


@dataclass
class Proxy:
    """One proxy session: the governed run and the upstream connection it forwards allowed calls to."""

    guard: Guard
    upstream: McpConnection
    name: str
    listed: dict[str, types.Tool]
    checked: dict[str, McpTool] = field(default_factory=dict)  # declared and listed, with schemas that are valid

    def __post_init__(self) -> None:
        """Each declared tool the upstream lists, with the schemas its arguments are held to (the upstream's, and the
        envelope's ``input_schema`` when it states one), as tether's loop holds them (tools/mcp.py): a tool whose
        schema is not valid JSON Schema is not offered, and a call to it is refused."""
        for remote, tool in self.listed.items():
            contract = self.guard.env.tool(mcp_tool_name(self.name, remote))
            if contract is not None and remote not in self.checked:
                try:
                    self.checked[remote] = McpTool(contract, tool, self.upstream)
                except SchemaError:
                    continue

    # ---- tools/list --------------------------------------------------------------------------

    def offered(self) -> list[types.Tool]:
        """The upstream's tools the envelope declares, described by the envelope's purpose, with the envelope's
        input schema when it states one (the one the call is held to), else the upstream's."""
        out = []
        for remote, tool in self.listed.items():
            checked = self.checked.get(remote)
            if checked is not None:
                update = {"description": checked.contract.purpose, "title": None}
                out.append(tool.model_copy(update={**update, "input_schema": checked.contract.input_schema}))
        return out

    # ---- tools/call --------------------------------------------------------------------------

    async def call(self, ctx: Context, params: types.CallToolRequestParams) -> types.CallToolResult | Pending:
        remote, args = params.name, dict(params.arguments or {})
        declared = self.guard.env.tool(mcp_tool_name(self.name, remote))
        name = mcp_tool_name(self.name, remote) if remote in self.listed or declared else remote
        # a retry that carries the person's answer names its call in request_state; the arguments must match
        # that call's (the guard binds an id to its argument hash), or it is a new call, decided on its own
        asked_id = params.request_state if params.input_responses else None
        refused = await anyio.to_thread.run_sync(self.unfit, remote, name, args) if declared else None
        if refused is not None:
            return _refusal(refused)
        try:
            answer = await anyio.to_thread.run_sync(self.guard.check, name, args, asked_id)
            if asked_id is not None and answer.verdict is not Verdict.ASK:  # only a pending question takes an answer:
                answer = await anyio.to_thread.run_sync(self.guard.check, name, args, None)  # a replay is a new call
        except BudgetStop as spent:  # the session's run has ended BUDGET_STOP: the client reads which budget
            return _refusal(spent.answer)
        if answer.verdict is Verdict.ASK:
            # an answer counts only for the very call it was asked about (same id, same arguments)
            responses = (params.input_responses or {}) if answer.call_id == params.request_state else {}
            asked = await self.ask(ctx, answer, args, responses)
            if isinstance(asked, types.InputRequiredResult):
                return asked
            answer = asked
        if not answer.allowed:
            return _refusal(answer)
        if remote not in self.listed:  # declared, allowed, but the upstream does not offer it
            await anyio.to_thread.run_sync(self.guard.started, answer.call_id)
            why = f"the upstream server does not offer {remote!r}"
            await anyio.to_thread.run_sync(lambda: self.guard.completed(answer.call_id, ok=False, error=why))
            return _error(why, answer)
        timeout = (declared.timeout_s if declared is not None else None) or 60.0
        return await anyio.to_thread.run_sync(self.forward, answer, remote, args, timeout)

    def unfit(self, remote: str, name: str, args: dict[str, Any]) -> Answer | None:
        """A declared call the upstream lists whose arguments do not fit its schemas (or whose schema is not valid),
        recorded as proposed and refused (``mcp:arguments``) before the gate; None when they fit, or the upstream
        does not list the tool (then the gate decides, and the call is not forwarded)."""
        if remote not in self.listed:
            return None
        tool = self.checked.get(remote)
        if tool is None:
            why = f"the upstream's input schema for {remote!r} is not valid JSON Schema; nothing was forwarded"
        else:
            try:
                tool.validate(args)
                return None
            except ToolArgsError as e:
                why = f"{e}; nothing was forwarded"
        return self.guard.refuse(name, args, "mcp:arguments", why, f"c-{uuid.uuid4().hex[:12]}")

    def forward(self, answer: Answer, remote: str, args: dict[str, Any], timeout_s: float) -> types.CallToolResult:
        """Run an allowed call upstream between its two receipts."""
        self.guard.started(answer.call_id)
        began = time.monotonic()
        try:
            result = self.upstream.call(remote, args, timeout_s)
        except McpCallFailed as e:
            unknown = " Whether the call took effect is unknown." if e.kind in ("timeout", "died") else ""
            error = f"{e}.{unknown}"
            self.guard.completed(answer.call_id, ok=False, error=error, duration_s=time.monotonic() - began)
            return _error(error, answer)
        text = "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, default=repr)
        ok = not result.is_error
        error = "" if ok else text or "the server reported an error"
        self.guard.completed(answer.call_id, ok=ok, output=text, error=error, duration_s=time.monotonic() - began)
        own = {k: v for k, v in (result.meta or {}).items() if not k.startswith(TETHER_META)}  # never the upstream's
        meta = {**own, META_KEY: self.label(answer)}
        return result.model_copy(update={"meta": meta})

    def label(self, answer: Answer) -> dict[str, str]:
        """Provenance of a forwarded result: whose words (untrusted unless the contract says otherwise), and
        the run and call that logged it."""
        contract = self.guard.env.tool(answer.tool)
        trust = trust_of(contract, self.guard.env).value if contract is not None else "untrusted"
        return {"trust": trust, "source": f"mcp:{answer.tool}", "run": answer.run_id, "call": answer.call_id}

    async def ask(
        self, ctx: Context, answer: Answer, args: Mapping[str, Any], responses: Mapping[str, Any]
    ) -> Answer | Pending:
        """An ASK answered by the person at the client (an elicitation), else by the CLI or console while the
        call waits. The elicitation is a request to the client mid-call on the handshake-era protocol, and an
        ``InputRequiredResult`` the client answers by retrying the call on the 2026 per-request protocol."""
        approval_id = answer.approval_id or ""
        reply = responses.get(ANSWER_KEY)
        if isinstance(reply, types.ElicitResult):
            return await self.record(approval_id, reply)
        caps = ctx.session.client_capabilities
        if caps is not None and caps.elicitation is not None:
            message = (
                f"tether asks before {answer.tool} runs ({answer.rule}): {answer.reason}\n"
                f"arguments: {json.dumps(dict(args), sort_keys=True, ensure_ascii=False)[:2000]}"
            )
            if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
                form = types.ElicitRequestFormParams(message=message, requested_schema=APPROVE_SCHEMA)
                ask = types.ElicitRequest(params=form)
                return types.InputRequiredResult(input_requests={ANSWER_KEY: ask}, request_state=answer.call_id)
            if ctx.session.can_send_request:
                try:
                    elicited = await ctx.session.elicit_form(message, APPROVE_SCHEMA, related_request_id=ctx.request_id)
                except Exception:  # a client that cannot be asked after all: the CLI or console answers instead
                    elicited = None
                if elicited is not None:
                    return await self.record(approval_id, elicited)
        while answer.verdict is Verdict.ASK:  # the approval's own timeout (approvals.timeout_s) ends the wait
            await anyio.sleep(POLL_S)
            answer = await anyio.to_thread.run_sync(self.guard.verdict, answer.call_id)
        return answer

    async def record(self, approval_id: str, reply: types.ElicitResult) -> Answer:
        """The person's answer, recorded like ``tether approve|deny``: only an accept with ``approve: true`` allows."""
        yes = reply.action == "accept" and (reply.content or {}).get("approve") is True
        why = "" if yes else f"the person at the MCP client answered {reply.action} without approving"
        return await anyio.to_thread.run_sync(
            lambda: self.guard.answer(approval_id, "once" if yes else "deny", by="mcp client", reason=why)
        )


def _refusal(answer: Answer) -> types.CallToolResult:
    return _error(answer.message(), answer)


def _error(text: str, answer: Answer) -> types.CallToolResult:
    meta = {"dev.tether/decision": {"verdict": answer.verdict.value, "rule": answer.rule, "run": answer.run_id}}
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True, meta=meta)


# ---- serving -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Upstream:
    """What the proxy fronts: a stdio command, or a streamable HTTP URL."""

    command: list[str] | None = None
    url: str | None = None
    startup_timeout_s: float = 30.0

    def target(self, cwd: Path) -> StdioServerParameters | str:
        if self.url is not None:
            return self.url
        assert self.command
        # the proxy stands where the server would: the client's environment for it passes through unchanged
        return StdioServerParameters(command=self.command[0], args=self.command[1:], env=dict(os.environ), cwd=cwd)

    def describe(self) -> str:
        return self.url or " ".join(self.command or [])


def open_proxy(
    store: Store, envelope: str | Path, upstream: Upstream, *, name: str, session: str | None = None
) -> Proxy:
    """The governed session and the started upstream (a server that cannot start raises McpUnavailable)."""
    session = session or uuid.uuid4().hex[:12]
    guard = Guard.open(store, envelope, session, framework=FRAMEWORK, task=f"mcp-proxy {name}: {upstream.describe()}")
    guard.reopen(whoami(), f"mcp-proxy {name} serves the session again")  # a session closed before goes on
    connection = McpConnection(name, upstream.target(guard.workspace), startup_timeout_s=upstream.startup_timeout_s)
    listed = {t.name: t for t in connection.start()}
    return Proxy(guard, connection, name, listed)


def server_for(proxy: Proxy) -> Server[Any]:
    """The MCP server the client talks to."""

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=proxy.offered())

    return Server("tether-mcp-proxy", version="1", on_list_tools=list_tools, on_call_tool=proxy.call)


def serve_stdio(proxy: Proxy) -> None:
    """Serve the client on this process's stdin/stdout until it disconnects; then stop the upstream and close the
    session (its run ends COMPLETE; `--session` opens it again)."""
    server = server_for(proxy)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        proxy.upstream.close()
        proxy.guard.close("the MCP client disconnected")  # the run ends through next_step, not left RUNNING
