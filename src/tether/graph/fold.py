"""A graph's state: a pure fold over its log and the clock. Workers decide from it; nothing else is kept.

The rules a worker relies on, all here:

- a node is **ready** when every node it needs completed (COMPLETE or NO_OP), the graph has not failed, and
  no other node whose workspace overlaps its own (the same directory, or one inside the other) is in flight:
  a run's verification holds every change since its baseline to its own actions' receipts, so a sibling's
  write in a shared workspace would fail it. A node already tried (an earlier attempt's lease expired without
  an outcome) is ready again even after a failure, so the run it started is finished rather than left
  half-done;
- a lease is live until its ``expires_at`` (pushed on by ``node.renewed`` from its holder only);
- an outcome counts only for the node's current attempt and only once: a worker that lost its lease and
  finished anyway appends an outcome for an older attempt, which is listed as ignored and changes nothing.
  Successors are therefore released by exactly one recorded transition;
- once a node failed, no new node starts; when nothing is in flight, the nodes that ended (failed or
  completed) and declare compensation steps are compensated one at a time, the latest outcome first;
- the graph is finished when nothing is left to run or compensate: COMPLETE (or NO_OP when every node was
  NO_OP), else the status of the first node that failed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import PurePath

from tether.errors import InputError
from tether.events.kinds_graph import (
    GraphFinished,
    GraphStarted,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeLeased,
    NodeRenewed,
    NodeStarted,
    NodeWaiting,
    Phase,
)
from tether.events.protocol import Store
from tether.events.store import Event, Head
from tether.quickenum import Quick
from tether.status import SUCCESS, RunStatus

from .spec import Graph, graph_of

GRAPH_TASK = "graph "  # a graph's log is created with the task "graph NAME" (launch.py)


def graph_status(store: Store, run_id: str, task: str) -> str | None:
    """A graph's status for a list of runs (its ``graph.finished`` status, else RUNNING); None for a run that is
    not a graph. Reads two kinds, not the log, and only for a run whose task names a graph."""
    if not task.startswith(GRAPH_TASK):
        return None
    ends = store.events(run_id, kinds={GraphStarted.KIND, GraphFinished.KIND})
    if not ends or ends[0].kind != GraphStarted.KIND:
        return None
    last = ends[-1].data
    return last.status if isinstance(last, GraphFinished) else RunStatus.RUNNING


class NodeState(StrEnum, metaclass=Quick):
    PENDING = "pending"  # waits for the nodes it needs
    READY = "ready"  # may be leased now
    RUNNING = "running"  # a worker holds a live lease on it
    STALLED = "stalled"  # tried, its lease expired without an outcome: the next worker resumes its run
    WAITING = "waiting"  # its run waits for an approval (tether approve), then any worker resumes it
    COMPLETE = "complete"
    FAILED = "failed"
    SKIPPED = "skipped"  # never started: the graph failed first
    COMPENSATING = "compensating"
    COMPENSATED = "compensated"


@dataclass
class Lease:
    attempt: int
    phase: Phase
    worker: str
    expires_at: float

    def live(self, now: float) -> bool:
        return now < self.expires_at


@dataclass
class NodeView:
    id: str
    needs: list[str]
    steps: int  # compensation steps declared
    workspace: str | None = None  # as resolved when the graph started (None: a log from before it was recorded)
    attempt: int = 0
    lease: Lease | None = None
    run_id: str | None = None
    status: RunStatus | None = None  # the counted outcome
    outcome_seq: int = -1
    reason: str = ""
    waiting: bool = False
    compensated: dict[int, bool] = field(default_factory=dict)  # step -> ok
    ignored: list[int] = field(default_factory=list)  # seqs of outcomes that did not count

    @property
    def ended(self) -> bool:
        return self.status is not None

    @property
    def to_compensate(self) -> bool:
        return self.ended and self.steps > 0 and len(self.compensated) < self.steps


@dataclass(frozen=True)
class Job:
    node: str
    phase: Phase


@dataclass
class GraphState:
    run_id: str
    started: GraphStarted
    graph: Graph
    nodes: dict[str, NodeView]
    head: Head
    finished: GraphFinished | None = None

    @classmethod
    def fold(cls, run_id: str, events: Iterable[Event]) -> GraphState:
        it = iter(events)
        first = next(it, None)
        if first is None or not isinstance(first.data, GraphStarted):
            raise InputError(f"run {run_id} is not a task graph (its log does not begin with graph.started)")
        graph = graph_of(first.data.graph)
        where = first.data.workspaces
        nodes = {n.id: NodeView(n.id, list(n.needs), len(n.compensate), where.get(n.id)) for n in graph.nodes}
        state = cls(run_id, first.data, graph, nodes, (first.seq, first.hash))
        for e in it:
            state.apply(e)
        return state

    @classmethod
    def read(cls, store: Store, run_id: str) -> GraphState:
        return cls.fold(run_id, store.events(run_id))

    def apply(self, e: Event) -> None:
        self.head = (e.seq, e.hash)
        match e.data:
            case NodeLeased() as p if p.node in self.nodes:
                node = self.nodes[p.node]
                if p.attempt > node.attempt:
                    node.attempt, node.waiting = p.attempt, False
                    node.lease = Lease(p.attempt, p.phase, p.worker, p.expires_at)
            case NodeRenewed() as p if p.node in self.nodes:
                lease = self.nodes[p.node].lease
                if lease is not None and lease.attempt == p.attempt and lease.worker == p.worker:
                    lease.expires_at = max(lease.expires_at, p.expires_at)
            case NodeStarted() as p if p.node in self.nodes:
                node = self.nodes[p.node]
                if p.attempt == node.attempt:
                    node.run_id = p.run_id
            case NodeCompleted() | NodeFailed() | NodeWaiting() as p if p.node in self.nodes:
                self._outcome(e.seq, p)
            case NodeCompensated() as p if p.node in self.nodes:
                node = self.nodes[p.node]
                node.compensated.setdefault(p.step, p.ok)
                if not node.to_compensate:
                    node.lease = None
            case GraphFinished() as p:
                self.finished = p
            case _:
                pass

    def _outcome(self, seq: int, p: NodeCompleted | NodeFailed | NodeWaiting) -> None:
        node = self.nodes[p.node]
        lease = node.lease
        if node.ended or p.attempt != node.attempt or lease is None or lease.phase != "run":
            node.ignored.append(seq)  # a stale attempt, or a second outcome of the same one: deduplicated
            return
        node.lease = None
        if isinstance(p, NodeWaiting):
            node.waiting = True
            return
        node.status, node.outcome_seq = p.status, seq
        node.reason = p.result if isinstance(p, NodeCompleted) else p.reason

    # ---- what the fold says ---------------------------------------------------------------------

    @property
    def failed(self) -> NodeView | None:
        """The first node whose counted outcome is not a success, if any."""
        bad = [n for n in self.nodes.values() if n.ended and n.status not in SUCCESS]
        return min(bad, key=lambda n: n.outcome_seq) if bad else None

    def in_flight(self) -> list[NodeView]:
        """Nodes tried and not ended (running, stalled or waiting)."""
        return [n for n in self.nodes.values() if n.attempt > 0 and not n.ended]

    def state_of(self, node_id: str, now: float) -> NodeState:
        node = self.nodes[node_id]
        live = node.lease is not None and node.lease.live(now)
        if node.ended:
            if node.steps and len(node.compensated) >= node.steps:
                return NodeState.COMPENSATED
            if live and node.lease is not None and node.lease.phase == "compensate":
                return NodeState.COMPENSATING
            return NodeState.COMPLETE if node.status in SUCCESS else NodeState.FAILED
        if live:
            return NodeState.RUNNING
        if node.waiting:
            return NodeState.WAITING
        if node.attempt > 0:
            return NodeState.STALLED
        if self.failed is not None or self.finished is not None:
            return NodeState.SKIPPED
        done = all(self.nodes[n].status in SUCCESS for n in node.needs)
        return NodeState.READY if done and self.blocked_by(node_id) is None else NodeState.PENDING

    def blocked_by(self, node_id: str) -> str | None:
        """The node in flight whose workspace overlaps this node's, if any (then this one may not start)."""
        mine = self.nodes[node_id].workspace
        if mine is None:
            return None
        for other in self.in_flight():
            if other.id != node_id and other.workspace is not None and _overlap(mine, other.workspace):
                return other.id
        return None

    def jobs(self, now: float) -> list[Job]:
        """What a worker may lease now, in graph order: nodes to run, else the next node to compensate.

        A WAITING node is offered too; the worker takes it only once its run's approval was answered.
        """
        if self.finished is not None:
            return []
        states = {n: self.state_of(n, now) for n in self.nodes}
        runnable = [Job(n, "run") for n, s in states.items() if s in (NodeState.READY, NodeState.STALLED)]
        runnable += [Job(n, "run") for n, s in states.items() if s is NodeState.WAITING]
        if runnable or self.failed is None or self.in_flight():
            return runnable
        pending = sorted((n for n in self.nodes.values() if n.to_compensate), key=lambda n: -n.outcome_seq)
        if not pending:
            return []
        lease = pending[0].lease
        return [] if lease is not None and lease.live(now) else [Job(pending[0].id, "compensate")]

    def outcome(self, now: float) -> GraphFinished | None:
        """The graph's end, once nothing is left to run, wait for or compensate; None while something is."""
        if self.finished is not None or self.jobs(now) or self.in_flight():
            return None
        if any(n.lease is not None and n.lease.live(now) for n in self.nodes.values()):
            return None
        first = self.failed
        if first is None and not all(n.ended for n in self.nodes.values()):
            return None
        nodes = {n: self.state_of(n, now).value for n in self.nodes}
        failed_steps = [f"{n.id} step {i}" for n in self.nodes.values() for i, ok in n.compensated.items() if not ok]
        if first is None:
            no_op = all(n.status is RunStatus.NO_OP for n in self.nodes.values())
            return GraphFinished(status=RunStatus.NO_OP if no_op else RunStatus.COMPLETE, nodes=nodes)
        assert first.status is not None
        reason = f"node {first.id} ended {first.status}" + (f": {first.reason}" if first.reason else "")
        if failed_steps:
            reason += "; compensation steps that did not succeed: " + ", ".join(failed_steps)
        return GraphFinished(status=first.status, nodes=nodes, reason=reason)


def _overlap(a: str, b: str) -> bool:
    """The same directory, or one inside the other."""
    pa, pb = PurePath(a), PurePath(b)
    return pa == pb or pa.is_relative_to(pb) or pb.is_relative_to(pa)
