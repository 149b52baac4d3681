"""A stdio MCP server written by hand (no SDK), which answers tools/call with a result that breaks the
protocol: the client must refuse it as malformed, not crash and not pass it on."""

from __future__ import annotations

import json
import sys

TOOL = {"name": "broken", "description": "answers badly", "inputSchema": {"type": "object"}}


def answer(message: dict) -> dict | None:  # type: ignore[type-arg]
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # a notification
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-06-18")
        result = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        result = {"content": "this should be a list of content blocks", "isError": "no"}
    else:
        return {"jsonrpc": "2.0", "id": ident, "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": ident, "result": result}


for line in sys.stdin:
    reply = answer(json.loads(line))
    if reply is not None:
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
