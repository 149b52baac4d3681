"""The HTTP client both SDKs are given: a model server is trusted with nothing but an answer.

* No redirect is followed. Both SDKs follow them by default and would send the whole request, transcript and
  all, to wherever a ``Location`` points; a model request goes to the configured base URL only (a 3xx is an
  error that names where it pointed: :func:`tether.models.sdk.failure`).
* A reply, or a failed request's error body (the SDKs read that whole to build their error), is at most
  :data:`MAX_REPLY_BYTES`: refused by its ``Content-Length`` before it is read, or as soon as it passes the limit.
* Only an unencoded body is read: the client asks for ``identity`` and refuses any other ``Content-Encoding``,
  since 50 KiB of gzip inflate to gigabytes past any limit on the bytes that arrived.
* The body must arrive within ``timeout_s`` of its headers. The SDKs bound each read only, so a server sending
  a byte just inside every read's timeout held the call, and the run, for as long as it liked.

A refusal is raised inside the SDK as an error of its HTTP library (:class:`ReplyRefused`, a ``RequestError``;
a body too slow, a ``ReadTimeout``), which the SDK reports as its connection (or timeout) error, caused by it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from types import ModuleType

import httpx2

MAX_REPLY_BYTES = 16 * 2**20
"""16 MiB: over 130 bytes for each of the 128,000 output tokens, the largest output limit in the model table."""


class ReplyRefused(httpx2.RequestError):
    """A reply the client will not read: too large, or in an encoding it did not ask for. Not worth retrying."""


class _Bounded(httpx2.SyncByteStream):
    """The body as it arrives, refused past :data:`MAX_REPLY_BYTES` bytes or past its deadline."""

    def __init__(self, inner: httpx2.SyncByteStream, request: httpx2.Request, timeout_s: float) -> None:
        self._inner, self._request, self._timeout_s = inner, request, timeout_s
        self._deadline = time.monotonic() + timeout_s

    def __iter__(self) -> Iterator[bytes]:
        got = 0
        for chunk in self._inner:
            got += len(chunk)
            if got > MAX_REPLY_BYTES:
                raise ReplyRefused(f"the reply passed {MAX_REPLY_BYTES} bytes: not read further", request=self._request)
            if time.monotonic() > self._deadline:
                raise httpx2.ReadTimeout(f"the body took longer than {self._timeout_s:g} s", request=self._request)
            yield chunk

    def close(self) -> None:
        self._inner.close()


def _bound(response: httpx2.Response, *, timeout_s: float) -> None:
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
        response.stream = _Bounded(response.stream, response.request, timeout_s)


def http_client(sdk: ModuleType, timeout_s: float) -> httpx2.Client:
    """``sdk``'s own default client (its connection limits and timeouts), bounded as the module says."""
    client: httpx2.Client = sdk.DefaultHttpxClient(
        follow_redirects=False,
        headers={"accept-encoding": "identity"},
        event_hooks={"response": [partial(_bound, timeout_s=timeout_s)]},
    )
    return client
