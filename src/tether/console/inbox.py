"""The approval inbox: every pending approval across the database's runs, and a person's answer to one,
recorded by ``kernel/approvals.py: record_answer`` and, for a run hosted as a Temporal workflow, signalled by
``distributed/answers.py: signal_answer`` (both what ``tether approve`` and ``tether deny`` call)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Literal

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from tether.canonical import content_hash
from tether.distributed.answers import Signalled, signal_answer
from tether.errors import InputError, RunLeased
from tether.events.protocol import Store
from tether.kernel.approvals import (
    ApprovalAnswer,
    ApprovalRequest,
    driver_of,
    pending,
    record_answer,
    takes_effect_when,
)
from tether.state import RunState

from .views import has_hidden, visible
from .web import Console, checked_form, render

CHOICES: dict[str, Literal["once", "run", "deny"]] = {"once": "once", "run": "run", "deny": "deny"}
ANSWER_RETRY_S = 5.0  # how long an answer waits for another writer (a driver ending, another operator) to let go


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

    @property
    def hidden(self) -> bool:
        """Whether the call's arguments or preview hold characters that change how they read unseen."""
        args = json.dumps(self.request.args, ensure_ascii=False, sort_keys=True)
        return has_hidden(args) or has_hidden(self.request.preview)


def _pending(console: Console) -> list[Pending]:
    if not console.has_log():
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
                    visible(json.dumps(r.args, indent=1, sort_keys=True, ensure_ascii=False)),
                    requested,
                )
            )
    return out


async def approvals_page(console: Console, request: Request) -> Response:
    items = await run_in_threadpool(_pending, console)
    return render(request, "approvals.html", items=items, operator=request.cookies.get("tether_operator", ""))


def who_answered(store: Store, approval_id: str) -> str | None:
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


@dataclass(frozen=True)
class Outcome:
    """What became of an operator's answer: the page's status code, title and message, and the run answered."""

    status: int
    title: str
    message: str
    run_id: str = ""


def answer(console: Console, approval_id: str, form: dict[str, str]) -> Outcome:
    """Record an operator's answer as `tether approve|deny` would."""
    by = form.get("by", "").strip()
    choice = CHOICES.get(form.get("choice", ""))
    reason = form.get("reason", "").strip()
    if not by:
        return Outcome(400, "not answered", "say who you are (the operator field): the log records who answered")
    if choice is None:
        return Outcome(400, "not answered", f"choice {form.get('choice')!r}: expected once, run or deny")
    if choice == "deny" and not reason:
        return Outcome(400, "not answered", "a denial needs a reason: the model is told it")
    with console.writer() as store:
        current = {r.approval_id: r for r in pending(store, verified=False)}.get(approval_id)
        if current is None:
            told = who_answered(store, approval_id)
            if told is None:
                return Outcome(404, "not answered", f"no pending approval {approval_id}; see the inbox")
            return Outcome(409, "already answered", f"{approval_id} was {told}")
        if content_hash(current.args) != form.get("args_hash"):
            return Outcome(
                409, "not answered", f"{approval_id}: the arguments are not the ones this page showed; reload"
            )
        deadline = time.monotonic() + ANSWER_RETRY_S
        while True:
            try:
                record_answer(store, approval_id, ApprovalAnswer(choice, by, reason))
                break
            except RunLeased:  # the run's driver or another operator is writing: wait for it, then look again
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
            except InputError:
                told = who_answered(store, approval_id)
                if told is None:
                    raise
                return Outcome(409, "already answered", f"{approval_id} was {told}")
        driver = driver_of(store, current.run_id)
        hosted = signal_answer(store, current.run_id, approval_id)
    verb = "denied" if choice == "deny" else "approved" + (" for this run" if choice == "run" else " once")
    message = f"{verb} {approval_id} ({current.tool}) as {by}; {how_it_goes_on(current.run_id, driver, hosted)}"
    return Outcome(200, verb, message, current.run_id)


def how_it_goes_on(run_id: str, driver: str, hosted: Signalled | None) -> str:
    """What happens next to the answered run: its Temporal workflow was woken (or re-reads the log at its
    next re-check), its driver picks the answer up, or someone resumes it."""
    if hosted is not None and hosted.signalled:
        return f"the run continues as workflow {hosted.workflow_id}"
    if hosted is not None:
        return (
            f"workflow {hosted.workflow_id} was not signalled ({hosted.error}); it reads the log at its next re-check"
        )
    if driver:
        return takes_effect_when(driver)
    return f"the run goes on when it is resumed: from its page, or with `tether resume {run_id}`"


async def answer_action(console: Console, request: Request) -> Response:
    form = await checked_form(request)
    if isinstance(form, Response):
        return form
    approval_id = request.path_params["approval_id"]
    done = await run_in_threadpool(answer, console, approval_id, form)
    ok = done.status == 200
    back = f"/runs/{done.run_id}" if ok else "/approvals"
    response = render(request, "message.html", done.status, title=done.title, message=done.message, ok=ok, back=back)
    if form.get("by"):
        response.set_cookie("tether_operator", form["by"][:80], samesite="strict", httponly=True)
    return response
