"""The graph fold is the only scheduler state: ready nodes, leases, deduplicated outcomes, compensation order."""

from __future__ import annotations

from typing import Any

import pytest

from tether.errors import InputError
from tether.events.kinds import RunStarted
from tether.events.kinds_graph import (
    GraphStarted,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeLeased,
    NodeRenewed,
    NodeStarted,
    NodeWaiting,
)
from tether.events.payload import Payload
from tether.events.store import Event
from tether.graph.fold import GraphState, Job, NodeState
from tether.status import RunStatus

NOW = 1000.0


def started(nodes: list[dict[str, Any]], workspaces: dict[str, str] | None = None) -> GraphStarted:
    graph = {"name": "g", "envelope": "/e.yaml", "lease_s": 10, "nodes": nodes}
    return GraphStarted(name="g", graph_path="/g.yaml", graph=graph, lease_s=10, workspaces=workspaces or {})


def node(node_id: str, *needs: str, steps: int = 0) -> dict[str, Any]:
    return {
        "id": node_id,
        "envelope": "/e.yaml",
        "task": "t",
        "needs": list(needs),
        "compensate": [{"command": f"echo undo {node_id} {i}"} for i in range(steps)],
    }


DIAMOND = [node("a", steps=2), node("b", "a", steps=1), node("c", "a"), node("d", "b", "c")]


def fold(
    *payloads: Payload, nodes: list[dict[str, Any]] = DIAMOND, workspaces: dict[str, str] | None = None
) -> GraphState:
    first = started(nodes, workspaces)
    events = [Event.of("G", i, "t", p, hash=f"h{i}") for i, p in enumerate([first, *payloads])]
    return GraphState.fold("G", events)


def lease(n: str, attempt: int = 1, worker: str = "w1", until: float = NOW + 10, phase: str = "run") -> NodeLeased:
    return NodeLeased(node=n, attempt=attempt, worker=worker, expires_at=until, phase=phase)  # type: ignore[arg-type]


def done(n: str, attempt: int = 1, status: RunStatus = RunStatus.COMPLETE) -> NodeCompleted:
    return NodeCompleted(node=n, attempt=attempt, run_id=f"r-{n}-{attempt}", status=status)


def failed(n: str, attempt: int = 1, status: RunStatus = RunStatus.BLOCKED_PERMISSION) -> NodeFailed:
    return NodeFailed(node=n, attempt=attempt, run_id=f"r-{n}-{attempt}", status=status, reason="denied")


def test_only_roots_are_ready_and_a_join_waits_for_every_predecessor() -> None:
    assert fold().jobs(NOW) == [Job("a", "run")]
    g = fold(lease("a"), done("a"), lease("b"), done("b"))
    assert g.jobs(NOW) == [Job("c", "run")]  # d needs c too
    assert g.state_of("d", NOW) is NodeState.PENDING
    g = fold(lease("a"), done("a"), lease("b"), done("b"), lease("c"), done("c"))
    assert g.jobs(NOW) == [Job("d", "run")]


def test_a_live_lease_hides_the_node_and_an_expired_one_offers_it_again() -> None:
    g = fold(lease("a", until=NOW + 5))
    assert g.jobs(NOW) == [] and g.state_of("a", NOW) is NodeState.RUNNING
    assert g.jobs(NOW + 5) == [Job("a", "run")]
    assert g.state_of("a", NOW + 5) is NodeState.STALLED


def test_only_the_holder_of_the_current_attempt_renews() -> None:
    g = fold(lease("a", until=NOW + 5), NodeRenewed(node="a", attempt=1, worker="intruder", expires_at=NOW + 99))
    assert g.jobs(NOW + 6) == [Job("a", "run")]
    g = fold(lease("a", until=NOW + 5), NodeRenewed(node="a", attempt=1, worker="w1", expires_at=NOW + 99))
    assert g.jobs(NOW + 6) == []


def test_a_stale_attempts_completion_is_ignored_and_successors_are_released_once() -> None:
    """Worker 1 lost its lease; worker 2 took attempt 2; worker 1 finishes anyway, then worker 2 does."""
    events = [lease("a", 1, "w1", NOW - 1), lease("a", 2, "w2"), done("a", 1)]
    g = fold(*events)
    assert g.nodes["a"].status is None and g.nodes["a"].ignored == [3]
    assert g.jobs(NOW) == []  # b and c are NOT released by the stale completion
    g = fold(*events, done("a", 2), done("a", 2))  # a duplicate of the counted one is ignored as well
    assert g.nodes["a"].status is RunStatus.COMPLETE and g.nodes["a"].outcome_seq == 4
    assert g.nodes["a"].ignored == [3, 5]
    assert g.jobs(NOW) == [Job("b", "run"), Job("c", "run")]


def test_an_outcome_without_a_lease_or_for_a_future_attempt_does_not_count() -> None:
    assert fold(done("a")).nodes["a"].status is None
    assert fold(lease("a"), done("a", 2)).nodes["a"].status is None


def test_the_run_of_an_attempt_is_the_one_its_start_names() -> None:
    g = fold(lease("a"), NodeStarted(node="a", attempt=1, run_id="r1", graph_run="G"), lease("a", 2, until=NOW + 99))
    assert g.nodes["a"].run_id == "r1"  # attempt 2 resumes r1 rather than starting a second run
    g = fold(lease("a"), NodeStarted(node="a", attempt=2, run_id="rX", graph_run="G"))
    assert g.nodes["a"].run_id is None


def test_a_failure_stops_new_nodes_and_compensates_latest_outcome_first() -> None:
    g = fold(lease("a"), done("a"), lease("b"), failed("b"))
    assert g.failed is not None and g.failed.id == "b"
    assert g.state_of("c", NOW) is NodeState.SKIPPED and g.state_of("d", NOW) is NodeState.SKIPPED
    assert g.jobs(NOW) == [Job("b", "compensate")]  # b ended last: compensated first
    steps = [lease("b", 2, phase="compensate"), NodeCompensated(node="b", step=0, attempt=2, command="x",
                                                                 verdict="ALLOW", ran=True, ok=True)]  # fmt: skip
    g = fold(lease("a"), done("a"), lease("b"), failed("b"), *steps)
    assert g.state_of("b", NOW) is NodeState.COMPENSATED and g.jobs(NOW) == [Job("a", "compensate")]
    assert g.outcome(NOW) is None


def test_compensation_waits_for_nodes_in_flight_and_a_lost_compensator_is_replaced() -> None:
    nodes = [node("a", steps=1), node("b", steps=1)]
    g = fold(lease("a"), lease("b"), failed("a"), nodes=nodes)
    assert g.jobs(NOW) == []  # b is still running: it finishes before anything is compensated
    g = fold(lease("a"), lease("b"), failed("a"), done("b"), lease("b", 2, until=NOW + 1, phase="compensate"),
             nodes=nodes)  # fmt: skip
    assert g.jobs(NOW) == [] and g.jobs(NOW + 2) == [Job("b", "compensate")]


def test_the_graph_ends_complete_or_with_the_first_failures_status() -> None:
    ok = [lease("a"), done("a"), lease("b"), done("b"), lease("c"), done("c"), lease("d"), done("d")]
    end = fold(*ok).outcome(NOW)
    assert end is not None and end.status is RunStatus.COMPLETE and set(end.nodes.values()) == {"complete"}
    nodes = [node("a"), node("b", "a")]
    end = fold(lease("a"), failed("a", status=RunStatus.NEEDS_INPUT), nodes=nodes).outcome(NOW)
    assert end is not None and end.status is RunStatus.NEEDS_INPUT
    assert end.nodes == {"a": "failed", "b": "skipped"} and "node a ended NEEDS_INPUT" in end.reason
    nodes = [node("a")]
    noop = fold(lease("a"), done("a", status=RunStatus.NO_OP), nodes=nodes).outcome(NOW)
    assert noop is not None and noop.status is RunStatus.NO_OP


def test_a_compensation_step_that_did_not_succeed_is_named_in_the_end() -> None:
    nodes = [node("a", steps=1)]
    step = NodeCompensated(node="a", step=0, attempt=2, command="x", verdict="DENY", ran=False, ok=False)
    end = fold(lease("a"), failed("a"), lease("a", 2, phase="compensate"), step, nodes=nodes).outcome(NOW)
    assert end is not None and "a step 0" in end.reason


def test_a_waiting_node_releases_its_lease_and_is_offered_again() -> None:
    g = fold(lease("a"), NodeWaiting(node="a", attempt=1, run_id="r", approvals=["ap1"]))
    assert g.state_of("a", NOW) is NodeState.WAITING and g.nodes["a"].lease is None
    assert g.jobs(NOW) == [Job("a", "run")] and g.outcome(NOW) is None


def test_nodes_on_overlapping_workspaces_run_one_at_a_time() -> None:
    """A node does not start while a node whose workspace is the same, or holds it, or is inside it, is in flight
    (running, stalled or waiting): its run's verification would see the other's writes as nobody's."""
    nodes = [node("a"), node("b"), node("c"), node("d"), node("e")]
    where = {"a": "/w/x", "b": "/w/x", "c": "/w", "d": "/w/x/sub", "e": "/w/xy"}  # /w/xy is not inside /w/x
    g = fold(nodes=nodes, workspaces=where)
    assert [j.node for j in g.jobs(NOW)] == ["a", "b", "c", "d", "e"]  # nothing in flight: a worker takes one
    g = fold(lease("a"), nodes=nodes, workspaces=where)
    assert [j.node for j in g.jobs(NOW)] == ["e"]
    assert {n: g.blocked_by(n) for n in "bcde"} == {"b": "a", "c": "a", "d": "a", "e": None}
    assert g.state_of("b", NOW) is NodeState.PENDING and g.outcome(NOW) is None
    assert [j.node for j in g.jobs(NOW + 11)] == ["a", "e"]  # a stalled: its run is resumed first, b still waits
    waiting = NodeWaiting(node="a", attempt=1, run_id="r", approvals=["ap1"])
    g = fold(lease("a"), waiting, nodes=nodes, workspaces=where)
    assert [j.node for j in g.jobs(NOW)] == ["e", "a"]  # a waits for a person, holding its workspace
    g = fold(lease("a"), done("a"), nodes=nodes, workspaces=where)
    assert [j.node for j in g.jobs(NOW)] == ["b", "c", "d", "e"]  # a ended: the next one may take it
    assert fold(lease("a"), nodes=nodes).blocked_by("b") is None  # a log from before workspaces were recorded


def test_a_log_that_is_not_a_graph_is_refused() -> None:
    with pytest.raises(InputError, match="not a task graph"):
        GraphState.fold("R", [Event.of("R", 0, "t", RunStarted(task="t", envelope={}))])
