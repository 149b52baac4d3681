"""The paths git tracks, read from the repository's index file at decision time: so that a git command that rewrites
the work tree's tracked files (``git stash``, ``git reset --hard``, ``git checkout -- .``, ``git checkout BRANCH``) is
refused exactly when the deny list hides one of them, not in every workspace that holds a hidden file git ignores.

The index is read by dulwich, imported only here and only when a git command that rewrites the work tree is judged
and a plain reading of the files does not answer (:func:`own`, :func:`may_list`):
every version git writes (2 to 4), SHA-1 and SHA-256 repositories, a linked work tree's ``.git`` file; its checksum
is checked, so a changed or cut index is an error, not a shorter list. Anything that cannot be read is None, and the
caller fails closed: an index that is not a regular file (a FIFO would block) or is over :data:`MAX_BYTES`, one that
does not parse or whose checksum is wrong, a sparse index (its directory entries stand for files not listed).
"""

from __future__ import annotations

import os
import re
import stat

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

    from dulwich.objects import Commit
    from dulwich.repo import Repo

MAX_BYTES = 64 * 1024 * 1024


def top(start: str, stop: str) -> str | None:
    """The work tree git finds from ``start``: the first directory at or above it holding ``.git``, searching no
    higher than ``stop`` (the workspace); None when none is found there (git would look further up)."""
    here = start
    while True:
        if os.path.lexists(os.path.join(here, ".git")):
            return here
        if here == stop or os.path.dirname(here) == here:
            return None
        here = os.path.dirname(here)


def tracked(work_tree: str) -> list[str] | None:
    """The paths (relative to ``work_tree``) its index lists; None when they cannot be read (see the module)."""
    entries = tracked_blobs(work_tree)
    return None if entries is None else [p for p, _ in entries]


def tracked_blobs(work_tree: str, prefix: str = "") -> list[tuple[str, str]] | None:
    """The paths its index lists under ``prefix`` (all: ``""``), each with its blob's id in hex ("" for a path in
    conflict, whose stages differ); None when they cannot be read (see the module)."""
    try:
        repo = _repo(work_tree)
        try:
            st = os.stat(repo.index_path())
        except FileNotFoundError:
            return []  # a fresh repository tracks nothing
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return None
        index = repo.open_index()
        if index.is_sparse():
            return None
        start = prefix.encode("utf-8", "surrogateescape")
        return [
            (p.decode("utf-8", "surrogateescape"), _hex(getattr(e, "sha", b"")))
            for p, e in index.items()
            if p.startswith(start)
        ]
    except Exception:  # a repository or an index dulwich cannot read raises what it raises: unknown, fail closed
        return None


def _hex(sha: bytes) -> str:
    return sha.decode("ascii") if len(sha) in (40, 64) else ""


def may_list(work_tree: str, prefix: str) -> bool:
    """Whether the index of ``work_tree`` may list a path that starts with ``prefix``, told from its bytes without
    parsing it (without dulwich): False only when it surely lists none. Versions 2 and 3 write each path whole, so
    one whose bytes do not hold ``prefix`` lists none; no index lists nothing. Version 4 writes each path as a cut of
    the one before and a suffix, a split index keeps its entries in a ``sharedindex.*`` file beside it, a ``.git``
    that is a file points elsewhere: :func:`tracked` reads those, as anything that is not plainly so."""
    git = os.path.join(work_tree, ".git")
    try:
        if os.path.islink(git) or any(n.startswith("sharedindex.") for n in os.listdir(git)):
            return True
    except OSError:  # not a directory, or not readable
        return True
    try:  # not blocking at a FIFO, nor following a link, put where the index was
        fd = os.open(os.path.join(git, "index"), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
            return True
        data = f.read(MAX_BYTES)
    if data[:4] != b"DIRC" or data[4:8] not in (b"\0\0\0\2", b"\0\0\0\3"):
        return True
    return prefix.encode("utf-8", "surrogateescape") in data


#: At most this many paths are read from commits' trees (then: unknown, the caller fails closed).
MAX_PATHS = 50_000
#: At most this many commits a rebase replays are read.
MAX_COMMITS = 64


def _commit_of(repo: Repo, rev: str) -> Commit:
    """The commit ``rev`` names in ``repo``, git's ``~N``, ``^`` and ``^N`` suffixes walked here (dulwich's parser
    does not read them); anything else it cannot parse, or a parent that is not a commit, raises."""
    from dulwich.objects import Commit
    from dulwich.objectspec import parse_commit

    i = len(rev)
    while i > 0 and (rev[i - 1].isdigit() or rev[i - 1] in "~^"):
        i -= 1
    commit, steps = parse_commit(repo, rev[:i].encode("utf-8", "surrogateescape")), rev[i:]
    while steps:
        op, steps = steps[0], steps[1:]
        digits = len(steps) - len(steps.lstrip("0123456789"))
        n, steps = (int(steps[:digits]) if digits else 1), steps[digits:]
        for parent in [0] * n if op == "~" else [n - 1] if n else []:
            found = repo[commit.parents[parent]]
            if not isinstance(found, Commit):
                raise TypeError(f"{rev}: a parent that is not a commit")
            commit = found
    return commit


def committed(
    work_tree: str,
    revs: list[str],
    *,
    parents: bool = False,
    replays: str | None = None,
    descend: Callable[[str], bool] | None = None,
) -> list[str] | None:
    """The paths the trees of ``revs`` hold (and their parents', with ``parents``: what a revert or cherry-pick may
    write), and with ``replays`` those of each commit from HEAD back to it (what a rebase onto it replays): a
    checkout, a hard reset or a merge writes them whether the index lists them or not, over an ignored file too.
    ``descend``: whether a folder (its path) is worth reading, else its files are left out: the gate reads only
    where the deny list may reach, so a big repository's trees are not all walked, nor count against the bound.
    None when a revision does not resolve or the bounds are passed (see the module)."""
    entries = committed_blobs(work_tree, revs, parents=parents, replays=replays, descend=descend)
    return None if entries is None else list(dict.fromkeys(p for p, _ in entries))


def committed_blobs(
    work_tree: str,
    revs: list[str],
    *,
    parents: bool = False,
    replays: str | None = None,
    descend: Callable[[str], bool] | None = None,
) -> list[tuple[str, str]] | None:
    """:func:`committed`'s paths, each with the id in hex of the blob (or link, or submodule commit) each commit
    holds there: a path may come more than once, with other contents."""
    try:
        from dulwich.objects import Commit

        repo = _repo(work_tree)
        commits = [_commit_of(repo, r) for r in revs]
        if parents:
            commits += [p for c in commits for p in map(repo.__getitem__, c.parents) if isinstance(p, Commit)]
        if replays is not None:
            base = _commit_of(repo, replays).id
            walked = list(repo.get_walker(include=[repo.head()], exclude=[base], max_entries=MAX_COMMITS + 1))
            if len(walked) > MAX_COMMITS:
                return None
            commits += [e.commit for e in walked]
        out: list[tuple[str, str]] = []
        folders = [(b"", tree) for tree in dict.fromkeys(c.tree for c in commits)]
        while folders:
            prefix, tree = folders.pop()
            for entry in repo[tree].iteritems():  # type: ignore[attr-defined]
                path = prefix + entry.path
                name = path.decode("utf-8", "surrogateescape")
                if not stat.S_ISDIR(entry.mode):
                    out.append((name, _hex(entry.sha)))  # a file, a link, a submodule's commit
                elif descend is None or descend(name):
                    folders.append((path + b"/", entry.sha))
                if len(out) > MAX_PATHS:
                    return None
        return list(dict.fromkeys(out))
    except Exception:  # a revision, repository or object dulwich cannot read: unknown, fail closed
        return None


def own(work_tree: str) -> bool:
    """Whether ``work_tree`` is its repository's work tree as git sees it (see :func:`_own_work_tree`); False when
    the repository cannot be opened. A configuration as ``git init`` writes it is read without dulwich (importing
    it is ~40 ms of a cold hook call's ~50)."""
    if _plainly_own(work_tree):
        return True
    try:
        _repo(work_tree)
    except Exception:  # what dulwich raises for a repository it cannot open, or ours for a work tree elsewhere
        return False
    return True


def _plainly_own(work_tree: str) -> bool:
    """Whether ``work_tree/.git`` is a folder whose configuration surely leaves the work tree where it is: its
    ``config`` names no ``worktree`` and includes no other file (in any case: git's keys are), says ``bare = false``
    once and ``bare`` nowhere else, and no ``config.worktree`` is beside it. Anything else is for :func:`_repo`."""
    git = os.path.join(work_tree, ".git")
    try:
        if os.path.islink(git) or os.path.lexists(os.path.join(git, "config.worktree")):
            return False
        fd = os.open(os.path.join(git, "config"), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return False
    with open(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        text = f.read((1 << 16) + 1).lower()
    if len(text) > 1 << 16 or b"worktree" in text or b"include" in text:
        return False
    return text.count(b"bare") == 1 and re.search(rb"^\s*bare\s*=\s*false\s*$", text, re.M) is not None


def _own_work_tree(controldir: str, bare: bool, named: bytes | None, work_tree: str) -> bool:
    """Whether git's work tree is ``work_tree``, the directory holding its ``.git``: not when the configuration says
    ``core.bare`` or sets ``core.worktree`` (``named``, from ``controldir``) elsewhere: a repository planted in the
    workspace whose work tree is the workspace would have its index and commits read under the wrong directory."""
    if bare:
        return False
    return named is None or os.path.realpath(os.path.join(controldir, os.fsdecode(named))) == os.path.realpath(
        work_tree
    )


def _repo(work_tree: str) -> Repo:
    """dulwich's repository at ``work_tree``; raises when its work tree is configured elsewhere (see
    :func:`_own_work_tree`) or it cannot be opened."""
    from dulwich.repo import Repo

    repo = Repo(work_tree)
    config = repo.get_config()
    try:
        named = config.get((b"core",), b"worktree")
    except KeyError:
        named = None
    if not _own_work_tree(repo.controldir(), config.get_boolean((b"core",), b"bare", False), named, work_tree):
        raise ValueError(f"{work_tree}: git's work tree is configured elsewhere")
    return repo
