"""Event kinds of runs hosted by a durable-execution engine (payloads only; see tether.distributed and
docs/distributed.md).

- ``run.hosted``  the run is a Temporal workflow: which server, namespace and workflow id drive it, so that
  ``tether approve``/``deny`` can signal the workflow after appending the answer, and an operator can find
  the workflow from the log. Appended by the worker that created the run, right after ``run.started``.
"""

from __future__ import annotations

from typing import Literal

from tether.plain import Field

from .payload import Payload, register


@register("run.hosted")
class RunHosted(Payload):
    engine: Literal["temporal"] = "temporal"
    address: str = Field(description="The Temporal frontend (HOST:PORT) the workflow runs on.")
    namespace: str
    workflow_id: str
    task_queue: str = Field(description="The shared queue the run was submitted to.")
    worker: str = Field(description="The worker that created the run: its own task queue (workspace affinity).")
