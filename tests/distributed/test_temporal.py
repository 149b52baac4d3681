"""Runs as Temporal workflows on a real dev server, with real `tether worker` processes (docs/distributed.md).

The failure tests kill workers with SIGKILL at the worst moments and check what the issue asks: a killed
worker costs a delay, never a repeated side effect (a marker file the tool appends to counts them), an
ambiguous effect ends NEEDS_INPUT as it does locally, and the log's chain verifies.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from kernel.runkit import FINISH, FIX
from temporalio.api.enums.v1 import EventType, TaskQueueKind, TimeoutType
from temporalio.client import Client
from temporalkit import Temporal, Worker, start_worker

from tether.console.server import Background
from tether.distributed.client import submission, submit, workflow_id
from tether.distributed.submission import Timing
from tether.errors import TetherError
from tether.events.backends import open_store
from tether.state import RunState

pytestmark = pytest.mark.temporal

MARK = "echo ran >> src/marker.txt"
#: Short enough that a lost worker is noticed in seconds (an operator's defaults are 30 s and 60 s).
FAST = Timing(heartbeat_s=2.0, affinity_s=3.0, recheck_s=60.0)
#: The workers' ``--sticky-s``: a run whose worker was killed waits this long for it, not Temporal's 10 s.
STICKY_S = 1.0


def script(example: Path, *turns: list[dict[str, Any]]) -> None:
    data = {"turns": [{"tool_calls": calls} for calls in turns]}
    (example / "trajectory.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def tether(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def documents(text: str) -> list[Any]:
    """The JSON documents printed one after another (the ids, then the output contract)."""
    decoder, out, i = json.JSONDecoder(), [], 0
    while i < len(text := text.strip()):
        value, i = decoder.raw_decode(text, i)
        out.append(value)
        while i < len(text) and text[i].isspace():
            i += 1
    return out


def marks(example: Path) -> int:
    marker = example / "project" / "src" / "marker.txt"
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def run_events(db: str, run_id: str) -> list[Any]:
    with open_store(db, readonly=True, create=False) as store:
        assert store.verify(run_id) > 0  # the chain verifies
        return store.events(run_id)


def until(what: str, check: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def started(temporal: Temporal, example: Path, db: str, timing: Timing = FAST) -> str:
    sub = submission(
        example / "envelope.yaml", "fix the median", db=db, address=temporal.address, sandbox="local", timing=timing
    )
    asyncio.run(submit(sub))
    return sub.run_id


def finished(temporal: Temporal, run_id: str, timeout: float = 90) -> dict[str, Any]:
    """The run's output contract, once its workflow ends (on whichever worker), within ``timeout`` seconds."""

    async def result() -> dict[str, Any]:
        client = await Client.connect(temporal.address)
        out: dict[str, Any] = await client.get_workflow_handle(workflow_id(run_id)).result()
        return out

    return asyncio.run(asyncio.wait_for(result(), timeout))


def sticky_waits(temporal: Temporal, run_id: str) -> list[float]:
    """Seconds each workflow task offered to a worker's sticky queue waited there before it timed out to the shared
    queue (the worker that held the workflow gone), from the workflow's history on the server."""

    async def history() -> list[Any]:
        client = await Client.connect(temporal.address)
        return list((await client.get_workflow_handle(workflow_id(run_id)).fetch_history()).events)

    events = asyncio.run(history())
    at = {e.event_id: e for e in events}
    waits = []
    for e in events:
        if e.event_type != EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
            continue
        timed_out = e.workflow_task_timed_out_event_attributes
        scheduled = at[timed_out.scheduled_event_id]
        if timed_out.timeout_type == TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START:
            assert (
                scheduled.workflow_task_scheduled_event_attributes.task_queue.kind
                == TaskQueueKind.TASK_QUEUE_KIND_STICKY
            )
            waits.append((e.event_time.ToDatetime() - scheduled.event_time.ToDatetime()).total_seconds())
    return waits


@pytest.fixture
def store(request: pytest.FixtureRequest, db: Path) -> str:
    """The runs' store: the SQLite file all workers share, or (parametrised ``postgresql``) a fresh schema on the
    throwaway PostgreSQL server, as the application role that may only read and insert."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return str(db)
    return str(request.getfixturevalue("postgres").tether_store())


BOTH_STORES = pytest.mark.parametrize(
    "store", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)


@pytest.fixture
def workers(temporal: Temporal, store: str) -> Any:
    """Start workers on the module's server; every one is stopped (or was killed) when the test ends."""
    started_: list[Worker] = []

    def start() -> Worker:
        w = start_worker(temporal.address, "--db", store, "--sticky-s", str(STICKY_S))
        started_.append(w)
        return w

    yield start
    for w in started_:
        w.stop()


@pytest.mark.slow
def test_submit_runs_on_a_worker_to_the_same_log_as_a_local_run(
    temporal: Temporal, example: Path, store: str, workers: Any
) -> None:
    script(example, [FIX], [FINISH])
    workers()
    proc = tether(
        "submit", str(example / "envelope.yaml"), "fix the median", "--temporal", temporal.address,
        "--db", store, "--sandbox", "local", "--wait", "--json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    ids, contract = documents(proc.stdout)
    assert contract["status"] == "COMPLETE" and contract["run_id"] == ids["run_id"]
    events = run_events(store, ids["run_id"])
    hosted = [e.payload for e in events if e.kind == "run.hosted"]
    assert len(hosted) == 1 and hosted[0]["workflow_id"] == ids["workflow_id"]
    assert RunState.from_events(events).status.value == "COMPLETE"
    shown = tether("show", ids["run_id"], "--db", store, "--json")
    assert shown.returncode == 0 and json.loads(shown.stdout)["status"] == "COMPLETE"


def pending_approval(db: str, run_id: str) -> str | None:
    """The run's pending approval, or None (also while a worker is still creating the database or the run)."""
    try:
        with open_store(db, readonly=True, create=False) as store:
            pending = RunState.from_events(store.events(store.run(run_id).run_id)).pending_approvals
    except TetherError:
        return None
    return next(iter(pending), None)


@pytest.mark.slow
@BOTH_STORES
def test_a_worker_killed_inside_a_non_idempotent_tool_is_never_rerun_by_the_next(
    temporal: Temporal, example: Path, store: str, workers: Any
) -> None:
    script(example, [{"name": "bash", "args": {"command": f"{MARK}; sleep 30"}}])
    first = workers()
    run_id = started(temporal, example, store)
    until("the tool's effect", lambda: marks(example) == 1)
    first.kill()  # mid-activity: action.started is durable, action.completed never will be
    workers()
    contract = finished(temporal, run_id)
    assert contract["status"] == "NEEDS_INPUT" and "not idempotent" in contract["result"]
    assert marks(example) == 1  # the second worker did not run the command again
    kinds = [e.kind for e in run_events(store, run_id)]
    assert kinds.count("action.started") == 1 and "action.completed" not in kinds
    verified = tether("log", "verify", run_id, "--db", store)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    # The killed worker's next workflow task waited for it as long as its --sticky-s said, not Temporal's 10 s.
    waits = sticky_waits(temporal, run_id)
    assert waits and all(w < 5 for w in waits), waits  # 1 s given, 10 s Temporal's: 5 tells them apart


@pytest.mark.slow
def test_an_approval_answered_while_no_worker_runs_continues_when_one_starts(
    temporal: Temporal, example: Path, store: str, workers: Any
) -> None:
    push = {"name": "bash", "args": {"command": "git push origin main"}}  # the envelope asks a human
    script(example, [{"name": "bash", "args": {"command": MARK}}], [push], [FIX], [FINISH])
    first = workers()
    run_id = started(temporal, example, store)
    approval = until("the approval", lambda: pending_approval(store, run_id))
    first.kill()  # no worker is up from here on
    answer = tether("deny", approval, "--reason", "not now", "--db", store, "--json")
    assert answer.returncode == 0, answer.stderr
    assert json.loads(answer.stdout)["hosted"]["signalled"] is True  # the server holds the signal for the workflow
    workers()  # the run was on the killed worker's queue: it moves to the shared one, and on
    contract = finished(temporal, run_id)
    assert contract["status"] == "COMPLETE", contract
    assert marks(example) == 1  # the first turn's effect, once, across two workers
    events = run_events(store, run_id)
    assert [e.payload["reason"] for e in events if e.kind == "approval.denied"] == ["not now"]
    assert [e.payload["tool"] for e in events if e.kind == "action.started"].count("bash") == 1  # the push never ran


@pytest.mark.slow
def test_the_temporal_server_restarted_during_a_run_loses_nothing(
    temporal: Temporal, example: Path, store: str, workers: Any
) -> None:
    push = {"name": "bash", "args": {"command": "git push origin main"}}
    script(example, [{"name": "bash", "args": {"command": MARK}}], [push], [FIX], [FINISH])
    workers()
    run_id = started(temporal, example, store)
    approval = until("the approval", lambda: pending_approval(store, run_id))
    temporal.restart()  # the workflow's state is in the server's file; the worker reconnects on its own
    answer = tether("deny", approval, "--reason", "not now", "--db", store, "--json")
    assert answer.returncode == 0 and json.loads(answer.stdout)["hosted"]["signalled"] is True, answer.stderr
    contract = finished(temporal, run_id)
    assert contract["status"] == "COMPLETE", contract
    assert marks(example) == 1
    assert run_events(store, run_id)[-1].kind == "run.finished"


def console_answer(db: str, approval_id: str, **form: str) -> tuple[int, str]:
    """An operator's answer posted to the web console over HTTP, as a browser would (its CSRF cookie and origin):
    the page's status and text."""
    server = Background(db)
    try:

        def send(method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None) -> Any:
            conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
            conn.request(method, path, body=body, headers=headers or {})
            return conn.getresponse()

        page = send("GET", "/approvals")
        args_hash = re.search(r'name="args_hash" value="([^"]+)"', page.read().decode())
        assert page.status == 200 and args_hash is not None
        cookie = page.getheader("set-cookie").split(";")[0]
        body = urlencode({"csrf": cookie.split("=", 1)[1], "args_hash": args_hash[1], **form})
        headers = {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie, "Origin": server.url}
        answered = send("POST", f"/approvals/{approval_id}", body, headers)
        return answered.status, " ".join(re.sub(r"<[^>]+>", " ", answered.read().decode()).split())
    finally:
        server.stop()


@pytest.mark.slow
def test_an_answer_in_the_web_console_signals_the_workflow(
    temporal: Temporal, example: Path, store: str, workers: Any
) -> None:
    """Answered in the console, the run goes on at once, not at its re-check (10 minutes here)."""
    push = {"name": "bash", "args": {"command": "git push origin main"}}
    script(example, [push], [FIX], [FINISH])
    workers()
    run_id = started(temporal, example, store, Timing(heartbeat_s=2.0, affinity_s=3.0, recheck_s=600.0))
    approval = until("the approval", lambda: pending_approval(store, run_id))
    status, page = console_answer(store, approval, by="ana", choice="deny", reason="not from here")
    assert status == 200 and f"the run continues as workflow {workflow_id(run_id)}" in page, page
    contract = finished(temporal, run_id, timeout=60)  # far short of the re-check: the signal woke it
    assert contract["status"] == "COMPLETE", contract
    events = run_events(store, run_id)
    assert [(e.payload["by"], e.payload["reason"]) for e in events if e.kind == "approval.denied"] == [
        ("ana", "not from here")
    ]
