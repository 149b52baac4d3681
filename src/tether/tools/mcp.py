"""MCP servers' tools as tether tools: started per run, offered only where the envelope declares them.

The envelope is the allowlist twice over: a server is started only when it is declared in
``mcp_servers``, and of the tools it lists only those the envelope also declares as contracts
(``mcp__<server>__<tool>``: effects, idempotency, trust, timeout) become :class:`McpTool` s — the model
never sees the others, and a call to one is an unknown tool. What the model is told about a tool is the
envelope's ``purpose``, never the server's own description (a server is a third party: its description
is where a "tool poisoning" instruction would hide). The arguments are checked against the server's
input schema and, when the envelope states one, against the envelope's too.

Where a stdio server runs: inside the run's sandbox when that is bubblewrap — one long-lived sandbox for
the server process, with the workspace as its only writable place, no network (loopback only) and the
same unprivileged user and masks as a command (docs/mcp.md). With the ``local`` backend it is an ordinary
subprocess of tether with the allowlisted environment, in the workspace. A streamable HTTP server runs
wherever it runs; tether only connects to it.

Results are the server's words: untrusted data for provenance (``data.trust``; :func:`tether.envelope.trust.trust_of`:
untrusted unless the envelope's contract says ``trust: trusted``), bounded like every tool's.
A server that cannot start is recorded and its tools are not offered; one that dies or hangs fails the
call it was in (``died`` / ``timeout``), never the run.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError
from mcp import StdioServerParameters
from pydantic import BaseModel, ConfigDict

from tether.envelope.schema import Envelope, McpServer, ToolContract, mcp_tool_name
from tether.envelope.trust import trust_of
from tether.errors import Problem, RuntimeFailure
from tether.sandbox.base import Sandbox
from tether.sandbox.bwrap import BwrapSandbox
from tether.sandbox.environment import build_env

from .context import ToolContext
from .contract import MAX_CONTENT_CHARS, Tool, ToolArgsError, _bounded
from .mcp_client import McpCallFailed, McpConnection, McpUnavailable
from .result import ToolResult

#: The envelope's default input schema: "not stated", so the server's schema is the one offered.
UNSTATED_SCHEMA: dict[str, Any] = {"type": "object"}
#: Structured content kept in a receipt's data when its JSON is at most this long (the text is always kept).
MAX_STRUCTURED_CHARS = 8_000
#: The failure classes of an MCP call, by how it failed (see tether.tools.mcp_client).
FAILURE_CLASS = {"timeout": "timeout", "died": "mcp_server_died", "bad_result": "mcp_bad_result", "error": "mcp_error"}


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class McpTool(Tool):
    """One tool of one MCP server, under the envelope's contract for it."""

    def __init__(self, contract: ToolContract, remote: types.Tool, connection: McpConnection) -> None:
        schema = dict(remote.input_schema)
        stated = contract.input_schema if contract.input_schema != UNSTATED_SCHEMA else None
        offered = contract.model_copy(update={"input_schema": stated or schema})
        super().__init__(self._unused, offered, _Open, takes_context=True)
        self.server, self.remote = connection.name, remote.name
        self.connection = connection
        self.validators = [Draft202012Validator(s) for s in (schema, stated) if s is not None]
        for v in self.validators:
            v.check_schema(v.schema)  # raises SchemaError: such a tool is not offered (see McpServers.open)

    @staticmethod
    def _unused(ctx: ToolContext, **args: Any) -> ToolResult:  # pragma: no cover - invoke is overridden
        raise NotImplementedError

    def validate(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments, checked against the server's input schema (and the envelope's, when stated)."""
        if not isinstance(args, Mapping):
            raise ToolArgsError(self.name, [Problem("$", type(args).__name__, "an object of named arguments")])
        value = dict(args)
        problems = [
            Problem(_path(err.absolute_path), json.dumps(err.instance, default=repr)[:80], err.message[:200])
            for v in self.validators
            for err in v.iter_errors(value)
        ]
        if problems:
            raise ToolArgsError(self.name, problems)
        return value

    def invoke(self, args: Mapping[str, Any], ctx: ToolContext) -> ToolResult:
        arguments = self.validate(args)
        try:
            result = self.connection.call(self.remote, arguments, ctx.timeout_s)
        except McpCallFailed as e:
            unknown = " Whether the call took effect is unknown." if e.kind in ("timeout", "died") else ""
            return ToolResult.failure(FAILURE_CLASS[e.kind], f"{self.name}: {e}.{unknown}", **self._origin())
        return result_of(result, self._origin())

    def _origin(self) -> dict[str, Any]:
        return {"mcp": {"server": self.server, "tool": self.remote}, "trust": trust_of(self.contract).value}


def result_of(result: types.CallToolResult, origin: Mapping[str, Any]) -> ToolResult:
    """A server's answer as a tool result: its text for the model, bounded; its origin and trust in the data."""
    parts = [_text(block) for block in result.content]
    structured = result.structured_content
    dumped = json.dumps(structured, ensure_ascii=False, default=repr) if structured is not None else ""
    content = "\n".join(parts) if parts else dumped
    data: dict[str, Any] = dict(origin)
    if structured is not None and len(dumped) <= MAX_STRUCTURED_CHARS:
        data["structured"] = json.loads(dumped)
    if result.is_error:
        return _bounded(ToolResult(False, content or "the server reported an error", data, failure_class="mcp_error"))
    return _bounded(ToolResult(True, content, data))


def _text(block: types.ContentBlock) -> str:
    match block:
        case types.TextContent():
            return block.text[: MAX_CONTENT_CHARS + 1]
        case types.ImageContent() | types.AudioContent():
            return f"[{block.type} {block.mime_type}, {len(block.data)} base64 characters, not shown]"
        case types.ResourceLink():
            return f"[resource link {block.uri}]"
        case types.EmbeddedResource() if isinstance(block.resource, types.TextResourceContents):
            return block.resource.text[: MAX_CONTENT_CHARS + 1]
        case types.EmbeddedResource():
            return f"[resource {block.resource.uri}, binary, not shown]"
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


def _path(parts: Sequence[Any]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


# ---- the servers of one run ----------------------------------------------------------------------------


@dataclass
class Started:
    """What starting one server came to: the tools offered, and what was left out and why (for the log)."""

    server: str
    transport: str
    sandbox: str | None
    offered: list[str] = field(default_factory=list)
    not_listed: list[str] = field(default_factory=list)
    undeclared: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)
    error: str | None = None


class McpServers:
    """The envelope's MCP servers for one run: :meth:`open` starts them, :meth:`close` stops them."""

    def __init__(self, envelope: Envelope, workspace: Path, sandbox: Sandbox | None) -> None:
        self.envelope, self.workspace, self.sandbox = envelope, workspace, sandbox
        self.connections: list[McpConnection] = []

    def needed(self) -> list[McpServer]:
        """The declared servers at least one declared tool belongs to (a server nothing uses is not started)."""
        names = {t.name for t in self.envelope.tools}
        prefixes = [mcp_tool_name(s.name, "") for s in self.envelope.mcp_servers]
        return [
            s for s, p in zip(self.envelope.mcp_servers, prefixes, strict=True) if any(n.startswith(p) for n in names)
        ]

    def open(self) -> tuple[dict[str, Tool], list[Started]]:
        """Start every needed server; the tools to offer by envelope name, and a report per server."""
        tools: dict[str, Tool] = {}
        reports: list[Started] = []
        for server in self.needed():
            report, offered = self._start(server)
            tools.update(offered)
            reports.append(report)
        return tools, reports

    def _start(self, server: McpServer) -> tuple[Started, dict[str, Tool]]:
        transport = "stdio" if server.command else "streamable-http"
        try:
            target, sandbox = self.target(server)
        except (RuntimeFailure, OSError) as e:  # e.g. the sandbox cannot grant the workspace to its user
            return Started(server.name, transport, None, error=f"MCP server {server.name!r} could not start: {e}"), {}
        report = Started(server.name, transport, sandbox)
        connection = McpConnection(server.name, target, startup_timeout_s=server.startup_timeout_s)
        try:
            listed = {t.name: t for t in connection.start()}
        except McpUnavailable as e:
            report.error = str(e)
            return report, {}
        self.connections.append(connection)
        offered: dict[str, Tool] = {}
        for contract in self.envelope.tools:
            remote_name = contract.name.removeprefix(mcp_tool_name(server.name, ""))
            if remote_name == contract.name:
                continue
            remote = listed.get(remote_name)
            if remote is None:
                report.not_listed.append(contract.name)
                continue
            try:
                offered[contract.name] = McpTool(contract, remote, connection)
            except SchemaError as e:
                report.refused[contract.name] = f"its input schema is not a valid JSON Schema: {e.message[:200]}"
        report.offered = sorted(offered)
        declared = {mcp_tool_name(server.name, n) for n in listed} & {t.name for t in self.envelope.tools}
        report.undeclared = sorted(n for n in listed if mcp_tool_name(server.name, n) not in declared)
        return report, offered

    def target(self, server: McpServer) -> tuple[StdioServerParameters | str, str | None]:
        """How to reach ``server``, and the sandbox its process runs in (None: not a local process)."""
        if server.url is not None:
            return server.url, None
        assert server.command is not None
        argv = [sys.executable if a == "{python}" else a for a in server.command]
        ws = self.workspace
        if isinstance(self.sandbox, BwrapSandbox):  # one long-lived bubblewrap sandbox for the server's process
            self.sandbox.prepare(ws)
            wrapped = self.sandbox.argv(argv, workspace=ws, cwd=ws)
            env = self.sandbox.env(server.env)
            return StdioServerParameters(command=wrapped[0], args=wrapped[1:], env=env, cwd=ws), BwrapSandbox.name
        env = build_env(os.environ, env_allow=self.envelope.environment.env_allow, extra=server.env)
        kind = self.sandbox.name if self.sandbox is not None else "none"
        return StdioServerParameters(command=argv[0], args=argv[1:], env=env, cwd=ws), kind

    def close(self) -> None:
        for connection in self.connections:
            connection.close()
        self.connections.clear()
