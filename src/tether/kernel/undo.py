"""Undo: take a run's workspace changes back, from the rollback receipts in its log.

Every action whose snapshot window saw the workspace change leaves an ``action.rollback`` receipt
(:func:`rollback_receipt`): for each changed path its pre- and post-image — kind, content hash, mode,
or None when the path did not exist — with the bytes in the store's blobs. A shell command's changes
are recorded exactly like a file tool's, because both come from tether's snapshots, not from the tool.

Undoing is three steps, and only the last one writes:

1. **plan** (:func:`plan`, pure, from the log): the actions the selection takes back — the whole run,
   every action that ended after a seq (``to_seq``), or one action (``call_id``) — and for each path
   they changed, the image the workspace should hold now (the last receipt or undo that touched it)
   and the image to restore (the pre-image of the first selected action that touched it). An action
   that cannot be taken back refuses the whole undo, naming it and why: an external effect (a push
   cannot be unpushed), changes that were never recorded (no snapshot around it, unreadable paths, an
   attempt cut off by a crash, a runtime error), or, when undoing one action, a path a later action
   changed again.
2. **check** (:func:`check`, reads only the planned paths): each path must hold the expected image
   (or already the restored one: a second undo after a crash finishes the job). Anything else was
   changed outside the run: a conflict naming the path and both hashes, and nothing is changed. The
   bytes of every image to restore must be in the store and hash to their name.
3. **apply** (:func:`apply`, all or nothing): the new content is staged in a directory inside the
   workspace (same file system), then put in place by ``rename``, each replaced path kept under a
   hard link until the end; if any step fails, every path is put back and the error is raised. A
   crash leaves each file whole (old or new, never half-written) and the next undo completes it.

Then the ``run.undone`` receipt is appended (who, the scope, the actions, each file with both
hashes) under the run's lease, so no driver appends to the run meanwhile; the chain still verifies.
Like git, undo tracks files and symlinks, not directories: a directory its removals leave empty is
removed, and an empty directory an action created (``mkdir d``) is invisible to the snapshot and stays.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from tether.canonical import bytes_hash
from tether.envelope.schema import EXTERNAL_OUTPUT_EFFECTS, Effect
from tether.errors import InputError, RuntimeFailure, TetherError
from tether.events.kinds import (
    ActionCompleted,
    ActionFailed,
    ActionStarted,
    RunForked,
    RunStarted,
)
from tether.events.kinds_files import (
    FileChange,
    FileImage,
    RollbackReceipt,
    UndoReceipt,
    same_image,
)
from tether.events.protocol import Store
from tether.events.store import Event
from tether.snapshot import ALWAYS_SKIPPED, Entry, EntryKind, Manifest, SnapshotError, changes, probe

from .approvals import whoami

#: Effects no workspace restore takes back: the external outputs (``outputs.max_external`` counts them) and
#: whatever the contract itself calls irreversible.
EXTERNAL_EFFECTS = frozenset(e.value for e in (*EXTERNAL_OUTPUT_EFFECTS, Effect.IRREVERSIBLE))
STAGING_PREFIX = ".tether-undo-"
T = TypeVar("T")
R = TypeVar("R")


class UndoFailed(RuntimeFailure):
    """Applying an undo failed part-way; every path was put back as it was (the message says what failed)."""


# ---- the receipt an action leaves --------------------------------------------------------------


def image(entry: Entry | None) -> FileImage | None:
    if entry is None:
        return None
    return FileImage(kind=entry.kind.value, digest=entry.digest, mode=entry.mode, size=entry.size)


def rollback_receipt(call_id: str, before: Manifest, after: Manifest) -> RollbackReceipt | None:
    """The receipt of one action's snapshot window; None when nothing changed and nothing was unreadable."""
    files = [FileChange(path=c.path, before=image(c.before), after=image(c.after)) for c in changes(before, after)]
    unreadable = sorted(set(after.errors) - set(before.errors))
    if not files and not unreadable:
        return None
    return RollbackReceipt(call_id=call_id, files=files, unreadable=unreadable)


def shown(i: FileImage | None) -> str:
    return "absent" if i is None else i.digest if i.kind == "file" else f"symlink {i.digest}"


# ---- the ledger: the log read for undo ---------------------------------------------------------


@dataclass
class Record:
    """One executed action as undo sees it."""

    call_id: str
    tool: str
    start_seq: int
    end_seq: int | None = None
    effects: frozenset[str] | None = None  # None: unknown (it never completed and the envelope does not say)
    changes: list[FileChange] = field(default_factory=list)
    blocker: str | None = None  # why it cannot be undone
    undone_at: int | None = None
    _receipt: bool = False  # a receipt came with the current attempt
    _open: bool = False  # started, not yet completed or failed

    @property
    def read_only(self) -> bool:
        return self.effects is not None and self.effects <= {Effect.READ.value}

    @property
    def last_seq(self) -> int:
        return self.start_seq if self.end_seq is None else self.end_seq

    def block(self, why: str) -> None:
        self.blocker = self.blocker or why


@dataclass
class Ledger:
    """Executed actions in log order, and the image each touched path should hold now."""

    run_id: str = ""
    workspace: str = ""
    head: int = -1
    records: dict[str, Record] = field(default_factory=dict)
    current: dict[str, FileImage | None] = field(default_factory=dict)
    declared: dict[str, frozenset[str]] = field(default_factory=dict)  # tool -> effects, from the envelope

    @classmethod
    def of(cls, events: Iterable[Event]) -> Ledger:
        ledger = cls()
        for e in events:
            ledger.apply(e)
        ledger.close()
        return ledger

    def apply(self, e: Event) -> None:
        self.run_id, self.head = e.run_id, e.seq
        match e.kind:
            case RunStarted.KIND:
                self._began(e.data_as(RunStarted))
            case RunForked.KIND:  # a fork goes on in its own workspace, materialised at the fork point
                self._began(e.data_as(RunForked))
            case ActionStarted.KIND:
                self._started(e.seq, e.data_as(ActionStarted))
            case RollbackReceipt.KIND:
                self._receipt(e.data_as(RollbackReceipt))
            case ActionCompleted.KIND:
                self._completed(e.seq, e.data_as(ActionCompleted))
            case ActionFailed.KIND:
                self._failed(e.seq, e.data_as(ActionFailed))
            case UndoReceipt.KIND:
                u = e.data_as(UndoReceipt)
                for call_id in u.actions:
                    if call_id in self.records:
                        self.records[call_id].undone_at = e.seq
                for f in u.files:
                    self.current[f.path] = f.after

    def _began(self, p: RunStarted | RunForked) -> None:
        self.workspace = p.workspace
        for t in (p.envelope or {}).get("tools") or ():
            if isinstance(t, dict) and isinstance(t.get("name"), str):
                self.declared[t["name"]] = frozenset(str(x) for x in t.get("effects") or ())

    def _started(self, seq: int, p: ActionStarted) -> None:
        r = self.records.get(p.call_id)
        if r is None:
            r = self.records[p.call_id] = Record(p.call_id, p.tool, seq, effects=self.declared.get(p.tool))
        elif r._open:
            r.block(f"an attempt started at seq {r.last_seq} was cut off (crash): what it changed was not recorded")
        r._open, r._receipt = True, False

    def _receipt(self, p: RollbackReceipt) -> None:
        r = self.records.get(p.call_id)
        if r is None:
            return
        r._receipt = True
        r.changes += p.files
        for f in p.files:
            self.current[f.path] = f.after
        if p.unreadable:
            r.block("its changes are not all known: " + "; ".join(p.unreadable[:5]))

    def _completed(self, seq: int, p: ActionCompleted) -> None:
        r = self.records.get(p.call_id)
        if r is None:
            return
        r.end_seq, r._open = seq, False
        if "effects" in p.result:
            r.effects = frozenset(str(x) for x in p.result["effects"])
        if p.observed_files is None and not r.read_only:
            r.block("it ran without a workspace snapshot around it: what it changed is unknown")
        elif p.observed_files and not r._receipt:
            r.block("its log has no rollback receipt (written before tether recorded them)")

    def _failed(self, seq: int, p: ActionFailed) -> None:
        r = self.records.get(p.call_id)
        if r is None:
            return
        r.end_seq, r._open = seq, False
        if not p.dependency and not r.read_only:  # dependency: the sandbox never started, nothing ran
            r.block(f"it failed with a runtime error ({p.error[:80]}): what it changed was not recorded")

    def close(self) -> None:
        for r in self.records.values():
            if r._open and not r.read_only:
                r.block(f"it started at seq {r.start_seq} and never completed: what it changed is unknown")
            external = sorted((r.effects or frozenset()) & EXTERNAL_EFFECTS)
            if external:
                r.blocker = (
                    f"its effect {', '.join(external)} reaches outside the workspace and cannot be taken back"
                    " (a push cannot be unpushed)"
                )


def undoable(ledger: Ledger) -> dict[str, str]:
    """For each executed action, in log order: whether it can be undone, and why not (for ``tether show``)."""
    out = {}
    for r in ledger.records.values():
        if r.undone_at is not None:
            out[r.call_id] = f"undone (seq {r.undone_at})"
        elif r.blocker is not None:
            out[r.call_id] = f"not undoable: {r.blocker}"
        elif r.changes:
            n = len({c.path for c in r.changes})
            out[r.call_id] = f"undoable: {n} file{'' if n == 1 else 's'}"
        else:
            out[r.call_id] = "nothing to undo: it changed no file"
    return out


# ---- 1. the plan ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """What to take back: the whole run (neither field), every action that ended after ``to_seq``, or one."""

    to_seq: int | None = None
    call_id: str | None = None

    def __post_init__(self) -> None:
        if self.to_seq is not None and self.call_id is not None:
            raise InputError("undo: give at most one of --to SEQ and --action CALL_ID")

    @property
    def scope(self) -> str:
        if self.call_id is not None:
            return f"action {self.call_id}"
        return "run" if self.to_seq is None else f"to {self.to_seq}"


@dataclass(frozen=True)
class Step:
    """One path to restore: what it should hold now, and what it held before the actions."""

    path: str
    expected: FileImage | None
    target: FileImage | None


@dataclass(frozen=True)
class Plan:
    run_id: str
    scope: str
    actions: tuple[str, ...]  # call ids to mark undone, in log order
    steps: tuple[Step, ...]
    refusals: tuple[str, ...] = ()  # non-empty: the undo is refused, nothing is changed
    already: tuple[str, ...] = ()  # selected call ids an earlier undo took back


def _selected(ledger: Ledger, sel: Selection) -> list[Record]:
    records = list(ledger.records.values())
    if sel.call_id is not None:
        if sel.call_id not in ledger.records:
            known = ", ".join(ledger.records) or "none"
            raise InputError(f"undo --action: no executed action {sel.call_id!r} in run {ledger.run_id}; {known}")
        return [ledger.records[sel.call_id]]
    if sel.to_seq is not None:
        if not 0 <= sel.to_seq <= ledger.head:
            raise InputError(f"undo --to: expected a seq of run {ledger.run_id} (0..{ledger.head}), got {sel.to_seq}")
        return [r for r in records if r.last_seq > sel.to_seq]
    return records


def plan(ledger: Ledger, sel: Selection) -> Plan:
    """What undoing ``sel`` restores, or why it is refused (pure: the log only, not the workspace)."""
    chosen = _selected(ledger, sel)
    already = tuple(r.call_id for r in chosen if r.undone_at is not None)
    chosen = [r for r in chosen if r.undone_at is None]
    refusals = [f"{r.call_id} ({r.tool}, seq {r.start_seq}): {r.blocker}" for r in chosen if r.blocker]
    picked = {r.call_id for r in chosen}
    first: dict[str, tuple[Record, FileImage | None]] = {}
    for r in chosen:
        for c in r.changes:
            first.setdefault(c.path, (r, c.before))
    later = [r for r in ledger.records.values() if r.call_id not in picked and r.undone_at is None]
    steps = []
    for path, (r, target) in first.items():
        if ALWAYS_SKIPPED.intersection(path.split("/")):  # snapshots never look there: not a receipt tether wrote
            refusals.append(f"{path}: a rollback receipt names a path tether never snapshots (.git/, .tether/, ...)")
            continue
        again = next((o for o in later if o.start_seq > r.start_seq and any(c.path == path for c in o.changes)), None)
        if again is not None:
            refusals.append(
                f"{path}: changed again by the later action {again.call_id} ({again.tool}, seq {again.start_seq}),"
                f" which this undo does not take back; undo it too (e.g. --to {r.start_seq - 1})"
            )
            continue
        expected = ledger.current.get(path)
        if not same_image(expected, target):
            steps.append(Step(path, expected, target))
    return Plan(
        ledger.run_id,
        sel.scope,
        tuple(r.call_id for r in chosen),
        tuple(sorted(steps, key=lambda s: s.path)),
        tuple(refusals),
        already,
    )


# ---- 2. the check ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    step: Step
    now: FileImage | None


def check(workspace: Path, steps: Sequence[Step]) -> tuple[list[Found], list[str]]:
    """What each planned path holds now; conflicts (path, expected and found hashes) for the ones that differ.

    A path that already holds its target is kept (with ``now`` equal to it): restoring it is a no-op.
    """
    found, conflicts = [], []
    for s in steps:
        try:
            now = image(probe(workspace, s.path))
        except SnapshotError as e:
            conflicts.append(f"{s.path}: expected {shown(s.expected)}, found {e}")
            continue
        if same_image(now, s.expected) or same_image(now, s.target):
            found.append(Found(s, now))
        else:
            conflicts.append(f"{s.path}: changed outside the run: expected {shown(s.expected)}, found {shown(now)}")
    return found, conflicts


def contents(store: Store, steps: Iterable[Step]) -> tuple[dict[str, bytes], list[str]]:
    """The bytes of every image to restore, checked against its hash; problems for the ones missing or wrong."""
    out, problems = {}, []
    for s in steps:
        if s.target is None or s.target.digest in out:
            continue
        try:
            data = store.get_blob(s.target.digest)
        except TetherError:
            problems.append(f"{s.path}: its earlier content {s.target.digest} is not stored (over 32 MiB?)")
            continue
        if bytes_hash(data) != s.target.digest:
            problems.append(f"{s.path}: the stored content does not hash to {s.target.digest}")
            continue
        out[s.target.digest] = data
    return out, problems


# ---- 3. apply: all or nothing --------------------------------------------------------------------

#: How undo opens a folder of the workspace: relative to the folder above it (openat), never through a symlink.
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@contextmanager
def _naming(rel: str) -> Iterator[None]:
    """An ``OSError`` raised inside names the workspace path ``rel`` (a call by descriptor names only the last part)."""
    try:
        yield
    except OSError as e:
        raise OSError(e.errno, e.strerror or str(e), rel) from e


class _Journal:
    """The moves made so far, to put every path back when a later one fails; every one by descriptor.

    Why by descriptor: undo checks a path and then renames into it. By path, the kernel walks the path again at
    the rename, so a folder another process swaps for a symlink between the two sends the operator's write (bytes
    the agent chose) or removal outside the workspace (tests/kernel/test_undo_race). Here each folder is opened
    once, from the one above it with ``O_NOFOLLOW`` (a symlink in its place fails the open, and the undo is put
    back), and every rename, link, unlink and mkdir names an entry of a folder so opened: that folder, wherever it
    is moved meanwhile. The staging folder is held the same way, so a symlink put in its place is never written
    or emptied.
    """

    def __init__(self, root: Path) -> None:
        self.folders: dict[tuple[str, ...], int] = {(): os.open(root, _FOLDER)}
        self.stage_name, self.stage = "", -1
        self.done: list[tuple[str, int, str, str]] = []  # (what, folder, name, the staged name it went to or came from)
        self.n = 0

    def open_stage(self) -> None:
        """Make the staging folder in the workspace's root (mode 0700) and hold it."""
        root = self.folders[()]
        for _ in range(100):
            name = STAGING_PREFIX + secrets.token_hex(6)
            try:
                os.mkdir(name, 0o700, dir_fd=root)
            except FileExistsError:
                continue
            self.stage_name = name
            with _naming(name):
                self.stage = os.open(name, _FOLDER, dir_fd=root)
            return
        raise OSError(17, "no free name for the staging folder", STAGING_PREFIX + "*")

    def folder(self, parts: tuple[str, ...], *, make: bool = False) -> int:
        """The folder ``parts`` below the root, opened through folders only; missing ones made when ``make``."""
        fd = self.folders.get(parts)
        if fd is not None:
            return fd
        above, name = self.folder(parts[:-1], make=make), parts[-1]
        try:
            fd = os.open(name, _FOLDER, dir_fd=above)
        except FileNotFoundError:
            if not make:
                raise
            os.mkdir(name, dir_fd=above)
            self.done.append(("mkdir", above, name, ""))
            fd = os.open(name, _FOLDER, dir_fd=above)
        except OSError as e:  # ELOOP, ENOTDIR: a symlink or a file where a folder must be
            raise OSError(e.errno, "not a folder inside the workspace (a symlink or a file)", "/".join(parts)) from e
        self.folders[parts] = fd
        return fd

    def at(self, rel: str, *, make: bool = False) -> tuple[int, str]:
        """The folder holding ``rel``, and the name of ``rel`` in it."""
        parts = tuple(rel.split("/"))
        return self.folder(parts[:-1], make=make), parts[-1]

    def spare(self) -> str:
        self.n += 1
        return f"old-{self.n}"

    def remove(self, rel: str) -> None:
        """Move what is at ``rel`` aside (kept until the end, so it can come back)."""
        with _naming(rel):
            fd, name = self.at(rel)
            if _is_folder(fd, name):
                os.rmdir(name, dir_fd=fd)  # an empty folder where a file must go (a non-empty one fails: nothing lost)
                self.done.append(("rmdir", fd, name, ""))
                return
            aside = self.spare()
            os.rename(name, aside, src_dir_fd=fd, dst_dir_fd=self.stage)
            self.done.append(("moved", fd, name, aside))

    def place(self, rel: str, staged: str, replace: bool) -> None:
        with _naming(rel):
            fd, name = self.at(rel, make=True)
            if _is_folder(fd, name):
                os.rmdir(name, dir_fd=fd)
                self.done.append(("rmdir", fd, name, ""))
            backup = ""
            if replace:
                backup = self.spare()
                os.link(name, backup, src_dir_fd=fd, dst_dir_fd=self.stage, follow_symlinks=False)
            os.rename(staged, name, src_dir_fd=self.stage, dst_dir_fd=fd)
            self.done.append(("placed", fd, name, backup))

    def undo(self) -> list[str]:
        """Reverse every move, newest first; what could not be put back is returned (and said)."""
        stuck = []
        for what, fd, name, other in reversed(self.done):
            try:
                if what == "moved" or (what == "placed" and other):
                    os.rename(other, name, src_dir_fd=self.stage, dst_dir_fd=fd)
                elif what == "placed":
                    os.unlink(name, dir_fd=fd)
                elif what == "mkdir":
                    os.rmdir(name, dir_fd=fd)
                elif what == "rmdir":
                    os.mkdir(name, dir_fd=fd)
            except OSError as e:
                stuck.append(f"{self.where(fd, name)}: {e.strerror or e}")
        return stuck

    def where(self, fd: int, name: str) -> str:
        """The workspace path of entry ``name`` of the held folder ``fd`` (for messages)."""
        parts = next((p for p, f in self.folders.items() if f == fd), ())
        return "/".join((*parts, name))

    def sync(self, rels: Iterable[str]) -> None:
        """Make the renames durable: fsync each folder that gained or lost an entry."""
        fds = {self.folders[tuple(r.split("/")[:-1])] for r in rels if tuple(r.split("/")[:-1]) in self.folders}
        _parallel(os.fsync, sorted(fds))

    def discard(self) -> None:
        """Remove the staging folder: the copies kept aside, and whatever was not placed."""
        if self.stage < 0:
            return
        stage = self.stage
        _parallel(lambda name: _unlink(name, stage), os.listdir(stage))  # one by one is slow on a busy disk, too
        with suppress(OSError):
            os.rmdir(self.stage_name, dir_fd=self.folders[()])

    def prune(self, removed: Iterable[str]) -> None:
        """Remove the folders that removing files left empty (like git), never the workspace itself."""
        for rel in sorted(removed, key=lambda p: p.count("/"), reverse=True):
            parts = tuple(rel.split("/")[:-1])
            while parts and parts[:-1] in self.folders:
                try:
                    os.rmdir(parts[-1], dir_fd=self.folders[parts[:-1]])
                except OSError:
                    break
                parts = parts[:-1]

    def close(self) -> None:
        for fd in (*self.folders.values(), self.stage):
            if fd >= 0:
                os.close(fd)
        self.folders.clear()
        self.stage = -1


def _is_folder(fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _parallel(fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``fn`` over ``items`` in threads: concurrent fsyncs share the file system's journal commits.

    (On ext4, 150 files written and fsynced one after another took 2-4 s on a busy disk; in 16
    threads, 50-80 ms.) The first error is raised once every call has finished.
    """
    with ThreadPoolExecutor(max_workers=min(16, max(1, len(items)))) as pool:
        return list(pool.map(fn, items))


def _stage(stage: int, name: str, target: FileImage, blobs: Mapping[str, bytes]) -> str:
    """Write one image to restore into the staging folder (held as ``stage``), durably (fsynced), with its
    permission bits; return its name there.

    Never a set-user-id, set-group-id or sticky bit: the restored file is the operator's, not the agent's who
    made it, so such a bit would run the agent's bytes with the operator's rights (``snapshot.materialise``
    rebuilds a workspace the same way).
    """
    data = blobs[target.digest]
    if target.kind == EntryKind.LINK.value:
        os.symlink(os.fsdecode(data), name, dir_fd=stage)
        return name
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=stage)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, target.mode & 0o777)
        os.fsync(fd)
    finally:
        os.close(fd)
    return name


def sweep(workspace: Path) -> None:
    """Remove staging directories a crashed undo left behind (their content is in the store)."""
    for p in workspace.glob(STAGING_PREFIX + "*"):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)  # rmtree walks by descriptor, never through a symlink


def apply(workspace: Path, found: Sequence[Found], data: Mapping[str, bytes]) -> list[Found]:
    """Restore every path whose content is not already the target, all or nothing; return those restored.

    Raises :class:`UndoFailed` (after putting everything back) if any step fails.
    """
    todo = [f for f in found if not same_image(f.now, f.step.target)]
    if not todo:
        return []
    try:
        journal = _Journal(workspace.resolve())
    except OSError as e:
        raise UndoFailed(f"undo failed at {workspace}: {e.strerror or e}; nothing was changed") from e
    try:
        try:
            journal.open_stage()
            writes = [(i, f.step.target) for i, f in enumerate(todo) if f.step.target is not None]
            stage = journal.stage
            names = _parallel(lambda w: _stage(stage, f"new-{w[0]}", w[1], data), writes)
            staged = {todo[i].step.path: name for (i, _), name in zip(writes, names, strict=True)}
            for f in sorted(todo, key=lambda f: f.step.path.count("/"), reverse=True):  # deepest first
                if f.step.target is None and f.now is not None:
                    journal.remove(f.step.path)
            for f in sorted(todo, key=lambda f: f.step.path.count("/")):  # shallowest first
                if f.step.path in staged:
                    journal.place(f.step.path, staged[f.step.path], replace=f.now is not None)
            journal.sync(f.step.path for f in todo)
        except OSError as e:
            stuck = journal.undo()
            journal.discard()
            note = f"; could not put back: {'; '.join(stuck)}" if stuck else "; every path was put back as it was"
            raise UndoFailed(f"undo failed at {e.filename or ''}: {e.strerror or e}{note}") from e
        journal.discard()
        journal.prune(f.step.path for f in todo if f.step.target is None)
    finally:
        journal.close()
    return todo


def _unlink(name: str, folder: int) -> None:
    with suppress(OSError):
        os.unlink(name, dir_fd=folder)


# ---- the whole operation -----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What ``undo`` did: refused (``refusals``), nothing to do, or restored ``restored`` with receipt ``seq``."""

    plan: Plan
    refusals: tuple[str, ...] = ()
    restored: tuple[FileChange, ...] = ()
    seq: int | None = None  # the run.undone event; None when nothing was appended

    @property
    def ok(self) -> bool:
        return not self.refusals


def undo(
    store: Store,
    run_id: str,
    selection: Selection = Selection(),
    *,
    workspace: Path | None = None,
    by: str | None = None,
    dry_run: bool = False,
) -> Outcome:
    """Take back the selected actions of ``run_id`` in its workspace (or ``workspace``) and log the receipt.

    Holds the run's lease throughout (a run being driven refuses with ``RunLeased``). Refusals and
    conflicts come back in :attr:`Outcome.refusals` with nothing changed; ``dry_run`` plans and checks
    only. Raises :class:`UndoFailed` when applying failed part-way (everything was put back).
    """
    store.verify(run_id)
    store.acquire(run_id)
    try:
        events = store.events(run_id)
        ledger = Ledger.of(events)
        where = workspace or Path(ledger.workspace)
        if not where.is_dir():
            raise InputError(f"undo: workspace {where} is not a directory (give --workspace)")
        p = plan(ledger, selection)
        if p.refusals:
            return Outcome(p, p.refusals)
        if not p.actions:
            return Outcome(p)
        sweep(where)
        found, conflicts = check(where, p.steps)
        data, missing = contents(store, (f.step for f in found))
        if conflicts or missing or dry_run:
            return Outcome(p, tuple(conflicts + missing))
        apply(where, found, data)
        files = [FileChange(path=f.step.path, before=f.now, after=f.step.target) for f in found]
        receipt = UndoReceipt(by=by or whoami(), scope=p.scope, actions=list(p.actions), files=files)
        event = store.append(run_id, receipt, expect=events[-1].head)
        return Outcome(p, restored=tuple(files), seq=event.seq)
    finally:
        store.release(run_id)


__all__ = [
    "EXTERNAL_EFFECTS",
    "Ledger",
    "Outcome",
    "Plan",
    "Selection",
    "Step",
    "UndoFailed",
    "apply",
    "check",
    "contents",
    "plan",
    "rollback_receipt",
    "undo",
    "undoable",
]
