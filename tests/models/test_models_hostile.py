"""Both adapters, through the real SDKs, against hostile or broken servers on 127.0.0.1 (never beyond it).

What a server sends is read tolerantly but never trusted: a redirect is refused, not followed (the transcript
goes to the configured base URL only), and whatever cannot be read is a typed failure, never a crash.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from io import BufferedIOBase

import pytest

from tether.envelope.schema import Price
from tether.errors import ProviderError
from tether.models.anthropic_adapter import AnthropicModel
from tether.models.base import Message
from tether.models.httpclient import MAX_REPLY_BYTES
from tether.models.openai_adapter import OpenAIModel
from tether.models.pricing import cost_usd
from tether.models.retry import complete_with_retries
from tether.models.testing import (
    PROXY_ENV_VARS,
    AnthropicWireServer,
    OpenAIWireServer,
    Reply,
    WireServer,
    anthropic_message,
    openai_chat,
)

SECRET = "the transcript: only the configured server may read it"
USER = [Message("user", SECRET)]
PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)


@pytest.fixture(autouse=True)
def _offline_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, "OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


Kind = type[OpenAIWireServer] | type[AnthropicWireServer]


def model_for(server: WireServer, *, timeout_s: float = 10.0) -> OpenAIModel | AnthropicModel:
    if isinstance(server, AnthropicWireServer):
        return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=server.base_url, timeout_s=timeout_s)
    return OpenAIModel("gpt-test", api_key="sk-test", base_url=server.base_url, timeout_s=timeout_s)


def answer(server: WireServer, text: str = "hi") -> Reply:
    return anthropic_message(text) if isinstance(server, AnthropicWireServer) else openai_chat(text)


@pytest.fixture(params=[OpenAIWireServer, AnthropicWireServer], ids=["openai", "anthropic"])
def servers(request: pytest.FixtureRequest) -> Iterator[tuple[WireServer, WireServer]]:
    kind: Kind = request.param
    with kind() as configured, kind() as elsewhere:
        yield configured, elsewhere


# ---- redirects ----------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_to_another_host_is_refused_and_nothing_is_sent_there(
    servers: tuple[WireServer, WireServer], status: int
) -> None:
    """``localhost`` is another host than ``127.0.0.1`` to an HTTP client: a loopback name proves the refusal."""
    configured, elsewhere = servers
    target = f"http://localhost:{elsewhere.port}{elsewhere.path}"
    configured.push(Reply(status, {}, {"location": target}))
    elsewhere.push(answer(elsewhere, "answered by another host"))

    with pytest.raises(ProviderError) as info:
        model_for(configured).complete(USER, [], max_tokens=10)

    assert elsewhere.requests == []  # neither the transcript nor a key left for the other host
    assert info.value.status == status and not info.value.transient and not info.value.malformed
    assert "redirect" in str(info.value) and target in str(info.value)


def test_a_redirect_on_the_same_server_is_refused_too(servers: tuple[WireServer, WireServer]) -> None:
    """Not followed even to the same origin: the configured base URL is the only address a request goes to."""
    configured, _ = servers
    configured.push(Reply(307, {}, {"location": configured.path}), answer(configured))

    with pytest.raises(ProviderError, match="redirect"):
        model_for(configured).complete(USER, [], max_tokens=10)
    assert len(configured.requests) == 1 and configured.pending == 1


# ---- usage --------------------------------------------------------------------------------------


def with_usage(server: WireServer, input_tokens: object, output_tokens: object) -> Reply:
    reply = answer(server)
    if isinstance(server, AnthropicWireServer):
        return Reply(body={**reply.body, "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens}})
    return Reply(body={**reply.body, "usage": {"prompt_tokens": input_tokens, "completion_tokens": output_tokens}})


@pytest.mark.parametrize(
    "counts",
    [(10**400, 1), (1, 10**400), (2**53 + 1, 1), (-1, 5), (5, -1), (1.5, 2), (True, 2), ("12", 2), (None, 2)],
    ids=["huge-in", "huge-out", "past-2^53", "negative-in", "negative-out", "float", "bool", "string", "null"],
)
def test_usage_that_cannot_be_a_count_is_unreported_and_prices_without_a_crash(
    servers: tuple[WireServer, WireServer], counts: tuple[object, object]
) -> None:
    """A count no server can have billed (past 2**53, where JSON's numbers stop being exact) is not a count: the host
    estimates, as for missing usage. 10**400 made the price an OverflowError after the reply had arrived."""
    configured, _ = servers
    configured.push(with_usage(configured, *counts))
    model = model_for(configured)
    r = model.complete(USER, [], max_tokens=10)
    assert not r.usage.reported and (r.usage.input_tokens, r.usage.output_tokens) == (0, 0)
    assert cost_usd(model.name, r.usage, {model.name: PRICE}) == 0.0


def test_a_large_real_count_is_reported(servers: tuple[WireServer, WireServer]) -> None:
    configured, _ = servers
    configured.push(with_usage(configured, 2**53, 7))
    model = model_for(configured)
    r = model.complete(USER, [], max_tokens=10)
    assert r.usage.reported and (r.usage.input_tokens, r.usage.output_tokens) == (2**53, 7)
    assert math.isfinite(cost_usd(model.name, r.usage, {model.name: PRICE}))


# ---- replies too large, compressed past the limit, or trickled --------------------------------------------

BIG = 50 * 2**20  # 50 MiB: no chat reply is that long


class RawServer:
    """A server on 127.0.0.1 that answers every POST with the bytes ``answer(stream)`` writes, as it writes them:
    what the wire servers cannot send (chunked bodies, a body a byte at a time, compressed bodies)."""

    def __init__(self, answer: Callable[[BufferedIOBase], None]) -> None:
        self.answer = answer
        self.served = 0

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(handler) -> None:
                handler.rfile.read(int(handler.headers.get("content-length") or 0))
                self.served += 1
                self.accept_encoding = handler.headers.get("accept-encoding")
                handler.close_connection = True
                with contextlib.suppress(OSError):
                    self.answer(handler.wfile)

            def log_message(handler, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.accept_encoding: str | None = None
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()

    def base_url(self, kind: str) -> str:
        port = self.httpd.server_address[1]
        return f"http://127.0.0.1:{port}" + ("/v1" if kind == "openai" else "")

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def head(status: int = 200, **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", "content-type: application/json", "connection: close"]
    lines += [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def chunked(out: BufferedIOBase, body: Iterator[bytes]) -> None:
    out.write(head(transfer_encoding="chunked"))
    for part in body:
        out.write(b"%x\r\n%s\r\n" % (len(part), part))
    out.write(b"0\r\n\r\n")


def huge_text() -> Iterator[bytes]:
    """A reply whose text never ends (well, at 50 MiB), as a chat completion and a message both begin."""
    yield b'{"choices": [{"message": {"content": "'
    for _ in range(BIG // 2**16):
        yield b"a" * 2**16
    yield b'"}}]}'


def raw_model(kind: str, url: str, *, timeout_s: float = 10.0) -> OpenAIModel | AnthropicModel:
    if kind == "anthropic":
        return AnthropicModel("claude-test", api_key="sk-ant-test", base_url=url, timeout_s=timeout_s)
    return OpenAIModel("gpt-test", api_key="sk-test", base_url=url, timeout_s=timeout_s)


@pytest.fixture(params=["openai", "anthropic"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def refused(kind: str, answer: Callable[[BufferedIOBase], None], *, timeout_s: float = 10.0) -> ProviderError:
    server = RawServer(answer)
    try:
        began = time.monotonic()
        with pytest.raises(ProviderError) as info:
            raw_model(kind, server.base_url(kind), timeout_s=timeout_s).complete(USER, [], max_tokens=10)
        assert time.monotonic() - began < 30  # refused as it came, not after reading it all
        return info.value
    finally:
        server.close()


def test_a_reply_larger_than_the_limit_is_refused_by_its_length(kind: str) -> None:
    def answer(out: BufferedIOBase) -> None:
        out.write(head(content_length=str(BIG)))
        for part in huge_text():
            out.write(part)

    err = refused(kind, answer)
    assert err.malformed and not err.transient and f"{MAX_REPLY_BYTES}" in str(err)


def test_a_chunked_reply_is_refused_once_past_the_limit(kind: str) -> None:
    err = refused(kind, lambda out: chunked(out, huge_text()))
    assert err.malformed and not err.transient and f"{MAX_REPLY_BYTES}" in str(err)


def test_an_error_body_past_the_limit_is_refused_too(kind: str) -> None:
    """The SDKs read a failed request's body whole to build their error: it is capped the same way."""

    def answer(out: BufferedIOBase) -> None:
        out.write(head(500, content_length=str(BIG)))
        for part in huge_text():
            out.write(part)

    err = refused(kind, answer)
    assert err.malformed and not err.transient


def test_a_compressed_reply_is_refused_and_none_is_asked_for(kind: str) -> None:
    """A 50 KiB gzip body can hold gigabytes: tether asks for the identity encoding and refuses any other."""
    bomb = gzip.compress(b"".join(huge_text()))
    assert len(bomb) < MAX_REPLY_BYTES // 100

    def answer(out: BufferedIOBase) -> None:
        out.write(head(content_encoding="gzip", content_length=str(len(bomb))))
        out.write(bomb)

    server = RawServer(answer)
    try:
        with pytest.raises(ProviderError) as info:
            raw_model(kind, server.base_url(kind)).complete(USER, [], max_tokens=10)
        assert server.accept_encoding == "identity"
    finally:
        server.close()
    assert info.value.malformed and not info.value.transient and "gzip" in str(info.value)


def test_a_reply_trickled_past_the_timeout_is_abandoned(kind: str) -> None:
    """Each read comes within the timeout, the whole body does not: the body is bounded by the timeout too."""

    def answer(out: BufferedIOBase) -> None:
        def trickle() -> Iterator[bytes]:
            for _ in range(40):
                time.sleep(0.1)
                yield b" "

        chunked(out, trickle())

    began = time.monotonic()
    err = refused(kind, answer, timeout_s=1.0)
    assert time.monotonic() - began < 3.5
    assert err.transient and "1 s" in str(err)


def test_a_reply_within_the_limits_still_reads(kind: str) -> None:
    body = json.dumps(
        {"choices": [{"message": {"content": "x" * 2**20}, "finish_reason": "stop"}]}
        if kind == "openai"
        else {"content": [{"type": "text", "text": "x" * 2**20}], "stop_reason": "end_turn"}
    ).encode()
    server = RawServer(lambda out: chunked(out, iter([body[: len(body) // 2], body[len(body) // 2 :]])))
    try:
        r = raw_model(kind, server.base_url(kind)).complete(USER, [], max_tokens=10)
    finally:
        server.close()
    assert r.text == "x" * 2**20


# ---- Retry-After ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["99999999", "-5", "Wed, 21 Oct 2099 07:28:00 GMT", "soon", "1e308"])
def test_retry_after_never_decides_a_wait(servers: tuple[WireServer, WireServer], value: str) -> None:
    """Huge, negative, a date, nonsense: the SDKs' retries are off and tether's backoff alone sets each wait."""
    configured, _ = servers
    busy = Reply(429, {"error": {"type": "rate_limit_error", "message": "slow down"}}, {"retry-after": value})
    configured.push(busy, busy, answer(configured, "after the wait"))
    sleeps: list[float] = []
    began = time.monotonic()
    r, attempts = complete_with_retries(
        model_for(configured), USER, [], max_tokens=10, max_attempts=3, backoff_s=0.5, backoff_max_s=1.0,
        sleep=sleeps.append, rand=lambda: 1.0,
    )  # fmt: skip
    assert (r.text, attempts, sleeps) == ("after the wait", 3, [0.5, 1.0])
    assert time.monotonic() - began < 5 and len(configured.requests) == 3


# ---- a stream where a reply was asked for, a body cut mid tool call -----------------------------------------


def cut_call(kind: str) -> bytes:
    """A reply with a tool call that stops in the middle of its arguments."""
    if kind == "openai":
        whole = openai_chat(tool_calls=[("call_a", "bash", {"command": "rm -rf build && make"})]).body
    else:
        whole = anthropic_message(tool_uses=[("toolu_a", "bash", {"command": "rm -rf build && make"})]).body
    text = json.dumps(whole).encode()
    return text[: text.index(b"rm -rf") + 6]


def test_a_body_cut_mid_tool_call_is_a_lost_connection_and_nothing_of_it_is_kept(kind: str) -> None:
    """Content-Length promises more than comes, then the connection closes: the SDK never parses the part that
    came, the failure is transient (retried whole), and no call of it reaches the host."""
    part = cut_call(kind)

    def answer(out: BufferedIOBase) -> None:
        out.write(head(content_length=str(len(part) + 100)) + part)

    err = refused(kind, answer)
    assert err.transient and not err.malformed


@pytest.mark.parametrize("as_chunks", [False, True])
def test_a_complete_body_that_is_cut_json_is_malformed(kind: str, as_chunks: bool) -> None:
    """The bytes all came (the server said so) but the JSON stops mid call: unreadable, not a call with {} args."""
    part = cut_call(kind)

    def answer(out: BufferedIOBase) -> None:
        if as_chunks:
            chunked(out, iter([part]))
        else:
            out.write(head(content_length=str(len(part))) + part)

    err = refused(kind, answer)
    assert err.malformed and not err.transient


def sse(kind: str) -> bytes:
    """What a server streaming its answer sends: events, a tool call split across them, an error event mid-way."""
    if kind == "openai":
        events = [
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "bash"}}]}}
                ]
            },
            {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"comm'}}]}}]},
            {"error": {"message": "overloaded", "type": "server_error"}},
        ]
        lines = [f"data: {json.dumps(e)}\n\n" for e in events] + ["data: [DONE]\n\n"]
    else:
        lines = [
            'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, "content_block": '
            '{"type": "tool_use", "id": "t", "name": "bash", "input": {}}}\n\n',
            'event: error\ndata: {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}\n\n',
        ]
    return "".join(lines).encode()


def test_a_stream_where_one_reply_was_asked_for_is_malformed(kind: str) -> None:
    """tether never asks for a stream: an SSE answer (a tool call split across events, an error event mid-way)
    is not JSON, so it is unreadable and nothing in it is a call."""
    body = sse(kind)

    def answer(out: BufferedIOBase) -> None:
        out.write(head(content_length=str(len(body))).replace(b"application/json", b"text/event-stream") + body)

    err = refused(kind, answer)
    assert err.malformed and not err.transient


# ---- the whole request is bounded by the timeout, not each read ----------------------------------------------


def trickled_head(out: BufferedIOBase, lines: int = 20, every_s: float = 0.5) -> None:
    """A status line at once, then one header line every ``every_s`` s: each read comes within any timeout."""
    out.write(b"HTTP/1.1 200 OK\r\n")
    out.flush()
    for i in range(lines):
        time.sleep(every_s)
        out.write(b"x-slow-%d: 1\r\n" % i)
        out.flush()
    out.write(b"content-type: application/json\r\ncontent-length: 2\r\n\r\n{}")


def test_headers_trickled_past_the_timeout_are_abandoned(kind: str) -> None:
    """The headers count against the timeout too: one header line per 0.5 s held a 1 s call for 10 s."""
    began = time.monotonic()
    err = refused(kind, trickled_head, timeout_s=1.0)
    assert time.monotonic() - began < 2.5
    assert err.transient and "1 s" in str(err)


def test_early_hints_sent_forever_are_abandoned(kind: str) -> None:
    """``103 Early Hints`` is an interim answer the client reads past: sent every 0.1 s it never lets the real one
    come, and each read comes in time. The request ends at its timeout."""

    def answer(out: BufferedIOBase) -> None:
        while True:
            out.write(b"HTTP/1.1 103 Early Hints\r\nlink: </style.css>; rel=preload\r\n\r\n")
            out.flush()
            time.sleep(0.1)

    began = time.monotonic()
    err = refused(kind, answer, timeout_s=1.0)
    assert time.monotonic() - began < 2.5
    assert err.transient and "1 s" in str(err)


class SlowReader:
    """A server on 127.0.0.1 that takes a request in slowly, 256 KiB every 0.05 s, and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.read = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self.listener.accept()
            with conn:
                while data := conn.recv(2**18):
                    self.read += len(data)
                    time.sleep(0.05)

    def base_url(self, kind: str) -> str:
        return f"http://127.0.0.1:{self.port}" + ("/v1" if kind == "openai" else "")


def test_a_request_the_server_reads_slowly_is_abandoned(kind: str) -> None:
    """Sending counts too: a server taking a long transcript in a little at a time, each part just inside the
    timeout, does not hold the call past it."""
    server = SlowReader()
    transcript = [Message("user", "x" * 24 * 2**20)]  # past any socket buffer: the send must wait on the reader
    began = time.monotonic()
    try:
        with pytest.raises(ProviderError) as info:
            raw_model(kind, server.base_url(kind), timeout_s=1.0).complete(transcript, [], max_tokens=10)
    finally:
        server.listener.close()
    assert time.monotonic() - began < 3.5
    assert info.value.transient and "1 s" in str(info.value) and server.read > 0


# ---- malformed framing: what the HTTP parser itself is handed ---------------------------------------------------


def test_a_header_line_of_10_mb_is_refused_before_it_is_read_whole(kind: str) -> None:
    def answer(out: BufferedIOBase) -> None:
        out.write(b"HTTP/1.1 200 OK\r\nx-big: " + b"a" * 10 * 2**20 + b"\r\ncontent-length: 2\r\n\r\n{}")

    err = refused(kind, answer)
    assert err.transient and not err.malformed  # a protocol error: the connection's, retried


def test_thousands_of_headers_past_the_parsers_limit_are_refused(kind: str) -> None:
    def answer(out: BufferedIOBase) -> None:
        out.write(b"HTTP/1.1 200 OK\r\n" + b"".join(b"x-h%d: 1\r\n" % i for i in range(50_000)) + b"\r\n{}")

    err = refused(kind, answer)
    assert err.transient and not err.malformed


def test_a_chunk_size_line_that_never_ends_is_refused(kind: str) -> None:
    def answer(out: BufferedIOBase) -> None:
        out.write(head(transfer_encoding="chunked") + b"1" + b"0" * 10 * 2**20 + b"\r\n")

    err = refused(kind, answer)
    assert err.transient or err.malformed


def test_a_close_delimited_http_1_0_body_past_the_limit_is_refused(kind: str) -> None:
    def answer(out: BufferedIOBase) -> None:
        out.write(b"HTTP/1.0 200 OK\r\ncontent-type: application/json\r\n\r\n")
        for part in huge_text():
            out.write(part)

    err = refused(kind, answer)
    assert err.malformed and f"{MAX_REPLY_BYTES}" in str(err)


def ok_body(kind: str) -> bytes:
    return json.dumps(
        {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}
        if kind == "openai"
        else {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}
    ).encode()


def answered_text(kind: str, wire: bytes) -> str:
    """The text of the reply a server sends as ``wire`` (a whole HTTP response)."""

    def answer(out: BufferedIOBase) -> None:
        out.write(wire)

    server = RawServer(answer)
    try:
        return raw_model(kind, server.base_url(kind)).complete(USER, [], max_tokens=10).text
    finally:
        server.close()


def test_a_content_length_shorter_than_the_body_reads_only_what_it_says(kind: str) -> None:
    """The bytes past the length are not read as part of the reply: the reply is the JSON the length covers."""
    body = ok_body(kind)
    assert answered_text(kind, head(content_length=str(len(body))) + body + b"garbage" * 1000) == "ok"


def test_trailers_after_a_chunked_body_are_read_past(kind: str) -> None:
    body = ok_body(kind)
    chunk = b"%x\r\n%s\r\n0\r\nx-trailer: 1\r\n\r\n" % (len(body), body)
    assert answered_text(kind, head(transfer_encoding="chunked") + chunk) == "ok"


def test_interim_answers_before_the_real_one_are_read_past(kind: str) -> None:
    """A ``100 Continue`` nobody asked for and a few ``103 Early Hints`` before the answer: the answer is read."""
    body = ok_body(kind)
    interim = b"HTTP/1.1 100 Continue\r\n\r\n" + b"HTTP/1.1 103 Early Hints\r\nlink: </a>\r\n\r\n" * 3
    assert answered_text(kind, interim + head(content_length=str(len(body))) + body) == "ok"
