"""One connection to one MCP server, for synchronous callers.

The official ``mcp`` SDK is async (anyio) and its transports must be entered and left in the same task;
tether's loop is synchronous. So each connection owns an event loop in a daemon thread: one long-lived
task there enters the transport (a stdio subprocess, or streamable HTTP) and the SDK's ``Client``,
lists the server's tools, and holds the session open until :meth:`McpConnection.close`. Calls are
submitted to that loop and waited for with a deadline, so a server that hangs costs the caller its
timeout, never the run.

Errors, by family::

    McpUnavailable (RuntimeFailure)  the server could not be started, connected or listed in time
    McpCallFailed                    one call failed: ``kind`` is "timeout", "died" (the server went away,
                                     its stderr's tail attached), "bad_result" (the answer does not fit the
                                     protocol) or "error" (the server answered with a protocol error)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import tempfile
import threading
from collections.abc import Coroutine
from typing import Any, Literal, TypeVar

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from tether.errors import RuntimeFailure

T = TypeVar("T")
#: Seconds a call may take beyond its own timeout before the caller stops waiting for the SDK to give up.
GRACE_S = 2.0
#: Pages of tools/list read before a server that never stops paginating is refused.
MAX_PAGES = 50
STDERR_TAIL = 2_000

CallFailure = Literal["timeout", "died", "bad_result", "error"]


class McpUnavailable(RuntimeFailure):
    """An MCP server could not be started, connected to or listed."""


class McpCallFailed(Exception):
    """One call failed; ``kind`` says how (see the module docstring)."""

    def __init__(self, kind: CallFailure, message: str) -> None:
        self.kind = kind
        super().__init__(message)


Target = StdioServerParameters | str
"""What to connect to: a stdio server's parameters, or a streamable HTTP URL."""


class McpConnection:
    """A started, initialised MCP session with one server; :meth:`start` it, :meth:`call` it, :meth:`close` it."""

    def __init__(self, name: str, target: Target, *, startup_timeout_s: float) -> None:
        self.name = name
        self.target = target
        self.startup_timeout_s = startup_timeout_s
        self.died: str | None = None
        self._client: Client | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._stop: asyncio.Event | None = None
        self._main: concurrent.futures.Future[None] | None = None
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 (closed in close)

    def __enter__(self) -> McpConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- lifecycle ----------------------------------------------------------------------------

    def start(self) -> list[types.Tool]:
        """Start (or connect to) the server, initialise the session and list every tool it offers.

        Raises :class:`McpUnavailable`, naming the server, when that fails or takes longer than
        ``startup_timeout_s``; the connection is then closed.
        """
        self._thread.start()
        ready: concurrent.futures.Future[list[types.Tool]] = concurrent.futures.Future()
        self._main = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            return ready.result(self.startup_timeout_s)
        except concurrent.futures.TimeoutError:
            why = f"did not start and list its tools within {self.startup_timeout_s:g}s{self._stderr_note()}"
            self.close()
            raise McpUnavailable(f"MCP server {self.name!r} {why}") from None
        except Exception as e:
            why = f"{_describe(e)}{self._stderr_note()}"
            self.close()
            raise McpUnavailable(f"MCP server {self.name!r} could not start: {why}") from e

    async def _hold(self, ready: concurrent.futures.Future[list[types.Tool]]) -> None:
        """The task that owns the transport and session: open, list, wait for the stop, close — all here."""
        self._stop = asyncio.Event()
        try:
            client = Client(self._target(), cache=None, client_info=types.Implementation(name="tether", version="1"))
            async with client:
                tools = await _list_tools(client)
                self._client = client
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as e:  # the server went away, or never came: say so to whoever waits
            self.died = _describe(e)
            if not ready.done():
                ready.set_exception(e if isinstance(e, Exception) else RuntimeError(self.died))
            if not isinstance(e, Exception):
                raise
        finally:
            self._client = None
            if self.died is None:
                self.died = "the connection was closed"

    def _target(self) -> Any:
        if isinstance(self.target, StdioServerParameters):
            from mcp.client.stdio import stdio_client

            return stdio_client(self.target, errlog=self._stderr)
        return self.target

    def close(self) -> None:
        """Stop the session and the server (a stdio server's process tree is ended by the SDK). Idempotent."""
        if self._thread.is_alive():
            if self._stop is not None:
                self._loop.call_soon_threadsafe(self._stop.set)
            if self._main is not None:
                with contextlib.suppress(BaseException):  # already recorded in self.died; closing must not raise
                    self._main.result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
        if not self._loop.is_running() and not self._loop.is_closed():
            self._loop.close()
        if not self._stderr.closed:
            self._stderr.close()

    # ---- calls --------------------------------------------------------------------------------

    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> types.CallToolResult:
        """Call ``tool``; its result (``is_error`` is the server's own failure), or :class:`McpCallFailed`."""
        client = self._client
        if client is None:
            raise McpCallFailed("died", f"MCP server {self.name!r} is not running ({self.died}){self._stderr_note()}")
        return self._run(client.call_tool(tool, arguments, read_timeout_seconds=timeout_s), timeout_s)

    def _run(self, coro: Coroutine[Any, Any, T], timeout_s: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout_s + GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallFailed("timeout", f"MCP server {self.name!r} did not answer within {timeout_s:g}s") from None
        except ValidationError as e:
            raise McpCallFailed("bad_result", f"MCP server {self.name!r} sent a malformed answer: {_short(e)}") from e
        except MCPError as e:
            if e.code == types.REQUEST_TIMEOUT:
                raise McpCallFailed("timeout", f"MCP server {self.name!r} did not answer within {timeout_s:g}s") from e
            if self._client is None or e.code == types.CONNECTION_CLOSED:
                raise self._died(e) from e
            raise McpCallFailed("error", f"MCP server {self.name!r} answered with an error: {e}") from e
        except Exception as e:
            if self._client is None:
                raise self._died(e) from e
            raise McpCallFailed("error", f"MCP server {self.name!r}: {_describe(e)}") from e

    def _died(self, e: BaseException) -> McpCallFailed:
        return McpCallFailed(
            "died", f"MCP server {self.name!r} went away during the call ({_describe(e)}){self._stderr_note()}"
        )

    def _stderr_note(self) -> str:
        if self._stderr.closed:
            return ""
        try:
            self._stderr.flush()
            self._stderr.seek(0)
            text = self._stderr.read()[-STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""
        return f"; its stderr ends: {text}" if text else ""


async def _list_tools(client: Client) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += page.tools
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise McpCallFailed("bad_result", f"tools/list did not end after {MAX_PAGES} pages")


def _describe(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_describe(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def _short(e: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()[:3])
