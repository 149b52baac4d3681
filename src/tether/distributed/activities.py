"""The activities of a run workflow: create the run, and advance it by one step under its lease.

Each activity is the local resume path, bounded to one step: take the run's lease (one driver per run, so a
retry of a step a lost worker may still be performing waits instead of racing it), verify the log, check the
hashes the workflow carries against ``run.started``, rebuild the run from its log and let ``next_step`` pick
what to do. The log makes a retry safe: a step whose events were appended is not repeated, an idempotent
action interrupted before its completion is re-run, a non-idempotent one ends the run NEEDS_INPUT.

The work is synchronous (SQLite, subprocesses, model SDKs); it runs in a thread while the activity
heartbeats, so a killed worker is noticed within ``heartbeat_s`` rather than at the step's timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from tether.canonical import content_hash
from tether.envelope.schema import Envelope
from tether.errors import InputError, LogCorrupt, TetherError
from tether.events.anchor import Signer
from tether.events.backends import local_dir, open_store, spec_of
from tether.events.kinds_distributed import RunHosted
from tether.events.protocol import Store, has_run
from tether.kernel import session
from tether.kernel.outcome import OutputContract
from tether.kernel.runtime import Runtime
from tether.kernel.step import Wait
from tether.kernel.steps import next_step
from tether.status import RunStatus

from .submission import ADVANCE, START, Progress, Submission


def hashes_of(env: Envelope) -> dict[str, str]:
    """The three hashes a run is bound to: the envelope as loaded, its plan, its sealed contract."""
    return {
        "envelope_hash": content_hash(env.model_dump(mode="json")),
        "plan_hash": env.plan.hash,
        "contract_hash": env.contract_hash,
    }


def recorded_hashes(started: Mapping[str, Any]) -> dict[str, str]:
    """The same three hashes, as the run's ``run.started`` recorded them."""
    return {
        "envelope_hash": content_hash(started.get("envelope")),
        "plan_hash": str(started.get("plan_hash", "")),
        "contract_hash": str(started.get("contract_hash", "")),
    }


def mismatch(found: Mapping[str, str], sub: Submission) -> list[str]:
    """How ``found`` disagrees with the hashes the workflow carries (empty: it agrees)."""
    return [
        f"{name} is {value!r}, the workflow carries {getattr(sub, name)!r}"
        for name, value in found.items()
        if value != getattr(sub, name)
    ]


def refused(message: str) -> ApplicationError:
    """A failure no retry can mend: the workflow fails with ``message`` instead of trying again."""
    return ApplicationError(message, type="TetherRefused", non_retryable=True)


class Activities:
    """The activities one worker offers; ``queue`` is its own task queue, ``db`` the only store it serves
    (None: the store each submission names)."""

    def __init__(self, queue: str, db: str | None = None) -> None:
        self.queue, self.db = queue, db

    @activity.defn(name=START)
    async def start(self, sub: Submission) -> Progress:
        return await self._heartbeating(lambda: self.create(sub), sub)

    @activity.defn(name=ADVANCE)
    async def advance(self, sub: Submission) -> Progress:
        return await self._heartbeating(lambda: self.step(sub), sub)

    async def _heartbeating(self, work: Callable[[], Progress], sub: Submission) -> Progress:
        job = asyncio.ensure_future(asyncio.to_thread(_translated, work))
        while True:
            done, _ = await asyncio.wait({job}, timeout=max(0.5, sub.timing.heartbeat_s / 4))
            if done:
                return job.result()
            activity.heartbeat()

    # ---- the work, in the activity's thread --------------------------------------------------

    def open(self, sub: Submission) -> Store:
        if self.db is not None and sub.db != self.db:
            raise refused(
                f"run {sub.run_id} logs to {sub.db}, but this worker serves only {self.db}: "
                "workers of different stores need different task queues (--task-queue)"
            )
        spec = spec_of(sub.db)
        return open_store(spec, create=True, signer=Signer.configured(), local=local_dir(spec, Path(sub.workspace)))

    def create(self, sub: Submission) -> Progress:
        """Create the run on this worker (it holds the workspace from now on), or find it created by an earlier try."""
        with self.open(sub) as store:
            if not has_run(store, sub.run_id):
                loaded = session.load_checked(Path(sub.envelope))
                wrong = mismatch(hashes_of(loaded.envelope), sub)
                if wrong:
                    raise refused(f"{sub.envelope} changed since it was submitted: " + "; ".join(wrong))
                options = session.Options(
                    model=sub.model, workspace=Path(sub.workspace), sandbox=sub.sandbox, run_id=sub.run_id
                )
                runtime = session.start_checked(store, loaded, sub.task, options)
                runtime.append(self.hosted(sub))
                store.release(sub.run_id)
                return self.progress(runtime)
            return self.step(sub, steps=0)

    def step(self, sub: Submission, steps: int = 1) -> Progress:
        """Advance the run by ``steps`` under its lease (0: only check it and record who hosts it)."""
        with self.open(sub) as store:
            # RunLeased (a live driver: a step a worker that only looked lost still runs) is retried, never raced.
            store.acquire(sub.run_id)
            try:
                store.verify_run(sub.run_id)
                events = store.events(sub.run_id)
                wrong = mismatch(recorded_hashes(events[0].payload), sub)
                if wrong:
                    raise refused(f"run {sub.run_id} is not the run this workflow was started for: " + "; ".join(wrong))
                workspace = Path(events[0].payload["workspace"])
                if not workspace.is_dir():
                    raise ApplicationError(f"workspace {workspace} is not on this worker", type="WorkspaceMissing")
                runtime = session.attach(store, sub.run_id, session.Options(model=sub.model, sandbox=sub.sandbox))
                if not any(e.kind == RunHosted.KIND for e in events):
                    runtime.append(self.hosted(sub))
                if steps:
                    runtime.drive(steps=steps)
            finally:
                store.release(sub.run_id)
            return self.progress(runtime)

    def hosted(self, sub: Submission) -> RunHosted:
        info = activity.info()
        return RunHosted(
            address=sub.address,
            namespace=sub.namespace,
            workflow_id=info.workflow_id or "",
            task_queue=info.task_queue,
            worker=self.queue,
        )

    def progress(self, runtime: Runtime) -> Progress:
        state = runtime.state
        if state.finished:
            contract = OutputContract.from_state(state).model_dump(mode="json")
            return Progress(state.status.value, True, False, self.queue, contract=contract)
        nxt = next_step(state, runtime.env, runtime.now(), runtime.control_stop())
        waiting = isinstance(nxt, Wait)
        expires = [float(req["expires_at"]) for req in state.pending_approvals.values()] if waiting else []
        status = RunStatus.WAITING_APPROVAL if waiting else RunStatus.RUNNING
        return Progress(status.value, False, waiting, self.queue, expires_at=expires)


def _translated(work: Callable[[], Progress]) -> Progress:
    """Refusals tether raises on purpose (bad input, a broken log) are final; anything else is retried."""
    try:
        return work()
    except (InputError, LogCorrupt) as e:
        raise refused(str(e)) from e
    except TetherError as e:
        raise ApplicationError(str(e), type=type(e).__name__) from e
