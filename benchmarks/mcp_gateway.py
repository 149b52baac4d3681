"""What the MCP gateway costs per call: the same tools/call made directly on the upstream server, and through
``tether mcp-proxy``'s server (gate, receipts, a durable SQLite log), in the same run.

The upstream is the tests' notes server over stdio; both clients are the SDK's, the proxy's server runs in
this process (what the CLI serves on stdio, without the extra pipe hop). Prints the median and p95 of each,
their ratio, and the absolute overhead per call; then the start-up of the upstream alone (what a run's
``mcp.started`` costs), for scale.

    .venv/bin/python benchmarks/mcp_gateway.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "mcp"))

from mcpkit import HERE, write_envelope

from tether.events.store import EventStore
from tether.guard.mcp_proxy import Upstream, open_proxy, server_for
from tether.tools.mcp_client import McpConnection

CALLS = 200
SERVER = [sys.executable, str(HERE / "notes_server.py")]


def timed(client_target: object, calls: int) -> list[float]:
    async def main() -> list[float]:
        out = []
        async with Client(client_target, mode="legacy") as c:  # type: ignore[arg-type]
            await c.call_tool("search_notes", {"query": "warm-up"})
            for i in range(calls):
                began = time.perf_counter()
                await c.call_tool("search_notes", {"query": f"q{i}"})
                out.append(time.perf_counter() - began)
        return out

    return anyio.run(main)


def p95(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.95) - 1]


def main() -> None:
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:])
    direct = timed(params, CALLS)
    with tempfile.TemporaryDirectory(prefix="tether-bench-mcp-") as d:
        root = Path(d)
        envelope = write_envelope(root / "c")
        with EventStore.open(root / "t.db", create=True) as store:
            proxy = open_proxy(store, envelope, Upstream(command=SERVER), name="up")
            try:
                proxied = timed(server_for(proxy), CALLS)
            finally:
                proxy.upstream.close()
            events = len(store.events(proxy.guard.run_id))
    began = time.perf_counter()
    with McpConnection("notes", params, startup_timeout_s=60) as c:
        c.start()
    startup = time.perf_counter() - began
    d_med, p_med = statistics.median(direct), statistics.median(proxied)
    print(f"tools/call, {CALLS} calls each (search_notes over stdio)")
    print(f"  direct to the upstream   median {d_med * 1e3:7.2f} ms   p95 {p95(direct) * 1e3:7.2f} ms")
    print(f"  through the gateway      median {p_med * 1e3:7.2f} ms   p95 {p95(proxied) * 1e3:7.2f} ms")
    print(f"  ratio {p_med / d_med:.2f}x; overhead {1e3 * (p_med - d_med):.2f} ms a call ({events} events logged)")
    print(f"upstream start-up (spawn, initialise, tools/list): {startup:.2f} s")


if __name__ == "__main__":
    main()
