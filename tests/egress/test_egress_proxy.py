"""The egress proxy on the host, attacked through its Unix socket: every connection is ruled and logged.

A real proxy, a real HTTP server on 127.0.0.1 (``conftest.upstream``), test names from a resolver hook.
The sandbox side (bridge, bwrap, bypasses) is in test_egress_bwrap.py.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
from egresskit import TOKEN, Names, Upstream

from tether.envelope.schema import Network
from tether.events.kinds_egress import EgressAttempted, EgressRule
from tether.sandbox.egress import EgressProxy, ProxyLimits
from tether.sandbox.egress_policy import EgressPolicy


def policy(port: int, *extra: str, loopback: bool = True) -> EgressPolicy:
    return EgressPolicy.of(Network(allow=[f"allowed.test:{port}", *extra], allow_loopback=loopback))


class Session:
    def __init__(self, proxy: EgressProxy) -> None:
        self.proxy = proxy

    def send(self, data: bytes) -> bytes:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(str(self.proxy.socket_path))
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
            except (BrokenPipeError, ConnectionResetError):  # the proxy hung up first (a connection past its
                pass  # limit is closed unread): what it said before, if anything, is the answer
            return read_all(s)

    def attempts(self) -> list[EgressAttempted]:
        self.proxy.close()
        return self.proxy.attempts


def read_all(s: socket.socket) -> bytes:
    out = b""
    try:
        while chunk := s.recv(65536):
            out += chunk
    except ConnectionResetError:  # closed unread: what came before the reset is the answer
        pass
    return out


@pytest.fixture
def run(upstream: Upstream, names: Names) -> Iterator[Session]:
    upstream.clear()
    proxy = EgressProxy(
        policy(upstream.port), call_id="c1", resolver=names, limits=ProxyLimits(head_timeout_s=0.5)
    ).__enter__()
    yield Session(proxy)
    proxy.close()


def get(host: str, port: int, *, header: str | None = None) -> bytes:
    return f"GET http://{host}:{port}/p?q=1 HTTP/1.1\r\nHost: {header or f'{host}:{port}'}\r\n\r\n".encode()


def test_a_listed_name_is_reached_and_the_attempt_logged(run: Session, upstream: Upstream, names: Names) -> None:
    answer = run.send(get("allowed.test", upstream.port))
    assert answer.startswith(b"HTTP/1.1 200") and TOKEN.encode() in answer
    assert upstream.requests == [("GET", "/p?q=1", f"allowed.test:{upstream.port}", b"")]
    [a] = run.attempts()
    assert (a.call_id, a.method, a.host, a.port, a.allowed, a.rule) == (
        "c1",
        "GET",
        "allowed.test",
        upstream.port,
        True,
        EgressRule.ALLOWED,
    )
    assert a.address == "127.0.0.1" and a.bytes_up > 0 and a.bytes_down >= len(TOKEN) and a.duration_s > 0
    assert names.lookups == ["allowed.test"]  # resolved once; the proxy connected to what it checked


def test_connect_tunnels_bytes_both_ways(run: Session, upstream: Upstream) -> None:
    tunnelled = get("allowed.test", upstream.port)
    connect = f"CONNECT allowed.test:{upstream.port} HTTP/1.1\r\nHost: allowed.test:{upstream.port}\r\n\r\n"
    answer = run.send(connect.encode() + tunnelled.replace(b"Host:", b"Connection: close\r\nHost:"))
    assert answer.startswith(b"HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200")
    [a] = run.attempts()
    assert a.method == "CONNECT" and a.allowed and a.bytes_up >= len(tunnelled) and a.bytes_down > len(TOKEN)


REFUSALS = [
    # (request, rule): each is refused before any byte reaches a server
    (b"GET http://other.test:{port}/ HTTP/1.1\r\nHost: other.test:{port}\r\n\r\n", EgressRule.NOT_LISTED),
    (b"CONNECT allowed.test:22 HTTP/1.1\r\nHost: allowed.test:22\r\n\r\n", EgressRule.PORT),
    (b"CONNECT allowed.test:443 HTTP/1.1\r\nHost: allowed.test:443\r\n\r\n", EgressRule.PORT),
    (b"CONNECT 127.0.0.1:{port} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n", EgressRule.IP_LITERAL),
    (b"CONNECT [::1]:{port} HTTP/1.1\r\nHost: [::1]:{port}\r\n\r\n", EgressRule.IP_LITERAL),
    (b"GET http://2130706433:{port}/ HTTP/1.1\r\nHost: 2130706433:{port}\r\n\r\n", EgressRule.IP_LITERAL),
    (b"GET http://0x7f.1:{port}/ HTTP/1.1\r\nHost: 0x7f.1:{port}\r\n\r\n", EgressRule.IP_LITERAL),
    (b"GET http://0177.0.0.1:{port}/ HTTP/1.1\r\nHost: 0177.0.0.1:{port}\r\n\r\n", EgressRule.IP_LITERAL),
    # the Host header, the URI and the CONNECT target must agree
    (b"GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: other.test:{port}\r\n\r\n", EgressRule.HOST_MISMATCH),
    (b"GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:1\r\n\r\n", EgressRule.HOST_MISMATCH),
    (b"CONNECT allowed.test:{port} HTTP/1.1\r\nHost: other.test:{port}\r\n\r\n", EgressRule.HOST_MISMATCH),
    (
        b"GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\nHost: other.test\r\n\r\n",
        EgressRule.MALFORMED,  # two Host headers: h11 refuses the request outright
    ),
    (b"GET http://allowed.test:{port}@other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n", EgressRule.MALFORMED),
    (b"GET http://other.test\\@allowed.test:{port}/ HTTP/1.1\r\nHost: x\r\n\r\n", EgressRule.MALFORMED),
    # not a proxy request: origin-form (the Host header alone would decide), https in absolute form, no port
    (b"GET / HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n", EgressRule.MALFORMED),
    (b"GET https://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\n\r\n", EgressRule.MALFORMED),
    (b"CONNECT allowed.test HTTP/1.1\r\nHost: allowed.test\r\n\r\n", EgressRule.MALFORMED),
    (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n", EgressRule.MALFORMED),
    (
        b"GET http://allowed.test:{port}/ HTTP/1.1\r\nHost: allowed.test:{port}\r\nBad Header\r\n\r\n",
        EgressRule.MALFORMED,
    ),
    (b"GET http://allowed.test:{port}/ HTTP/1.1\r\n", EgressRule.MALFORMED),  # closed half-way through the head
    # resolved, then refused for the address (the resolver hook stands for a hostile DNS)
    (b"CONNECT internal.test:443 HTTP/1.1\r\nHost: internal.test:443\r\n\r\n", EgressRule.ADDRESS),
    (b"CONNECT metadata.test:80 HTTP/1.1\r\nHost: metadata.test:80\r\n\r\n", EgressRule.ADDRESS),
    (b"CONNECT mixed.test:443 HTTP/1.1\r\nHost: mixed.test:443\r\n\r\n", EgressRule.ADDRESS),
    (b"CONNECT mapped.test:443 HTTP/1.1\r\nHost: mapped.test:443\r\n\r\n", EgressRule.ADDRESS),
    (b"CONNECT nowhere.test:443 HTTP/1.1\r\nHost: nowhere.test:443\r\n\r\n", EgressRule.RESOLVE),
]
LISTED = ["internal.test", "metadata.test", "mixed.test", "mapped.test", "nowhere.test"]


@pytest.mark.parametrize(("request_", "rule"), REFUSALS, ids=[r.value + str(i) for i, (_, r) in enumerate(REFUSALS)])
def test_refusals_never_reach_a_server_and_are_logged(
    upstream: Upstream, names: Names, request_: bytes, rule: EgressRule
) -> None:
    upstream.clear()
    allow = [f"allowed.test:{upstream.port}", *LISTED]
    with EgressProxy(EgressPolicy.of(Network(allow=allow, allow_loopback=True)), resolver=names) as proxy:
        answer = Session(proxy).send(request_.replace(b"{port}", str(upstream.port).encode()))
    assert answer.startswith(b"HTTP/1.1 4") or answer.startswith(b"HTTP/1.1 502"), answer
    assert f"X-Tether-Egress: {rule.value}".encode() in answer
    assert upstream.requests == []
    [a] = proxy.attempts
    assert not a.allowed and a.rule is rule and a.address is None and a.bytes_up == 0


def test_loopback_needs_the_switch(upstream: Upstream, names: Names) -> None:
    with EgressProxy(policy(upstream.port, loopback=False), resolver=names) as proxy:
        answer = Session(proxy).send(get("allowed.test", upstream.port))
    assert b"X-Tether-Egress: address" in answer and b"loopback" in answer
    assert upstream.requests == []


def test_a_huge_request_line_is_refused_without_reading_it_all(run: Session, upstream: Upstream) -> None:
    line = b"GET http://allowed.test:%d/" % upstream.port + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n"
    answer = run.send(line)
    assert answer.startswith(b"HTTP/1.1 431") and upstream.requests == []
    assert [a.rule for a in run.attempts()] == [EgressRule.TOO_LARGE]


def test_a_slow_client_is_cut_off(run: Session, upstream: Upstream) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(10)
        s.connect(str(run.proxy.socket_path))
        s.sendall(b"GET http://allowed.test:%d/ HTTP/1.1\r\n" % upstream.port)  # and never the rest
        answer = read_all(s)
    assert answer.startswith(b"HTTP/1.1 408")
    assert [a.rule for a in run.attempts()] == [EgressRule.SLOW] and upstream.requests == []


def test_one_request_per_connection_is_forwarded_re_framed(run: Session, upstream: Upstream) -> None:
    """A pipelined second request (to another Host) and a smuggling body framing never reach the server."""
    first = (
        b"POST http://allowed.test:%d/one HTTP/1.1\r\nHost: allowed.test:%d\r\nProxy-Authorization: x\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" % (upstream.port, upstream.port)
    )
    second = b"GET http://other.test/two HTTP/1.1\r\nHost: other.test\r\n\r\n"
    answer = run.send(first + second)
    assert answer.count(b"HTTP/1.1 ") == 1 and TOKEN.encode() + b" POST /one" in answer
    assert [(m, p, b) for m, p, _, b in upstream.requests] == [("POST", "/one", b"hello")]
    [headers] = upstream.headers
    assert "proxy-authorization" not in headers and headers["connection"] == "close"
    [a] = run.attempts()
    assert a.allowed and a.host == "allowed.test"


def test_conflicting_lengths_are_refused(run: Session, upstream: Upstream) -> None:
    smuggle = (
        b"POST http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\nContent-Length: 5\r\n"
        b"Content-Length: 40\r\n\r\nhello" % (upstream.port, upstream.port)
    )
    answer = run.send(smuggle)
    assert answer.startswith(b"HTTP/1.1 400") and upstream.requests == []


def test_a_flood_of_connections_is_cut_off_and_counted_once(upstream: Upstream, names: Names) -> None:
    limits = ProxyLimits(max_connections=3)
    with EgressProxy(policy(upstream.port), resolver=names, limits=limits) as proxy:
        answers = [Session(proxy).send(get("other.test", upstream.port)) for _ in range(5)]
    assert [a[:12] for a in answers] == [b"HTTP/1.1 403"] * 3 + [b""] * 2
    assert [a.rule for a in proxy.attempts] == [EgressRule.NOT_LISTED] * 3 + [EgressRule.TOO_MANY]
    assert "2 connection(s) past the limit of 3" in proxy.attempts[-1].detail


def test_an_allowed_name_whose_server_is_down_is_unreachable(names: Names) -> None:
    with socket.socket() as closed:  # a port nothing listens on: bound, never listening
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        with EgressProxy(policy(port), resolver=names) as proxy:
            answer = Session(proxy).send(get("allowed.test", port))
    assert answer.startswith(b"HTTP/1.1 502") and b"X-Tether-Egress: unreachable" in answer
    [a] = proxy.attempts
    assert a.rule is EgressRule.UNREACHABLE and not a.allowed and a.address is None


def test_closing_ends_open_tunnels_records_them_and_leaves_no_thread(upstream: Upstream, names: Names) -> None:
    before = {t.name for t in threading.enumerate()}
    proxy = EgressProxy(policy(upstream.port), resolver=names).__enter__()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(str(proxy.socket_path))
    s.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (upstream.port, upstream.port))
    assert s.recv(100).startswith(b"HTTP/1.1 200")
    proxy.close()  # the command is over: the tunnel must not outlive it
    s.settimeout(5)
    assert s.recv(100) == b""
    s.close()
    [a] = proxy.attempts
    assert a.allowed and a.method == "CONNECT"
    assert not proxy.socket_path.exists()
    deadline = time.monotonic() + 10  # the name lookups' pool ends its threads after close, not within it
    while (left := {t.name for t in threading.enumerate()} - before) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert left == set()


def test_attempts_are_logged_in_the_order_the_command_made_them_not_the_order_they_ended(
    upstream: Upstream, names: Names
) -> None:
    """A tunnel opened first and closed last is still the first attempt (seen in CI: the order depended on when
    the proxy noticed the tunnel's end, so the log's order depended on the machine's load)."""
    with EgressProxy(policy(upstream.port), resolver=names) as proxy:
        tunnel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        tunnel.connect(str(proxy.socket_path))
        tunnel.sendall(b"CONNECT allowed.test:%d HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % ((upstream.port,) * 2))
        assert tunnel.recv(100).startswith(b"HTTP/1.1 200")
        assert Session(proxy).send(get("other.test", upstream.port)).startswith(b"HTTP/1.1 403")
        tunnel.close()
    assert [(a.method, a.host) for a in proxy.attempts] == [("CONNECT", "allowed.test"), ("GET", "other.test")]
    assert proxy.attempts[0].allowed and not proxy.attempts[1].allowed
