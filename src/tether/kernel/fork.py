"""Forking a run: a new run that shares its parent's log up to a seq and goes on live from there.

Why: "can I try again differently" — from any point of a run (an approval answered one way, a turn
where the model went wrong), start over with another answer, envelope or model, without touching the
parent. Like a git branch, the fork's log *is* the parent's log up to ``at_seq`` (shared in the store,
never copied; ``run.forked`` chains onto the parent's hash there, so verifying the fork re-verifies the
parent's prefix), followed by the fork's own events.

The fork's workspace is a new directory holding the workspace as the log says it was at ``at_seq``
(:func:`workspace_at`): the run's start snapshot, then each action's post-images (``action.rollback``)
and each undo's restored images (``run.undone``) in log order, every byte from the store's blobs and
checked against its digest. The parent's directory is never read. The fork then continues as a resume
would: the kernel folds the shared prefix and ``next_step`` decides — a pending approval waits for an
answer (which may differ from the parent's), otherwise the model is called.

Refused, with the reason: a seq the run had finished by; a seq between an action's start and its
completion (the workspace at that instant is not recorded); a prefix whose workspace cannot be rebuilt
(no start snapshot, a receipt with unreadable paths, an action whose changes were not snapshotted).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

from tether.errors import InputError, TetherError
from tether.events.kinds import (
    ActionCompleted,
    ActionStarted,
    Checkpoint,
    RunFinished,
    RunForked,
)
from tether.events.kinds_files import (
    RollbackReceipt,
    UndoReceipt,
)
from tether.events.protocol import Store
from tether.events.store import Event
from tether.snapshot import Entry, EntryKind, Manifest, SnapshotError, materialise
from tether.state import RunState
from tether.status import RunStatus

from . import session
from .approvals import whoami
from .continuation import refuse_governed, refuse_imported
from .runtime import Runtime


def workspace_at(store: Store, events: Sequence[Event]) -> Manifest:
    """The workspace as ``events`` (a run's log from seq 0) leave it: start snapshot plus recorded images."""
    checkpoints = (e.data_as(Checkpoint) for e in events if e.kind == Checkpoint.KIND)
    baseline = next((c.snapshot for c in checkpoints if c.snapshot is not None), None)  # as RunState.baseline
    if baseline is None:
        raise SnapshotError("the run recorded no start snapshot: its workspace cannot be rebuilt")
    try:
        start = Manifest.from_json(store.get_blob(baseline))
    except TetherError as err:
        raise SnapshotError(f"start snapshot {baseline}: {err}") from err
    entries = dict(start.entries)
    for e in events:
        if e.kind == RollbackReceipt.KIND:
            receipt = e.data_as(RollbackReceipt)
            if receipt.unreadable:
                raise SnapshotError(f"seq {e.seq}: the snapshot could not read {', '.join(receipt.unreadable[:5])}")
            files = receipt.files
        elif e.kind == UndoReceipt.KIND:
            files = e.data_as(UndoReceipt).files
        elif e.kind == ActionCompleted.KIND and e.data_as(ActionCompleted).observed_files is None:
            raise SnapshotError(f"seq {e.seq}: the workspace was not snapshotted around this action")
        else:
            continue
        for change in files:
            if change.after is None:
                entries.pop(change.path, None)
            else:
                a = change.after
                entries[change.path] = Entry(change.path, EntryKind(a.kind), a.digest, a.mode, a.size, 0, 0, 0)
    return Manifest(entries, {}, start.rules, start.started_ns)


def fork(
    store: Store,
    run_id: str,
    at_seq: int,
    dest: Path,
    options: session.Options,
    *,
    envelope: Path | None = None,
    by: str | None = None,
) -> Runtime:
    """Create the fork (its workspace materialised in ``dest``, new or empty) and return its runtime.

    The fork's lease is held from its creation; call ``drive()`` on the result to go on live.
    """
    info = store.run(run_id)
    store.verify_run(info.run_id)
    events = store.events(info.run_id)
    if not 0 <= at_seq < len(events):
        raise InputError(f"run {info.run_id} has events 0..{len(events) - 1}; --at {at_seq} is not one of them")
    prefix = events[: at_seq + 1]
    at = RunState.from_events(prefix)
    refuse_governed(at, "fork")
    trusted = options.trust_imported or envelope is not None  # with an envelope of the operator's: their contract
    refuse_imported(store.imported(info.run_id), at, "fork", trust=trusted)
    _check_point(info.run_id, at_seq, at, events)
    manifest = workspace_at(store, prefix)
    dest = dest.resolve()
    created = not dest.exists()
    try:
        materialise(manifest, store, dest)
        forked = RunForked(
            parent_run=info.run_id,
            at_seq=at_seq,
            parent_hash=prefix[-1].hash,
            workspace=str(dest),
            snapshot=store.put_blob(manifest.to_json()),
            model=options.model if isinstance(options.model, str) else getattr(options.model, "name", ""),
            by=by or whoami(),
            **_contract(envelope),
        )
        fork_id = store.create_fork(info.task, forked, lease=True)
    except BaseException:
        if created:
            shutil.rmtree(dest, ignore_errors=True)
        raise
    try:
        return session.attach(store, fork_id, options)
    except BaseException:
        store.release(fork_id)
        raise


def fork_workspace(store: Store, run_id: str, at_seq: int) -> Path:
    """Where a fork's workspace goes by default: beside the parent's, ``<name>-fork-<seq>`` (numbered if taken)."""
    parent = Path(RunState.from_events(store.events(run_id)).workspace or Path.cwd())
    base = parent.with_name(f"{parent.name}-fork-{at_seq}")
    candidate, n = base, 1
    while candidate.exists():
        n += 1
        candidate = base.with_name(f"{base.name}-{n}")
    return candidate


def _check_point(run_id: str, at_seq: int, state: RunState, events: Sequence[Event]) -> None:
    if state.status is RunStatus.NEW:
        raise InputError(f"run {run_id}: no run.started at or before seq {at_seq}")
    if state.finished:
        end = next(e.seq for e in events if e.seq <= at_seq and e.kind == RunFinished.KIND)
        raise InputError(
            f"run {run_id} had finished ({state.status}) by seq {at_seq} (run.finished at seq {end}); "
            f"fork at an earlier seq"
        )
    if state.open_actions:
        a = state.open_actions[0]
        started = max(e.seq for e in events if e.seq <= at_seq and e.kind == ActionStarted.KIND)
        raise InputError(
            f"run {run_id}: at seq {at_seq} action {a.call_id} ({a.tool}) had started and not completed, so the "
            f"workspace at that instant is not recorded; fork at seq {started - 1} or after its completion"
        )


def _contract(envelope: Path | None) -> dict[str, object]:
    """A replacement envelope's fields of ``run.forked`` (strictly validated, plan binding included)."""
    if envelope is None:
        return {}
    loaded = session.load_checked(envelope)
    env = loaded.envelope
    return {
        "envelope_path": str(loaded.path or ""),
        "envelope": env.model_dump(mode="json"),
        "plan": session.plan_of(loaded),
        "plan_hash": env.plan.hash,
        "contract_hash": env.contract_hash,
    }


__all__ = ["fork", "workspace_at"]
