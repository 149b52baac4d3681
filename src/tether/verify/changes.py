"""What the run changed, from tether's own snapshots (never from git), and whether the receipts agree.

The run's diff is :func:`run_diff`: the changes between the baseline manifest (taken before the
agent's first action) and the final one, with lines counted in Python from the stored blobs.

Churn, as the policy sensor and the reviewer use it::

    churn_pct = 100 * (inserted + deleted lines) / (baseline lines + inserted lines), over the touched files

The denominator is every line that existed in a touched file at either end (old lines plus new
ones), so a pure addition is 100 % of its own lines, a rewrite of a 408-line file is 100 %, and a
one-line fix in a 400-line file is ~0.5 %. Untouched files never dilute it. Binary files have no
lines and count for neither. ``budgets.churn_lines`` caps the absolute number of changed lines.

Receipts and snapshots (:func:`unexplained`): tether snapshots the workspace after every action, so
each action has a window (from the previous snapshot to its own) and the paths that changed in it.
A file tool (``write`` effect, no ``exec``) knows exactly what it wrote: its receipt must name
exactly the paths that changed in its window. A read-only tool must change nothing. A command
(``exec``) cannot know what it changed — a shell command may write anywhere, and anything it could
report comes from inside the sandbox, where the agent controls git's configuration — so its changed
files *are* the snapshot's, and only a path it reports that the snapshot saw unchanged disagrees.
Paths the snapshot does not look at (ignored, ``.git/``, caches) are outside the comparison.
Any disagreement is an ERROR at completion, naming the action and the paths.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from tether.events.kinds import ActionCompleted
from tether.events.store import Event
from tether.snapshot import (
    ALWAYS_SKIPPED,
    BlobStore,
    Change,
    ChangeKind,
    Manifest,
    SnapshotError,
    changes,
    read_content,
)

from .result import Diagnostic, SensorResult

BINARY_PROBE = 8000


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # "added" | "modified" | "deleted"
    added: tuple[tuple[int, str], ...] = ()  # (line number in the new file, text)
    removed: tuple[tuple[int, str], ...] = ()  # (line number in the old file, text)
    baseline_lines: int = 0
    binary: bool = False


@dataclass(frozen=True)
class WorkspaceDiff:
    """The run's changes. ``available`` is False when a snapshot is missing or unreadable (see ``note``)."""

    available: bool
    note: str = ""
    files: tuple[FileDiff, ...] = field(default=())

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def insertions(self) -> int:
        return sum(len(f.added) for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(len(f.removed) for f in self.files)

    @property
    def changed_lines(self) -> int:
        return self.insertions + self.deletions

    @property
    def touched_lines(self) -> int:
        """Every line that existed in a touched file at either end: baseline lines plus inserted ones."""
        return sum(f.baseline_lines + len(f.added) for f in self.files if not f.binary)

    @property
    def churn_pct(self) -> float | None:
        if not self.available:
            return None
        return 100.0 * self.changed_lines / max(1, self.touched_lines)

    def file(self, path: str) -> FileDiff | None:
        return next((f for f in self.files if f.path == path), None)


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def file_diff(change: Change, blobs: BlobStore, workspace: str | None = None) -> FileDiff:
    """Added and removed lines (with line numbers) of one change, made with difflib."""
    old = read_content(change.before, blobs, workspace) if change.before is not None else b""
    new = read_content(change.after, blobs, workspace) if change.after is not None else b""
    status = change.kind.value
    if b"\0" in old[:BINARY_PROBE] or b"\0" in new[:BINARY_PROBE]:
        return FileDiff(change.path, status, binary=True)
    a, b = _lines(old), _lines(new)
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            removed += [(i + 1, a[i]) for i in range(i1, i2)]
            added += [(j + 1, b[j]) for j in range(j1, j2)]
    return FileDiff(change.path, status, tuple(added), tuple(removed), len(a))


def run_diff(
    before: Manifest | None, after: Manifest | None, blobs: BlobStore, workspace: str | None = None
) -> WorkspaceDiff:
    """The diff between two snapshots; unavailable (never empty-and-fine) when either is missing or has errors."""
    if before is None or after is None:
        return WorkspaceDiff(False, "no baseline snapshot" if before is None else "no final snapshot")
    errors = {**before.errors, **after.errors}
    if errors:
        shown = "; ".join(f"{p}: {why}" for p, why in sorted(errors.items())[:5])
        return WorkspaceDiff(False, f"{len(errors)} paths could not be read: {shown}")
    try:
        files = tuple(file_diff(c, blobs, workspace) for c in changes(before, after))
    except SnapshotError as e:
        return WorkspaceDiff(False, str(e))
    return WorkspaceDiff(True, f"{len(files)} files changed since the baseline snapshot", files)


def observable(manifest: Manifest, path: str) -> bool:
    """Whether snapshots look at ``path`` at all (not ignored, not under .git/, .tether/, a cache...)."""
    parts = PurePosixPath(path).parts
    if not parts or any(p in ALWAYS_SKIPPED for p in parts):
        return False
    return not any(
        manifest.rules.ignored("/".join(parts[:i]), is_dir=True) for i in range(1, len(parts))
    ) and not manifest.rules.ignored(path, is_dir=False)


def window_changes(before: Manifest, after: Manifest) -> tuple[list[str], list[str]]:
    """(paths changed, paths unreadable) between two consecutive snapshots."""
    changed = [c.path for c in changes(before, after)]
    unknown = sorted(set(after.errors) - set(before.errors))
    return changed, unknown


def unexplained(
    effects: Iterable[str], reported: Sequence[str], observed: Sequence[str], manifest: Manifest
) -> list[str]:
    """How one action's receipt disagrees with the snapshot of its window (empty: they agree). See the module doc."""
    effects = set(effects)
    seen = set(observed)
    claimed = {p for p in reported if observable(manifest, p)}
    out = []
    if "exec" not in effects:
        if effects <= {"read"}:
            out += [f"{p}: changed during a read-only action" for p in sorted(seen)]
        else:
            out += [f"{p}: changed, but the receipt does not report it" for p in sorted(seen - claimed)]
    out += [f"{p}: reported changed, but its bytes are unchanged" for p in sorted(claimed - seen)]
    return out


@dataclass(frozen=True)
class Window:
    """One action's snapshot window, as ``action.completed`` recorded it."""

    call_id: str
    tool: str
    reported: tuple[str, ...]
    observed: tuple[str, ...] | None  # None: no snapshot was taken around it
    unexplained: tuple[str, ...] = ()


def windows(events: Iterable[Event]) -> list[Window]:
    out = []
    for e in events:
        if e.kind == ActionCompleted.KIND:
            p = e.data_as(ActionCompleted)
            observed = None if p.observed_files is None else tuple(p.observed_files)
            out.append(Window(p.call_id, p.tool, tuple(p.changed_files), observed, tuple(p.unexplained)))
    return out


def snapshot_check(diff: WorkspaceDiff, actions: Sequence[Window], late: Sequence[str]) -> SensorResult:
    """The always-required ``snapshot`` result: ERROR unless the run's diff is known and every change is explained.

    ERROR when a snapshot is missing or unreadable; when an action's receipt disagreed with its window;
    when an action ran without snapshots around it; when a path changed after the last action (``late``);
    and when the run's diff holds a path that no action's window saw change (changed while no action ran,
    e.g. by a process left behind, or while the run was paused).
    """
    t0 = time.monotonic()
    problems: list[Diagnostic] = []
    if not diff.available:
        problems.append(Diagnostic("", None, f"the workspace snapshot is unusable: {diff.note}", "snapshot.unreadable"))
    for w in actions:
        if w.observed is None:
            problems.append(
                Diagnostic("", None, f"{w.call_id} ({w.tool}) ran without a workspace snapshot", "snapshot.missing")
            )
        for why in w.unexplained:
            path, _, msg = why.partition(": ")
            problems.append(Diagnostic(path, None, f"{w.call_id} ({w.tool}): {msg or why}", "snapshot.receipt"))
    problems += [Diagnostic(p, None, "changed after the last action, by no action", "snapshot.late") for p in late]
    seen = {p for w in actions for p in (*(w.observed or ()), *w.reported)}
    problems += [
        Diagnostic(p, None, "changed since the baseline, but in no action's window", "snapshot.unattributed")
        for p in diff.paths
        if p not in seen and p not in late
    ]
    took = time.monotonic() - t0
    if problems:
        summary = f"{len(problems)} problems with the workspace snapshot: {problems[0]}"
        return SensorResult("snapshot", "ERROR", True, summary, tuple(problems[:50]), took)
    n = len(diff.files)
    summary = f"{n} files changed since the baseline snapshot; every change matches an action's receipt"
    return SensorResult("snapshot", "PASS", True, summary, (), took)


__all__ = [
    "ChangeKind",
    "FileDiff",
    "Window",
    "WorkspaceDiff",
    "file_diff",
    "observable",
    "run_diff",
    "snapshot_check",
    "unexplained",
    "window_changes",
    "windows",
]
