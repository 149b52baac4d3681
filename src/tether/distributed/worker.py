"""``tether worker``: one process that hosts run workflows and performs their steps.

It polls two task queues: the shared one (workflows, and a run's first step, which makes this worker the one
holding the run's workspace) and its own (the later steps of the runs it holds). Many workers may poll the
same shared queue, on one machine or many; a run whose worker is lost continues on another (docs/distributed.md).
"""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Callable
from datetime import timedelta

from temporalio.client import Client
from temporalio.worker import Worker

from tether.events.lease import this_host

from .activities import Activities
from .submission import SHARED_QUEUE
from .workflow import RunWorkflow

#: How long a run's next workflow task waits on the sticky queue of the worker that ran it last (which keeps the
#: workflow's state and is offered the task first) before any worker may take it: the Temporal SDK's default.
STICKY_S = 10.0


def own_queue(shared: str) -> str:
    """This worker's own task queue: unique per process, readable in Temporal's UI."""
    return f"{shared}@{this_host()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


async def serve(
    address: str,
    *,
    namespace: str = "default",
    task_queue: str = SHARED_QUEUE,
    db: str | None = None,
    ready: Callable[[str], None] | None = None,
    sticky_s: float = STICKY_S,
) -> None:
    """Poll ``task_queue`` and this worker's own queue until SIGINT or SIGTERM; ``ready`` is told the own queue.

    ``sticky_s`` (:data:`STICKY_S`): a worker lost while it hosts a run delays the run this long, beside
    ``affinity_s`` for a step waiting on its own queue (docs/distributed.md); a shorter wait only costs a replay of
    the workflow's history on another worker when this one is alive but slow to poll."""
    client = await Client.connect(address, namespace=namespace)
    mine = own_queue(task_queue)
    acts = Activities(mine, db)
    shared = Worker(
        client,
        task_queue=task_queue,
        workflows=[RunWorkflow],
        activities=[acts.start, acts.advance],
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_s),
    )
    own = Worker(client, task_queue=mine, activities=[acts.start, acts.advance])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with shared, own:
        if ready is not None:
            ready(mine)
        await stop.wait()
