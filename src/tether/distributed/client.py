"""Starting a run as a Temporal workflow, waiting for it, and telling it that an approval was answered."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from temporalio.client import Client

from tether.events.backends import default_spec, is_url
from tether.events.kinds_distributed import RunHosted
from tether.events.store import Event, new_run_id
from tether.kernel import session

from .activities import hashes_of
from .submission import ANSWERED, SHARED_QUEUE, WORKFLOW, Submission, Timing


def submission(
    envelope: Path,
    task: str,
    *,
    db: str | None,
    address: str,
    namespace: str = "default",
    workspace: Path | None = None,
    model: str | None = None,
    sandbox: str | None = None,
    timing: Timing | None = None,
) -> Submission:
    """A run of ``envelope`` on ``task``, strictly validated here first, bound to its hashes and a new run id.

    ``db`` is the store every worker logs the run to (None: the default one under the workspace, as for
    ``tether run``).
    """
    loaded = session.load_checked(envelope)
    ws = (workspace or loaded.base_dir / loaded.envelope.environment.workspace).resolve()
    return Submission(
        run_id=new_run_id(),
        task=task,
        envelope=str(loaded.path or envelope.resolve()),
        workspace=str(ws),
        db=db or _absolute(default_spec(ws)),
        model=model,
        sandbox=sandbox,
        address=address,
        namespace=namespace,
        timing=timing or Timing(),
        **hashes_of(loaded.envelope),
    )


def _absolute(spec: str | Path) -> str:
    return str(spec) if is_url(spec) else str(Path(spec).resolve())


def workflow_id(run_id: str) -> str:
    return f"tether-run-{run_id}"


async def submit(sub: Submission, *, task_queue: str = SHARED_QUEUE) -> None:
    """Start the run's workflow; its id derives from the run id, so a repeated submit cannot start it twice."""
    client = await Client.connect(sub.address, namespace=sub.namespace)
    await client.start_workflow(WORKFLOW, sub, id=workflow_id(sub.run_id), task_queue=task_queue)


async def outcome(sub: Submission) -> dict[str, Any]:
    """The run's output contract, once its workflow ends (a failed workflow raises its failure)."""
    client = await Client.connect(sub.address, namespace=sub.namespace)
    result: dict[str, Any] = await client.get_workflow_handle(workflow_id(sub.run_id)).result()
    return result


def hosting(events: Sequence[Event]) -> RunHosted | None:
    """The Temporal workflow hosting a run, as its log records it (None: a local run)."""
    found = next((e for e in events if e.kind == RunHosted.KIND), None)
    return found.data_as(RunHosted) if found is not None else None


async def notify(hosted: RunHosted, approval_id: str) -> None:
    """Signal the workflow that ``approval_id`` was answered (the answer itself is already in the log)."""
    client = await Client.connect(hosted.address, namespace=hosted.namespace)
    await client.get_workflow_handle(hosted.workflow_id).signal(ANSWERED, approval_id)
