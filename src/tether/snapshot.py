"""The workspace snapshot: what is in the workspace, read by tether as bytes.

Why it exists: the agent can write every file in the workspace, ``.git/`` included, so no host-side
program may interpret those files (a host-side ``git diff`` runs whatever textconv driver, filter or
fsmonitor the agent configured). tether therefore keeps its own record of the workspace: a
:class:`Manifest` mapping each path to the SHA-256 of its bytes, its mode and size, with the bytes
themselves stored as content-addressed blobs. "What changed" is :func:`changes` between two manifests;
diffs and line counts are made here, in Python (:func:`unified_diff`, :func:`diff_stat`). The same
manifests serve undo and fork later, which is why this is a module of its own on the ground floor.

What a snapshot reads (:func:`take`):

* every regular file and symlink under the workspace, except ``.git/``, ``.tether/``, virtualenvs and
  caches (:data:`ALWAYS_SKIPPED`, matched by name at any depth), what the ``.gitignore`` files and
  ``.git/info/exclude`` ignore, and the caller's ``exclude`` patterns. Ignore files are parsed with
  pathspec, never executed, and read **once**, by the first snapshot of a chain (the run's baseline):
  later snapshots inherit those rules from ``previous``, so a ``.gitignore`` the agent writes during
  the run hides nothing (the edit itself shows up as a change).
* symlinks as links (their target text), never followed; directories behind a symlink are not entered.
* a file it cannot read is an *error value* in :attr:`Manifest.errors`, never a silent skip; so is a
  FIFO, socket or device, and a file name that is not UTF-8. Callers treat any error as "unknown".

The stat cache (git's index, in small): given ``previous``, a file whose (size, mtime, ctime, inode,
mode) are unchanged is not read again, so the cost of a snapshot grows with the files that changed,
plus one ``lstat`` per file. ctime is part of the key because ``touch -r`` can restore an mtime but
nothing unprivileged can restore a ctime. The racy-git rule: an entry whose mtime or ctime falls
within :data:`RACY_WINDOW_NS` of the start of the scan that recorded it may have been rewritten in
the same timestamp tick after it was read, so it is read again next time.

The watch (:class:`Watch`, Linux inotify through :mod:`tether.watch`): one ``lstat`` per file still
grows with the repository, so a chain of snapshots can also keep a watch on every directory it walked,
armed before the directory is listed. The next snapshot then re-lists only the directories the kernel
reported changed and carries every other entry over as the same object; files with more than one hard
link are ``lstat``-ed every time. Whenever the watch cannot vouch for the tree (queue overflow, a
directory that could not be watched, the root moved, an event it cannot place) the snapshot walks
everything and arms the watch again; ``full=True`` walks everything regardless, for snapshots a
verdict rests on.

Errors (:class:`SnapshotError`, a ``RuntimeFailure``): a workspace that is not a directory, a
manifest whose JSON is malformed, content that is in neither the blob store nor the workspace.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import json
import os
import stat
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pathspec

from tether.canonical import HASH_PREFIX, bytes_hash, canonical_json
from tether.errors import RuntimeFailure, TetherError
from tether.quickenum import Quick
from tether.watch import TreeWatch, WatchUnavailable, open_dir

__all__ = [
    "ALWAYS_SKIPPED",
    "MAX_BLOB_BYTES",
    "RACY_WINDOW_NS",
    "BlobStore",
    "Change",
    "ChangeKind",
    "ContentMismatch",
    "DiffStat",
    "Entry",
    "EntryKind",
    "IgnoreRules",
    "Manifest",
    "MemoryBlobStore",
    "SnapshotError",
    "Watch",
    "changes",
    "diff_stat",
    "materialise",
    "probe",
    "read_content",
    "skipped_dirs",
    "take",
    "unified_diff",
]

ALWAYS_SKIPPED = frozenset(
    {
        ".git",
        ".tether",
        ".venv",
        "venv",
        "__pycache__",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
        ".hypothesis",
    }
)
RACY_WINDOW_NS = 2_000_000_000  # covers coarse kernel clocks and 2 s filesystems (FAT)
MAX_BLOB_BYTES = 32 * 1024 * 1024  # larger files are hashed, not stored
BINARY_PROBE = 8000  # like git: a NUL byte in the first 8000 bytes means binary
MANIFEST_VERSION = 1
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class SnapshotError(RuntimeFailure):
    """The snapshot could not be taken or read; a verdict that depends on it is ERROR."""


class ContentMismatch(SnapshotError):
    """Stored bytes that do not hash to the digest a manifest records for them: the store was altered."""

    def __init__(self, path: str, recorded: str, found: str) -> None:
        self.path, self.recorded, self.found = path, recorded, found
        super().__init__(f"{path}: the stored content ({found}) does not match its recorded digest {recorded}")


class BlobStore(Protocol):
    """Content-addressed bytes (the event store is one)."""

    def put_blob(self, data: bytes) -> str: ...

    def get_blob(self, h: str) -> bytes: ...


class MemoryBlobStore:
    """A BlobStore in a dict: for tests, benchmarks and throw-away comparisons."""

    def __init__(self) -> None:
        self.blobs: dict[str, bytes] = {}

    def put_blob(self, data: bytes) -> str:
        h = bytes_hash(data)
        self.blobs[h] = data
        return h

    def get_blob(self, h: str) -> bytes:
        return self.blobs[h]


class EntryKind(enum.StrEnum, metaclass=Quick):
    FILE = "file"
    LINK = "link"


@dataclass(frozen=True, slots=True)
class Entry:
    """One path: its content digest (file bytes, or a link's target) and the stat fields the cache keys on."""

    path: str
    kind: EntryKind
    digest: str
    mode: int  # permission bits (stat.S_IMODE)
    size: int
    mtime_ns: int
    ctime_ns: int
    ino: int

    @property
    def executable(self) -> bool:
        return bool(self.mode & 0o111)

    def same_content(self, other: Entry) -> bool:
        """Equal as a change is judged: kind, bytes and the executable bit (like git, not the other bits)."""
        return self.kind == other.kind and self.digest == other.digest and self.executable == other.executable

    def to_row(self) -> list[Any]:
        return [self.path, self.kind.value, self.digest, self.mode, self.size, self.mtime_ns, self.ctime_ns, self.ino]

    @classmethod
    def from_row(cls, row: Any, where: str) -> Entry:
        if not (isinstance(row, list) and len(row) == 8):
            raise SnapshotError(f"{where}: expected [path, kind, digest, mode, size, mtime_ns, ctime_ns, ino]")
        path, kind, digest, *numbers = row
        if not isinstance(path, str) or "\x00" in path or not set(path.split("/")).isdisjoint(("", ".", "..")):
            raise SnapshotError(f"{where}.path: expected a relative path inside the workspace, found {path!r}")
        if kind not in ("file", "link"):
            raise SnapshotError(f"{where}.kind: expected 'file' or 'link', found {kind!r}")
        if not (isinstance(digest, str) and digest.startswith(HASH_PREFIX) and len(digest) == len(HASH_PREFIX) + 64):
            raise SnapshotError(f"{where}.digest: expected 'sha256:<64 hex>', found {digest!r}")
        if not all(type(n) is int and n >= 0 for n in numbers):
            raise SnapshotError(f"{where}: mode, size, mtime_ns, ctime_ns and ino must be non-negative integers")
        return cls(path, EntryKind(kind), digest, *numbers)


@dataclass(frozen=True)
class IgnoreRules:
    """What a chain of snapshots leaves out, fixed when its first snapshot was taken.

    ``gitignores`` maps a directory ("" for the root) to the lines of its ``.gitignore``; the deepest
    file with a matching pattern decides, as in git. ``exclude`` patterns (root-relative, gitignore
    syntax) always win.
    """

    gitignores: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    exclude: tuple[str, ...] = ()
    _specs: dict[str, pathspec.GitIgnoreSpec] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for d, lines in self.gitignores.items():
            self._specs[d] = _spec(lines)
        self._specs["\0exclude"] = _spec(self.exclude)

    def ignored(self, path: str, *, is_dir: bool) -> bool:
        probe = path + "/" if is_dir else path
        if self._specs["\0exclude"].match_file(probe):
            return True
        parts = path.split("/")
        for depth in range(len(parts) - 1, -1, -1):  # deepest .gitignore first
            spec = self._specs.get("/".join(parts[:depth]))
            if spec is None:
                continue
            rel = "/".join(parts[depth:]) + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return bool(verdict)
        return False

    def to_json(self) -> dict[str, Any]:
        return {"gitignores": {d: list(v) for d, v in sorted(self.gitignores.items())}, "exclude": list(self.exclude)}

    @classmethod
    def from_json(cls, value: Any) -> IgnoreRules:
        if not isinstance(value, dict) or set(value) != {"gitignores", "exclude"}:
            raise SnapshotError("manifest.ignore: expected {gitignores, exclude}")
        gi, ex = value["gitignores"], value["exclude"]
        if not isinstance(gi, dict) or not all(
            isinstance(k, str) and isinstance(v, list) and all(isinstance(x, str) for x in v) for k, v in gi.items()
        ):
            raise SnapshotError("manifest.ignore.gitignores: expected {directory: [pattern lines]}")
        if not isinstance(ex, list) or not all(isinstance(x, str) for x in ex):
            raise SnapshotError("manifest.ignore.exclude: expected a list of patterns")
        return cls({k: tuple(v) for k, v in gi.items()}, tuple(ex))


def _spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    """Compile gitignore lines; a line pathspec cannot compile is dropped (that can only show *more* files)."""
    good = []
    for line in lines:
        try:
            pathspec.GitIgnoreSpec.from_lines([line])
        except Exception:  # pathspec raises several types for a bad pattern
            continue
        good.append(line)
    return pathspec.GitIgnoreSpec.from_lines(good)


@dataclass(frozen=True)
class Manifest:
    """A snapshot: path -> Entry, the paths that could not be read (path -> why), and the rules used."""

    entries: Mapping[str, Entry]
    errors: Mapping[str, str]
    rules: IgnoreRules
    started_ns: int
    # In memory only: ignore decisions already made under ``rules`` (a path with "/" appended for a dir).
    _decided: Mapping[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_json(self) -> bytes:
        return canonical_json(
            {
                "version": MANIFEST_VERSION,
                "started_ns": self.started_ns,
                "entries": [e.to_row() for _, e in sorted(self.entries.items())],
                "errors": dict(sorted(self.errors.items())),
                "ignore": self.rules.to_json(),
            }
        ).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes | str) -> Manifest:
        try:
            doc = json.loads(data)
        except (ValueError, UnicodeDecodeError) as e:
            raise SnapshotError(f"manifest: not JSON ({e})") from e
        if not isinstance(doc, dict) or doc.get("version") != MANIFEST_VERSION:
            raise SnapshotError(f"manifest.version: expected {MANIFEST_VERSION}")
        started, rows, errors = doc.get("started_ns"), doc.get("entries"), doc.get("errors")
        if type(started) is not int:
            raise SnapshotError("manifest.started_ns: expected an integer")
        if not isinstance(rows, list):
            raise SnapshotError("manifest.entries: expected a list")
        if not isinstance(errors, dict) or not all(isinstance(v, str) for v in errors.values()):
            raise SnapshotError("manifest.errors: expected {path: reason}")
        entries = {}
        for i, row in enumerate(rows):
            entry = Entry.from_row(row, f"manifest.entries[{i}]")
            if entry.path in entries:
                raise SnapshotError(f"manifest.entries[{i}].path: {entry.path!r} appears twice")
            entries[entry.path] = entry
        if nested := _nested(entries):
            i = next(i for i, row in enumerate(rows) if row[0] == nested[0])
            raise SnapshotError(f"manifest.entries[{i}].path: {nested[0]!r} lies under {nested[1]!r}, a file or link")
        return cls(entries, errors, IgnoreRules.from_json(doc.get("ignore")), started)


def _nested(entries: Mapping[str, Entry]) -> tuple[str, str] | None:
    """A path recorded under another recorded path, and that one: (path, ancestor); None in a real snapshot.

    A file or a link is never also a folder of another entry, so only a crafted manifest has one; rebuilding
    it would make the inner entry through the outer link, wherever that points.
    """
    for path in entries:
        at = path.rfind("/")
        while at > 0:
            if path[:at] in entries:
                return path, path[:at]
            at = path.rfind("/", 0, at)
    return None


# ---- taking a snapshot ---------------------------------------------------------------------------


class Watch:
    """What keeps a chain of snapshots cheap: an inotify watch of the tree the latest snapshot walked.

    Pass the same Watch to every :func:`take` of a chain. While it is valid for ``previous`` (it was armed
    by the walk that made ``previous``, or kept up to date since), a snapshot re-lists only the directories
    the kernel reported changed and carries everything else over; otherwise it walks the whole tree and
    arms the watch again. Files with more than one hard link are ``lstat``-ed every time: a write through
    another link is reported in that link's directory only. Close it when the chain ends.
    """

    def __init__(self) -> None:
        self.tree: TreeWatch | None = None
        self.base: Manifest | None = None
        self.unavailable: str | None = None
        self.files: dict[str, set[str]] = {}  # directory -> names of the entries recorded in it
        self.dirs: dict[str, set[str]] = {}  # directory -> names of the subdirectories walked
        self.volatile: set[str] = set()  # files with more than one hard link
        self.walks = 0  # full walks made (for tests and benchmarks)

    def close(self) -> None:
        if self.tree is not None:
            self.tree.close()
        self.tree, self.base = None, None

    def rearm(self) -> None:
        """Start over for a full walk: a fresh inotify instance (the old one's queue is stale)."""
        self.close()
        self.files, self.dirs, self.volatile = {}, {}, set()
        self.walks += 1
        if self.unavailable is None:
            try:
                self.tree = TreeWatch()
            except WatchUnavailable as e:
                self.unavailable = str(e)

    def disarm(self, why: str) -> None:
        """A directory could not be watched: carry on without (every snapshot is a full walk)."""
        self.close()
        self.unavailable = why


def take(
    workspace: str | Path,
    *,
    exclude: Iterable[str] = (),
    previous: Manifest | None = None,
    blobs: BlobStore | None = None,
    watch: Watch | None = None,
    full: bool = False,
) -> Manifest:
    """Snapshot ``workspace``, reading only what changed since ``previous``; store new bytes in ``blobs``.

    Pass the same ``blobs`` (and ``watch``) to every snapshot of a chain: content is stored when a file is
    read, and a file the stat cache or the watch carries over is not read again. ``exclude`` belongs to the
    chain's first snapshot; later ones inherit the rules of ``previous``. ``full`` walks the whole tree even
    when the watch could answer (the stat cache still applies): what the verdict relies on.
    """
    root = os.fspath(workspace)
    if not os.path.isdir(root):
        raise SnapshotError(f"{root}: the workspace is not a directory")
    exclude = tuple(exclude)
    if previous is not None and exclude and exclude != previous.rules.exclude:
        raise SnapshotError("exclude patterns are fixed by the first snapshot of a chain; pass them there")
    started = time.time_ns()
    # The watch answers only for the manifest it was kept with, and only for one that read everything
    # (an unreadable path must be looked at again, not carried over as missing).
    if (
        watch is not None
        and watch.tree is not None
        and not full
        and previous is not None
        and previous.ok
        and watch.base is previous
    ):
        m = _Scan(root, previous, blobs, exclude, watch).incremental(started)
        if m is not None:
            watch.base = m
            return m
    if watch is not None:
        watch.rearm()
    scan = _Scan(root, previous, blobs, exclude, watch)
    scan.walk([""])
    rules = previous.rules if previous is not None else IgnoreRules(scan.gitignores, exclude)
    m = Manifest(scan.entries, scan.errors, rules, started, scan.decided)
    if watch is not None:
        watch.base = m if m.ok and watch.tree is not None else None
        watch.volatile = scan.linked
    return m


class _Redo(Exception):
    """The incremental snapshot met something it cannot vouch for: walk everything instead."""


class _Scan:
    """One snapshot's work: a walk of (part of) the tree; its results are plain dicts the Manifest takes over."""

    def __init__(
        self,
        root: str,
        previous: Manifest | None,
        blobs: BlobStore | None,
        exclude: tuple[str, ...],
        watch: Watch | None,
    ) -> None:
        self.root = root
        self.previous = previous
        self.blobs = blobs
        self.watch = watch
        self.entries: dict[str, Entry] = {}
        self.errors: dict[str, str] = {}
        # Ignore decisions depend only on the chain's rules, so the whole chain shares one cache.
        self.decided: dict[str, bool] = previous._decided if previous is not None else {}  # type: ignore[assignment]
        self.gitignores: dict[str, tuple[str, ...]] = {}
        # The baseline builds its rules while it walks (a directory's .gitignore is read before its entries).
        self.rules = previous.rules if previous is not None else IgnoreRules(self.gitignores, exclude)
        self.cutoff = previous.started_ns - RACY_WINDOW_NS if previous is not None else 0
        self.linked: set[str] = set()  # files seen with more than one hard link in this scan
        if previous is None:
            self._read_ignore_file("", os.path.join(".git", "info", "exclude"))

    # -- the full walk (also of a new subtree) --

    def walk(self, stack: list[str]) -> None:
        while stack:
            rel_dir = stack.pop()
            if self.previous is None:
                self._read_ignore_file(rel_dir, ".gitignore")
            taken = self._take_dir(rel_dir)
            if taken is not None:
                stack += [_join(rel_dir, d) for d in taken[1]]

    def _take_dir(self, rel_dir: str) -> tuple[list[tuple[str, os.stat_result]], list[str]] | None:
        """List one directory and record its files; its (files, subdirectories), or None if it cannot be listed."""
        listed = self._list(rel_dir)
        if listed is None:
            return None
        fd, files, dirs = listed
        try:
            for name, st in files:
                self._record(_join(rel_dir, name), fd, name, st)
        finally:
            os.close(fd)
        return files, dirs

    def _list(self, rel_dir: str) -> tuple[int, list[tuple[str, os.stat_result]], list[str]] | None:
        """Open, watch (before listing) and list one directory: its fd, (name, lstat) of its files, its subdirs."""
        try:
            fd = open_dir(os.path.join(self.root, rel_dir))
        except OSError as e:
            self.errors[(rel_dir or ".") + "/"] = f"directory unreadable: {e.strerror or e}"
            return None
        try:
            self._arm(rel_dir, fd)
            with os.scandir(fd) as it:
                listing = list(it)
            files, dirs = [], []
            for de in listing:
                if de.name in ALWAYS_SKIPPED:
                    continue
                rel = _join(rel_dir, de.name)
                try:
                    rel.encode("utf-8")
                except UnicodeEncodeError:
                    shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
                    self.errors[shown] = "file name is not valid UTF-8"
                    continue
                try:
                    st = de.stat(follow_symlinks=False)
                except OSError as e:
                    self.errors[rel] = f"cannot stat: {e.strerror or e}"
                    continue
                is_dir = stat.S_ISDIR(st.st_mode)
                if self._ignored(rel, is_dir):
                    continue
                if is_dir:
                    dirs.append(de.name)
                else:
                    files.append((de.name, st))
        except OSError as e:
            os.close(fd)
            self.errors[(rel_dir or ".") + "/"] = f"directory unreadable: {e.strerror or e}"
            return None
        if self.watch is not None:
            self.watch.files[rel_dir] = {n for n, _ in files}
            self.watch.dirs[rel_dir] = set(dirs)
        return fd, files, dirs

    def _arm(self, rel_dir: str, fd: int) -> None:
        w = self.watch
        if w is None or w.tree is None:
            return
        try:
            w.tree.add(rel_dir, fd)
        except WatchUnavailable as e:
            w.disarm(str(e))

    # -- the incremental snapshot --

    def incremental(self, started: int) -> Manifest | None:
        """The next manifest from ``previous`` and the directories the watch reports; None: walk everything."""
        w, prev = self.watch, self.previous
        assert w is not None and w.tree is not None and prev is not None
        changed = w.tree.changes()
        if changed is None:
            return None
        self.entries = dict(prev.entries)
        try:
            for rel in sorted(changed.replaced):
                self._drop_tree(rel)
            relisted = set()
            for rel in sorted(changed.dirs):
                if rel in w.files:  # else: under a dropped tree, walked afresh from its parent
                    self._relist(rel)
                    relisted.add(rel)
            self._check_links(relisted)
        except _Redo:
            return None
        if w.tree is None:  # a new directory could not be watched
            return None
        return Manifest(self.entries, self.errors, prev.rules, started, self.decided)

    def _relist(self, rel_dir: str) -> None:
        w = self.watch
        assert w is not None
        old_files, old_dirs = w.files.get(rel_dir, set()), w.dirs.get(rel_dir, set())
        taken = self._take_dir(rel_dir)
        if taken is None:
            raise _Redo  # the directory went away under us: its parent's event is on its way
        files, dirs = taken
        for name in old_files - {n for n, _ in files}:
            self.entries.pop(_join(rel_dir, name), None)
            w.volatile.discard(_join(rel_dir, name))
        for name in old_dirs - set(dirs):
            self._drop_tree(_join(rel_dir, name))
        self.walk([_join(rel_dir, d) for d in dirs if d not in old_dirs])

    def _drop_tree(self, rel: str) -> None:
        """Forget a directory that was deleted, moved or replaced: its entries, its index, its watches."""
        w = self.watch
        assert w is not None
        parent, _, name = rel.rpartition("/")
        w.dirs.get(parent, set()).discard(name)
        stack = [rel]
        while stack:
            d = stack.pop()
            for f in w.files.pop(d, set()):
                self.entries.pop(_join(d, f), None)
                w.volatile.discard(_join(d, f))
            stack += [_join(d, s) for s in w.dirs.pop(d, set())]
        if w.tree is not None:  # (None: a new directory could not be watched; this snapshot will walk)
            w.tree.forget(rel)

    def _check_links(self, relisted: set[str]) -> None:
        """Re-check every file with more than one hard link (and any tracked link of a newly linked file)."""
        w = self.watch
        assert w is not None
        if self.linked - w.volatile:  # a new link: every tracked path of that inode is checked from now on
            inodes = {self.entries[p].ino for p in self.linked if p in self.entries}
            w.volatile |= {p for p, e in self.entries.items() if e.ino in inodes and e.kind is EntryKind.FILE}
        for rel in sorted(w.volatile):
            parent, _, name = rel.rpartition("/")
            if parent in relisted:
                continue
            try:
                fd = open_dir(os.path.join(self.root, parent))
            except OSError as e:
                raise _Redo from e
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                self._record(rel, fd, name, st)
            except OSError as e:
                raise _Redo from e
            finally:
                os.close(fd)

    # -- one directory entry --

    def _ignored(self, rel: str, is_dir: bool) -> bool:
        key = rel + "/" if is_dir else rel
        verdict = self.decided.get(key)
        if verdict is None:
            verdict = self.decided[key] = self.rules.ignored(rel, is_dir=is_dir)
        return verdict

    def _read_ignore_file(self, rel_dir: str, name: str) -> None:
        """Read an ignore file as text (never follow a link, never run anything); a missing one is normal."""
        try:
            fd = os.open(os.path.join(self.root, rel_dir, name), _OPEN_FLAGS)
        except OSError:
            return
        try:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                text = _read_all(fd, MAX_BLOB_BYTES).decode("utf-8", "replace")
                lines = tuple(line for line in text.splitlines() if line.strip())
                if lines:
                    self.gitignores[rel_dir] = self.gitignores.get(rel_dir, ()) + lines
                    self.rules._specs[rel_dir] = _spec(self.gitignores[rel_dir])
        finally:
            os.close(fd)

    def _record(self, rel: str, dir_fd: int, name: str, st: os.stat_result) -> None:
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            self.linked.add(rel)
        prev = self.previous.entries.get(rel) if self.previous is not None else None
        if prev is not None and _unchanged(prev, st) and max(prev.mtime_ns, prev.ctime_ns) < self.cutoff:
            self.entries[rel] = prev
            return
        data: bytes | None
        try:
            if stat.S_ISLNK(st.st_mode):
                kind, digest, data = EntryKind.LINK, *_hashed(os.fsencode(os.readlink(name, dir_fd=dir_fd)))
            elif stat.S_ISREG(st.st_mode):
                kind = EntryKind.FILE
                digest, data, st = _read_file(name, dir_fd)
            else:
                self.errors[rel] = "not a regular file, symlink or directory (FIFO, socket or device)"
                return
        except (OSError, SnapshotError) as exc:
            self.errors[rel] = f"unreadable: {getattr(exc, 'strerror', None) or exc}"
            return
        if data is not None and self.blobs is not None and not (prev is not None and prev.digest == digest):
            self.blobs.put_blob(data)
        self.entries[rel] = Entry(
            rel, kind, digest, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino
        )


def _join(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


def _hashed(data: bytes) -> tuple[str, bytes]:
    return bytes_hash(data), data


def _unchanged(e: Entry, st: os.stat_result) -> bool:
    kind = EntryKind.LINK if stat.S_ISLNK(st.st_mode) else EntryKind.FILE if stat.S_ISREG(st.st_mode) else None
    return (
        e.kind == kind
        and e.size == st.st_size
        and e.mtime_ns == st.st_mtime_ns
        and e.ctime_ns == st.st_ctime_ns
        and e.ino == st.st_ino
        and e.mode == stat.S_IMODE(st.st_mode)
    )


def _read_file(path: str, dir_fd: int | None = None) -> tuple[str, bytes | None, os.stat_result]:
    """(digest, bytes or None when too large to store, stat) of a regular file, never following a link.

    ``O_NONBLOCK`` keeps a FIFO swapped in after the lstat from hanging the read. The stat is taken on
    the open file *before* reading, so a write during the read leaves a newer mtime/ctime on disk than
    the one recorded, and the next snapshot reads the file again.
    """
    fd = os.open(path, _OPEN_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SnapshotError("replaced by something that is not a regular file while being read")
        if st.st_size <= MAX_BLOB_BYTES:
            data = _read_all(fd, MAX_BLOB_BYTES + 1)
            if len(data) <= MAX_BLOB_BYTES:
                return bytes_hash(data), data, st
            os.lseek(fd, 0, os.SEEK_SET)
        h = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
        return HASH_PREFIX + h.hexdigest(), None, st
    finally:
        os.close(fd)


def _read_all(fd: int, limit: int) -> bytes:
    chunks, total = [], 0
    while total < limit and (chunk := os.read(fd, min(1 << 20, limit - total))):
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


# ---- comparing snapshots -------------------------------------------------------------------------


class ChangeKind(enum.StrEnum, metaclass=Quick):
    ADDED = "added"
    MODIFIED = "modified"
    DELETED = "deleted"


@dataclass(frozen=True)
class Change:
    path: str
    kind: ChangeKind
    before: Entry | None
    after: Entry | None


def changes(before: Manifest, after: Manifest) -> list[Change]:
    """The paths whose content, kind or executable bit differ, sorted by path.

    A path either manifest could not read is *unknown*, not changed: it is left out here, and the
    caller must treat ``before.errors`` / ``after.errors`` as an error (fail closed). An entry a later
    snapshot carried over is the same object, so consecutive snapshots compare in one pass of identity
    checks.
    """
    unknown = before.errors.keys() | after.errors.keys()
    old, new = before.entries, after.entries
    out = []
    for path, a in new.items():
        b = old.get(path)
        if b is a or path in unknown:
            continue
        if b is None:
            out.append(Change(path, ChangeKind.ADDED, None, a))
        elif not b.same_content(a):
            out.append(Change(path, ChangeKind.MODIFIED, b, a))
    out += [Change(p, ChangeKind.DELETED, b, None) for p, b in old.items() if p not in new and p not in unknown]
    return sorted(out, key=lambda c: c.path)


def read_content(entry: Entry, blobs: BlobStore | None, workspace: str | Path | None = None) -> bytes:
    """An entry's bytes: from the blob store, else from the workspace if the file still has that digest."""
    if blobs is not None:
        try:
            return blobs.get_blob(entry.digest)
        except (LookupError, TetherError):
            pass
    if workspace is not None:
        path = os.path.join(os.fspath(workspace), entry.path)
        try:
            data = os.fsencode(os.readlink(path)) if entry.kind is EntryKind.LINK else _read_file(path)[1] or b""
        except OSError as e:
            raise SnapshotError(f"{entry.path}: content not stored and unreadable: {e.strerror or e}") from e
        if bytes_hash(data) == entry.digest:
            return data
    raise SnapshotError(f"{entry.path}: content {entry.digest} is not stored and the file has changed since")


def materialise(manifest: Manifest, blobs: BlobStore, dest: str | Path) -> None:
    """Write the tree ``manifest`` records into ``dest`` (created, or an empty directory): files, modes, links.

    Why: replay and fork start from a workspace rebuilt from the log alone, on this machine or another
    (an imported package), never from whatever the original directory holds today. Every byte comes
    from ``blobs`` and is checked against its digest, so a tampered or missing blob is a
    :class:`SnapshotError` naming the path, never a silently different workspace. A manifest that
    could not read some path (``errors``) cannot be rebuilt faithfully and is refused the same way.
    Files are created exclusively and without following links, and links are made last, so no entry
    can write through another one.
    """
    root = Path(dest)
    if manifest.errors:
        listed = ", ".join(f"{p} ({why})" for p, why in sorted(manifest.errors.items())[:5])
        raise SnapshotError(
            f"the snapshot could not read {len(manifest.errors)} path(s), so it cannot be rebuilt: {listed}"
        )
    if nested := _nested(manifest.entries):
        raise SnapshotError(f"{nested[0]}: cannot be rebuilt: {nested[1]!r} is recorded as a link or file")
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise SnapshotError(f"{root}: expected an empty directory to rebuild the workspace in")
    ordered = sorted(manifest.entries.values(), key=lambda e: (e.kind is EntryKind.LINK, e.path))
    made: set[str] = set()  # directories already created: one mkdir per directory, not per file
    for entry in ordered:
        try:
            data = blobs.get_blob(entry.digest)
        except (LookupError, TetherError) as e:
            raise SnapshotError(f"{entry.path}: content {entry.digest} is not in the blob store ({e})") from e
        if (found := bytes_hash(data)) != entry.digest:
            raise ContentMismatch(entry.path, entry.digest, found)
        try:
            _write_entry(root, entry, data, made)
        except OSError as e:
            raise SnapshotError(f"{entry.path}: cannot be written under {root}: {e.strerror or e}") from e


def skipped_dirs(workspace: str | Path) -> list[str]:
    """The directories at the workspace's root a snapshot leaves out by name (:data:`ALWAYS_SKIPPED`).

    Only their names are recorded (with the start snapshot), so that a rebuilt workspace lists the same
    entries (``.git/``, caches) — as empty directories: their contents are not the run's to replay.
    """
    root = Path(workspace)
    return sorted(n for n in ALWAYS_SKIPPED if (root / n).is_dir() and not (root / n).is_symlink())


def _write_entry(root: Path, entry: Entry, data: bytes, made: set[str]) -> None:
    parent = os.path.dirname(entry.path)
    if parent not in made:
        os.makedirs(os.path.join(root, parent), exist_ok=True)
        made.add(parent)
    target = os.path.join(root, entry.path)
    if entry.kind is EntryKind.LINK:
        os.symlink(os.fsdecode(data), target)
        return
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fchmod(fd, entry.mode & 0o777)
    finally:
        os.close(fd)


def probe(workspace: str | Path, path: str) -> Entry | None:
    """One workspace-relative path read now, as a snapshot would read it (for checks that touch a few paths).

    None when no file or symlink is there: nothing, a directory, or a parent that is not a real
    directory (a snapshot never looks behind a symlink). Raises :class:`SnapshotError` for a FIFO,
    socket or device, or a file that cannot be read.
    """
    root, parts = os.fspath(workspace), path.split("/")
    full = os.path.join(root, *parts)
    try:
        for i in range(1, len(parts)):
            if not stat.S_ISDIR(os.lstat(os.path.join(root, *parts[:i])).st_mode):
                return None
        st = os.lstat(full)
        if stat.S_ISDIR(st.st_mode):
            return None
        if stat.S_ISLNK(st.st_mode):
            kind, digest = EntryKind.LINK, bytes_hash(os.fsencode(os.readlink(full)))
        elif stat.S_ISREG(st.st_mode):
            kind = EntryKind.FILE
            digest, _, st = _read_file(full)
        else:
            raise SnapshotError(f"{path}: not a regular file, symlink or directory (FIFO, socket or device)")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as e:
        raise SnapshotError(f"{path}: unreadable: {e.strerror or e}") from e
    return Entry(path, kind, digest, stat.S_IMODE(st.st_mode), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


@dataclass(frozen=True)
class DiffStat:
    """Line counts of one change; ``binary`` changes have none. ``before_lines`` is the baseline file's length."""

    insertions: int
    deletions: int
    before_lines: int
    binary: bool = False


def _lines(data: bytes) -> list[str]:
    """Split on newline only (as git does), keeping the terminator, so a missing final newline is a change."""
    parts = data.decode("utf-8", "replace").split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _sides(change: Change, blobs: BlobStore | None, workspace: str | Path | None) -> tuple[bytes, bytes]:
    a = read_content(change.before, blobs, workspace) if change.before is not None else b""
    b = read_content(change.after, blobs, workspace) if change.after is not None else b""
    return a, b


def _is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def diff_stat(change: Change, blobs: BlobStore | None, workspace: str | Path | None = None) -> DiffStat:
    """Lines inserted and deleted by ``change`` (difflib), and the lines the file had before."""
    a, b = _sides(change, blobs, workspace)
    if _is_binary(a) or _is_binary(b):
        return DiffStat(0, 0, 0, binary=True)
    la, lb = _lines(a), _lines(b)
    ins = dels = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag != "equal":
            dels += i2 - i1
            ins += j2 - j1
    return DiffStat(ins, dels, len(la))


def unified_diff(change: Change, blobs: BlobStore | None, workspace: str | Path | None = None) -> str:
    """A git-style unified diff of one change, for reviewers and humans; binary files say so."""
    a, b = _sides(change, blobs, workspace)
    old = f"a/{change.path}" if change.before is not None else "/dev/null"
    new = f"b/{change.path}" if change.after is not None else "/dev/null"
    head = [f"diff --git a/{change.path} b/{change.path}\n"]
    if change.before is None and change.after is not None:
        head.append(f"new file mode {_git_mode(change.after)}\n")
    elif change.after is None and change.before is not None:
        head.append(f"deleted file mode {_git_mode(change.before)}\n")
    elif change.before is not None and change.after is not None and _git_mode(change.before) != _git_mode(change.after):
        head += [f"old mode {_git_mode(change.before)}\n", f"new mode {_git_mode(change.after)}\n"]
    if _is_binary(a) or _is_binary(b):
        return "".join([*head, f"Binary files {old} and {new} differ\n"])
    body = []
    for line in difflib.unified_diff(_lines(a), _lines(b), old, new, n=3):
        body.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(head + body)


def _git_mode(e: Entry) -> str:
    if e.kind is EntryKind.LINK:
        return "120000"
    return "100755" if e.executable else "100644"
