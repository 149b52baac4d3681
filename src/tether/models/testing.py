"""Real HTTP servers on 127.0.0.1 that speak the providers' wire formats, for tests.

They let the *real* SDK clients run end to end offline: the adapters' requests
go through the SDK, over a socket, to a server that checks them the way the
provider would (roles, tool-call/tool-result pairing, tool schemas) and
answers with replies the test queued. A request the provider would reject gets
the provider's 400 error shape, so a translation bug fails a test instead of
passing silently.

Each server also behaves like a provider in two small ways: text replies
longer than the request's output limit (one word = one token) are cut and
marked truncated, and usage is filled in when a reply does not give it.

    with OpenAIWireServer([openai_chat("hi")]) as server:
        model = OpenAIModel("gpt-test", api_key="test", base_url=server.base_url)

Shipped in the package (not under ``tests/``) so library users can test their
own hosts the same way.
"""

from __future__ import annotations

import json
import re
import select
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

PROXY_ENV_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")
"""Unset these in tests (with ``NO_PROXY=127.0.0.1``) so SDK traffic cannot leave the machine."""

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a JSON body with a status, or a dropped connection, optionally late."""

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    drop: bool = False


Responder = Reply | Callable[[dict[str, Any]], Reply]
"""A fixed reply, or a function of the request's JSON body."""


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class WireServer:
    """Base: a threaded server answering POSTs to ``path`` from a queue of replies.

    Subclasses provide the wire-format checks (:meth:`validate`), the error
    body shape (:meth:`error`) and provider-like finishing (:meth:`finish`).
    An empty queue answers 500 with a message saying so, which fails loudly.
    """

    path = "/"
    base_path = ""

    def __init__(self, replies: Iterable[Responder] = ()) -> None:
        self._replies: deque[Responder] = deque(replies)
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self.abandoned = 0
        """Late replies the client gave up on: it closed the connection before the answer was sent."""
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        handler = _make_handler(self)
        httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        httpd.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, name=type(self).__name__, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """What to give the SDK as ``base_url``."""
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    # -- scripting ---------------------------------------------------------
    def push(self, *replies: Responder) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def pending(self) -> int:
        """Replies queued but not yet served (a test can assert all were used)."""
        with self._lock:
            return len(self._replies)

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            refusal = self.refuse(request)
            if refusal is not None:  # the server answers without generating: no queued reply is used
                return refusal
            responder = self._replies.popleft() if self._replies else None
        if responder is None:
            return self.error(500, "api_error", "test server: no reply queued for this request")
        problem = self.validate(request)
        if problem is not None:
            return self.error(400, "invalid_request_error", problem)
        reply = responder(request.body) if callable(responder) else responder
        if reply.status == 200 and not reply.drop and isinstance(reply.body, dict):
            return Reply(200, self.finish(request.body, reply.body), reply.headers, reply.delay_s)
        return reply

    # -- provider specifics ------------------------------------------------
    def refuse(self, request: RecordedRequest) -> Reply | None:
        """A server-specific answer that takes precedence over the queue (a crash, a validation error)."""
        return None

    def validate(self, request: RecordedRequest) -> str | None:
        return None

    def error(self, status: int, kind: str, message: str) -> Reply:
        return Reply(status, {"error": {"type": kind, "message": message}})

    def finish(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        return body


def _make_handler(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                body = {}
            path = self.path.split("?", 1)[0]
            headers = {k.lower(): v for k, v in self.headers.items()}
            if path != server.path:
                reply = server.error(404, "not_found_error", f"test server: no route {path}; expected {server.path}")
            else:
                try:
                    reply = server._next(RecordedRequest(path, headers, body if isinstance(body, dict) else {}))
                except Exception as exc:  # a bug in a test reply must be loud, not a dropped connection
                    reply = server.error(500, "test_server_bug", f"test server raised {exc!r}")
            if reply.delay_s and _closed_within(self.connection, reply.delay_s):
                with server._lock:
                    server.abandoned += 1
                self.close_connection = True
                return
            if reply.drop:
                self.close_connection = True
                return
            payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for key, value in reply.headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    """Wait ``seconds`` for the reply's delay, noticing if the client closes the connection meanwhile."""
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        readable, _, _ = select.select([sock], [], [], left)
        if readable:
            try:
                if not sock.recv(1, socket.MSG_PEEK):
                    return True
            except OSError:
                return True
            time.sleep(0.01)  # bytes of a next request are waiting: not a close
    return False


def _words(text: str) -> int:
    return len(text.split())


def _cut(text: str, limit: int) -> str:
    return " ".join(text.split()[:limit])


# ---------------------------------------------------------------------------
# OpenAI chat completions
# ---------------------------------------------------------------------------


class OpenAIWireServer(WireServer):
    """``POST /v1/chat/completions``; ``base_url`` ends in ``/v1`` as the SDK expects."""

    path = "/v1/chat/completions"
    base_path = "/v1"

    def validate(self, request: RecordedRequest) -> str | None:
        body = request.body
        if not request.headers.get("authorization", "").startswith("Bearer "):
            return "missing bearer token"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: required string"
        if "max_tokens" in body and "max_completion_tokens" in body:
            return "max_tokens and max_completion_tokens are mutually exclusive"
        for i, tool in enumerate(body.get("tools", [])):
            fn = tool.get("function", {}) if isinstance(tool, dict) else {}
            if tool.get("type") != "function" or not _TOOL_NAME.match(str(fn.get("name", ""))):
                return f"tools[{i}]: expected a function tool with a name matching {_TOOL_NAME.pattern}"
            if not isinstance(fn.get("parameters", {}), dict):
                return f"tools[{i}].function.parameters: expected an object"
        return _check_openai_messages(body.get("messages"))

    def finish(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        body = json.loads(json.dumps(body))
        body.setdefault("model", request.get("model", "unknown"))
        limit = request.get("max_completion_tokens") or request.get("max_tokens")
        output = 0
        for choice in body.get("choices", []):
            message = choice.get("message", {})
            content = message.get("content")
            if isinstance(content, str):
                if isinstance(limit, int) and _words(content) > limit and choice.get("finish_reason") == "stop":
                    message["content"] = content = _cut(content, limit)
                    choice["finish_reason"] = "length"
                output += _words(content)
            for call in message.get("tool_calls") or []:
                output += _words(str(call.get("function", {}).get("arguments", "")))
        prompt = sum(_words(str(m.get("content") or "")) for m in request.get("messages", []))
        body.setdefault(
            "usage", {"prompt_tokens": prompt, "completion_tokens": output, "total_tokens": prompt + output}
        )
        return body


def _check_openai_messages(messages: Any) -> str | None:
    """The pairing rule the real API enforces: every assistant tool call is answered, in order."""
    if not isinstance(messages, list) or not messages:
        return "messages: expected a non-empty array"
    open_calls: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "tool":
            if m.get("tool_call_id") not in open_calls:
                return f"messages[{i}]: tool message answers {m.get('tool_call_id')!r}, which is not an open tool call"
            open_calls.remove(m["tool_call_id"])
            continue
        if open_calls:
            return f"messages[{i}]: tool calls {open_calls} must be answered by tool messages first"
        if role not in ("system", "developer", "user", "assistant"):
            return f"messages[{i}].role: unexpected {role!r}"
        if role == "assistant" and m.get("tool_calls"):
            for j, call in enumerate(m["tool_calls"]):
                if not isinstance(call.get("function", {}).get("arguments"), str):
                    return f"messages[{i}].tool_calls[{j}].function.arguments: expected a string"
                open_calls.append(call.get("id"))
        elif not isinstance(m.get("content"), str):
            return f"messages[{i}].content: expected a string"
    if open_calls:
        return f"tool calls {open_calls} were never answered"
    return None


def openai_chat(
    text: str | None = None,
    *,
    tool_calls: Iterable[tuple[str, str, str | Mapping[str, Any]]] = (),
    finish_reason: str | None = None,
    refusal: str | None = None,
    usage: tuple[int, int] | None = None,
    model: str | None = None,
) -> Reply:
    """A chat.completion body; ``tool_calls`` are ``(id, name, arguments)``, a str sent verbatim."""
    calls = [
        {
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": args if isinstance(args, str) else json.dumps(args)},
        }
        for call_id, name, args in tool_calls
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": refusal}
    if calls:
        message["tool_calls"] = calls
    body: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 0,
        "choices": [
            {"index": 0, "message": message, "finish_reason": finish_reason or ("tool_calls" if calls else "stop")}
        ],
    }
    if model is not None:
        body["model"] = model
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply(200, body)


def openai_error(status: int, message: str = "error", kind: str = "server_error") -> Reply:
    return Reply(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})


# ---------------------------------------------------------------------------
# Anthropic messages
# ---------------------------------------------------------------------------


class AnthropicWireServer(WireServer):
    """``POST /v1/messages``; ``base_url`` is the bare origin as the SDK expects."""

    path = "/v1/messages"

    def error(self, status: int, kind: str, message: str) -> Reply:
        return anthropic_error(status, message, kind)

    def validate(self, request: RecordedRequest) -> str | None:
        body = request.body
        if "anthropic-version" not in request.headers:
            return "missing anthropic-version header"
        if not (request.headers.get("x-api-key") or request.headers.get("authorization")):
            return "missing credentials"
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: required string"
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            return "max_tokens: required integer >= 1"
        for i, tool in enumerate(body.get("tools", [])):
            if not _TOOL_NAME.match(str(tool.get("name", ""))):
                return f"tools.{i}.name: expected to match {_TOOL_NAME.pattern}"
            schema = tool.get("input_schema")
            if not isinstance(schema, dict) or schema.get("type") != "object":
                return f"tools.{i}.input_schema: expected a JSON schema with type object"
        return _check_anthropic_messages(body.get("messages"))

    def finish(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        body = json.loads(json.dumps(body))
        body.setdefault("model", request.get("model", "unknown"))
        limit = request.get("max_tokens")
        output = 0
        for block in body.get("content", []):
            if block.get("type") == "text":
                if isinstance(limit, int) and _words(block["text"]) > limit and body.get("stop_reason") == "end_turn":
                    block["text"] = _cut(block["text"], limit)
                    body["stop_reason"] = "max_tokens"
                output += _words(block["text"])
            elif block.get("type") == "tool_use":
                output += _words(json.dumps(block.get("input", {})))
        prompt = len(json.dumps(request.get("messages", [])).split())
        body.setdefault("usage", {"input_tokens": prompt, "output_tokens": output})
        return body


def _check_anthropic_messages(messages: Any) -> str | None:
    """Alternating roles starting with user; every tool_use answered first thing in the next user turn."""
    if not isinstance(messages, list) or not messages:
        return "messages: expected a non-empty array"
    expected_results: list[str] = []
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        want = "user" if i % 2 == 0 else "assistant"
        if role != want:
            return f"messages.{i}.role: expected {want!r} (roles must alternate, starting with user), found {role!r}"
        content = m["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list) or not blocks:
            return f"messages.{i}.content: expected a non-empty string or array of blocks"
        results = [b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"]
        if role == "assistant" and results:
            return f"messages.{i}: tool_result blocks belong in user messages"
        if expected_results:
            lead = [b.get("tool_use_id") for b in blocks[: len(expected_results)] if b.get("type") == "tool_result"]
            if sorted(lead) != sorted(expected_results):
                return (
                    f"messages.{i}: tool_use ids {expected_results} must be answered by tool_result blocks "
                    "at the start of the next user message"
                )
        elif results:
            return f"messages.{i}: tool_result for {results} without a preceding tool_use"
        expected_results = []
        for j, b in enumerate(blocks):
            kind = b.get("type")
            if kind == "text" and not b.get("text"):
                return f"messages.{i}.content.{j}.text: text content blocks must be non-empty"
            if kind == "tool_use":
                if role != "assistant" or not isinstance(b.get("input"), dict):
                    return f"messages.{i}.content.{j}: tool_use needs role assistant and an object input"
                expected_results.append(b.get("id"))
    if expected_results:
        return f"tool_use ids {expected_results} were never answered"
    return None


def anthropic_message(
    text: str | None = None,
    *,
    tool_uses: Iterable[tuple[str, str, Mapping[str, Any]]] = (),
    stop_reason: str | None = None,
    usage: tuple[int, int] | None = None,
    model: str | None = None,
) -> Reply:
    """A Messages-API ``message`` body; ``tool_uses`` are ``(id, name, input)``."""
    uses = [{"type": "tool_use", "id": i, "name": n, "input": dict(inp)} for i, n, inp in tool_uses]
    content: list[dict[str, Any]] = ([{"type": "text", "text": text}] if text else []) + uses
    body: dict[str, Any] = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": stop_reason or ("tool_use" if uses else "end_turn"),
        "stop_sequence": None,
    }
    if model is not None:
        body["model"] = model
    if usage is not None:
        body["usage"] = {"input_tokens": usage[0], "output_tokens": usage[1]}
    return Reply(200, body)


def anthropic_error(status: int, message: str = "error", kind: str = "api_error") -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}})


def drop_connection() -> Reply:
    """Close the socket without answering (a dropped connection: transient)."""
    return Reply(drop=True)


# ---------------------------------------------------------------------------
# Recorded exchanges with a real server
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Exchange:
    """One recorded request/response pair (a line of a fixture file), bodies as JSON values."""

    status: int
    request: Any
    response: Any

    @property
    def reply(self) -> Reply:
        return Reply(self.status, self.response)


def load_exchanges(path: str | Path) -> list[Exchange]:
    """A recording: one JSON object per line with ``status``, ``req`` and ``resp`` (JSON text)."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out.append(Exchange(int(row["status"]), _maybe_json(row["req"]), _maybe_json(row["resp"])))
    return out


def _maybe_json(text: Any) -> Any:
    try:
        return json.loads(text) if isinstance(text, str) else text
    except json.JSONDecodeError:
        return text


class LlamaCppServer(OpenAIWireServer):
    """Replays recorded llama-cpp-python 0.3.36 answers, and refuses what that server refused.

    The queue holds recorded responses; before one is used the request is checked the way the real
    server behaved (see ``tests/fixtures/providers/``):

    * an assistant message whose ``content`` is not a string → the recorded HTTP 500 validation error;
    * a tool schema with ``maxLength``/``minLength`` of :data:`CRASH_LENGTH` or more → the server
      segfaults: this request and every later one get a dropped connection (``crashed`` is set);
    * prompt plus ``max_tokens`` over ``n_ctx`` → the server's 400 ``context_length_exceeded``, in its
      words, with its numbers (the prompt counted as one token per 4 characters of the request).
    """

    CRASH_LENGTH = 2000

    def __init__(self, replies: Iterable[Responder] = (), *, null_content_error: Any = None, n_ctx: int = 4096) -> None:
        super().__init__(replies)
        self.null_content_error = null_content_error or {"error": {"message": "content: Input should be a string"}}
        self.n_ctx = n_ctx
        self.crashed = False

    def refuse(self, request: RecordedRequest) -> Reply | None:
        body = request.body
        if self.crashed or _longest_limit(body.get("tools", [])) >= self.CRASH_LENGTH:
            self.crashed = True
            return Reply(drop=True)
        for m in body.get("messages") or []:
            if isinstance(m, dict) and m.get("role") == "assistant" and not isinstance(m.get("content"), str):
                return Reply(500, self.null_content_error)
        prompt = len(json.dumps([body.get("messages"), body.get("tools")])) // 4
        wanted = body.get("max_tokens") or 0
        if prompt + wanted > self.n_ctx:
            message = (
                f"This model's maximum context length is {self.n_ctx} tokens. However, you requested "
                f"{prompt + wanted} tokens ({prompt} in the messages, {wanted} in the completion). "
                "Please reduce the length of the messages or completion."
            )
            error = {"message": message, "type": "invalid_request_error", "param": "messages"}
            return Reply(400, {"error": {**error, "code": "context_length_exceeded"}})
        return None

    def finish(self, request: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
        return body  # recorded answers are replayed exactly as the server sent them


def _longest_limit(value: Any) -> int:
    """The largest ``maxLength``/``minLength`` anywhere in a JSON value (0 when none)."""
    if isinstance(value, dict):
        own = [v for k, v in value.items() if k in ("maxLength", "minLength") and isinstance(v, int)]
        return max([*own, *(_longest_limit(v) for v in value.values())], default=0)
    if isinstance(value, list):
        return max((_longest_limit(v) for v in value), default=0)
    return 0
