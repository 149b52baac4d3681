"""Task graphs end to end: real runs, real worker processes, SIGKILL and SIGSTOP at the worst moment.

Scripted models only. Each node's effect appends a line to a file, so "exactly once" is a line count.
"""

from __future__ import annotations

import html
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from graphkit import bash, node_envelope, write_graph

from tether.cli.main import main
from tether.console.server import Background
from tether.errors import HeadMoved
from tether.events.kinds_graph import NodeLeased, NodeRenewed
from tether.events.store import EventStore
from tether.graph import worker as worker_module
from tether.graph.fold import GraphState
from tether.graph.launch import start_graph
from tether.graph.worker import Worker
from tether.kernel.approvals import ApprovalAnswer, pending, record_answer
from tether.status import RunStatus

#: A worker process that stops itself (SIGKILL or SIGSTOP) right after the first node's bash action completed
#: (durably, in that node's run), before the worker records anything in the graph.
DOOMED = """
import os, signal, sys
from pathlib import Path
from tether.graph.worker import Worker
from tether.kernel.approvals import ApprovalAnswer, pending, record_answer

db, graph_run, sig = sys.argv[1:4]
stopped = []

def hook(event):
    if not stopped and event.kind == "action.completed" and event.payload.get("tool") == "bash":
        stopped.append(event)  # once: woken up (SIGCONT), it goes on as an ordinary worker
        os.kill(os.getpid(), getattr(signal, sig))

Worker(Path(db), graph_run, on_event=hook).work()
"""


#: A worker process that dies (SIGKILL) right after it recorded its first compensation step.
DIES_COMPENSATING = """
import os, signal, sys
from pathlib import Path
from tether.graph.worker import Worker

def note(line):
    if "compensation step" in line:
        os.kill(os.getpid(), signal.SIGKILL)

Worker(Path(sys.argv[1]), sys.argv[2], note=note).work()
"""


def lines(root: Path, name: str) -> list[str]:
    path = root / "ws" / "out" / name
    return path.read_text().splitlines() if path.exists() else []


def graph_events(db: Path, graph_run: str) -> list[Any]:
    with EventStore.open(db) as store:
        assert store.verify(graph_run) > 0
        return store.events(graph_run)


def start(root: Path, nodes: dict[str, dict[str, Any]], lease_s: float = 30.0) -> tuple[Path, str]:
    path = write_graph(root, nodes, lease_s=lease_s)
    db = root / "t.db"
    with EventStore.open(db, create=True) as store:
        return db, start_graph(store, path, sandbox="local")[0]


def tether(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args], capture_output=True, text=True, timeout=180,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.mark.slow
def test_a_diamond_runs_to_complete_with_two_worker_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    nodes = {
        "a": {"turns": bash("echo a >> out/a.txt")},
        "b": {"turns": bash("echo b >> out/b.txt"), "needs": ["a"]},
        "c": {"turns": bash("echo c >> out/c.txt"), "needs": ["a"]},
        "d": {"turns": bash("echo d >> out/d.txt"), "needs": ["b", "c"]},
    }
    path = write_graph(tmp_path, nodes)
    db = tmp_path / "t.db"
    proc = tether("graph", "run", str(path), "--workers", "2", "--sandbox", "local", "--db", str(db), "--json")
    assert proc.returncode == 0, proc.stderr
    view = json.loads(proc.stdout)
    assert view["status"] == "COMPLETE"
    assert [(n["id"], n["state"], n["depth"]) for n in view["nodes"]] == [
        ("a", "complete", 0), ("b", "complete", 1), ("c", "complete", 1), ("d", "complete", 2),
    ]  # fmt: skip
    for name in "abcd":
        assert lines(tmp_path, f"{name}.txt") == [name]
    events = graph_events(db, view["graph_run"])
    leases = sorted(e.payload["node"] for e in events if e.kind == "node.leased")
    assert leases == ["a", "b", "c", "d"]  # two workers, no node taken twice
    done = {e.payload["node"]: e.seq for e in events if e.kind == "node.completed"}
    leased = {e.payload["node"]: e.seq for e in events if e.kind == "node.leased"}
    assert leased["d"] > max(done["b"], done["c"]) and min(leased["b"], leased["c"]) > done["a"]  # persisted first
    with EventStore.open(db) as store:
        for n in view["nodes"]:
            assert store.verify(n["run_id"]) > 0  # each node is a real run with its own verified log
            (link,) = store.events(n["run_id"], kinds={"graph.node"})  # which names its graph and node
            assert link.payload == {"graph_run": view["graph_run"], "node": n["id"], "attempt": 1}
    main(["graph", "show", view["graph_run"][:-1], "--db", str(db)])  # a unique prefix names the graph; exit 0
    assert "[    complete] d  <- b, c" in capsys.readouterr().out
    main(["runs", "--db", str(db), "--json"])
    listed = {r["run_id"]: r["status"] for r in json.loads(capsys.readouterr().out)}
    assert listed[view["graph_run"]] == "COMPLETE" and len(listed) == 5  # the graph with its own status, 4 runs


@pytest.mark.slow
def test_a_killed_workers_node_is_taken_over_after_its_lease_and_its_effect_happens_once(tmp_path: Path) -> None:
    nodes = {
        "a": {"turns": bash("echo a >> out/a.txt")},
        "b": {"turns": bash("echo b >> out/b.txt"), "needs": ["a"]},
    }
    db, graph_run = start(tmp_path, nodes, lease_s=1.0)
    doomed = subprocess.run(
        [sys.executable, "-c", DOOMED, str(db), graph_run, "SIGKILL"], capture_output=True, text=True, timeout=120
    )
    assert doomed.returncode == -9, doomed.stderr
    assert lines(tmp_path, "a.txt") == ["a"]  # the effect happened, then the worker died before recording the node
    g = Worker(db, graph_run, poll_s=0.1).work()
    assert g.finished is not None and g.finished.status == "COMPLETE"
    assert lines(tmp_path, "a.txt") == ["a"] and lines(tmp_path, "b.txt") == ["b"]  # once each
    started = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.started" and e.payload["node"] == "a"]
    assert [(s["attempt"], s["resumed"]) for s in started] == [(1, False), (2, True)]
    assert started[0]["run_id"] == started[1]["run_id"]  # attempt 2 resumed attempt 1's run from its log


@pytest.mark.slow
def test_a_completion_after_lease_expiry_is_deduplicated_and_successors_start_once(tmp_path: Path) -> None:
    nodes = {
        "a": {"turns": bash("echo a >> out/a.txt")},
        "b": {"turns": bash("echo b >> out/b.txt"), "needs": ["a"]},
    }
    db, graph_run = start(tmp_path, nodes, lease_s=1.0)
    stalled = subprocess.Popen(
        [sys.executable, "-c", DOOMED, str(db), graph_run, "SIGSTOP"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        wait_for(lambda: process_state(stalled.pid) == "T")  # paused right after its effect
        time.sleep(1.2)  # its lease expires: nobody renews it
        result: list[GraphState] = []
        second = threading.Thread(target=lambda: result.append(Worker(db, graph_run, poll_s=0.1).work()))
        second.start()
        wait_for(
            lambda: any(e.kind == "node.started" and e.payload["attempt"] == 2 for e in graph_events(db, graph_run))
        )
        os.kill(stalled.pid, signal.SIGCONT)  # the first worker wakes up and finishes the node anyway
        second.join(timeout=120)
        assert stalled.wait(timeout=120) == 0, stalled.stderr.read() if stalled.stderr else ""
    finally:
        if stalled.poll() is None:
            stalled.kill()
    assert result and result[0].finished is not None and result[0].finished.status == "COMPLETE"
    events = graph_events(db, graph_run)
    completions = [e for e in events if e.kind == "node.completed" and e.payload["node"] == "a"]
    assert sorted(e.payload["attempt"] for e in completions) == [1, 2]  # completed twice...
    g = GraphState.fold(graph_run, events)
    stale = next(e.seq for e in completions if e.payload["attempt"] == 1)
    counted = next(e.seq for e in completions if e.payload["attempt"] == 2)
    assert g.nodes["a"].ignored == [stale] and g.nodes["a"].outcome_seq == counted  # ...counted once
    b_leases = [e.seq for e in events if e.kind == "node.leased" and e.payload["node"] == "b"]
    assert b_leases[0] > counted  # released by the counted transition only
    b_runs = {e.payload["run_id"] for e in events if e.kind == "node.started" and e.payload["node"] == "b"}
    assert len(b_runs) == 1  # started once: a 1 s lease may expire under load, the next attempt continues its run
    assert lines(tmp_path, "a.txt") == ["a"] and lines(tmp_path, "b.txt") == ["b"]


def test_a_renewal_that_loses_the_race_for_the_head_is_tried_again_at_once(tmp_path: Path) -> None:
    """Another worker appends between the holder's read and its renewal: the renewal is read and appended again
    now, not a third of the lease later (two such misses in a row let a 1 s lease expire under load)."""
    db, graph_run = start(tmp_path, {"a": {"turns": bash("echo a")}})
    holder = Worker(db, graph_run)
    with EventStore.open(db) as store, EventStore.open(db) as other:
        store.append(graph_run, NodeLeased(node="a", attempt=1, worker=holder.id, expires_at=time.time() + 30))
        real, raced = store.append, []

        def append_after_another(run_id: str, event: Any, **kw: Any) -> Any:
            if not raced:  # the other worker's event lands first: this append's expected head is gone
                raced.append(other.append(graph_run, NodeRenewed(node="a", attempt=1, worker="w2", expires_at=1e10)))
            return real(run_id, event, **kw)

        store.append = append_after_another  # type: ignore[method-assign]
        assert holder._renew(store, "a", 1, 30.0)
        kinds = [(e.kind, e.payload.get("worker")) for e in store.events(graph_run)][-2:]
    assert kinds == [("node.renewed", "w2"), ("node.renewed", holder.id)]


class Abandon(Exception):
    """Raised from a worker's event hook: the worker stops there, as one that lost its lease would look."""


def abandoned_at(kind: str, tmp_path: Path) -> tuple[Path, str]:
    """A one-node graph whose first worker stopped right after its run's ``kind`` event, its lease since expired."""
    db, graph_run = start(tmp_path, {"a": {"turns": bash("echo a >> out/a.txt")}}, lease_s=0.5)

    def hook(event: Any) -> None:
        if event.kind == kind:
            raise Abandon(kind)

    with pytest.raises(Abandon):
        Worker(db, graph_run, on_event=hook).work()
    with EventStore.open(db) as store:
        lease = GraphState.read(store, graph_run).nodes["a"].lease
    assert lease is not None
    time.sleep(max(0.0, lease.expires_at - time.time()) + 0.05)
    return db, graph_run


def once_wrong(monkeypatch: pytest.MonkeyPatch, name: str, answer: Any) -> None:
    """``tether.graph.worker.<name>`` answers ``answer`` the first time it is asked (the earlier worker acts
    right after that answer), the truth after."""
    real, calls = getattr(worker_module, name), []

    def first_stale(*args: Any) -> Any:
        calls.append(args)
        return answer if len(calls) == 1 else real(*args)

    monkeypatch.setattr(worker_module, name, first_stale)


def test_a_run_the_earlier_attempt_creates_after_the_retry_looked_is_resumed_not_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attempt 1 named its run (node.started) and created it after attempt 2 found it missing: attempt 2's start
    is refused (the id is taken) and it resumes that run instead of failing the node (seen in CI under load)."""
    db, graph_run = abandoned_at("run.started", tmp_path)
    once_wrong(monkeypatch, "has_run", False)
    g = Worker(db, graph_run, poll_s=0.05).work()
    assert g.finished is not None and g.finished.status == "COMPLETE", g.finished
    started = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.started"]
    assert [s["attempt"] for s in started] == [1, 2] and len({s["run_id"] for s in started}) == 1
    assert lines(tmp_path, "a.txt") == ["a"]


def test_a_run_the_earlier_attempt_ended_after_the_retry_looked_gives_the_nodes_outcome(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run ended between attempt 2's status check and its resume: the resume is refused ("COMPLETE and
    final") and that end is the node's outcome (d292a78; that race was seen once in CI)."""
    db, graph_run = abandoned_at("run.finished", tmp_path)
    once_wrong(monkeypatch, "_status", RunStatus.RUNNING)
    g = Worker(db, graph_run, poll_s=0.05).work()
    assert g.finished is not None and g.finished.status == "COMPLETE", g.finished
    assert g.nodes["a"].attempt == 2 and lines(tmp_path, "a.txt") == ["a"]


def test_a_denied_node_fails_the_graph_and_compensation_runs_in_reverse(tmp_path: Path) -> None:
    nodes = {
        "a": {
            "turns": bash("echo a >> out/a.txt"),
            "compensate": ["echo a0 >> out/undo.txt", "echo a1 >> out/undo.txt"],
        },
        "b": {
            "turns": [*bash("git push --force origin main")[:1], *bash("echo b >> out/b.txt")],
            "needs": ["a"],
            "compensate": ["echo b0 >> out/undo.txt", "git push --force origin main", "echo b2 >> out/undo.txt"],
        },
        "c": {"turns": bash("echo c >> out/c.txt"), "needs": ["b"]},
    }
    # b is denied its push (the envelope's no-force-push rule), goes on, and is then refused completion: its
    # policy forbids b's write set from holding b.txt
    nodes["b"]["tweak"] = lambda env: env["environment"]["filesystem"].update(write=["out/a.txt", "out/undo.txt"])
    db, graph_run = start(tmp_path, nodes)
    g = Worker(db, graph_run).work()
    assert g.finished is not None and g.finished.status not in ("COMPLETE", "NO_OP")
    with EventStore.open(db) as store:
        run_b = g.nodes["b"].run_id
        assert run_b is not None
        child = store.events(run_b)
        denied = [e for e in child if e.kind == "action.decided" and e.payload.get("verdict") == "DENY"]
        assert denied and "no-force-push" in json.dumps(denied[0].payload)
        finished = [e.payload["status"] for e in child if e.kind == "run.finished"]
    assert g.nodes["b"].status == finished[-1] == g.finished.status  # the graph records the kernel's status
    assert g.finished.nodes == {"a": "compensated", "b": "compensated", "c": "skipped"}
    assert lines(tmp_path, "undo.txt") == ["b2", "b0", "a1", "a0"]  # latest outcome first, steps last first
    assert lines(tmp_path, "c.txt") == []
    steps = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.compensated"]
    assert [(s["node"], s["step"], s["verdict"], s["ran"]) for s in steps] == [
        ("b", 2, "ALLOW", True), ("b", 1, "DENY", False), ("b", 0, "ALLOW", True),
        ("a", 1, "ALLOW", True), ("a", 0, "ALLOW", True),
    ]  # fmt: skip
    assert "b step 1" in g.finished.reason  # the denied step is named, not hidden
    # the console draws the same graph: states, runs linked, the compensation, the graph's status in the list
    server = Background(db)
    try:
        page = fetch(server, f"/runs/{graph_run}")
        listing = fetch(server, "/")
    finally:
        server.stop()
    assert f'href="/runs/{run_b}"' in page and 'id="node-c"' in page
    assert 'class="node state-compensated" id="node-b"' in page and 'class="node state-skipped" id="node-c"' in page
    assert "step 1 NOT done" in page and html.escape(g.finished.reason) in page
    row = listing.split(f'data-run="{graph_run}"', 1)[1].split("</tr>", 1)[0]
    assert f'<span class="status status-{g.finished.status}">{g.finished.status}</span>' in row


@pytest.mark.slow
def test_a_compensator_killed_mid_way_is_replaced_and_each_step_runs_once(tmp_path: Path) -> None:
    undo = [f"echo a{i} >> out/undo.txt" for i in range(3)]
    nodes = {
        "a": {"turns": bash("echo a >> out/a.txt"), "compensate": undo},
        "b": {"turns": bash("git push --force origin main")[:1], "needs": ["a"]},  # denied, then no more turns
    }
    db, graph_run = start(tmp_path, nodes, lease_s=1.0)
    doomed = subprocess.run(
        [sys.executable, "-c", DIES_COMPENSATING, str(db), graph_run], capture_output=True, text=True, timeout=120
    )
    assert doomed.returncode == -9, doomed.stderr
    assert lines(tmp_path, "undo.txt") == ["a2"]  # the last step ran first, was recorded, then the worker died
    g = Worker(db, graph_run, poll_s=0.1).work()
    assert g.finished is not None and g.finished.status == "NEEDS_INPUT"
    assert lines(tmp_path, "undo.txt") == ["a2", "a1", "a0"]  # the replacement went on from the next step
    steps = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.compensated"]
    assert [(s["step"], s["attempt"]) for s in steps] == [(2, 2), (1, 3), (0, 3)]


def test_workers_racing_for_one_node_on_the_same_head_one_wins(tmp_path: Path) -> None:
    db, graph_run = start(tmp_path, {"a": {"turns": bash("echo a")}})
    with EventStore.open(db) as store:
        head = GraphState.read(store, graph_run).head
    barrier, won, lost = threading.Barrier(8), [], []

    def take(i: int) -> None:
        with EventStore.open(db) as store:  # each worker its own connection, as separate processes have
            lease = NodeLeased(node="a", attempt=1, worker=f"w{i}", expires_at=time.time() + 30)
            barrier.wait()
            try:
                store.append(graph_run, lease, expect=head)
                won.append(i)
            except HeadMoved:
                lost.append(i)

    threads = [threading.Thread(target=take, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(lost) == 7
    with EventStore.open(db) as store:
        g = GraphState.read(store, graph_run)
    lease = g.nodes["a"].lease
    assert lease is not None and lease.worker == f"w{won[0]}" and g.jobs(time.time()) == []


#: A worker process that, right after its node's effect, waits until both nodes b and c are leased (up to two
#: minutes) before it goes on to finish the node: both workers finish only if the two nodes ran at once.
WAITS_FOR_THE_OTHER = """
import sys, time
from pathlib import Path
from tether.events.store import EventStore
from tether.graph.worker import Worker

db, graph_run = Path(sys.argv[1]), sys.argv[2]
waited = []

def nodes(kind):
    with EventStore.open(db, readonly=True) as store:
        return {e.payload["node"] for e in store.events(graph_run, kinds={kind})}

def hook(event):
    if waited or event.kind != "action.completed" or event.payload.get("tool") != "bash":
        return
    if "a" not in nodes("node.completed"):
        return  # a's effect: b and c need a
    waited.append(event)
    deadline = time.monotonic() + 120
    while not {"b", "c"} <= nodes("node.leased") and time.monotonic() < deadline:
        time.sleep(0.05)

Worker(db, graph_run, on_event=hook).work()
"""


@pytest.mark.slow
def test_two_worker_processes_run_two_nodes_on_separate_workspaces_at_the_same_time(tmp_path: Path) -> None:
    """Nodes on one workspace run one at a time; nodes on separate ones still run in parallel, each in its own
    worker process: b's and c's runs are both open (each leased, neither completed) at once, and each node's
    run verifies with only its own effect."""
    nodes = {
        "a": {"turns": bash("echo a >> out/a.txt")},
        "b": {"turns": bash("echo b >> out/b.txt"), "needs": ["a"], "workspace": "wb"},
        "c": {"turns": bash("echo c >> out/c.txt"), "needs": ["a"], "workspace": "wc"},
    }
    db, graph_run = start(tmp_path, nodes, lease_s=60.0)
    cmd = [sys.executable, "-c", WAITS_FOR_THE_OTHER, str(db), graph_run]
    workers = [subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for w in workers:
        _, err = w.communicate(timeout=300)
        assert w.returncode == 0, err
    events = graph_events(db, graph_run)
    leased = {e.payload["node"]: e for e in events if e.kind == "node.leased"}
    done = {e.payload["node"]: e.seq for e in events if e.kind == "node.completed"}
    assert sorted(leased) == ["a", "b", "c"] and sorted(done) == ["a", "b", "c"], [e.kind for e in events]
    assert max(leased["b"].seq, leased["c"].seq) < min(done["b"], done["c"]), "b and c ran one after the other"
    assert leased["b"].payload["worker"] != leased["c"].payload["worker"], "one worker ran both"
    with EventStore.open(db) as store:
        g = GraphState.read(store, graph_run)
        assert g.finished is not None and g.finished.status == "COMPLETE", g.finished
        for name, workspace in (("a", "ws"), ("b", "wb"), ("c", "wc")):
            assert (tmp_path / workspace / "out" / f"{name}.txt").read_text().splitlines() == [name]
            run_id = g.nodes[name].run_id
            assert run_id is not None and store.verify(run_id) > 0 and g.nodes[name].status is RunStatus.COMPLETE


class CountingWorker(Worker):
    """A worker that counts the times it looked for a node and found none it may take."""

    idle = 0

    def _pick(self, store: Any, g: GraphState, now: float) -> Any:
        job = super()._pick(store, g, now)
        if job is None:
            type(self).idle += 1
        return job


def test_two_nodes_on_one_workspace_never_run_at_the_same_time(tmp_path: Path) -> None:
    """b and c share a workspace and need nothing: a second worker must not run c while b's run is open, or c's
    write lands in b's run between its baseline and its verification ("changed in no action's window") and b
    ends NEEDS_INPUT. Driven by hand: the worker running b stops right after b's effect until the other worker
    has either finished c or looked three times and found nothing it may take."""
    nodes = {"b": {"turns": bash("echo b >> out/b.txt")}, "c": {"turns": bash("echo c >> out/c.txt")}}
    db, graph_run = start(tmp_path, nodes)
    second: list[threading.Thread] = []
    results: list[GraphState] = []

    def c_done() -> bool:
        return any(e.kind == "node.completed" and e.payload["node"] == "c" for e in graph_events(db, graph_run))

    def hook(event: Any) -> None:
        if second or event.kind != "action.completed" or event.payload.get("tool") != "bash":
            return
        assert lines(tmp_path, "b.txt") == ["b"]  # the first worker took b (graph order) and its effect is done
        other = CountingWorker(db, graph_run, poll_s=0.05)
        second.append(threading.Thread(target=lambda: results.append(other.work())))
        second[0].start()
        wait_for(lambda: c_done() or CountingWorker.idle >= 3, timeout=60)

    g = Worker(db, graph_run, on_event=hook, poll_s=0.05).work()
    assert second, "the hook never ran"
    second[0].join(timeout=120)
    assert g.finished is not None and g.finished.status == "COMPLETE", g.finished
    assert results and results[0].finished is not None and results[0].finished.status == "COMPLETE"
    assert lines(tmp_path, "b.txt") == ["b"] and lines(tmp_path, "c.txt") == ["c"]
    events = graph_events(db, graph_run)
    b_done = next(e.seq for e in events if e.kind == "node.completed" and e.payload["node"] == "b")
    c_leased = next(e.seq for e in events if e.kind == "node.leased" and e.payload["node"] == "c")
    assert c_leased > b_done  # c waited for b, though it needs nothing: they share a workspace


def test_a_node_waiting_for_approval_gives_its_lease_back_and_goes_on_once_answered(tmp_path: Path) -> None:
    def ask(env: dict[str, Any]) -> None:
        env["permissions"]["ask"] = [
            {
                "id": "ask-publish",
                "rule": "bash(echo published:*)",
                "reason": "a person publishes",
                "match": ["echo published x"],
            }
        ]

    nodes = {
        "a": {"turns": bash("echo published >> out/a.txt"), "tweak": ask},
        "b": {"turns": bash("echo b >> out/b.txt"), "needs": ["a"]},
    }
    db, graph_run = start(tmp_path, nodes)
    g = Worker(db, graph_run).work()  # returns: only a person can move the graph now
    assert g.finished is None and g.state_of("a", time.time()).value == "waiting" and g.nodes["a"].lease is None
    assert lines(tmp_path, "a.txt") == []
    assert Worker(db, graph_run).work().finished is None  # nobody answered: a second worker does not spin on it
    with EventStore.open(db) as store:
        (request,) = pending(store)
        record_answer(store, request.approval_id, ApprovalAnswer("once", "ana"))
    g = Worker(db, graph_run).work()
    assert g.finished is not None and g.finished.status == "COMPLETE"
    assert lines(tmp_path, "a.txt") == ["published"] and lines(tmp_path, "b.txt") == ["b"]
    started = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.started" and e.payload["node"] == "a"]
    assert [(s["attempt"], s["resumed"]) for s in started] == [(1, False), (2, True)]


def test_a_node_envelope_edited_after_the_graph_started_is_neither_run_nor_used_to_compensate(tmp_path: Path) -> None:
    nodes = {"a": {"turns": bash("echo a >> out/a.txt"), "compensate": ["echo undo >> out/undo.txt"]}}
    db, graph_run = start(tmp_path, nodes)
    node_envelope(tmp_path / "a", bash("echo a >> out/a.txt"), tweak=lambda env: env["budgets"].update(usd=1.0))
    g = Worker(db, graph_run).work()
    assert g.finished is not None and g.finished.status == "NEEDS_INPUT"
    assert "contract hash" in g.nodes["a"].reason and g.nodes["a"].run_id is None
    (step,) = [e.payload for e in graph_events(db, graph_run) if e.kind == "node.compensated"]
    assert (step["verdict"], step["ran"]) == ("NONE", False) and "contract hash" in step["output"]
    assert lines(tmp_path, "a.txt") == [] and lines(tmp_path, "undo.txt") == []


def fetch(server: Background, path: str) -> str:
    conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        assert response.status == 200, response.status
        return response.read().decode()
    finally:
        conn.close()


def wait_for(condition: Any, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def process_state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
