"""What the egress proxy costs, against baselines measured in the same run.

    python benchmarks/egress.py [N]

1. Per command: a bwrap sandbox running ``true`` with no listed host (no proxy: the baseline) and with
   one (the proxy started and stopped on the host, the bridge started inside the sandbox).
2. The proxy alone on the host: start and stop.
3. Per request: an HTTP GET to a server on 127.0.0.1, direct, and through the proxy's Unix socket (name
   check, resolver hook, address check, connect, re-framed request, logged attempt).

Only loopback traffic. Prints medians and the ratio to each baseline.
"""

from __future__ import annotations

import http.server
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tether.envelope.schema import Network
from tether.sandbox import BwrapSandbox, bwrap_available
from tether.sandbox.egress import Egress, EgressProxy
from tether.sandbox.egress_policy import EgressPolicy


def median_ms(fn: Callable[[], object], n: int) -> float:
    for _ in range(min(3, n)):
        fn()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def row(name: str, ms: float, base: float) -> None:
    print(f"  {name:<52} {ms:8.2f} ms   x{ms / base:5.2f}")


class Quiet(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:
        pass


def exchange(connect: Callable[[], socket.socket], request: bytes) -> None:
    with connect() as s:
        s.sendall(request)
        while s.recv(65536):
            pass


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    port = server.server_address[1]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    network = Network(allow=[f"bench.test:{port}"], allow_loopback=True)
    egress = Egress(EgressPolicy.of(network), lambda host, _port: ["127.0.0.1"])
    with tempfile.TemporaryDirectory(prefix="tether-bench-egress-") as d:
        ws = Path(d)
        reason = bwrap_available()
        if reason is None:
            plain = BwrapSandbox(ws)
            proxied = plain.with_egress(egress)
            base = median_ms(lambda: plain.run(["true"], cwd=ws, timeout_s=30), n)
            print(f"per command (median of {n}):")
            row("bwrap ['true'], no listed host (no proxy)", base, base)
            row(
                "bwrap ['true'], a listed host (proxy + bridge)",
                median_ms(lambda: proxied.run(["true"], cwd=ws, timeout_s=30), n),
                base,
            )
        else:
            print(f"bwrap skipped: {reason}")

        def start_stop() -> None:
            egress.start().close()

        print(f"the proxy on the host (median of {n}):")
        lifecycle = median_ms(start_stop, n)
        print(f"  {'start + stop':<52} {lifecycle:8.2f} ms")

        direct_request = b"GET / HTTP/1.1\r\nHost: bench.test\r\nConnection: close\r\n\r\n"
        proxied_request = f"GET http://bench.test:{port}/ HTTP/1.1\r\nHost: bench.test:{port}\r\n\r\n".encode()
        with EgressProxy(egress.policy, resolver=egress.resolver) as proxy:

            def via_proxy() -> socket.socket:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(proxy.socket_path))
                return s

            base = median_ms(
                lambda: exchange(lambda: socket.create_connection(("127.0.0.1", port)), direct_request), n * 5
            )
            print(f"per request (median of {n * 5}):")
            row("GET to 127.0.0.1, direct", base, base)
            row(
                "GET through the proxy (checked, logged)",
                median_ms(lambda: exchange(via_proxy, proxied_request), n * 5),
                base,
            )
    server.shutdown()
    server.server_close()


if __name__ == "__main__":
    main()
