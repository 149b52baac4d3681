"""The console's web application (Starlette): server-rendered pages over one tether database.

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

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from tether.canonical import content_hash
from tether.errors import InputError, LogCorrupt, RunLeased, TetherError
from tether.events.anchor import AnchorKey, anchor_file_path, key_path
from tether.events.store import Event, EventStore
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest, pending, record_answer
from tether.state import RunState
from tether.status import TERMINAL, RunStatus

from . import views
from .access import CSRF_COOKIE, CSRF_FIELD, TOKEN_COOKIE, Guard, new_csrf, same
from .drivers import Drivers

STATIC = Path(__file__).parent / "static"
RESUMABLE = ("RUNNING", "WAITING_APPROVAL", "BLOCKED_DEPENDENCY")  # offered a resume button (once answered)
POLL_S = 0.25  # how often a live stream looks for new events
INBOX_POLL_S = 1.0  # how often the inbox looks at the runs' heads
KEEPALIVE_S = 10.0
ANSWER_RETRY_S = 5.0  # how long an answer waits for another writer (a driver ending, another operator) to let go
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

templates = Environment(
    loader=PackageLoader("tether.console", "templates"),
    autoescape=select_autoescape(default=True, default_for_string=True),
    trim_blocks=True,
    lstrip_blocks=True,
)
templates.filters.update(is_diff=views.is_diff, diff_class=views.diff_class)


@dataclass(frozen=True)
class Console:
    """What one server serves: a database, its access guard, and the runs it resumed."""

    db: Path
    guard: Guard
    drivers: Drivers

    def reader(self) -> EventStore:
        return EventStore.open(self.db, readonly=True)

    def writer(self) -> EventStore:
        from tether.events.anchor import Signer

        return EventStore.open(self.db, create=False, signer=Signer.configured())


def create_app(db: Path, guard: Guard) -> Starlette:
    """The console for the tether database at ``db``, guarded by ``guard``."""
    console = Console(db, guard, Drivers(db))

    def page(fn: Callable[[Console, Request], Awaitable[Response]]) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await fn(console, request)

        return endpoint

    app = Starlette(
        routes=[
            Route("/", page(runs_page)),
            Route("/runs/{run_id}", page(run_page)),
            Route("/runs/{run_id}/stream", page(run_stream)),
            Route("/runs/{run_id}/events/{seq:int}", page(event_page)),
            Route("/runs/{run_id}/turns/{turn:int}", page(turn_page)),
            Route("/runs/{run_id}/verify", page(verify_action), methods=["POST"]),
            Route("/runs/{run_id}/resume", page(resume_action), methods=["POST"]),
            Route("/approvals", page(approvals_page)),
            Route("/approvals/stream", page(approvals_stream)),
            Route("/approvals/{approval_id}", page(answer_action), methods=["POST"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
        ],
        exception_handlers={TetherError: _tether_error},
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


def _csrf(request: Request) -> str:
    return str(request.cookies.get(CSRF_COOKIE) or request.scope.get("state", {}).get("csrf", ""))


def render(request: Request, name: str, code: int = 200, **context: Any) -> HTMLResponse:
    html = templates.get_template(name).render(csrf=_csrf(request), csrf_field=CSRF_FIELD, **context)
    return HTMLResponse(html, status_code=code)


async def _tether_error(request: Request, exc: Exception) -> Response:
    status = 404 if isinstance(exc, InputError) else 409 if isinstance(exc, LogCorrupt) else 503
    return render(request, "message.html", status, title="error", message=str(exc), ok=False)


async def _checked_form(request: Request) -> dict[str, str] | Response:
    """The POST's form, once its CSRF token matches the cookie's (else a 403 page)."""
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str)}
    if not Guard.csrf_ok(values.get(CSRF_FIELD), request.cookies):
        return render(request, "message.html", 403, title="refused", message="missing or stale CSRF token", ok=False)
    return values


# ---- pages ------------------------------------------------------------------------------------------


def _rows(console: Console) -> list[views.RunRow]:
    if not console.db.exists():
        return []
    with console.reader() as store:
        rows = []
        for info in store.runs():
            try:
                store.verify(info.run_id)
                problem = None
            except LogCorrupt as e:
                problem = str(e)
            rows.append(views.run_row(info, store.events(info.run_id), problem, datetime.now(UTC)))
    return rows


async def runs_page(console: Console, request: Request) -> Response:
    q = request.query_params
    status, control, text = q.get("status", ""), q.get("control", ""), q.get("q", "")
    rows = await run_in_threadpool(_rows, console)
    shown = views.as_tree([r for r in rows if views.matches(r, status, control, text)])
    return render(
        request,
        "runs.html",
        rows=shown,
        total=len(rows),
        statuses=sorted({*(s.value for s in RunStatus), "CORRUPT"}),
        controls=["NORMAL", "CAUTIOUS", "BLOCKED", "HUMAN_REQUIRED"],
        status=status,
        control=control,
        q=text,
        db=str(console.db),
    )


def _run(console: Console, run_id: str) -> tuple[Any, list[Event], str | None]:
    with console.reader() as store:
        info = store.run(run_id)
        events = store.events(info.run_id)
        try:
            store.verify(info.run_id)
            problem = None
        except LogCorrupt as e:
            problem = str(e)
    return info, events, problem


def _int(value: str | None) -> int | None:
    return int(value) if value is not None and value.lstrip("-").isdigit() else None


async def run_page(console: Console, request: Request) -> Response:
    info, events, problem = await run_in_threadpool(_run, console, request.path_params["run_id"])
    row = views.run_row(info, events, problem, datetime.now(UTC))
    at = _int(request.query_params.get("at"))
    start = views.page_of_seq(events, at) if at is not None else _int(request.query_params.get("start"))
    timeline = views.page(events, start)
    return render(
        request,
        "run.html",
        info=info,
        row=row,
        page=timeline,
        chart=views.diagnostics_chart(events),
        band=views.control_band(events),
        turns=sorted(set(views.turns_of(events))),
        approvals=row.approvals,
        resumable=row.status in RESUMABLE and not row.approvals,
        driving=(t := console.drivers.threads.get(info.run_id)) is not None and t.is_alive(),
        driver_failure=console.drivers.failures.get(info.run_id),
        live=timeline.is_tail and row.status in ("RUNNING", "NEW", "WAITING_APPROVAL"),
        last_seq=events[-1].seq if events else -1,
    )


async def event_page(console: Console, request: Request) -> Response:
    """One event whole: its payload as stored, nothing cut off."""
    info, events, _ = await run_in_threadpool(_run, console, request.path_params["run_id"])
    seq = request.path_params["seq"]
    event = next((e for e in events if e.seq == seq), None)
    if event is None:
        raise InputError(f"run {info.run_id} has no event {seq}")
    body = json.dumps(event.to_dict(), indent=2, sort_keys=True, default=str)
    return render(request, "event.html", info=info, event=event, body=body)


async def turn_page(console: Console, request: Request) -> Response:
    info, events, problem = await run_in_threadpool(_run, console, request.path_params["run_id"])
    if problem is not None:
        raise LogCorrupt(info.run_id, 0, problem)
    view = views.turn_view(events, request.path_params["turn"])
    return render(request, "turn.html", info=info, view=view)


async def verify_action(console: Console, request: Request) -> Response:
    """Recompute the chain and check signed checkpoints: what ``tether log verify RUN`` does."""
    form = await _checked_form(request)
    if isinstance(form, Response):
        return form

    def verify() -> tuple[bool, str, list[str]]:
        path = key_path()
        anchor_key = AnchorKey.load(path) if path.exists() else None
        with console.reader() as store:
            run_id = store.run(request.path_params["run_id"]).run_id
            try:
                audit = store.verify_run(run_id, anchor_key, anchor_file_path(path))
            except LogCorrupt as e:
                return False, f"run {run_id}: first bad seq {e.seq}: {e.reason}", []
        a = audit.anchor
        signed = f"; {a.checkpoints} signed checkpoint(s) match" if a.checkpoints else ""
        text = f"run {run_id}: {audit.events} events, chain intact, head seq {audit.head[0]} {audit.head[1]}{signed}"
        return True, text, list(a.limits)

    ok, text, limits = await run_in_threadpool(verify)
    return render(
        request,
        "message.html",
        200 if ok else 409,
        title="chain verified" if ok else "chain broken",
        message=text,
        notes=limits,
        ok=ok,
        back=f"/runs/{request.path_params['run_id']}",
    )


async def resume_action(console: Console, request: Request) -> Response:
    """Continue a run as ``tether resume RUN`` would, driven by this server; the run's page follows it."""
    form = await _checked_form(request)
    if isinstance(form, Response):
        return form
    run_id = await run_in_threadpool(console.drivers.resume, request.path_params["run_id"])
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


# ---- live ---------------------------------------------------------------------------------------------


def _sse(event: str, data: dict[str, Any], seq: int | None = None) -> str:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n"


async def run_stream(console: Console, request: Request) -> Response:
    """Server-sent events: each event appended after ``after`` (or the ``Last-Event-ID`` a reconnecting browser
    sends), rendered as the page renders it, then the run's status and control state; ends with the run.

    The log is folded once when the stream opens; each poll then reads and folds only the new events, so
    following a long run costs what its new events cost."""
    after = _int(request.headers.get("last-event-id")) or _int(request.query_params.get("after")) or -1
    item = templates.get_template("_item.html")

    def begin() -> tuple[str, _Follow]:
        with console.reader() as store:
            run_id = store.run(request.path_params["run_id"]).run_id
            return run_id, _Follow(store.events(run_id)[: after + 1])

    run_id, follow = await run_in_threadpool(begin)

    def read(since: int) -> list[Event]:
        with console.reader() as store:
            return store.events(run_id, after=since)

    async def stream() -> AsyncIterator[str]:
        quiet = 0.0
        while not await request.is_disconnected():
            new = await run_in_threadpool(read, follow.last)
            if new:
                for e in new:
                    yield _sse("item", {"seq": e.seq, "html": item.render(it=follow.take(e), run_id=run_id)}, e.seq)
                quiet = 0.0
                yield _sse("status", {"status": follow.status, "control": follow.control, "events": follow.last + 1})
                if follow.status in TERMINAL or follow.status == "CORRUPT":
                    yield _sse("end", {"status": follow.status})
                    return
            elif quiet >= KEEPALIVE_S:
                yield ": keep-alive\n\n"
                quiet = 0.0
            await asyncio.sleep(POLL_S)
            quiet += POLL_S

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


class _Follow:
    """A live stream's fold of the run: its state, control state and turn, extended one new event at a time."""

    def __init__(self, events: list[Event]) -> None:
        self.state = RunState()
        self.last, self.turn, self.control, self.broken = -1, 0, views.control_of(events).value, ""
        for e in events:
            self.take(e)

    def take(self, e: Event) -> views.Item:
        self.last = e.seq
        self.turn = views.turns_of([e], self.turn)[0]
        try:
            if not self.broken:
                self.state.apply(e)
            if e.kind == "control.changed":
                self.control = views.control_of([e]).value
        except (LogCorrupt, KeyError, ValueError, TypeError, AttributeError) as err:  # shown, never followed on
            self.broken = str(err)
        return views.item(e, self.turn)

    @property
    def status(self) -> str:
        return "CORRUPT" if self.broken else self.state.status.value


# ---- approvals ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pending:
    """An approval as the inbox shows it: the request, where and how it would run, and the hash it binds to."""

    request: ApprovalRequest
    args_hash: str
    task: str
    workspace: str
    sandbox: str
    timeout_s: float | None
    args_text: str
    requested_at: str


def _pending(console: Console) -> list[Pending]:
    if not console.db.exists():
        return []
    out = []
    with console.reader() as store:
        for r in pending(store):
            events = store.events(r.run_id)
            state = RunState.from_events(events)
            started = events[0].payload if events else {}
            tools = {t.get("name"): t for t in state.envelope.get("tools", []) if isinstance(t, dict)}
            limit = tools.get(r.tool, {}).get("timeout_s")
            asked = r.args.get("timeout_s")
            if isinstance(asked, int | float) and (limit is None or asked < limit):
                limit = asked
            requested = next(
                (
                    e.ts
                    for e in events
                    if e.kind == "approval.requested" and e.payload.get("approval_id") == r.approval_id
                ),
                "",
            )
            out.append(
                Pending(
                    r,
                    state.actions[r.call_id].args_hash,
                    state.task,
                    str(started.get("workspace", "")),
                    str(started.get("sandbox", "")),
                    limit,
                    json.dumps(r.args, indent=1, sort_keys=True),
                    requested,
                )
            )
    return out


async def approvals_page(console: Console, request: Request) -> Response:
    items = await run_in_threadpool(_pending, console)
    return render(request, "approvals.html", items=items, operator=request.cookies.get("tether_operator", ""))


async def approvals_stream(console: Console, request: Request) -> Response:
    """Server-sent events for the inbox: whenever the pending approvals differ from those the page shows
    (``shown``), which ones are new and which were answered elsewhere. The log is folded again only when
    some run's head has moved."""
    shown = {a for a in request.query_params.get("shown", "").split(",") if a}

    def heads() -> tuple[tuple[str, int], ...]:
        if not console.db.exists():
            return ()
        with console.reader() as store:
            return tuple((i.run_id, i.head_seq) for i in store.runs())

    def now_pending() -> set[str]:
        if not console.db.exists():
            return set()
        with console.reader() as store:
            return {r.approval_id for r in pending(store)}

    async def stream() -> AsyncIterator[str]:
        seen: tuple[tuple[str, int], ...] | None = None
        told: set[str] = shown
        quiet = 0.0
        while not await request.is_disconnected():
            current = await run_in_threadpool(heads)
            if current != seen:
                seen = current
                ids = await run_in_threadpool(now_pending)
                if ids != told:
                    told = ids
                    yield _sse(
                        "changed", {"pending": len(ids), "new": sorted(ids - shown), "gone": sorted(shown - ids)}
                    )
            elif quiet >= KEEPALIVE_S:
                yield ": keep-alive\n\n"
                quiet = 0.0
            await asyncio.sleep(INBOX_POLL_S)
            quiet += INBOX_POLL_S

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})


def who_answered(store: EventStore, approval_id: str) -> str | None:
    """How an approval was answered, from the log: 'approved (once) by ana at …', 'denied by …', 'expired …'."""
    for info in store.runs():
        for e in store.events(info.run_id):
            if e.payload.get("approval_id") != approval_id:
                continue
            p = e.payload
            if e.kind == "approval.granted":
                return f"approved ({p.get('scope')}) by {p.get('by')} at {e.ts}"
            if e.kind == "approval.denied":
                return f"denied by {p.get('by')} at {e.ts}: {p.get('reason')}"
            if e.kind == "approval.expired":
                return f"expired at {e.ts} ({p.get('outcome')})"
    return None


def answer(console: Console, approval_id: str, form: dict[str, str]) -> tuple[int, str, str]:
    """Record an operator's answer as `tether approve|deny` would; (http status, title, message)."""
    by = form.get("by", "").strip()
    choice = form.get("choice", "")
    reason = form.get("reason", "").strip()
    if not by:
        return 400, "not answered", "say who you are (the operator field): the log records who answered"
    if choice not in ("once", "run", "deny"):
        return 400, "not answered", f"choice {choice!r}: expected once, run or deny"
    if choice == "deny" and not reason:
        return 400, "not answered", "a denial needs a reason: the model is told it"
    with console.writer() as store:
        current = {r.approval_id: r for r in pending(store, verified=False)}.get(approval_id)
        if current is None:
            told = who_answered(store, approval_id)
            if told is None:
                return 404, "not answered", f"no pending approval {approval_id}; see the inbox"
            return 409, "already answered", f"{approval_id} was {told}"
        if content_hash(current.args) != form.get("args_hash"):
            return 409, "not answered", f"{approval_id}: the arguments are not the ones this page showed; reload"
        deadline = time.monotonic() + ANSWER_RETRY_S
        while True:
            try:
                record_answer(store, approval_id, ApprovalAnswer(choice, by, reason))  # type: ignore[arg-type]
                break
            except RunLeased:  # the run's driver or another operator is writing: wait for it, then look again
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
            except InputError:
                told = who_answered(store, approval_id)
                if told is None:
                    raise
                return 409, "already answered", f"{approval_id} was {told}"
    verb = "denied" if choice == "deny" else "approved" + (" for this run" if choice == "run" else " once")
    return (
        200,
        verb,
        f"{verb} {approval_id} ({current.tool}) as {by}; the run continues when its driver resumes it "
        f"(`tether resume {current.run_id}`)",
    )


async def answer_action(console: Console, request: Request) -> Response:
    form = await _checked_form(request)
    if isinstance(form, Response):
        return form
    approval_id = request.path_params["approval_id"]
    status, title, message = await run_in_threadpool(answer, console, approval_id, form)
    response = render(
        request, "message.html", status, title=title, message=message, ok=status == 200, back="/approvals"
    )
    if form.get("by"):
        response.set_cookie("tether_operator", form["by"][:80], samesite="strict", httponly=True)
    return response
