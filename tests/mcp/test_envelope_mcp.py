"""The envelope's MCP part: servers declared with one transport, tools named mcp__<server>__<tool>."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope, mcp_tool_name, split_mcp_tool
from tether.envelope.strict import mcp_problems
from tether.errors import EnvelopeInvalid
from tether.tools import resolve_tools

PLAN = {"path": "p.yaml", "hash": "sha256:" + "0" * 64}


def _envelope(tools: list[dict[str, Any]], servers: list[dict[str, Any]]) -> Envelope:
    return Envelope.model_validate({"plan": PLAN, "tools": tools, "mcp_servers": servers})


def _tool(name: str) -> dict[str, Any]:
    return {"name": name, "purpose": "p", "effects": ["read"]}


def test_names_round_trip_and_reject_what_is_not_one() -> None:
    assert mcp_tool_name("notes", "search") == "mcp__notes__search"
    assert split_mcp_tool("mcp__notes__search") == ("notes", "search")
    assert split_mcp_tool("mcp__notes__a__b") == ("notes", "a__b")  # the server name has no '_'
    for name in ("bash", "mcp__notes", "mcp____x", "mcp__notes__", "MCP__notes__x"):
        assert split_mcp_tool(name) is None


@pytest.mark.parametrize(
    "server",
    [
        {"name": "s"},  # no transport
        {"name": "s", "command": ["x"], "url": "http://127.0.0.1:1/mcp"},  # two
        {"name": "s", "command": []},
        {"name": "s_1", "command": ["x"]},  # '_' would make mcp__s_1__t ambiguous to read
        {"name": "s", "url": "file:///etc/passwd"},
        {"name": "s", "command": ["x"], "shell": True},  # unknown key
    ],
)
def test_a_server_needs_exactly_one_transport_and_a_plain_name(server: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        _envelope([], [server])


def test_strict_names_a_duplicate_server_and_a_misspelt_mcp_tool() -> None:
    env = _envelope(
        [_tool("mcp__notes__search"), _tool("mcp__other__x"), _tool("mcp__bad")],
        [{"name": "notes", "command": ["srv"]}, {"name": "notes", "url": "http://127.0.0.1:9/mcp"}],
    )
    found = {(path, str(value)): expected for path, value, expected in mcp_problems(env)}
    assert ("$.mcp_servers[1].name", "notes") in found
    assert ("$.tools[1].name", "mcp__other__x") not in found  # another program's server (the gateway, a hook)
    assert ("$.tools[2].name", "mcp__bad") in found
    assert ("$.tools[0].name", "mcp__notes__search") not in found


def test_resolve_tools_leaves_a_declared_server_tool_to_its_server_but_refuses_an_orphan() -> None:
    env = _envelope([_tool("read_file"), _tool("mcp__notes__search")], [{"name": "notes", "command": ["srv"]}])
    assert list(resolve_tools(env)) == ["read_file"]
    orphan = _envelope([_tool("mcp__gone__search")], [])
    with pytest.raises(EnvelopeInvalid, match=r"tools\[0\]\.name"):
        resolve_tools(orphan)


def test_an_envelope_without_servers_keeps_the_hash_it_was_sealed_with() -> None:
    env = _envelope([_tool("read_file")], [])
    data = env.model_dump(mode="json")
    data.pop("mcp_servers")
    assert contract_hash(env) == contract_hash(data)
    with_server = _envelope([_tool("read_file")], [{"name": "notes", "command": ["srv"]}])
    assert contract_hash(with_server) != contract_hash(env)
