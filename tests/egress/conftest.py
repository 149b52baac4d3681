"""Fixtures for the egress tests: a real HTTP server on 127.0.0.1 and a resolver hook (see egresskit)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest
from egresskit import TOKEN, Names, Upstream


@pytest.fixture(scope="session")
def upstream() -> Iterator[Upstream]:
    record = Upstream(0)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self) -> None:
            body = self.body()
            record.headers.append({k.lower(): v for k, v in self.headers.items()})
            record.requests.append((self.command, self.path, self.headers.get("Host", ""), body))
            out = f"{TOKEN} {self.command} {self.path}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def body(self) -> bytes:
            if self.headers.get("Transfer-Encoding", "").lower() != "chunked":
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))
            out = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                out += self.rfile.read(size)
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                pass
            return out

        do_GET = do_POST = answer

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    record.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield record
    server.shutdown()
    thread.join()
    server.server_close()


@pytest.fixture
def names() -> Names:
    return Names(
        {
            "allowed.test": ["127.0.0.1"],
            "other.test": ["127.0.0.1"],
            "internal.test": ["10.1.2.3"],  # never connected to: refused before any connection
            "metadata.test": ["169.254.169.254"],
            "mixed.test": ["127.0.0.1", "192.168.1.10"],
            "mapped.test": ["::ffff:10.0.0.1"],
            "api.wild.test": ["127.0.0.1"],
        }
    )
