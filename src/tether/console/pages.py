"""The console's pages over the log: the runs, a run, one event whole, a turn's loop view; and the actions
on a run, each the code of its CLI command: verify its chain, export its episode package, undo its changes,
resume it."""

from __future__ import annotations

import dataclasses
import json
import shutil
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from starlette.background import BackgroundTask
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import FileResponse, RedirectResponse, Response

from tether.errors import InputError, LogCorrupt
from tether.events.anchor import AnchorKey, anchor_file_path, key_path
from tether.events.backends import describe
from tether.events.kinds_graph import GraphStarted
from tether.events.kinds_schedule import is_schedule_log
from tether.events.store import Event
from tether.graph.draw import as_dict
from tether.graph.fold import GraphState
from tether.kernel.continuation import NEEDS, Needs, parse_budget
from tether.kernel.continuation import Request as Continuation
from tether.kernel.undo import Outcome as UndoOutcome
from tether.kernel.undo import Selection, shown, undo
from tether.observe.diff import RunDiff, run_diff
from tether.observe.episode import export_run
from tether.status import RunStatus

from . import views
from .web import Console, checked_form, int_param, render


def _rows(console: Console) -> list[views.RunRow]:
    if not console.has_log():
        return []
    with console.reader() as store:
        rows = []
        for info in store.runs():
            if is_schedule_log(info.run_id):  # a schedule's log, not a run (`tether schedule list`)
                continue
            try:
                store.verify(info.run_id)
                problem = None
            except LogCorrupt as e:
                problem = str(e)
            events = store.events(info.run_id)
            row = views.run_row(info, events, problem, datetime.now(UTC))
            if problem is None and events and events[0].kind == GraphStarted.KIND:  # a task graph: its own status
                finished = GraphState.fold(info.run_id, events).finished
                row = dataclasses.replace(row, status=finished.status if finished else RunStatus.RUNNING)
            rows.append(row)
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
        db=describe(console.db),
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


def _final_diff(console: Console, events: list[Event]) -> RunDiff:
    """What the run changed, start snapshot to latest (``observe/diff.py``, as ``tether show`` prints it)."""
    with console.reader() as store:
        return run_diff(store, events)


async def run_page(console: Console, request: Request) -> Response:
    info, events, problem = await run_in_threadpool(_run, console, request.path_params["run_id"])
    if problem is None and events and events[0].kind == GraphStarted.KIND:
        return _graph_page(request, info, events)
    row = views.run_row(info, events, problem, datetime.now(UTC))
    at = int_param(request.query_params.get("at"))
    start = views.page_of_seq(events, at) if at is not None else int_param(request.query_params.get("start"))
    timeline = views.page(events, start)
    final = await run_in_threadpool(_final_diff, console, events) if problem is None else None
    return render(
        request,
        "run.html",
        final=final,
        info=info,
        row=row,
        page=timeline,
        chart=views.diagnostics_chart(events),
        band=views.control_band(events),
        turns=sorted(set(views.turns_of(events))),
        families=views.families(),
        approvals=row.approvals,
        needs=_needs(row.status) if not row.approvals else None,  # the resume form asks for what the stop needs
        driving=(t := console.drivers.threads.get(info.run_id)) is not None and t.is_alive(),
        driver_failure=console.drivers.failures.get(info.run_id),
        driven=info.run_id in console.drivers.threads,  # this console resumed or forked it (it may be done already)
        live=timeline.is_tail and row.status in ("RUNNING", "NEW", "WAITING_APPROVAL"),
        last_seq=events[-1].seq if events else -1,
    )


def _graph_page(request: Request, info: Any, events: list[Event]) -> Response:
    """A task graph's log: its nodes by depth with their states (``tether graph show``, drawn), not a run's turns."""
    view = as_dict(GraphState.fold(info.run_id, events), time.time())
    return render(request, "graph.html", info=info, view=view, events=len(events))


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


async def context_page(console: Console, request: Request) -> Response:
    """The messages sent to the model at one turn, rebuilt from the log and checked against its manifest."""
    from tether.kernel.manifest import context_at

    info, events, problem = await run_in_threadpool(_run, console, request.path_params["run_id"])
    if problem is not None:
        raise LogCorrupt(info.run_id, 0, problem)
    ctx = await run_in_threadpool(context_at, events, request.path_params["turn"])
    rows = list(zip(ctx.messages, ctx.records, strict=True))
    return render(request, "context.html", info=info, ctx=ctx, rows=rows)


async def verify_action(console: Console, request: Request) -> Response:
    """Recompute the chain and check signed checkpoints: what ``tether log verify RUN`` does."""
    form = await checked_form(request)
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


async def export_action(console: Console, request: Request) -> Response:
    """The run's episode package, as ``tether export RUN -o FILE`` writes it (signed when an anchor key exists),
    sent as a download; the server's copy is removed once sent. A log that does not verify, or that holds a
    value the host passed to the sandbox, is refused on the page, as the CLI refuses it."""
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    folder = Path(tempfile.mkdtemp(prefix="tether-export-"))

    def export() -> Path:
        path = key_path()
        signing = AnchorKey.load(path) if path.exists() else None
        with console.reader() as store:
            run_id = store.run(request.path_params["run_id"]).run_id
            out = folder / f"tether-{run_id}.tar.gz"
            export_run(store, run_id, out, key=signing)
        return out

    try:
        out = await run_in_threadpool(export)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    cleanup = BackgroundTask(shutil.rmtree, folder, ignore_errors=True)
    return FileResponse(out, media_type="application/gzip", filename=out.name, background=cleanup)


async def undo_action(console: Console, request: Request) -> Response:
    """Take back the run's changes to its workspace as ``tether undo RUN [--dry-run]`` does (kernel/undo.py):
    ``dry=1`` plans and checks only, and the page offers the undo itself; refusals change nothing."""
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    dry = form.get("dry") == "1"
    by = request.cookies.get("tether_operator") or "console"

    def run_undo() -> UndoOutcome:
        with console.writer() as store:
            run_id = store.run(request.path_params["run_id"]).run_id
            return undo(store, run_id, Selection(), by=by, dry_run=dry)

    outcome = await run_in_threadpool(run_undo)
    p = outcome.plan
    files = [f"{s.path}: {shown(s.expected)} → {shown(s.target)}" for s in p.steps]
    if not outcome.ok:
        title, notes = "undo refused: nothing was changed", list(outcome.refusals)
    elif not p.actions:
        title, notes = "nothing to undo", []
    elif dry:
        title, notes = f"the undo would restore {len(files)} file(s)", files
    else:
        title, notes = f"undone: {len(files)} file(s) restored (receipt at event {outcome.seq})", files
    return render(
        request, "undo.html", 200 if outcome.ok else 409, title=title, notes=notes, ok=outcome.ok, plan=p,
        confirm=dry and outcome.ok and bool(p.actions),
    )  # fmt: skip


def _needs(status: str) -> Needs | None:
    """What a stop needs before it goes on (kernel/continuation.py's table); None for a final status."""
    return NEEDS.get(RunStatus(status)) if status in RunStatus.__members__ else None


def operator(request: Request, form: dict[str, str]) -> str:
    return (form.get("by") or "").strip() or request.cookies.get("tether_operator") or "console"


async def resume_action(console: Console, request: Request) -> Response:
    """Continue a run as ``tether resume RUN [--note | --budget | --attempts]`` would, driven by this server; the
    run's page follows it. A stop that needs something (a note, a raised budget, more attempts) is refused
    by the kernel without it, with the reason on the page."""
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    budgets = dict(parse_budget(b) for b in form.get("budget", "").split() if b)
    attempts = int_param(form.get("attempts") or "0")
    if attempts is None or attempts < 0:
        raise InputError(f"attempts: expected a whole number of extra attempts, found {form.get('attempts')!r}")
    continuation = Continuation(
        by=operator(request, form),
        reason="the console",
        note=(form.get("note") or "").strip() or None,
        budgets=budgets,
        attempts=attempts,
    )
    run_id = await run_in_threadpool(console.drivers.resume, request.path_params["run_id"], continuation)
    return RedirectResponse(f"/runs/{run_id}", status_code=303)


async def fork_action(console: Console, request: Request) -> Response:
    """Fork the run at a seq as ``tether fork RUN --at SEQ`` does and drive the fork; the fork's page follows it."""
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    seq = int_param(form.get("seq"))
    if seq is None:
        raise InputError(f"seq: expected the seq of an event of the run, found {form.get('seq')!r}")
    fork_id = await run_in_threadpool(console.drivers.fork, request.path_params["run_id"], seq, operator(request, form))
    return RedirectResponse(f"/runs/{fork_id}", status_code=303)
