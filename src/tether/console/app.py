"""The console's web application (Starlette): the routes of its pages over one tether database, and the
guard around every request.

Every page is a read of the log, as ``tether show`` is; the only writes are a human's answer to an
approval, through :func:`tether.kernel.approvals.record_answer` — the code ``tether approve`` and
``tether deny`` call — so an answer given here and one given in the CLI are the same event, bound to the
same argument hash, and the first one recorded wins. A run's page grows live through server-sent events
(``/runs/{id}/stream``): the server polls the log and sends each new event rendered by the same template
as the page.

Agent-produced text (tasks, outputs, diffs, model prose) reaches the browser only through Jinja's
autoescaping, and a Content-Security-Policy allows scripts from the console's own static file only, so a
planted ``<script>`` would not run even if something were left unescaped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tether.errors import TetherError
from tether.events.backends import StoreSpec

from . import inbox, live, pages
from .access import CSRF_COOKIE, TOKEN_COOKIE, Guard, new_csrf, same
from .drivers import Drivers
from .web import STATIC, Console, tether_error

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def create_app(db: StoreSpec, guard: Guard) -> Starlette:
    """The console for the tether database at ``db``, guarded by ``guard``."""
    console = Console(db, guard, Drivers(db))

    def page(fn: Callable[[Console, Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await fn(console, request)

        return endpoint

    app = Starlette(
        routes=[
            Route("/", page(pages.runs_page)),
            Route("/runs/{run_id}", page(pages.run_page)),
            Route("/runs/{run_id}/stream", page(live.run_stream)),
            Route("/runs/{run_id}/events/{seq:int}", page(pages.event_page)),
            Route("/runs/{run_id}/turns/{turn:int}", page(pages.turn_page)),
            Route("/runs/{run_id}/turns/{turn:int}/context", page(pages.context_page)),
            Route("/runs/{run_id}/verify", page(pages.verify_action), methods=["POST"]),
            Route("/runs/{run_id}/resume", page(pages.resume_action), methods=["POST"]),
            Route("/runs/{run_id}/fork", page(pages.fork_action), methods=["POST"]),
            Route("/runs/{run_id}/export", page(pages.export_action), methods=["POST"]),
            Route("/runs/{run_id}/undo", page(pages.undo_action), methods=["POST"]),
            Route("/approvals", page(inbox.approvals_page)),
            Route("/approvals/stream", page(live.approvals_stream)),
            Route("/approvals/{approval_id}", page(inbox.answer_action), methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={TetherError: tether_error},
    )
    app.add_middleware(_GuardMiddleware, guard=guard)
    app.state.console = console
    return app


class _GuardMiddleware:
    """Host check, token, CSRF cookie and the security headers, around every request (pure ASGI)."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app, self.guard = app, guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        refusal = self._refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        set_cookies = []
        if CSRF_COOKIE not in request.cookies:
            set_cookies.append(f"{CSRF_COOKIE}={new_csrf()}; Path=/; SameSite=Strict; HttpOnly")
            scope.setdefault("state", {})["csrf"] = set_cookies[-1].split(";")[0].split("=", 1)[1]
        token = request.query_params.get("token")
        if self.guard.token is not None and same(token, self.guard.token) and request.method == "GET":
            # the token moves into a cookie, and out of the address bar and the history
            cookie = f"{TOKEN_COOKIE}={token}; Path=/; SameSite=Strict; HttpOnly"
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + ("?" + urlencode(rest) if rest else "")
            redirect = RedirectResponse(target, status_code=303, headers={"Set-Cookie": cookie, **HEADERS})
            await redirect(scope, receive, send)
            return

        async def send_with_headers(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers += [(k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
                headers += [(b"set-cookie", c.encode()) for c in set_cookies]
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        host = request.headers.get("host")
        if not self.guard.host_ok(host):
            return PlainTextResponse(f"refused: host {host!r} is not this console's loopback address", 421)
        if not self.guard.authorized(
            request.query_params.get("token"), request.cookies, request.headers.get("authorization")
        ):
            return PlainTextResponse("unauthorized: this console needs the token `tether serve` printed", 401)
        if request.method not in ("GET", "HEAD") and not Guard.same_origin(
            request.headers.get("origin"), request.headers.get("referer"), host
        ):
            return PlainTextResponse("refused: a cross-origin request (POSTs come from the console's pages)", 403)
        return None
