"""The gateway holds a call's arguments to the envelope's stated ``input_schema`` and to the upstream's own schema,
as tether's loop does (tools/mcp.py ``McpTool.validate``), and offers the stated schema: the proxy forwarded any
arguments the gate allowed, so a contract narrowed by its schema (a query of at most 8 characters, no other field)
was not narrowed at all, and the client was shown the upstream's schema. A hostile upstream (raw_server.py --hostile): a
declared name whose schema is not valid JSON Schema is neither offered nor called; its own requests and
notifications (sampling, elicitation, roots, a log line) never reach the client."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from mcp import Client
from mcpkit import HERE, private_config, write_envelope

from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope
from tether.events.store import EventStore
from tether.guard.mcp_proxy import Proxy, Upstream, open_proxy, server_for

STATED = {
    "type": "object",
    "properties": {"query": {"type": "string", "maxLength": 8}},
    "required": ["query"],
    "additionalProperties": False,
}


def stated_envelope(directory: Path) -> Path:
    path = write_envelope(directory)
    data = yaml.safe_load(path.read_text())
    for tool in data["tools"]:
        if tool["name"] == "mcp__up__search_notes":
            tool["input_schema"] = STATED
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def calls(proxy: Proxy, *wanted: tuple[str, dict[str, Any]], **client: Any) -> tuple[list[str], list[Any]]:
    async def main() -> tuple[list[str], list[Any]]:
        async with Client(server_for(proxy), **client) as c:
            listed = [t.name for t in (await c.list_tools()).tools]
            return listed, [await c.call_tool(name, args) for name, args in wanted]

    return anyio.run(main)


@pytest.fixture
def proxy_of(tmp_path: Path) -> Iterator[Any]:
    opened: list[Proxy] = []

    def make(upstream: Upstream) -> tuple[Proxy, Path]:
        db = tmp_path / "t.db"
        store = EventStore.open(db, create=True)
        proxy = open_proxy(store, stated_envelope(tmp_path / "c"), upstream, name="up")
        opened.append(proxy)
        return proxy, db

    with private_config(tmp_path):
        yield make
    for p in opened:
        p.upstream.close()
        p.guard.store.close()


def test_arguments_outside_the_stated_schema_are_refused_and_never_forwarded(notes_url: str, proxy_of: Any) -> None:
    proxy, db = proxy_of(Upstream(url=notes_url))
    offered = {t.name: t for t in proxy.offered()}
    assert offered["search_notes"].input_schema == STATED, "the client is shown the envelope's schema"
    _, (good, long, extra, wrong) = calls(
        proxy,
        ("search_notes", {"query": "gro"}),
        ("search_notes", {"query": "groceries and more"}),
        ("search_notes", {"query": "gro", "path": "/etc/passwd"}),
        ("search_notes", {"query": 5}),
    )
    assert not good.is_error and _text(good) == "groceries: milk, eggs"
    for bad in (long, extra, wrong):
        assert bad.is_error and "mcp:arguments" in _text(bad), _text(bad)
        assert (bad.meta or {})["dev.tether/decision"]["rule"] == "mcp:arguments"
    with EventStore.open(db) as store:
        store.verify_run(proxy.guard.run_id)
        events = store.events(proxy.guard.run_id)
    denied = [e.payload for e in events if e.kind == "action.decided" and e.payload["verdict"] == "DENY"]
    assert [d["deciding_rule"] for d in denied] == ["mcp:arguments"] * 3
    assert len([e for e in events if e.kind == "action.completed"]) == 1, "only the good call was forwarded"


def test_a_hostile_upstream_gets_only_gated_calls_and_its_own_requests_reach_nobody(proxy_of: Any) -> None:
    proxy, db = proxy_of(Upstream(command=[sys.executable, str(HERE / "raw_server.py"), "--hostile"]))
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append("sampling")
        raise AssertionError("the upstream's sampling request reached the client")

    async def elicitation(context: Any, params: Any) -> Any:
        asked.append("elicitation")
        return types.ElicitResult(action="accept", content={"approve": True})

    async def logged(params: Any) -> None:
        asked.append("log")

    listed, (search, crash, undeclared, long) = calls(
        proxy,
        ("search_notes", {"query": "gro"}),
        ("crash", {}),
        ("delete_everything", {}),
        ("search_notes", {"query": "far too long"}),
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        logging_callback=logged,
    )
    assert sorted(listed) == ["search_notes"], "an invalid schema is not offered, an undeclared tool never"
    assert next(t for t in proxy.offered()).description == "the notes server's search_notes"
    assert not search.is_error and _text(search) == 'REACHED {"query": "gro"}'
    meta = search.meta or {}
    assert "dev.tether/decision" not in meta and "dev.tether/approval" not in meta, "tether's keys are tether's"
    assert meta["upstream/own"] == 1 and meta["dev.tether/provenance"]["trust"] == "untrusted"
    assert crash.is_error and "REACHED" not in _text(crash) and "mcp:arguments" in _text(crash), _text(crash)
    assert undeclared.is_error and "envelope:undeclared-tool" in _text(undeclared)
    assert long.is_error and "REACHED" not in _text(long)
    assert asked == [], "nothing of the upstream's own reached the client"
    with EventStore.open(db) as store:
        store.verify_run(proxy.guard.run_id)
