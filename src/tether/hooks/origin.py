"""The commit a hook session began on, and a file's text in it: what the stop's integrity checks compare a file a
shell command touched with.

A hook session keeps no snapshot of the workspace, so a Python file touched by other means than a file tool (a Bash
heredoc, ``sed -i``, ``git checkout``) had no version to compare with, and every line of it counted as the
session's: a line the project had long held that compares with a test's literal, or imports pytest (a plugin under
``src/``), refused every stop of a session that so much as touched its file. In a git workspace the session's
baseline names the commit ``HEAD`` was on at its start, and the stop reads the file's text there: only the lines
that are not that text's count.

The text is trusted because it is read object by object (the commit, each tree down the path, the blob) and each
object's bytes are hashed and compared with the name they were asked for; the commit's name is in the log. So the
agent cannot make a line look old: rewriting a loose object, planting a pack, ``git replace`` or a rewritten ref
change nothing that is read, and a repository found elsewhere (a ``.git`` made in the workspace) can only hold the
very same objects. Anything that cannot be read so (no repository, an object missing, one whose bytes are not its
name, a path that is not a file there, a file over :data:`MAX_BYTES`) is None: the caller counts every line, as
without a commit (fail closed). dulwich is imported only here, only at a session's start and at a stop.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator

    from dulwich.index import Index
    from dulwich.objects import Tree
    from dulwich.repo import Repo

#: A file larger than this in the commit is not read (every line of it counts).
MAX_BYTES = 4 * 1024 * 1024
_KINDS = {1: b"commit", 2: b"tree", 3: b"blob"}


def head(workspace: Path) -> tuple[str, str] | None:
    """The commit ``HEAD`` names in the repository holding ``workspace``, and the workspace's folder in it (``""``
    at its top, else ``a/b/``); None outside a repository or before its first commit."""
    try:
        from dulwich.repo import Repo

        with Repo.discover(str(workspace)) as repo:
            commit = repo.head().decode("ascii")
            inside = os.path.relpath(os.path.realpath(workspace), os.path.realpath(repo.path))
    except Exception:  # no repository, an unborn HEAD, a repository dulwich cannot read: no origin
        return None
    if inside.startswith(".."):
        return None
    return commit, "" if inside == "." else inside.replace(os.sep, "/") + "/"


def texts(workspace: Path, commit: str, folder: str, paths: list[str]) -> dict[str, bytes]:
    """The bytes each of ``paths`` (workspace-relative) has in ``commit``, where each object on the way is the one
    its name says; a path that cannot be read so is left out."""
    if not paths:
        return {}
    try:
        from dulwich.repo import Repo

        repo = Repo.discover(str(workspace))
    except Exception:
        return {}
    out: dict[str, bytes] = {}
    with repo:
        try:
            root = _tree_of(repo, commit)
        except Exception:
            return {}
        trees: dict[str, Tree] = {}  # read and checked once a stop, however many files lie below each
        for rel in paths:
            try:
                data = _file(repo, root, (folder + rel).split("/"), trees)
            except Exception:  # missing, not a file, not its name, too large: every line counts
                continue
            out[rel] = data
    return out


#: At most this many files changed and not committed at a session's start are kept, and at most this many bytes of
#: them in all: past either, the rest count whole at the stop, as before they were kept at all.
MAX_DIRTY_FILES = 1000
MAX_DIRTY_BYTES = 64 * 1024 * 1024
#: A repository tracking more files than this keeps none at a session's start: finding them reads the index and walks
#: the commit's trees and the work tree (~30-55 ms for 815 tracked files here), which the session's first call awaits.
MAX_TRACKED = 20_000
#: How many files the walk for untracked ones looks at, at most (ignored folders, ``.git`` and ``.tether`` are not
#: walked): past it, the untracked files not yet found count whole at the stop.
MAX_WALKED = 20_000


def dirty(workspace: Path, commit: str) -> dict[str, bytes]:
    """The user's work in progress in ``workspace``, workspace-relative, with its bytes now: the tracked files whose
    text is not their text in ``commit`` (changed in the work tree, or staged), then the untracked files git does
    not ignore (text, not binary); regular files of at most :data:`MAX_BYTES` each, within :data:`MAX_DIRTY_FILES`
    and :data:`MAX_DIRTY_BYTES`. A tracked file whose size and modification time are the index's is taken as the
    index has it (git's own shortcut); another is read and hashed. Empty outside a repository or where it cannot be
    read."""
    try:
        from dulwich.repo import Repo

        repo = Repo.discover(str(workspace))
    except Exception:
        return {}
    with repo:
        try:
            return _dirty(repo, os.path.realpath(workspace), commit)
        except Exception:  # an index or tree dulwich cannot read: nothing kept, every line counts as before
            return {}


def _dirty(repo: Repo, workspace: str, commit: str) -> dict[str, bytes]:
    import itertools

    from dulwich.objects import ObjectID

    top = os.path.realpath(repo.path)
    index = repo.open_index()
    if len(index) > MAX_TRACKED:
        return {}
    tree = ObjectID(_tree_of(repo, commit).encode("ascii"))
    staged = {p for (old, new), _, _ in index.changes_from_tree(repo.object_store, tree) if (p := new or old)}
    untracked = (
        (rel, data)
        for rel in _untracked(repo, top, workspace, set(index.paths()))
        if (data := _regular(os.path.join(workspace, rel))) is not None and b"\x00" not in data[:8192]
    )
    out: dict[str, bytes] = {}
    size = 0
    for rel, data in itertools.chain(_changed(index, top, workspace, staged), untracked):
        size += len(data)
        if len(out) >= MAX_DIRTY_FILES or size > MAX_DIRTY_BYTES:
            break
        out[rel.replace(os.sep, "/")] = data
    return out


def _changed(index: Index, top: str, workspace: str, staged: set[bytes]) -> Iterator[tuple[str, bytes]]:
    """The tracked files under ``workspace`` whose text is not the commit's (``staged``: the paths whose index entry
    is not), workspace-relative, with their bytes."""
    import stat

    from dulwich.index import IndexEntry

    for path, entry in index.items():
        where = os.path.join(top, os.fsdecode(path))
        rel = os.path.relpath(where, workspace)
        if rel == ".." or rel.startswith(".." + os.sep) or not isinstance(entry, IndexEntry):
            continue  # outside the workspace, or a conflict: not the user's text
        try:
            st = os.lstat(where)
        except OSError:
            continue  # deleted: a file made again later is new, every line counts
        if not stat.S_ISREG(st.st_mode):
            continue
        if path not in staged and st.st_size == entry.size and _ns(entry.mtime) == st.st_mtime_ns:
            continue  # as the index has it, which is the commit's
        data = _regular(where)
        algorithm = hashlib.sha1 if len(entry.sha) == 40 else hashlib.sha256  # the repository's object format
        if data is None or (
            path not in staged and algorithm(b"blob %d\x00" % len(data) + data).hexdigest() == entry.sha.decode()
        ):
            continue  # too large, swapped since, or touched and not changed
        yield rel, data


def _untracked(repo: Repo, top: str, workspace: str, tracked: set[bytes]) -> Iterator[str]:
    """The files under ``workspace`` that git neither tracks nor ignores, workspace-relative: its own ignore rules
    (dulwich's reading of them), ignored folders not walked, nor links to folders, nor ``.git`` or ``.tether``
    (tether's log); at most :data:`MAX_WALKED` files looked at."""
    from dulwich.ignore import IgnoreFilterManager

    ignored = IgnoreFilterManager.from_repo(repo).is_ignored
    seen = 0
    for root, folders, files in os.walk(workspace):
        here = os.path.relpath(root, top).replace(os.sep, "/")
        here = "" if here == "." else here + "/"
        folders[:] = [f for f in folders if f not in (".git", ".tether") and not ignored(f"{here}{f}/")]
        for name in files:
            seen += 1
            if seen > MAX_WALKED:
                return
            path = here + name
            if path.encode("utf-8", "surrogateescape") not in tracked and not ignored(path):
                yield os.path.relpath(os.path.join(root, name), workspace)


def _regular(where: str) -> bytes | None:
    """The bytes of the regular file at ``where`` (no link followed), None for anything else or over
    :data:`MAX_BYTES`."""
    import stat

    try:
        fd = os.open(where, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with open(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        return f.read(MAX_BYTES + 1)


def _ns(stamp: int | float | tuple[int, int]) -> int:
    """An index entry's time in nanoseconds (dulwich gives seconds and nanoseconds, or a number)."""
    return stamp[0] * 10**9 + stamp[1] if isinstance(stamp, tuple) else int(stamp * 10**9)


def _object(repo: Repo, name: str, kind: int) -> bytes:
    """The bytes of object ``name``, which must be of ``kind`` and hash to ``name`` (SHA-1 or SHA-256 by its length)."""
    from dulwich.objects import ObjectID

    found_kind, raw = repo.object_store.get_raw(ObjectID(name.encode("ascii")))
    if found_kind != kind:
        raise ValueError(f"{name}: not a {_KINDS[kind].decode()}")
    algorithm = hashlib.sha1 if len(name) == 40 else hashlib.sha256
    if algorithm(_KINDS[kind] + b" %d\x00" % len(raw) + raw).hexdigest() != name:
        raise ValueError(f"{name}: its bytes are not its name")
    return bytes(raw)


def _tree_of(repo: Repo, commit: str) -> str:
    from dulwich.objects import Commit

    parsed = Commit.from_raw_string(1, _object(repo, commit, 1))
    if not isinstance(parsed, Commit):
        raise ValueError(f"{commit}: not a commit")
    return str(parsed.tree.decode("ascii"))


def _file(repo: Repo, tree: str, parts: list[str], trees: dict[str, Tree]) -> bytes:
    """The blob at ``parts`` below ``tree``, a regular file's (a link or a submodule is not read); ``trees``: the
    trees read so far, by name."""
    import stat

    from dulwich.objects import Tree

    for i, part in enumerate(parts):
        entries = trees.get(tree)
        if entries is None:
            parsed = Tree.from_raw_string(2, _object(repo, tree, 2))
            if not isinstance(parsed, Tree):
                raise ValueError(f"{tree}: not a tree")
            entries = trees[tree] = parsed
        mode, name = entries[part.encode("utf-8", "surrogateescape")]
        tree = name.decode("ascii")
        if i == len(parts) - 1:
            if not stat.S_ISREG(mode):
                raise ValueError(f"{part}: not a file")
            break
        if not stat.S_ISDIR(mode):
            raise ValueError(f"{part}: not a folder")
    data = _object(repo, tree, 3)
    if len(data) > MAX_BYTES:
        raise ValueError(f"{parts[-1]}: over {MAX_BYTES} bytes")
    return data
