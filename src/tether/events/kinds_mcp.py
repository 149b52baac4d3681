"""Event kinds of MCP servers in a run (payloads only; see tether.tools.mcp and docs/mcp.md).

- ``mcp.started``  a declared server started (or was connected to) and listed its tools: which of them the
  model is offered (declared in the envelope and listed), which declared ones it did not list, which it
  listed that the envelope does not declare (never offered), and which were refused (a broken schema).
- ``mcp.failed``   a declared server could not be started, connected to or listed in time: its tools are
  not offered in this run, and a call to one is an unknown tool.
"""

from __future__ import annotations

from typing import Literal

from tether.plain import Field

from .payload import Payload, new_dict, new_list, register


@register("mcp.started")
class McpStarted(Payload):
    server: str
    transport: Literal["stdio", "streamable-http"]
    sandbox: str | None = Field(None, description="Where a stdio server's process runs (bwrap, local); None: remote.")
    offered: list[str] = Field(
        default_factory=new_list, description="Envelope names of the tools the model is offered."
    )
    not_listed: list[str] = Field(default_factory=new_list, description="Declared tools the server does not list.")
    undeclared: list[str] = Field(default_factory=new_list, description="Tools the server lists that are not declared.")
    refused: dict[str, str] = Field(default_factory=new_dict, description="Declared, listed, but not offered: why.")


@register("mcp.failed")
class McpFailed(Payload):
    server: str
    transport: Literal["stdio", "streamable-http"]
    error: str
