"""The HTTP client both SDKs are given: a model server is trusted with nothing but an answer.

* No redirect is followed. Both SDKs follow them by default and would send the whole request, transcript and
  all, to wherever a ``Location`` points; a model request goes to the configured base URL only (a 3xx is an
  error that names where it pointed: :func:`tether.models.sdk.failure`).
* A reply, or a failed request's error body (the SDKs read that whole to build their error), is at most
  :data:`MAX_REPLY_BYTES`: refused by its ``Content-Length`` before it is read, or as soon as it passes the limit.
* Only an unencoded body is read: the client asks for ``identity`` and refuses any other ``Content-Encoding``,
  since 50 KiB of gzip inflate to gigabytes past any limit on the bytes that arrived.
* The whole request — connecting, sending, the headers and the body — ends within ``timeout_s`` of its start.
  The SDKs bound each read only, so a server sending a header line or a byte of body just inside every read's
  timeout (or ``103 Early Hints`` forever) held the call, and the run, for as long as it liked. Every socket
  operation of the client's connection pools waits at most the time left (:class:`_DeadlineBackend`), which the
  request's start sets (:func:`_start_clock`); a thread watchdog would have to kill a read it cannot interrupt.

A refusal is raised inside the SDK as an error of its HTTP library (:class:`ReplyRefused`, a ``RequestError``;
a request too slow, a ``ConnectTimeout``/``WriteTimeout``/``ReadTimeout``), which the SDK reports as its
connection (or timeout) error, caused by it.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from functools import partial
from types import ModuleType
from typing import Any

import httpcore2
import httpx2

MAX_REPLY_BYTES = 16 * 2**20
"""16 MiB: over 130 bytes for each of the 128,000 output tokens, the largest output limit in the model table."""


WRITE_PIECE = 16 * 2**10
"""A request is sent 16 KiB at a time, the send buffer a socket starts with: a write of one piece waits for one
send or two, so it ends close to the request's deadline (a megabyte of transcript is 64 writes)."""


class ReplyRefused(httpx2.RequestError):
    """A reply the client will not read: too large, or in an encoding it did not ask for. Not worth retrying."""


_deadline: ContextVar[float | None] = ContextVar("tether_request_deadline", default=None)
"""When the request this thread is making must be over (``time.monotonic()``); ``None`` outside one. A context
variable, not an attribute of the pool: one client may serve several threads, each with a request of its own."""


def _left(timeout: float | None, late: type[httpcore2.TimeoutException]) -> float | None:
    """``timeout`` (the SDK's bound on one operation) cut to the time the request has left; ``late`` once none is.

    Never 0: a socket with timeout 0 does not wait at all but fails with a non-timeout error."""
    deadline = _deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise late("the request took longer than its timeout")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore2.NetworkStream):
    """A connection whose every read and write waits at most the time its request has left."""

    def __init__(self, inner: httpcore2.NetworkStream) -> None:
        self._inner = inner

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _left(timeout, httpcore2.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """In pieces, each given the time left: httpcore gives each ``send`` of one write the whole timeout, so a
        server taking a long transcript in a little at a time held one write for as long as it liked."""
        view = memoryview(buffer)
        for start in range(0, len(view), WRITE_PIECE):
            self._inner.write(view[start : start + WRITE_PIECE].tobytes(), _left(timeout, httpcore2.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore2.NetworkStream:
        tls = self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore2.ConnectTimeout))
        return _DeadlineStream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _DeadlineBackend(httpcore2.NetworkBackend):
    """httpcore's own sockets (:class:`httpcore2.SyncBackend`), each connection a :class:`_DeadlineStream`."""

    def __init__(self) -> None:
        self._inner = httpcore2.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, _left(timeout, httpcore2.ConnectTimeout), local_address, socket_options
        )
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.NetworkStream:
        stream = self._inner.connect_unix_socket(path, _left(timeout, httpcore2.ConnectTimeout), socket_options)
        return _DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


def _start_clock(request: httpx2.Request, *, timeout_s: float) -> None:
    """Called as a request starts, before its connection is chosen: it must be over within ``timeout_s``."""
    _deadline.set(time.monotonic() + timeout_s)


def _give_deadlines(client: httpx2.Client) -> None:
    """Every connection pool of ``client`` (the direct one and any proxy's) makes its connections through a
    :class:`_DeadlineBackend`. httpx builds its pools itself and takes no backend, so the pool's is replaced before
    it has made a connection; a pool without one (another httpx) fails here, not unbounded at the first request."""
    transports: list[Any] = [client._transport, *client._mounts.values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        if transport is not None and not hasattr(pool, "_network_backend"):
            raise RuntimeError(f"cannot bound the time of requests through {type(transport).__name__}")
        if pool is not None:
            pool._network_backend = _DeadlineBackend()


class _Bounded(httpx2.SyncByteStream):
    """The body as it arrives, refused past :data:`MAX_REPLY_BYTES` bytes."""

    def __init__(self, inner: httpx2.SyncByteStream, request: httpx2.Request) -> None:
        self._inner, self._request = inner, request

    def __iter__(self) -> Iterator[bytes]:
        got = 0
        for chunk in self._inner:
            got += len(chunk)
            if got > MAX_REPLY_BYTES:
                raise ReplyRefused(f"the reply passed {MAX_REPLY_BYTES} bytes: not read further", request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _bound(response: httpx2.Response) -> None:
    """Called with the headers, before the body is read: refuse what the headers already say, bound the rest."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ("", "identity"):
        raise ReplyRefused(
            f"the reply is {encoding}-encoded where identity was asked for: a compressed body is not read",
            request=response.request,
        )
    length = response.headers.get("content-length", "").strip()
    if length.isdigit() and int(length) > MAX_REPLY_BYTES:
        raise ReplyRefused(f"the reply is {length} bytes, over {MAX_REPLY_BYTES}: not read", request=response.request)
    if isinstance(response.stream, httpx2.SyncByteStream):
        response.stream = _Bounded(response.stream, response.request)


def http_client(sdk: ModuleType, timeout_s: float) -> httpx2.Client:
    """``sdk``'s own default client (its connection limits and timeouts), bounded as the module says."""
    client: httpx2.Client = sdk.DefaultHttpxClient(
        follow_redirects=False,
        headers={"accept-encoding": "identity"},
        event_hooks={"request": [partial(_start_clock, timeout_s=timeout_s)], "response": [_bound]},
    )
    _give_deadlines(client)
    return client
