"""Live pages: a run's timeline and the approval inbox follow the log through server-sent events.

The server polls the database (a run's new events four times a second; the runs' heads once a second for
the inbox) and sends what changed; a browser that reconnects sends ``Last-Event-ID`` and gets what it
missed."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from tether.errors import LogCorrupt
from tether.events.store import Event
from tether.kernel.approvals import pending
from tether.state import RunState
from tether.status import TERMINAL

from . import views
from .web import Console, int_param, templates

POLL_S = 0.25  # how often a live stream looks for new events
INBOX_POLL_S = 1.0  # how often the inbox looks at the runs' heads
KEEPALIVE_S = 10.0


def _sse(event: str, data: dict[str, Any], seq: int | None = None) -> str:
    head = f"id: {seq}\n" if seq is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data)}\n\n"


async def run_stream(console: Console, request: Request) -> Response:
    """Server-sent events: each event appended after ``after`` (or the ``Last-Event-ID`` a reconnecting browser
    sends), rendered as the page renders it, then the run's status and control state; ends with the run.

    The log is folded once when the stream opens; each poll then reads and folds only the new events, so
    following a long run costs what its new events cost."""
    after = int_param(request.headers.get("last-event-id")) or int_param(request.query_params.get("after")) or -1
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
        self.call: dict[str, Any] | None = None  # the hook call the next events belong to (views.hook_calls)
        for e in events:
            self.take(e)

    def take(self, e: Event) -> views.Item:
        self.last = e.seq
        self.turn, self.call = views.turns_of([e], self.turn)[0], views.hook_calls([e], self.call)[0]
        try:
            if not self.broken:
                self.state.apply(e)
            if e.kind == "control.changed":
                self.control = views.control_of([e]).value
        except (LogCorrupt, KeyError, ValueError, TypeError, AttributeError) as err:  # shown, never followed on
            self.broken = str(err)
        return views.item(e, self.turn, self.call)

    @property
    def status(self) -> str:
        return "CORRUPT" if self.broken else self.state.status.value


async def approvals_stream(console: Console, request: Request) -> Response:
    """Server-sent events for the inbox: whenever the pending approvals differ from those the page shows
    (``shown``), which ones are new and which were answered elsewhere. The log is folded again only when
    some run's head has moved."""
    shown = {a for a in request.query_params.get("shown", "").split(",") if a}

    def heads() -> tuple[tuple[str, int], ...]:
        if not console.has_log():
            return ()
        with console.reader() as store:
            return tuple((i.run_id, i.head_seq) for i in store.runs())

    def now_pending() -> set[str]:
        if not console.has_log():
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
