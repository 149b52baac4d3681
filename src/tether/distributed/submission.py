"""What travels with a Temporal-hosted run, and what each activity reports back: plain dataclasses.

The workflow sandbox re-imports the workflow's modules for every run, and replays must not depend on
anything but these values, so this module imports the standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The task queue every worker polls for workflows and for a run's first activity.
SHARED_QUEUE = "tether"
WORKFLOW = "tether.run"
START = "tether.start"
ADVANCE = "tether.advance"
#: The signal ``tether approve``/``deny`` sends after appending the answer to the log.
ANSWERED = "approval_answered"


@dataclass(frozen=True)
class Timing:
    """How long the workflow waits for what, in seconds (defaults for an operator; tests shorten them)."""

    heartbeat_s: float = 30.0
    """A worker that stops heartbeating for this long is taken as lost: the step is retried elsewhere."""
    affinity_s: float = 60.0
    """How long a step waits on its worker's own queue before any worker may take it (the worker is gone)."""
    recheck_s: float = 300.0
    """A waiting run re-reads its log at least this often, in case an answer's signal was never delivered."""
    step_s: float = 3600.0
    """The longest one step may take (a model call with its retries, a tool up to its timeout, verification)."""


@dataclass(frozen=True)
class Submission:
    """A run as submitted: what to run, where its log is, and the hashes every activity checks against it."""

    run_id: str
    task: str
    envelope: str
    """The envelope file, absolute: workers read it (and the plan, the trajectory) from the same path."""
    workspace: str
    db: str
    """The event store: a SQLite file every worker reaches, or a PostgreSQL URL (no password in it)."""
    envelope_hash: str
    plan_hash: str
    contract_hash: str
    model: str | None = None
    sandbox: str | None = None
    address: str = ""
    namespace: str = "default"
    timing: Timing = field(default_factory=Timing)
    queue: str = ""
    """The worker queue the run's steps go to, when a workflow continues as new ("": the shared queue first)."""


@dataclass(frozen=True)
class Progress:
    """Where one activity left the run: finished, waiting for a human, or ready for its next step."""

    status: str
    finished: bool
    waiting: bool
    queue: str
    """The task queue of the worker that performed the step: the run's next steps go there (its workspace)."""
    expires_at: list[float] = field(default_factory=list)
    """Unix times at which the pending approvals expire (the workflow's durable timer)."""
    contract: dict[str, Any] = field(default_factory=dict)
