"""The egress proxy: the only way out of a bubblewrap sandbox, for the hosts ``environment.network.allow`` lists.

A command in bwrap has its own network namespace with nothing but loopback: no route anywhere. When the
envelope lists hosts, each command gets a proxy of its own, on the host, for as long as it runs:

* the proxy listens on a Unix socket in a private directory, bound read-only into the sandbox;
* inside, a small bridge (:mod:`tether.sandbox.egress_bridge`, plain Python, started before the command)
  listens on ``127.0.0.1:3128`` of the sandbox's loopback and forwards each connection to that socket;
* the command gets ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` (both cases) pointing there and an empty
  ``NO_PROXY``. A program that ignores them, or opens a socket itself, reaches nothing: there is no route.

The proxy speaks HTTP/1.x (parsed with h11): ``CONNECT host:port`` for TLS, tunnelled as bytes, and
absolute-URI requests (``GET http://host/path``), forwarded one per connection with ``Connection: close``
and re-framed by h11, so what reaches the server is exactly the one request the proxy checked. Every
decision is :mod:`tether.sandbox.egress_policy`'s. The proxy resolves the name itself and connects to the
addresses it checked (no second look-up for a rebinding resolver to answer differently).

Every connection the command opens to the proxy is one :class:`EgressAttempted`, allowed or not, with the
rule, the address, the bytes each way and the time; the kernel appends them right before the call's
``action.completed``. One proxy per command keeps that attribution exact and leaves nothing running: the
proxy stops when the command returns, closing whatever it still tunnels.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import h11

from tether.events.kinds_egress import EgressAttempted, EgressRule

from .egress_policy import EgressPolicy, Ruling, check_addresses, check_name

Resolver = Callable[[str, int], Sequence[str]]
"""A name and port -> the addresses it resolves to (tests and ``tether doctor`` map test names to 127.0.0.1)."""

SANDBOX_SOCKET_DIR = "/run/tether-egress"
SANDBOX_PORT = 3128
HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization", b"te", b"trailer", b"upgrade"}
)
STATUS = {
    EgressRule.MALFORMED: (400, b"Bad Request"),
    EgressRule.HOST_MISMATCH: (400, b"Bad Request"),
    EgressRule.SLOW: (408, b"Request Timeout"),
    EgressRule.TOO_LARGE: (431, b"Request Header Fields Too Large"),
    EgressRule.RESOLVE: (502, b"Bad Gateway"),
    EgressRule.UNREACHABLE: (502, b"Bad Gateway"),
}


def system_resolver(host: str, port: int) -> list[str]:
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True)
class ProxyLimits:
    head_bytes: int = 16_384
    """The request line and headers together; a longer head is refused (431)."""
    head_timeout_s: float = 10.0
    """Time for the whole head to arrive; a slower client is refused (408)."""
    resolve_timeout_s: float = 10.0
    connect_timeout_s: float = 10.0
    max_connections: int = 1000
    """Connections one command may open; past it each is closed at once, and the log gets one event counting them."""


class Refused(Exception):
    def __init__(self, rule: EgressRule, detail: str) -> None:
        super().__init__(detail)
        self.rule, self.detail = rule, detail


@dataclass
class Attempt:
    """One connection, filled in as it goes; :meth:`event` is what the log gets."""

    call_id: str | None
    started: float = field(default_factory=time.monotonic)
    method: str = ""
    host: str = ""
    port: int | None = None
    ruling: Ruling = field(default_factory=lambda: Ruling(EgressRule.MALFORMED, "no request was read"))
    address: str | None = None
    up: int = 0
    down: int = 0

    def event(self) -> EgressAttempted:
        return EgressAttempted(
            call_id=self.call_id,
            method=self.method[:16],
            host=self.host[:255],
            port=self.port,
            allowed=self.ruling.allowed,
            rule=self.ruling.rule,
            detail=self.ruling.detail[:500],
            address=self.address,
            bytes_up=self.up,
            bytes_down=self.down,
            duration_s=round(time.monotonic() - self.started, 6),
        )


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """``host[:port]`` -> (host, port); a bracketed IPv6 literal comes back whole (the policy refuses it)."""
    if not authority or any(c in authority for c in "@\\/ \t"):
        raise Refused(EgressRule.MALFORMED, f"{authority[:100]!r} is not a host[:port]")
    if authority.startswith("["):
        host, _, rest = authority.partition("]")
        host, port = host + "]", rest.removeprefix(":")
    elif authority.count(":") > 1:
        return authority, default_port or 0  # an unbracketed IPv6 literal
    else:
        host, _, port = authority.partition(":")
    if not port:
        if default_port is None:
            raise Refused(EgressRule.MALFORMED, f"CONNECT {authority[:100]!r} names no port")
        return host, default_port
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise Refused(EgressRule.MALFORMED, f"{authority[:100]!r}: the port must be a number from 1 to 65535")
    return host, int(port)


def absolute_target(target: str) -> tuple[str, int, str]:
    """``http://authority/path?q`` -> (host, port, origin-form path). Only ``http``: TLS goes through CONNECT."""
    scheme, sep, rest = target.partition("://")
    if not sep or scheme.lower() != "http":
        why = "use CONNECT for https" if scheme.lower() == "https" else "expected an absolute http:// URI"
        raise Refused(EgressRule.MALFORMED, f"{target[:100]!r}: {why}")
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    host, port = split_authority(rest[:end], 80)
    path = rest[end:].split("#", 1)[0] or "/"
    return host, port, path if path.startswith("/") else "/" + path


def check_host_header(headers: list[tuple[bytes, bytes]], host: str, port: int, default_port: int) -> None:
    """The Host header, if any, must name the request's own target: one header, same name, same port."""
    values = [v.decode("latin-1") for k, v in headers if k == b"host"]
    if not values:
        return
    if len(values) > 1:
        raise Refused(EgressRule.HOST_MISMATCH, f"{len(values)} Host headers")
    try:
        named, named_port = split_authority(values[0], default_port)
    except Refused:
        raise Refused(EgressRule.HOST_MISMATCH, f"Host header {values[0][:100]!r} is not a host[:port]") from None
    if named.lower().rstrip(".") != host.lower().rstrip(".") or named_port != port:
        raise Refused(EgressRule.HOST_MISMATCH, f"Host header {values[0][:100]!r} does not name {host}:{port}")


class EgressProxy:
    """One command's proxy: ``with EgressProxy(policy) as proxy:`` listens at ``proxy.socket_path``;
    after the block, ``proxy.attempts`` holds one event per connection, in the order they were accepted (a
    tunnel still open when the next request arrives is logged before it, as the command made them)."""

    def __init__(
        self,
        policy: EgressPolicy,
        *,
        call_id: str | None = None,
        resolver: Resolver | None = None,
        limits: ProxyLimits | None = None,
    ) -> None:
        self.policy, self.call_id = policy, call_id
        self.resolver = resolver or system_resolver
        self.limits = limits or ProxyLimits()
        self.attempts: list[EgressAttempted] = []
        self._slots: list[Attempt | EgressAttempted] = []  # one per accepted connection: its event once it ended
        self.directory = Path(tempfile.mkdtemp(prefix="tether-egress-"))
        self.socket_path = self.directory / "proxy.sock"
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tether-egress", daemon=True)
        self._lookups = ThreadPoolExecutor(max_workers=4, thread_name_prefix="tether-egress-dns")
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.AbstractServer | None = None
        self._accepted = self._dropped = 0

    # -- lifecycle (called from the host's thread) ------------------------------------------------

    def __enter__(self) -> EgressProxy:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._listen(), self._loop).result(timeout=10)
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop listening, end every connection (each still records its attempt), stop the thread, remove the socket."""
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            self.attempts += [a if isinstance(a, EgressAttempted) else a.event() for a in self._slots]
            self._slots = []
            if self._dropped:
                detail = f"{self._dropped} connection(s) past the limit of {self.limits.max_connections} were refused"
                too_many = Attempt(self.call_id, ruling=Ruling(EgressRule.TOO_MANY, detail))
                self.attempts.append(too_many.event())
        if not self._loop.is_running():
            self._loop.close()
        self._lookups.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self.directory, ignore_errors=True)

    async def _listen(self) -> None:
        self.directory.chmod(0o755)  # the sandbox user (not the owner when tether is root) must reach the socket
        self._server = await asyncio.start_unix_server(self._accept, path=str(self.socket_path))
        os.chmod(self.socket_path, 0o666)

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    # -- one connection (on the proxy's loop) -----------------------------------------------------

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._accepted += 1
        if self._accepted > self.limits.max_connections:  # a flood: no answer, no event each (see close)
            self._dropped += 1
            writer.close()
            return
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        attempt, slot = Attempt(self.call_id), len(self._slots)
        self._slots.append(attempt)
        try:
            await self._serve(reader, writer, attempt)
        except Refused as e:
            attempt.ruling = Ruling(e.rule, e.detail)
            await refuse(writer, attempt)
        except (OSError, h11.ProtocolError, asyncio.CancelledError) as e:  # a reset, a bad body, the command's end
            ended = f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
            attempt.ruling = Ruling(attempt.ruling.rule, f"{attempt.ruling.detail}; ended by {ended}")
        finally:
            writer.close()
            self._slots[slot] = attempt.event()
            self._tasks.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, attempt: Attempt) -> None:
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.limits.head_bytes)
        try:
            request = await asyncio.wait_for(next_request(conn, reader), self.limits.head_timeout_s)
        except TimeoutError:
            raise Refused(EgressRule.SLOW, f"no complete request head within {self.limits.head_timeout_s:g}s") from None
        attempt.method = request.method.decode("ascii", "replace")
        target = request.target.decode("ascii", "replace")
        headers = [(k.lower(), v) for k, v in request.headers]
        attempt.host = target
        if attempt.method == "CONNECT":
            host, port = split_authority(target, None)
            path = ""
        else:
            host, port, path = absolute_target(target)
        attempt.host, attempt.port = host, port
        check_host_header(headers, host, port, port)
        upstream_reader, upstream_writer = await self._open(host, port, attempt)
        try:
            if attempt.method == "CONNECT":
                await self._tunnel(conn, reader, writer, upstream_reader, upstream_writer, attempt)
            else:
                await self._forward(conn, request, path, reader, writer, upstream_reader, upstream_writer, attempt)
        finally:
            upstream_writer.close()

    async def _open(
        self, raw_host: str, port: int, attempt: Attempt
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Decide, resolve once, check every address, connect to a checked one; :class:`Refused` otherwise."""
        host, refusal = check_name(raw_host, port, self.policy)
        attempt.host = host
        if refusal is not None:
            raise Refused(refusal.rule, refusal.detail)
        loop = asyncio.get_running_loop()
        try:
            found = await asyncio.wait_for(
                loop.run_in_executor(self._lookups, self.resolver, host, port), self.limits.resolve_timeout_s
            )
        except (OSError, TimeoutError) as e:
            raise Refused(EgressRule.RESOLVE, f"{host} did not resolve: {e!r}") from None
        addresses, ruling = check_addresses(host, list(found), self.policy)
        if not ruling.allowed:
            raise Refused(ruling.rule, ruling.detail)
        errors = []
        for address in addresses:
            try:
                opened = await asyncio.wait_for(asyncio.open_connection(address, port), self.limits.connect_timeout_s)
            except (OSError, TimeoutError) as e:
                errors.append(f"{address}: {e!r}")
                continue
            attempt.address, attempt.ruling = address, ruling
            return opened
        raise Refused(EgressRule.UNREACHABLE, f"{host}:{port} is allowed but unreachable ({'; '.join(errors)})")

    async def _tunnel(
        self,
        conn: h11.Connection,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        attempt: Attempt,
    ) -> None:
        while conn.next_event() not in (h11.PAUSED, h11.NEED_DATA):
            pass  # the CONNECT's end of message; what follows is the tunnel's
        early, _closed = conn.trailing_data
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        if early:
            up_writer.write(early)
            attempt.up += len(early)
        await asyncio.gather(
            pump(reader, up_writer, attempt, "up"), pump(up_reader, writer, attempt, "down"), return_exceptions=True
        )

    async def _forward(
        self,
        conn: h11.Connection,
        request: h11.Request,
        path: str,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        up_reader: asyncio.StreamReader,
        up_writer: asyncio.StreamWriter,
        attempt: Attempt,
    ) -> None:
        """One request, re-framed: origin-form target, the checked Host, no hop-by-hop headers, Connection: close."""
        client = h11.Connection(h11.CLIENT)
        host_value = attempt.host if attempt.port == 80 else f"{attempt.host}:{attempt.port}"
        headers = [(k, v) for k, v in request.headers if k.lower() not in HOP_BY_HOP and k.lower() != b"host"]
        headers = [(b"host", host_value.encode()), *headers, (b"connection", b"close")]
        out = h11.Request(method=request.method, target=path.encode(), headers=headers)

        def send(event: h11.Event) -> None:
            data = client.send(event) or b""
            up_writer.write(data)
            attempt.up += len(data)

        send(out)
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                chunk = await reader.read(65536)
                if not chunk:
                    break
                conn.receive_data(chunk)
                continue
            if isinstance(event, h11.Data):
                send(h11.Data(data=event.data))
            elif isinstance(event, h11.EndOfMessage):
                send(h11.EndOfMessage())
                break
            else:
                break
        await up_writer.drain()
        await pump(up_reader, writer, attempt, "down")


async def next_request(conn: h11.Connection, reader: asyncio.StreamReader) -> h11.Request:
    """Read until h11 has a whole request head; :class:`Refused` for anything that is not one."""
    while True:
        try:
            event = conn.next_event()
        except h11.RemoteProtocolError as e:
            rule = EgressRule.TOO_LARGE if e.error_status_hint == 431 else EgressRule.MALFORMED
            raise Refused(rule, f"not an HTTP/1.x request: {e}") from None
        if isinstance(event, h11.Request):
            return event
        if event is h11.NEED_DATA:
            chunk = await reader.read(65536)
            if not chunk:
                raise Refused(EgressRule.MALFORMED, "the connection closed before a whole request head")
            conn.receive_data(chunk)
            continue
        raise Refused(EgressRule.MALFORMED, f"unexpected {type(event).__name__} before a request")


async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter, attempt: Attempt, direction: str) -> None:
    """Copy until end of stream, counting bytes; then half-close the other side."""
    try:
        while chunk := await src.read(65536):
            dst.write(chunk)
            await dst.drain()
            if direction == "up":
                attempt.up += len(chunk)
            else:
                attempt.down += len(chunk)
    finally:
        with contextlib.suppress(OSError):
            if dst.can_write_eof():
                dst.write_eof()


async def refuse(writer: asyncio.StreamWriter, attempt: Attempt) -> None:
    status, phrase = STATUS.get(attempt.ruling.rule, (403, b"Forbidden"))
    body = f"tether egress: refused ({attempt.ruling.rule}): {attempt.ruling.detail}\n".encode("utf-8", "replace")
    head = b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n" % (
        status,
        phrase,
        len(body),
    )
    with contextlib.suppress(OSError):
        writer.write(
            head + b"X-Tether-Egress: " + attempt.ruling.rule.value.encode() + b"\r\nConnection: close\r\n\r\n"
        )
        writer.write(body)
        await asyncio.wait_for(writer.drain(), 5)


@dataclass(frozen=True)
class Egress:
    """The network a sandbox's commands get: ``policy``, through a proxy started for each command."""

    policy: EgressPolicy
    resolver: Resolver | None = None
    limits: ProxyLimits = field(default_factory=ProxyLimits)
    call_id: str | None = None

    def for_call(self, call_id: str, secrets: Sequence[tuple[str, Sequence[str]]] = ()) -> Egress:
        """The same for one tool call, narrowed to the hosts of the ``secrets`` (name, hosts) it carries."""
        policy = self.policy.carrying(secrets) if secrets else self.policy
        return Egress(policy, self.resolver, self.limits, call_id)

    def start(self) -> EgressProxy:
        return EgressProxy(self.policy, call_id=self.call_id, resolver=self.resolver, limits=self.limits).__enter__()


BRIDGE_SOURCE = Path(__file__).with_name("egress_bridge.py")


def bridge_command(socket_path: str, port: int) -> list[str]:
    """Start the bridge inside the sandbox with the interpreter tether runs on (bound there), isolated (-I -S)."""
    return [sys.executable, "-I", "-S", "-c", BRIDGE_SOURCE.read_text(encoding="utf-8"), socket_path, str(port)]


def proxy_env() -> dict[str, str]:
    """What a command in the sandbox is told: every proxy variable both ways, and nothing exempt."""
    url = f"http://127.0.0.1:{SANDBOX_PORT}"
    names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
    return {**{n: url for n in names}, **{n.lower(): url for n in names}, "NO_PROXY": "", "no_proxy": ""}


__all__ = [
    "SANDBOX_PORT",
    "SANDBOX_SOCKET_DIR",
    "Egress",
    "EgressProxy",
    "ProxyLimits",
    "Resolver",
    "bridge_command",
    "proxy_env",
    "system_resolver",
]
