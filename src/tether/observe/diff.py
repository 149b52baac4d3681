"""What a run changed in its workspace, as one unified diff: its start snapshot against its last one.

Both manifests and every file's bytes are blobs in the event store (``tether.kernel.snapshots``), so the
diff is read from the log alone: it is the same after the workspace moved on, on another machine, or
for a run whose directory is gone. Per-action diffs say how the run got there; this says where it ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tether.errors import TetherError
from tether.events.kinds import Checkpoint
from tether.events.protocol import Store
from tether.events.store import Event
from tether.snapshot import Manifest, changes, unified_diff
from tether.state import external_driver


@dataclass(frozen=True)
class RunDiff:
    """The diff text (empty: nothing changed), the two checkpoints it spans, or why there is none."""

    text: str
    files: list[str]
    since_seq: int | None = None
    until_seq: int | None = None
    missing: str = ""


def _manifest(store: Store, checkpoint: Event) -> Manifest:
    return Manifest.from_json(store.get_blob(checkpoint.payload["snapshot"]))


def run_diff(store: Store, events: Sequence[Event]) -> RunDiff:
    """The run's changes from its ``start`` checkpoint to its latest checkpoint with a snapshot."""
    snapshots = [e for e in events if e.kind == Checkpoint.KIND and e.payload.get("snapshot")]
    start = next((e for e in snapshots if e.payload["label"] == "start"), None)
    if start is None:
        driver = external_driver(str(events[0].payload.get("sandbox", ""))) if events else ""
        if driver:  # a governed session: its tools ran where no snapshot of tether's was taken
            why = f"a governed session: {driver} ran its tools, outside tether's workspace snapshots"
            return RunDiff("", [], missing=why)
        return RunDiff("", [], missing="the run recorded no start snapshot")
    end = snapshots[-1]
    if end is start:
        return RunDiff(
            "", [], start.seq, missing="no snapshot since the start yet (one is taken at each claim, and at the end)"
        )
    try:
        before, after = _manifest(store, start), _manifest(store, end)
        found = changes(before, after)
        parts = []
        for change in found:
            try:
                parts.append(unified_diff(change, store))
            except TetherError as e:  # a blob the store lacks: said for that file, the others still shown
                parts.append(f"diff --git a/{change.path} b/{change.path}\n(content not stored: {e})\n")
    except TetherError as e:
        return RunDiff("", [], start.seq, end.seq, missing=f"a snapshot cannot be read: {e}")
    return RunDiff("".join(parts), [c.path for c in found], start.seq, end.seq)
