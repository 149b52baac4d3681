"""The run's chain of workspace snapshots: the effectful side of ``tether.snapshot`` for one run.

The baseline is taken when the run starts, before the agent's first action, and its manifest is
stored as a blob that the ``start`` checkpoint names; a resumed run loads it from there. After every
action the runtime takes another snapshot and records which paths changed in that action's window:
an inotify watch (``tether.watch``) armed by the previous snapshot says which directories to look at
again, so the cost follows what changed, not the size of the workspace. Snapshots recorded as
checkpoints — the final one, taken when a completion claim is verified, is compared with the baseline
for "what the run changed" — walk the whole tree (with the stat cache): the verdict never rests on
inotify alone, and whatever it missed shows up there as a change no action explains.

The event store's own files are excluded when the store lives inside the workspace (they change on
every event), and so is the test reporter's file: tether's writing, never the agent's.
"""

from __future__ import annotations

import re
from pathlib import Path

from tether.canonical import bytes_hash
from tether.errors import TetherError
from tether.events.kinds import Checkpoint
from tether.events.protocol import Store
from tether.snapshot import ALWAYS_SKIPPED, ContentMismatch, Manifest, SnapshotError, Watch, materialise, take

STORE_SUFFIXES = ("", "-wal", "-shm", "-journal", ".lock")
REPORT_PATTERN = "/.tether-report-*.json"  # the test reporter's file, written and removed by tether


def store_excludes(store: Path, workspace: Path) -> tuple[str, ...]:
    """Anchored gitignore patterns for the database files when they sit inside the workspace."""
    try:
        rel = store.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return ()
    escaped = re.sub(r"([\\*?\[\]!# ])", r"\\\1", rel)
    return tuple(f"/{escaped}{suffix}" for suffix in STORE_SUFFIXES)


class Snapshots:
    """Baseline (from the log), latest (in memory); every snapshot's new bytes go to the store's blobs."""

    def __init__(self, store: Store, workspace: Path, baseline_hash: str | None) -> None:
        self.store, self.workspace, self.baseline_hash = store, workspace, baseline_hash
        self.exclude = (*store_excludes(store.path, workspace), REPORT_PATTERN)
        self._baseline: Manifest | None = None
        self.latest: Manifest | None = None
        self.watch = Watch()

    def close(self) -> None:
        self.watch.close()

    def take_baseline(self) -> tuple[str, Manifest]:
        m = take(self.workspace, exclude=self.exclude, blobs=self.store, watch=self.watch)
        self.baseline_hash = self.store.put_blob(m.to_json())
        self._baseline = self.latest = m
        return self.baseline_hash, m

    def baseline(self) -> Manifest | None:
        """The run's baseline manifest, None for a run started before tether kept snapshots.

        Raises SnapshotError when the log names a manifest that cannot be read.
        """
        if self._baseline is None and self.baseline_hash is not None:
            try:
                data = self.store.get_blob(self.baseline_hash)
            except TetherError as e:  # the store raises InputError for a missing blob
                raise SnapshotError(f"baseline manifest {self.baseline_hash}: {e}") from e
            self._baseline = Manifest.from_json(data)
        return self._baseline

    def take(self, *, full: bool = False) -> Manifest:
        """A snapshot now, from the latest (or the baseline) and the watch; ``full`` walks the whole tree."""
        previous = self.latest or self.baseline()
        exclude = () if previous else self.exclude
        m = take(self.workspace, previous=previous, blobs=self.store, exclude=exclude, watch=self.watch, full=full)
        self.latest = m
        return m

    def record(self, m: Manifest) -> str:
        return self.store.put_blob(m.to_json())


def start_checkpoint(store: Store, run_id: str) -> Checkpoint:
    """The run's ``start`` checkpoint (SnapshotError when it has none)."""
    start = next((e for e in store.events(run_id) if e.kind == Checkpoint.KIND and e.payload["label"] == "start"), None)
    if start is None:
        raise SnapshotError(f"run {run_id} has no start checkpoint")
    return start.data_as(Checkpoint)


def start_manifest(store: Store, run_id: str) -> Manifest:
    """The workspace a run started from: the manifest its ``start`` checkpoint names, read from the store.

    Raises SnapshotError when the run has no start snapshot (a run from before tether kept them, or a
    workspace that could not be read) or the manifest is missing, altered or malformed.
    """
    start = start_checkpoint(store, run_id)
    h = start.snapshot
    if h is None:
        raise SnapshotError(f"run {run_id} recorded no start snapshot ({start.note})")
    try:
        data = store.get_blob(h)
        if (found := bytes_hash(data)) != h:
            raise ContentMismatch("(the start manifest)", h, found)
        return Manifest.from_json(data)
    except ContentMismatch:
        raise
    except TetherError as e:
        raise SnapshotError(f"run {run_id}: start snapshot {h}: {e}") from e


def materialise_start(store: Store, run_id: str, dest: Path) -> Manifest:
    """Rebuild the workspace ``run_id`` started from in ``dest`` (empty or new), from the log and its blobs only.

    The one place replay, fork and import get a run's starting files: nothing is read from the
    original workspace, so it works on another machine from an exported package.
    """
    m = start_manifest(store, run_id)
    materialise(m, store, dest)
    for name in start_checkpoint(store, run_id).skipped:
        if name in ALWAYS_SKIPPED:  # names only, from a fixed set: never a path the log could aim elsewhere
            (dest / name).mkdir(exist_ok=True)
    return m
