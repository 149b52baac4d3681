"""McpServers and McpTool without a run: a streamable HTTP server on 127.0.0.1, a stdio server under the
local backend, a hand-written server whose answers break the protocol, and one that never starts."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcpkit import HERE

from tether.envelope.schema import Envelope
from tether.sandbox.local import LocalSandbox
from tether.tools.context import ToolContext
from tether.tools.contract import ToolArgsError
from tether.tools.mcp import McpServers, McpTool

PLAN = {"path": "p.yaml", "hash": "sha256:" + "0" * 64}


def _envelope(servers: list[dict[str, Any]], tools: list[dict[str, Any]], **environment: Any) -> Envelope:
    return Envelope.model_validate(
        {"plan": PLAN, "tools": tools, "mcp_servers": servers, "environment": {"workspace": ".", **environment}}
    )


def _read(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "purpose": f"use {name}", "effects": ["read"], **extra}


@pytest.fixture(scope="module")
def http_tools(notes_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[dict[str, Any], Any]]:
    env = _envelope(
        [{"name": "notes", "url": notes_url}],
        [
            _read("mcp__notes__search_notes"),
            _read(
                "mcp__notes__add_note",  # the envelope narrows the server's schema: short titles only
                input_schema={"type": "object", "properties": {"title": {"type": "string", "maxLength": 5}}},
            ),
            _read("mcp__notes__gone"),
            _read("read_file"),
        ],
    )
    servers = McpServers(env, tmp_path_factory.mktemp("ws"), None)
    tools, reports = servers.open()
    try:
        yield tools, reports[0]
    finally:
        servers.close()


def _ctx(tmp_path: Path, env: Envelope | None = None, timeout_s: float = 10) -> ToolContext:
    return ToolContext(tmp_path, LocalSandbox(), env or _envelope([], []), timeout_s)


def test_only_declared_and_listed_tools_become_tools(http_tools: tuple[dict[str, Any], Any]) -> None:
    tools, report = http_tools
    assert sorted(tools) == ["mcp__notes__add_note", "mcp__notes__search_notes"]
    assert report.transport == "streamable-http" and report.sandbox is None and report.error is None
    assert report.not_listed == ["mcp__notes__gone"] and "delete_everything" in report.undeclared
    search = tools["mcp__notes__search_notes"]
    assert isinstance(search, McpTool)
    assert search.contract.purpose == "use mcp__notes__search_notes"  # never the server's own description
    assert search.contract.input_schema["required"] == ["query"]  # the server's schema, when the envelope has none


def test_arguments_meet_the_servers_schema_and_the_envelopes(http_tools: tuple[dict[str, Any], Any]) -> None:
    tools, _ = http_tools
    with pytest.raises(ToolArgsError, match=r"\$\.query"):
        tools["mcp__notes__search_notes"].validate({"query": ["not", "a", "string"]})
    with pytest.raises(ToolArgsError, match="required"):
        tools["mcp__notes__search_notes"].validate({})
    with pytest.raises(ToolArgsError, match=r"\$\.title"):  # the server would take it; the envelope will not
        tools["mcp__notes__add_note"].validate({"title": "far too long", "body": "b"})
    with pytest.raises(ToolArgsError):
        tools["mcp__notes__search_notes"].validate(["query"])  # type: ignore[arg-type]


def test_a_result_is_bounded_and_untrusted(http_tools: tuple[dict[str, Any], Any], tmp_path: Path) -> None:
    tools, _ = http_tools
    result = tools["mcp__notes__search_notes"].invoke({"query": "todo"}, _ctx(tmp_path))
    assert result.ok and result.content == "todo: ship tether"
    assert result.data["trust"] == "untrusted" and result.data["mcp"] == {"server": "notes", "tool": "search_notes"}


def test_a_stdio_server_under_the_local_backend_gets_only_allowlisted_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_SECRET", "hunter2-hunter2")
    monkeypatch.setenv("TETHER_TEST_ALLOWED", "fine")
    command = ["{python}", str(HERE / "notes_server.py")]
    env = _envelope(
        [{"name": "notes", "command": command, "env": {"GIVEN": "by-envelope"}}],
        [_read("mcp__notes__getenv")],
        env_allow=["TETHER_TEST_ALLOWED"],
    )
    servers = McpServers(env, tmp_path, LocalSandbox())
    try:
        tools, (report,) = servers.open()
        assert report.sandbox == "local" and report.offered == ["mcp__notes__getenv"]
        getenv = tools["mcp__notes__getenv"]
        values = {
            n: getenv.invoke({"name": n}, _ctx(tmp_path, env)).content
            for n in ("TETHER_TEST_SECRET", "TETHER_TEST_ALLOWED", "GIVEN")
        }
    finally:
        servers.close()
    assert values == {"TETHER_TEST_SECRET": "(unset)", "TETHER_TEST_ALLOWED": "fine", "GIVEN": "by-envelope"}


def test_a_malformed_answer_fails_the_call_closed(tmp_path: Path) -> None:
    env = _envelope(
        [{"name": "raw", "command": ["{python}", str(HERE / "raw_server.py")]}], [_read("mcp__raw__broken")]
    )
    servers = McpServers(env, tmp_path, LocalSandbox())
    try:
        tools, _ = servers.open()
        result = tools["mcp__raw__broken"].invoke({}, _ctx(tmp_path, env))
    finally:
        servers.close()
    assert not result.ok and result.failure_class == "mcp_bad_result" and "malformed" in result.content


def test_a_server_that_never_starts_offers_nothing_and_says_why(tmp_path: Path) -> None:
    crash = [sys.executable, "-c", "import sys; sys.stderr.write('no config file\\n'); sys.exit(3)"]
    env = _envelope([{"name": "dead", "command": crash, "startup_timeout_s": 20}], [_read("mcp__dead__x")])
    servers = McpServers(env, tmp_path, LocalSandbox())
    tools, (report,) = servers.open()
    servers.close()
    assert tools == {} and report.error is not None
    assert "'dead'" in report.error and "no config file" in report.error
