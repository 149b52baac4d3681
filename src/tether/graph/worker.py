"""A graph worker: takes ready nodes under leases, runs each as a kernel run, records every transition.

Every decision is made on a fold of the graph's log (:mod:`.fold`) and written with compare-and-append on
the head it was made on: two workers that decide on the same head cannot both lease a node, and a moved
head means "look again". Nothing is kept in memory between decisions, so any worker — in this process or
another, started now or after a crash — carries on from the log.

Order of effects for a node (each arrow is a durable append before the next effect):
``node.leased`` -> ``node.started`` (the child run's id, chosen before the run exists) -> the child run
(the kernel's own log, lease and resume) -> its end status read back from its verified log ->
``node.completed`` / ``node.failed`` / ``node.waiting``. A retried node whose child run exists is resumed
by the kernel from that run's log (a completed action is not repeated; an ambiguous one ends NEEDS_INPUT);
one the earlier attempt named but had not created is created by the retry, or resumed if the earlier worker
created it first (the store refuses a second run of one id).
While a worker holds a lease, a heartbeat thread renews it; a worker that lost it (stopped, partitioned)
may still finish its run and append an outcome: the fold ignores it.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tether.errors import HeadMoved, InputError, RunExists, RunLeased, TetherError
from tether.events.backends import StoreSpec, local_dir, open_store
from tether.events.kinds_graph import (
    GraphNode,
    NodeCompensated,
    NodeCompleted,
    NodeFailed,
    NodeLeased,
    NodeRenewed,
    NodeStarted,
    NodeWaiting,
)
from tether.events.lease import this_host
from tether.events.payload import Payload
from tether.events.protocol import Store, has_run
from tether.events.store import new_run_id
from tether.kernel import session
from tether.kernel.continuation import Request, ResumeRefused
from tether.kernel.runtime import EventSink
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.state import STATUS_KINDS, RunState
from tether.status import SUCCESS, TERMINAL, RunStatus

from .fold import GraphState, Job

POLL_S = 0.2
OUTPUT_TAIL = 2000
Note = Callable[[str], None]


def worker_id() -> str:
    return f"{this_host()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class Worker:
    """One worker on one graph. ``work()`` returns when the graph is finished or only waits for people."""

    db: StoreSpec
    graph_run: str
    note: Note = lambda _: None
    on_event: EventSink | None = None  # every event of the nodes' runs, as they are appended
    id: str = ""
    poll_s: float = POLL_S

    def __post_init__(self) -> None:
        self.id = self.id or worker_id()

    def work(self) -> GraphState:
        with open_store(self.db, create=False, local=local_dir(self.db)) as store:
            while True:
                g, now = GraphState.read(store, self.graph_run), time.time()
                if g.finished is not None:
                    return g
                end = g.outcome(now)
                if end is not None:
                    try:
                        store.append(self.graph_run, end, expect=g.head)
                        self.note(f"graph {g.started.name}: {end.status}")
                    except HeadMoved:
                        pass
                    continue
                job = self._pick(store, g, now)
                if job is None:
                    if not self._worth_waiting(g):
                        return g  # only people can move it now (approvals): `tether graph work` again after
                    time.sleep(self.poll_s)
                    continue
                attempt = g.nodes[job.node].attempt + 1
                lease = NodeLeased(
                    node=job.node, attempt=attempt, phase=job.phase, worker=self.id, expires_at=now + g.started.lease_s
                )
                try:
                    store.append(self.graph_run, lease, expect=g.head)
                except HeadMoved:
                    continue  # another worker moved first: decide again on the new head
                self.note(f"node {job.node}: leased, attempt {attempt} ({job.phase})")
                with self._heartbeat(job.node, attempt, g.started.lease_s):
                    if job.phase == "run":
                        self._run(store, job.node, attempt)
                    else:
                        self._compensate(store, job.node, attempt)

    # ---- choosing -------------------------------------------------------------------------------

    def _pick(self, store: Store, g: GraphState, now: float) -> Job | None:
        for job in g.jobs(now):
            node = g.nodes[job.node]
            if node.waiting and node.run_id and _pending_approvals(store, node.run_id):
                continue  # a person has not answered yet
            return job
        return None

    @staticmethod
    def _worth_waiting(g: GraphState) -> bool:
        """Another worker holds a lease, or one will expire and its node be retried."""
        return any(n.lease is not None for n in g.nodes.values() if not n.waiting)

    # ---- running a node -------------------------------------------------------------------------

    def _run(self, store: Store, node_id: str, attempt: int) -> None:
        g = GraphState.read(store, self.graph_run)
        spec, prior = g.graph.node(node_id), g.nodes[node_id].run_id
        exists = prior is not None and has_run(store, prior)
        run_id = prior if prior is not None else new_run_id()
        started = NodeStarted(node=node_id, attempt=attempt, run_id=run_id, graph_run=self.graph_run, resumed=exists)
        origin = [GraphNode(graph_run=self.graph_run, node=node_id, attempt=attempt)]
        options = session.Options(sandbox=g.started.sandbox, run_id=run_id, on_event=self.on_event, origin=origin)
        try:
            if exists:
                self._append(store, started)
                self.note(f"node {node_id}: resuming run {run_id}")
                self._resume(store, run_id, options)
            else:
                _check_unchanged(spec.envelope, g.started.contracts.get(node_id, ""))  # before naming a run
                self._append(store, started)
                self.note(f"node {node_id}: run {run_id}")
                self._start(store, node_id, spec.envelope, spec.task, options, earlier=prior is not None)
        except TetherError as e:  # the run could not start or go on: the failure protocol, with the reason
            fail = NodeFailed(
                node=node_id,
                attempt=attempt,
                run_id=run_id if has_run(store, run_id) else None,
                status=RunStatus.NEEDS_INPUT,
                reason=f"{type(e).__name__}: {e}",
                worker=self.id,
            )
            self._append(store, fail)
            self.note(f"node {node_id}: failed: {fail.reason}")
            return
        self._record_end(store, node_id, attempt, run_id)

    def _start(
        self, store: Store, node_id: str, envelope: str, task: str, options: session.Options, *, earlier: bool
    ) -> None:
        """Start the node's run. A run an earlier attempt named may be created by that attempt's worker (its lease
        expired, the worker is alive) between the check that it did not exist and this start: the store refuses
        a second run of the id, and the run that exists is resumed like any retried node's."""
        try:
            session.start(store, envelope, task, options).drive()
        except RunExists:
            if not earlier or options.run_id is None:
                raise
            self.note(f"node {node_id}: run {options.run_id} was created meanwhile by the earlier attempt; resuming it")
            self._resume(store, options.run_id, options)

    def _resume(self, store: Store, run_id: str, options: session.Options) -> None:
        """Resume the child run from its log, unless it already ended; wait while another driver holds it."""
        while True:
            status = _status(store, run_id)
            if status in TERMINAL:
                return
            try:
                session.resume(store, run_id, options, Request(by=self.id, reason="tether graph: node retried")).drive()
                return
            except RunLeased:
                time.sleep(self.poll_s)  # the worker that lost the node still drives it: its run ends first
            except ResumeRefused:
                if _status(store, run_id) not in TERMINAL:
                    raise
                return  # that worker ended the run between the check above and this resume: its end is the outcome

    def _record_end(self, store: Store, node_id: str, attempt: int, run_id: str) -> None:
        """Read the run's end from its verified log (not from memory) and record the node's transition."""
        store.verify(run_id)
        state = RunState.from_events(store.events(run_id, kinds=STATUS_KINDS))
        end: Payload
        if state.status in SUCCESS:
            end = NodeCompleted(
                node=node_id,
                attempt=attempt,
                run_id=run_id,
                status=state.status,
                result=_result(store, run_id),
                worker=self.id,
            )
        elif state.status is RunStatus.WAITING_APPROVAL:
            end = NodeWaiting(
                node=node_id, attempt=attempt, run_id=run_id, approvals=sorted(state.pending_approvals), worker=self.id
            )
        else:
            reason = _result(store, run_id) or f"its run ended {state.status}"
            end = NodeFailed(
                node=node_id, attempt=attempt, run_id=run_id, status=state.status, reason=reason, worker=self.id
            )
        self._append(store, end)
        self.note(f"node {node_id}: {end.KIND.split('.')[1]} ({state.status}, run {run_id})")

    # ---- compensating a node --------------------------------------------------------------------

    def _compensate(self, store: Store, node_id: str, attempt: int) -> None:
        """Run the node's compensation steps not yet recorded, last declared first, each through the gate.

        Under the envelope the graph started with: one that changed or no longer loads runs no step (each is
        recorded as not run, with the reason), rather than letting an edited file decide what the gate allows.
        """
        g = GraphState.read(store, self.graph_run)
        spec, done = g.graph.node(node_id), set(g.nodes[node_id].compensated)
        todo = [i for i in reversed(range(len(spec.compensate))) if i not in done]
        try:
            _check_unchanged(spec.envelope, g.started.contracts.get(node_id, ""))
            loaded = session.load_checked(spec.envelope)
        except TetherError as e:
            for index in todo:
                step = NodeCompensated(
                    node=node_id, step=index, attempt=attempt, command=spec.compensate[index].command,
                    verdict="NONE", ran=False, ok=False, output=f"not run: {e}"[:OUTPUT_TAIL],
                )  # fmt: skip
                self._append(store, step)
            return
        env = loaded.envelope
        workspace = (loaded.base_dir / env.environment.workspace).resolve()
        box, unavailable = session.sandbox_for(env, workspace, g.started.sandbox)
        tool = env.tool("bash")
        timeout_s = tool.timeout_s if tool is not None and tool.timeout_s else 120.0
        for index in todo:
            command = spec.compensate[index].command
            decision = Gate(env, workspace).decide("bash", {"command": command})
            step = NodeCompensated(
                node=node_id, step=index, attempt=attempt, command=command, verdict=decision.verdict.name,
                rule=decision.deciding_rule, ran=False, ok=False,
            )  # fmt: skip
            if decision.verdict is Verdict.ALLOW and box is not None:
                receipt = box.run(command, cwd=workspace, timeout_s=timeout_s)
                output = (receipt.stdout + receipt.stderr)[-OUTPUT_TAIL:]
                step = step.model_copy(
                    update={"ran": True, "ok": receipt.ok, "exit_code": receipt.exit_code, "output": output}
                )
            elif decision.verdict is Verdict.ALLOW:
                step = step.model_copy(update={"output": f"sandbox unavailable: {unavailable}"})
            self._append(store, step)
            self.note(f"node {node_id}: compensation step {index}: {'ok' if step.ok else 'not done'} ({step.verdict})")

    # ---- the log --------------------------------------------------------------------------------

    def _append(self, store: Store, event: Payload) -> None:
        """Compare-and-append on the current head. The event's meaning does not depend on the head (the fold
        judges it), so a moved head only means reading the head again."""
        while True:
            try:
                store.append(self.graph_run, event, expect=store.head(self.graph_run))
                return
            except HeadMoved:
                continue

    @contextmanager
    def _heartbeat(self, node_id: str, attempt: int, lease_s: float) -> Iterator[None]:
        """Renew this worker's lease every third of its life, on its own connection, until the block ends or the
        lease is found lost (then it stops: the outcome this worker may still append will not count)."""
        stop = threading.Event()

        def beat() -> None:
            with open_store(self.db, create=False, local=local_dir(self.db)) as store:
                while not stop.wait(lease_s / 3):
                    try:
                        if not self._renew(store, node_id, attempt, lease_s):
                            return
                    except TetherError as e:  # the store was busy or failing: try again at the next beat
                        self.note(f"node {node_id}: lease not renewed ({type(e).__name__}: {e})")

        thread = threading.Thread(target=beat, name=f"lease {node_id}", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def _renew(self, store: Store, node_id: str, attempt: int, lease_s: float) -> bool:
        """Push this worker's lease on; False once it is no longer this worker's or has expired. A moved head is
        read again at once: waiting a whole beat would let a lease that other appends keep racing run out."""
        while True:
            g = GraphState.read(store, self.graph_run)
            lease = g.nodes[node_id].lease
            if lease is None or lease.attempt != attempt or lease.worker != self.id:
                return False
            if not lease.live(time.time()):
                self.note(f"node {node_id}: lease lost (attempt {attempt})")
                return False
            renew = NodeRenewed(node=node_id, attempt=attempt, worker=self.id, expires_at=time.time() + lease_s)
            try:
                store.append(self.graph_run, renew, expect=g.head)
                return True
            except HeadMoved:
                continue


def _status(store: Store, run_id: str) -> RunStatus:
    return RunState.from_events(store.events(run_id, kinds=STATUS_KINDS)).status


def _pending_approvals(store: Store, run_id: str) -> bool:
    return bool(RunState.from_events(store.events(run_id, kinds=STATUS_KINDS)).pending_approvals)


def _result(store: Store, run_id: str) -> str:
    finished = store.events(run_id, kinds={"run.finished"})
    return str(finished[-1].payload.get("result", "")) if finished else ""


def _check_unchanged(envelope: str, contract_hash: str) -> None:
    """A node's envelope must be the one the graph was started with; an edited file is refused, not run."""
    now = session.load_checked(envelope).envelope.contract_hash
    if now != contract_hash:
        raise InputError(f"{envelope}: its contract hash is {now}, not {contract_hash} as when the graph started")


__all__ = ["Worker", "worker_id"]
