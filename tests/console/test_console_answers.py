"""Answering approvals through the console's HTTP interface, attacked: two operators posting at the same
moment, a run whose driver holds it, a log rewritten under the console, bad forms; and ``tether serve``."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

import pytest
from consolekit import ask, write_run

from tether.console import inbox
from tether.console.server import Background
from tether.events.kinds_distributed import RunHosted
from tether.events.store import EventStore

Answer = tuple[int, str]


class Operator:
    """One browser: its own CSRF cookie, posting forms from the console's origin."""

    def __init__(self, server: Background) -> None:
        self.server = server
        status, headers, _ = self.send("GET", "/approvals")
        assert status == 200
        self.cookie = headers["set-cookie"].split(";")[0]

    def send(
        self, method: str, path: str, body: str | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], str]:
        conn = http.client.HTTPConnection(self.server.host, self.server.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read().decode()
        finally:
            conn.close()

    def answer(self, approval_id: str, args_hash: str, **form: str) -> Answer:
        body = urlencode({"csrf": self.cookie.split("=", 1)[1], "args_hash": args_hash, **form})
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "Cookie": self.cookie,
            "Origin": f"http://127.0.0.1:{self.server.port}",
        }
        status, _, html = self.send("POST", f"/approvals/{approval_id}", body, headers)
        text = re.sub(r"<[^>]+>", " ", html.split('id="message">', 1)[-1])
        return status, " ".join(text.split())


def pending_hash(db: Path, run_id: str, approval_id: str) -> str:
    with EventStore.open(db, readonly=True) as store:
        return next(e.payload["args_hash"] for e in store.events(run_id) if e.payload.get("approval_id") == approval_id)


def answers(db: Path, run_id: str) -> list[tuple[str, str]]:
    with EventStore.open(db, readonly=True) as store:
        kinds = ("approval.granted", "approval.denied")
        return [(e.kind, e.payload["by"]) for e in store.events(run_id) if e.kind in kinds]


@pytest.fixture
def waiting(db: Path) -> tuple[str, str]:
    with EventStore.open(db) as store:
        run_id = write_run(store, "push", 1)
        return run_id, ask(store, run_id, 2, "git push origin main", "$ git push origin main")


def test_two_operators_answering_at_the_same_moment_one_wins_the_other_is_told(
    served: Background, db: Path, waiting: tuple[str, str]
) -> None:
    run_id, approval_id = waiting
    args_hash = pending_hash(db, run_id, approval_id)
    ana, bo = Operator(served), Operator(served)
    results: dict[str, Answer] = {}
    start = threading.Barrier(2)

    def go(name: str, op: Operator, **form: str) -> None:
        start.wait()
        results[name] = op.answer(approval_id, args_hash, by=name, **form)

    threads = [
        threading.Thread(target=go, args=("ana", ana), kwargs={"choice": "once"}),
        threading.Thread(target=go, args=("bo", bo), kwargs={"choice": "deny", "reason": "no"}),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    recorded = answers(db, run_id)
    assert len(recorded) == 1  # exactly one answer reached the log
    (kind, winner) = recorded[0]
    loser = "bo" if winner == "ana" else "ana"
    assert results[winner][0] == 200
    status, told = results[loser]
    assert status == 409 and "already answered" in told
    verb = "approved (once)" if kind == "approval.granted" else "denied"
    assert f"{verb} by {winner}" in told


def test_an_answer_waits_for_the_runs_driver_then_says_who_holds_it(
    served: Background, db: Path, waiting: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id, approval_id = waiting
    monkeypatch.setattr(inbox, "ANSWER_RETRY_S", 0.5)
    with EventStore.open(db) as driver:
        driver.acquire(run_id)  # a driver holds the run (as an interactive `tether run` at its prompt does)
        status, told = Operator(served).answer(
            approval_id, pending_hash(db, run_id, approval_id), by="ana", choice="once"
        )
        driver.release(run_id)
    assert status == 503 and "being driven by" in told
    assert answers(db, run_id) == []
    assert (
        Operator(served).answer(approval_id, pending_hash(db, run_id, approval_id), by="ana", choice="once")[0] == 200
    )


def test_bad_forms_record_nothing(served: Background, db: Path, waiting: tuple[str, str]) -> None:
    run_id, approval_id = waiting
    op, args_hash = Operator(served), pending_hash(db, run_id, approval_id)
    assert op.answer(approval_id, args_hash, by="  ", choice="once")[0] == 400
    assert "say who you are" in op.answer(approval_id, args_hash, choice="once")[1]
    assert "a denial needs a reason" in op.answer(approval_id, args_hash, by="ana", choice="deny")[1]
    assert "expected once, run or deny" in op.answer(approval_id, args_hash, by="ana", choice="always")[1]
    assert "not the ones this page showed" in op.answer(approval_id, "sha256:" + "0" * 64, by="ana", choice="once")[1]
    assert op.answer("ap-nope", args_hash, by="ana", choice="once") == (
        404,
        "not answered no pending approval ap-nope; see the inbox back",
    )
    assert answers(db, run_id) == []


def test_a_log_rewritten_under_the_console_cannot_be_approved(
    served: Background, db: Path, waiting: tuple[str, str]
) -> None:
    import sqlite3

    run_id, approval_id = waiting
    args_hash = pending_hash(db, run_id, approval_id)
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TRIGGER events_no_update")
        conn.execute("UPDATE events SET ts = '2000-01-01T00:00:00+00:00' WHERE run_id = ? AND seq = 3", (run_id,))
    status, told = Operator(served).answer(approval_id, args_hash, by="ana", choice="once")
    assert status == 409 and "seq 3" in told
    assert answers(db, run_id) == []


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_tether_serve_finds_the_database_from_inside_the_workspace_and_serves_it(tmp_path: Path) -> None:
    db = tmp_path / "ws" / ".tether" / "tether.db"
    db.parent.mkdir(parents=True)
    (tmp_path / "ws" / "src").mkdir()
    with EventStore.open(db) as store:
        run_id = write_run(store, "served by the CLI", 1)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "TETHER_DB"} | {"PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "tether.cli.main", "serve", "--port", str(port)]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path / "ws" / "src"
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == f"tether console for {db} at http://127.0.0.1:{port}/"
        deadline = time.monotonic() + 30
        while True:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                conn.request("GET", "/")
                body = conn.getresponse().read().decode()
                break
            except ConnectionRefusedError:
                assert time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        assert run_id in body and "served by the CLI" in body
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)


def test_tether_serve_refuses_a_weak_token_before_binding(db: Path) -> None:
    cmd = [sys.executable, "-m", "tether.cli.main", "serve", "--db", str(db), "--host", "10.0.0.1", "--token", "abc"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "at least 16 characters" in proc.stderr


def test_an_answer_to_a_hosted_run_whose_temporal_server_is_gone_is_recorded_and_says_so(
    served: Background, db: Path
) -> None:
    """The console signals a run hosted as a Temporal workflow (docs/distributed.md). With the server unreachable
    the answer is still in the log, and the page says the workflow reads it at its next re-check rather than
    claiming the run goes on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    hosted = RunHosted(
        address=f"127.0.0.1:{port}", namespace="default", workflow_id="tether-run-x", task_queue="tether", worker="w"
    )
    with EventStore.open(db) as store:
        run_id = write_run(store, "push", 1)
        store.append_many(run_id, [hosted])
        approval_id = ask(store, run_id, 2, "git push origin main", "$ git push origin main")
    args_hash = pending_hash(db, run_id, approval_id)
    status, text = Operator(served).answer(approval_id, args_hash, by="ana", choice="once")
    assert status == 200 and "workflow tether-run-x was not signalled" in text and "next re-check" in text, text
    assert answers(db, run_id) == [("approval.granted", "ana")]
