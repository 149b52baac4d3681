"""The gateway: `tether mcp-proxy` between the SDK's client and a real notes server.

Most cases run the proxy's MCP server in-process (the SDK's client connects to it directly) in front of the
notes server over streamable HTTP on 127.0.0.1; one end-to-end test runs the real CLI over stdio in front of
a stdio upstream and answers an approval with `tether approve`.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcpkit import HERE, private_config, write_envelope

from tether.events.store import EventStore
from tether.guard.mcp_proxy import META_KEY, Proxy, Upstream, open_proxy, server_for
from tether.kernel.approvals import pending
from tether.state import RunState
from tether.tools.mcp_client import McpUnavailable

OFFERED = ["add_note", "crash", "huge", "search_notes", "slow"]


@pytest.fixture(scope="module")
def proxied(notes_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Proxy, Path]]:
    root = tmp_path_factory.mktemp("proxy")
    envelope = write_envelope(root / "contract", approval_timeout_s=2)
    with private_config(root), EventStore.open(root / "t.db", create=True) as store:
        proxy = open_proxy(store, envelope, Upstream(url=notes_url), name="up")
        try:
            yield proxy, root / "t.db"
        finally:
            proxy.upstream.close()


def _session(proxy: Proxy, mode: str = "legacy", **client: Any) -> Any:
    """Run ``body(client)`` against the proxy's server in-process (a fresh client per call of ``run``)."""

    def run(body: Any) -> Any:
        async def main() -> Any:
            async with Client(server_for(proxy), mode=mode, **client) as c:
                return await body(c)

        return anyio.run(main)

    return run


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def test_only_declared_tools_are_listed_with_the_envelopes_words(proxied: tuple[Proxy, Path]) -> None:
    proxy, _ = proxied
    tools = _session(proxy)(lambda c: c.list_tools())
    assert sorted(t.name for t in tools.tools) == OFFERED  # never delete_everything, whoami, or the server's bash
    search = next(t for t in tools.tools if t.name == "search_notes")
    assert search.description == "the notes server's search_notes"
    assert search.input_schema["properties"]["query"]["type"] == "string"


def test_an_allowed_call_is_forwarded_logged_and_labelled_untrusted(proxied: tuple[Proxy, Path]) -> None:
    proxy, db = proxied
    result = _session(proxy)(lambda c: c.call_tool("search_notes", {"query": "gro"}))
    assert not result.is_error and _text(result) == "groceries: milk, eggs"
    label = (result.meta or {})[META_KEY]
    assert label["trust"] == "untrusted" and label["run"] == proxy.guard.run_id
    with EventStore.open(db) as store:
        events = store.events(proxy.guard.run_id)
        store.verify_run(proxy.guard.run_id)
    done = [e.payload for e in events if e.kind == "action.completed" and e.payload["call_id"] == label["call"]]
    assert done and done[0]["ok"] and done[0]["tool"] == "mcp__up__search_notes"


@pytest.mark.parametrize(
    ("tool", "args", "rule"),
    [
        ("search_notes", {"query": "secret plans"}, "no-secret-search"),  # a deny rule with an argument predicate
        ("delete_everything", {}, "envelope:undeclared-tool"),  # listed upstream, never declared
        ("bash", {"command": "echo hi"}, "envelope:undeclared-tool"),  # the server's bash is not the built-in
        ("nonexistent", {}, "envelope:undeclared-tool"),
    ],
)
def test_a_refused_call_is_an_error_naming_the_rule(
    proxied: tuple[Proxy, Path], tool: str, args: dict[str, Any], rule: str
) -> None:
    proxy, _ = proxied
    result = _session(proxy)(lambda c: c.call_tool(tool, args))
    assert result.is_error and rule in _text(result)
    assert (result.meta or {})["dev.tether/decision"]["rule"] == rule


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # a request mid-call (2025), an input-required retry (2026)
def test_ask_is_an_elicitation_when_the_client_can(proxied: tuple[Proxy, Path], mode: str) -> None:
    proxy, _ = proxied
    asked: list[str] = []

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        approve = f'"title": "yes-{mode}"' in params.message
        return types.ElicitResult(action="accept", content={"approve": approve})

    run = _session(proxy, mode, elicitation_callback=person)
    yes = run(lambda c: c.call_tool("add_note", {"title": f"yes-{mode}", "body": "b"}))
    no = run(lambda c: c.call_tool("add_note", {"title": f"no-{mode}", "body": "b"}))
    assert not yes.is_error and _text(yes) == f"added yes-{mode}"
    assert no.is_error and "approval:denied" in _text(no)
    assert len(asked) == 2 and "mcp__up__add_note" in asked[0]


def test_an_answer_is_not_carried_over_to_other_arguments(proxied: tuple[Proxy, Path]) -> None:
    """A retry that names the asked call but changes its arguments is a new call: asked again, not run."""
    proxy, _ = proxied
    accept = types.ElicitResult(action="accept", content={"approve": True})

    async def forge(c: Any) -> Any:
        first = await c.session.call_tool("add_note", {"title": "seen", "body": "b"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult) and first.request_state
        return await c.session.call_tool(
            "add_note",
            {"title": "never shown", "body": "b"},
            input_responses={"dev.tether/approval": accept},
            request_state=first.request_state,
            allow_input_required=True,
        )

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return accept

    again = _session(proxy, "auto", elicitation_callback=person)(forge)
    assert isinstance(again, types.InputRequiredResult) and "never shown" in str(again.input_requests)


def test_an_approval_once_cannot_be_replayed(proxied: tuple[Proxy, Path]) -> None:
    """The retry that carried a yes, sent again, is a new call: asked again, not run a second time."""
    proxy, _ = proxied
    accept = types.ElicitResult(action="accept", content={"approve": True})
    args = {"title": "once", "body": "b"}

    async def replay(c: Any) -> Any:
        first = await c.session.call_tool("add_note", args, allow_input_required=True)
        answered = {"input_responses": {"dev.tether/approval": accept}, "request_state": first.request_state}
        ran = await c.session.call_tool("add_note", args, allow_input_required=True, **answered)
        again = await c.session.call_tool("add_note", args, allow_input_required=True, **answered)
        return ran, again

    async def person(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return accept

    ran, again = _session(proxy, "auto", elicitation_callback=person)(replay)
    assert isinstance(ran, types.CallToolResult) and _text(ran) == "added once"
    assert isinstance(again, types.InputRequiredResult) and again.request_state != ran.meta[META_KEY]["call"]


def test_ask_without_elicitation_waits_and_is_denied_when_nobody_answers(proxied: tuple[Proxy, Path]) -> None:
    proxy, _ = proxied  # approvals.timeout_s is 2 in this envelope
    began = time.monotonic()
    result = _session(proxy)(lambda c: c.call_tool("add_note", {"title": "late", "body": "b"}))
    assert result.is_error and "approval:expired" in _text(result) and time.monotonic() - began >= 2


def test_a_hang_a_huge_answer_and_a_crash_fail_closed(proxied: tuple[Proxy, Path]) -> None:
    proxy, db = proxied
    run = _session(proxy)
    slow = run(lambda c: c.call_tool("slow", {"seconds": 30}))
    assert slow.is_error and "did not answer within 1s" in _text(slow)
    huge = run(lambda c: c.call_tool("huge", {"chars": 2_000_000}))
    assert not huge.is_error and len(_text(huge)) == 2_000_000  # the client gets the answer; the log keeps a bound
    missing = run(lambda c: c.call_tool("gone", {}))
    assert missing.is_error and "does not offer 'gone'" in _text(missing)
    with EventStore.open(db) as store:
        events = store.events(proxy.guard.run_id)
        store.verify_run(proxy.guard.run_id)
    receipts = {e.payload["tool"]: e.payload for e in events if e.kind == "action.completed"}
    assert len(receipts["mcp__up__huge"]["result"]["content"]) < 70_000
    assert not receipts["mcp__up__slow"]["ok"]


def test_past_the_tool_call_budget_a_call_is_an_error_naming_the_budget(notes_url: str, tmp_path: Path) -> None:
    envelope = write_envelope(tmp_path / "c", tool_calls=1)
    with private_config(tmp_path), EventStore.open(tmp_path / "t.db", create=True) as store:
        proxy = open_proxy(store, envelope, Upstream(url=notes_url), name="up")
        try:
            run = _session(proxy)
            first = run(lambda c: c.call_tool("search_notes", {"query": "a"}))
            second = run(lambda c: c.call_tool("search_notes", {"query": "b"}))
        finally:
            proxy.upstream.close()
        assert not first.is_error
        assert second.is_error and "budgets.tool_calls exhausted: used 1 of 1" in _text(second)
        assert proxy.guard.refresh().status.name == "BUDGET_STOP"


def test_an_upstream_that_cannot_start_is_a_clear_error(tmp_path: Path) -> None:
    envelope = write_envelope(tmp_path / "c")
    with EventStore.open(tmp_path / "t.db", create=True) as store, pytest.raises(McpUnavailable, match="'up'"):
        open_proxy(store, envelope, Upstream(command=[sys.executable, "-c", "import sys; sys.exit(7)"]), name="up")


def _tether(*args: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tether.cli.main", *args], capture_output=True, text=True, **kw)


@pytest.mark.slow
def test_the_cli_over_stdio_with_a_crashing_upstream_and_an_approval_by_cli(tmp_path: Path) -> None:
    envelope = write_envelope(tmp_path / "c", name="notes")
    db = tmp_path / "t.db"
    upstream = [sys.executable, str(HERE / "notes_server.py")]
    proxy = ["-m", "tether.cli.main", "mcp-proxy", "--envelope", str(envelope), "--name", "notes", "--db", str(db)]
    params = StdioServerParameters(command=sys.executable, args=[*proxy, "--", *upstream])
    approver = threading.Thread(target=_approve_when_asked, args=(db,), daemon=True)

    async def session() -> list[types.CallToolResult]:
        async with Client(params, mode="legacy") as c:
            approver.start()
            added = await c.call_tool("add_note", {"title": "t", "body": "b"})  # waits for `tether approve`
            crashed = await c.call_tool("crash", {})
            after = await c.call_tool("search_notes", {"query": "t"})
            return [added, crashed, after]

    added, crashed, after = anyio.run(session)
    assert not added.is_error and _text(added) == "added t"
    assert crashed.is_error and "crashing on purpose" in _text(crashed)
    assert (after.is_error and "not running" in _text(after)) or "went away" in _text(after)
    with EventStore.open(db, readonly=True) as store:
        (run_id,) = [r.run_id for r in store.runs()]
        assert RunState.from_events(store.events(run_id)).status.name == "COMPLETE", "the disconnect closed it"
    assert _tether("log", "verify", run_id, "--db", str(db)).returncode == 0
    shown = _tether("show", run_id, "--db", str(db)).stdout
    assert "mcp__notes__add_note" in shown and "mcp__notes__crash" in shown


def _approve_when_asked(db: Path) -> None:
    """The person at a terminal: waits for the call's pending approval, then answers it with the real CLI."""
    for _ in range(300):
        if db.exists():
            with EventStore.open(db, readonly=True) as store:
                waiting = pending(store)
            if waiting:
                _tether("approve", waiting[0].approval_id, "--db", str(db), check=True)
                return
        time.sleep(0.1)
