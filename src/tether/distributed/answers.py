"""Telling a run hosted as a Temporal workflow that one of its approvals was answered: the one path that
``tether approve``, ``tether deny`` and the web console's inbox share.

The answer is already in the log when this runs; the signal only wakes the waiting workflow sooner. So a
signal that cannot be sent (the server unreachable, the temporal extra not installed) loses nothing: the
workflow re-reads the log at its next re-check.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from tether.events.kinds_distributed import RunHosted
from tether.events.protocol import Store

SIGNAL_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Signalled:
    """The workflow hosting a run, and whether it was signalled (``error`` says why not)."""

    workflow_id: str
    address: str
    signalled: bool
    error: str = ""


def signal_answer(
    store: Store, run_id: str, approval_id: str, *, timeout_s: float = SIGNAL_TIMEOUT_S
) -> Signalled | None:
    """Signal the workflow hosting ``run_id`` (its ``run.hosted``) that ``approval_id`` was answered; None for a
    run that is not hosted. Never raises for a failure to reach the server: the log holds the answer."""
    found = store.events(run_id, kinds={RunHosted.KIND})
    if not found:
        return None
    hosted = found[0].data_as(RunHosted)
    try:
        from .client import notify  # imports temporalio: only for a hosted run

        asyncio.run(asyncio.wait_for(notify(hosted, approval_id), timeout_s))
    except Exception as e:  # any failure to signal: the waiting workflow reads the log at its next re-check
        return Signalled(hosted.workflow_id, hosted.address, False, f"{type(e).__name__}: {e}")
    return Signalled(hosted.workflow_id, hosted.address, True)
