"""The run workflow: a deterministic loop over activities, each advancing the run one step.

It keeps no run state of its own (the log is the truth; an activity re-derives the run from it), only where
to send the next step and how long to wait. Replays are therefore trivially safe: the workflow's decisions
depend on the activities' recorded results and on its signals, nothing else.

- The first activity (``start``) runs on the shared queue; whichever worker takes it creates the run, so it
  holds the workspace, and answers with its own queue. Later steps go to that queue (workspace affinity). A
  step nobody takes from it within ``affinity_s`` (the worker is gone) goes back to the shared queue: any
  worker that reaches the workspace (the same machine, or shared storage) continues the run from its log.
- A run waiting for a human waits here on a signal (``tether approve``/``deny`` send it after appending the
  answer to the log), bounded by a durable timer: the earliest approval expiry, or ``recheck_s`` in case a
  signal was lost. Either way the next step reads the log, which decides (an answer, an expiry, or still
  waiting).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from .submission import ADVANCE, ANSWERED, SHARED_QUEUE, START, WORKFLOW, Progress, Submission

#: Retries of one step: a lost worker, a run another live driver holds for now, a store briefly unreachable.
#: Refusals (a hash mismatch, a broken log, an invalid envelope) are raised non-retryable by the activity.
STEP_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_interval=timedelta(seconds=30))


@workflow.defn(name=WORKFLOW)
class RunWorkflow:
    def __init__(self) -> None:
        self.answers = 0

    @workflow.signal(name=ANSWERED)
    def answered(self, approval_id: str) -> None:
        """An answer to one of the run's approvals is in the log: wake up and take the next step."""
        self.answers += 1

    @workflow.run
    async def run(self, sub: Submission) -> dict[str, Any]:
        """Drive the run to its end (a workflow continued as new starts at the worker queue ``sub.queue``)."""
        progress = await self._step(START, sub, "") if not sub.queue else None
        queue = progress.queue if progress else sub.queue
        while progress is None or not progress.finished:
            if progress is not None and progress.waiting:
                await self._wait(sub, progress)
            if workflow.info().is_continue_as_new_suggested():  # a long wait's history: start afresh, same run
                workflow.continue_as_new(replace(sub, queue=queue))
            progress = await self._step(ADVANCE, sub, queue)
            queue = progress.queue
        return progress.contract

    async def _step(self, activity: str, sub: Submission, queue: str) -> Progress:
        """One activity on ``queue`` (the shared one if empty); back to the shared queue if the worker is gone."""
        t = sub.timing
        while True:
            own = bool(queue) and queue != SHARED_QUEUE
            try:
                result: Progress = await workflow.execute_activity(
                    activity,
                    sub,
                    task_queue=queue or workflow.info().task_queue,
                    result_type=Progress,
                    start_to_close_timeout=timedelta(seconds=t.step_s),
                    heartbeat_timeout=timedelta(seconds=t.heartbeat_s),
                    schedule_to_start_timeout=timedelta(seconds=t.affinity_s) if own else None,
                    retry_policy=STEP_RETRY,
                )
                return result
            except ActivityError as e:
                if not own or not _not_taken(e):
                    raise
                workflow.logger.warning("no worker took the step from %s: any worker may continue the run", queue)
                queue = ""

    async def _wait(self, sub: Submission, progress: Progress) -> None:
        seen = self.answers
        now = workflow.now().timestamp()
        timeout = min([sub.timing.recheck_s, *(max(0.0, at - now) + 1.0 for at in progress.expires_at)])
        with contextlib.suppress(TimeoutError):  # an expiry, or the re-check: the next step reads the log either way
            await workflow.wait_condition(lambda: self.answers > seen, timeout=timedelta(seconds=timeout))


def _not_taken(e: ActivityError) -> bool:
    """Whether a step failed because no worker took it from its queue (the worker holding it is gone)."""
    cause = e.cause
    return isinstance(cause, ActivityTimeout) and cause.type in (TimeoutType.SCHEDULE_TO_START, TimeoutType.HEARTBEAT)


__all__ = ["RunWorkflow"]
