"""What a git command that rewrites the work tree writes besides the files its index lists (the commits it writes
from), and which programs name every file they write: read by :mod:`.gate` only when it judges such a command, so
imported then, not on every hook call.
"""

from __future__ import annotations

import os

from tether import places

from . import gitindex

#: Programs whose effects name every file they write (their tables or a function of :mod:`.effects`): a command
#: line's earlier writes are known through them; any other program but a reader may write anything.
NAMED_WRITERS = frozenset(
    {"cp", "mv", "ln", "install", "mkdir", "touch", "tee", "rm", "rmdir", "tar", "bsdtar", "unzip", "curl", "wget"}
    | {"dd", "chmod", "chown", "truncate", "gzip", "gunzip", "xz", "bzip2", "zstd", "patch"}
)


#: What a rewrite writes from besides the index: revisions, whether their parents too, the upstream a rebase replays
#: its commits onto (``gitindex.committed``'s arguments).
Sources = tuple[list[str], bool, str | None]
#: The options of each rewriting subcommand whose value is the next word (not a revision): skipping one too few only
#: makes its value an unknown revision (fail closed), one too many would miss a revision.
_VALUES = {
    "checkout": {"-b", "-B", "--orphan", "--conflict"},
    "switch": {"-c", "-C", "--create", "--force-create", "--orphan", "--conflict"},
    "merge": {"-m", "-s", "-X", "-F", "--message", "--strategy", "--strategy-option", "--file"},
    "restore": {"-s", "--source"},
}


def sources(sub: str, rest: list[str]) -> Sources | None:
    """The commits whose files ``git SUB REST`` may write besides those the index lists (a branch checked out, a hard
    reset's target, what a merge brings in: git writes them over an ignored file too); None when they cannot be told
    (a pull fetches them, a stash's, a range, a value only known at run time)."""
    head = rest[: rest.index("--")] if "--" in rest else rest
    valued = _VALUES.get(sub, set())
    revs = [w for i, w in enumerate(head) if not w.startswith("-") and (i == 0 or head[i - 1] not in valued)]
    if "*" in revs or "-" in head or any(".." in r for r in revs):  # "-": the branch before (@{-1}), not read
        return None
    if sub in ("checkout", "switch"):
        return revs, False, None
    if sub == "restore":
        source = [w.split("=", 1)[1] for w in head if w.startswith("--source=")]
        source += [w[2:] for w in head if w.startswith("-s") and len(w) > 2]
        source += [head[i + 1] for i, w in enumerate(head[:-1]) if w in ("-s", "--source")]
        return source, False, None
    if sub == "reset" or (sub == "stash" and (not revs or revs[0] in ("push", "save"))):
        return revs[:1] if sub == "reset" else [], False, None  # HEAD's files are the index's unless staged
    if sub == "stash" and revs[0] in ("apply", "pop") and revs[1:] in ([], ["stash@{0}"]):
        return ["refs/stash"], True, None  # its parents: HEAD, the index and the untracked (or ignored) files
    if sub == "merge" and revs:
        return ["HEAD", *revs], False, None
    if sub in ("cherry-pick", "revert") and revs:
        return revs, True, None
    if sub == "rebase" and len(revs) == 1 and not {"--root", "--onto"} & set(head):
        return revs, False, revs[0]
    return ([], False, None) if sub in ("checkout-index", "sparse-checkout") else None


def stashes_untracked(rest: list[str]) -> bool:
    """``git stash -u`` / ``-a`` (``--include-untracked``, ``--all``) put untracked (and ignored) files in the stash and
    delete them from the work tree, as ``git clean`` would."""
    head = rest[: rest.index("--")] if "--" in rest else rest
    long = {"--all", "--include-untracked"} & set(head)
    return bool(long) or any(w[:1] == "-" and w[1:2] != "-" and {"a", "u"} & set(w[1:]) for w in head)


def revisions_only(words: list[str], here: str, top: str) -> list[str]:
    """``git checkout WORD`` checks out a revision, or a path when no revision has that name: the words that are
    existing paths and no revision are left out (a word neither stays, and fails closed)."""
    return [w for w in words if _resolves(top, w) or not os.path.lexists(places.join(here, w))]


def _resolves(top: str, word: str) -> bool:
    """Whether ``word`` names a commit of the repository at ``top`` (its top folder read, no deeper)."""
    return gitindex.committed(top, [word], descend=lambda name: False) is not None
