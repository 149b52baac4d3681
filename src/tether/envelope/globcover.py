"""Is every path one glob list matches also matched by another? A proof, or a refusal.

The envelope's ``filesystem`` globs are gitignore-style and the gate matches them with ``pathspec``
(:mod:`tether.policy.paths`). A child envelope may only narrow its parent's (:mod:`.narrow`), so its
globs must match no path the parent's do not. Deciding that in general is hard, and a wrong "yes" is
a widened grant, so this module proves coverage for the forms it understands and refuses the rest:

* A pattern is read as segments. Without a slash before its end it matches at any depth
  (``src`` is ``**/src``); a leading ``/`` anchors it; a trailing ``/**`` is "anything below" and a
  trailing ``/`` "a directory" (the child's is read wider: the directory and below; the parent's
  narrower: something below it).
* A gitignore pattern that matches a path also matches everything below it (``src/*`` matches
  ``src/a/b``). So a child pattern is covered when every path it matches has a leading part the
  parent pattern matches (:func:`_covers`).
* One segment covers another when they are equal, the parent's is ``*``, the child's is a literal
  the parent's ``*``/``?`` glob matches, or both share the literal prefix before the parent's one
  ``*`` (``test_*``) or its literal suffix after it (``*.py``). Brackets, escapes and ``**`` inside a
  segment are never proved: only an identical pattern covers them.
* ``.`` and empty segments (``./src``, ``src//a``), ``..`` and surrounding spaces are refused in a
  child: pathspec matches ``./src/**`` to nothing, and a person reads it as ``src/**``.
* Exclusions (``!x``) in the child only take away. In the parent they decide by pathspec's priority
  rules (a file match outranks a directory match, whatever the order), so a parent list with
  exclusions is only covered by itself, optionally followed by more exclusions.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import lru_cache

_META = frozenset("*?[\\")

Segments = tuple[str, ...]


@dataclass(frozen=True)
class Uncovered:
    """A child glob the parent's list cannot be shown to cover, and why."""

    index: int
    glob: str
    why: str


def uncovered(child: list[str], parent: list[str]) -> list[Uncovered]:
    """Every glob of ``child`` that may match a path ``parent`` does not (empty: the child only narrows)."""
    if any(_negation(p) for p in parent):
        return _under_exclusions(child, parent)
    grants = [s for p in parent if (s := _segments(p, parent_side=True)) is not None]
    out: list[Uncovered] = []
    for i, glob in enumerate(child):
        if glob in parent or _inert(glob) or _negation(glob):
            continue
        bad = _malformed(glob)
        if bad:
            out.append(Uncovered(i, glob, bad))
            continue
        segs = _segments(glob, parent_side=False)
        if segs is None or not any(_covers(g, segs) for g in grants):
            out.append(Uncovered(i, glob, "no parent glob covers it"))
    return out


def normalise(glob: str) -> str:
    """The spelling a person means: ``./src/**`` → ``src/**``, ``src//a`` → ``src/a``, spaces trimmed.

    For globs a caller *asks* for (:func:`tether.envelope.narrow.narrow`); a checked envelope's globs are
    judged as written, since pathspec does not normalise them.
    """
    text = glob.strip()
    neg = text.startswith("!")
    body = text[1:] if neg else text
    anchored = body.startswith("/")
    trailing = body.endswith("/") and body.strip("/") != ""
    parts = [p for p in body.split("/") if p not in ("", ".")]
    out = "/".join(parts)
    if anchored and out:
        out = "/" + out
    if trailing and out:
        out += "/"
    return ("!" if neg else "") + out


def _under_exclusions(child: list[str], parent: list[str]) -> list[Uncovered]:
    n = len(parent)
    if child[:n] == parent and all(_negation(g) or _inert(g) for g in child[n:]):
        return []
    if not any(not _negation(g) and not _inert(g) for g in child):
        return []  # nothing granted at all
    return [
        Uncovered(
            0,
            ", ".join(child),
            "the parent's list has exclusions (!…): a child repeats it whole and may only add exclusions",
        )
    ]


def _negation(glob: str) -> bool:
    return glob.lstrip().startswith("!")


def _inert(glob: str) -> bool:
    """Blank lines and comments match nothing."""
    return not glob.strip() or glob.startswith("#")


def _malformed(glob: str) -> str | None:
    if glob != glob.strip():
        return "surrounding spaces (write the glob without them)"
    parts = glob.strip("/").split("/")
    if ".." in parts:
        return "a '..' component (globs stay inside the workspace)"
    if "." in parts or "" in parts:
        return f"a './' or '//' (pathspec matches it to nothing; write {normalise(glob)!r})"
    return None


def _segments(glob: str, *, parent_side: bool) -> Segments | None:
    """The glob as path segments under "this, or anything below it" semantics; None when not understood."""
    if _malformed(glob) or glob.startswith(("!", "#", "\\")):
        return None
    dir_only = glob.endswith("/")
    body = glob.rstrip("/")
    anchored = body.startswith("/") or "/" in body
    parts = tuple(body.lstrip("/").split("/"))
    if any(p != "**" and "**" in p for p in parts):
        return None
    if not anchored:
        parts = ("**", *parts)
    if parts[-1] == "**":  # "x/**" is everything below x: x/<one segment>, and what lies below that
        parts = (*parts[:-1], "*")
    if dir_only and parent_side:  # the parent's "x/" holds what is below a directory x, not x itself
        parts = (*parts, "*")
    if all(p == "**" for p in parts):
        return None
    return parts


@lru_cache(maxsize=4096)
def _covers(parent: Segments, child: Segments) -> bool:
    """Does every path ``child`` matches begin with a path ``parent`` matches? (Sound, not complete.)"""
    if not parent:
        return True
    if not child:
        return False
    head = parent[0]
    if head == "**":
        return _covers(parent[1:], child) or _covers(parent, child[1:])
    if parent == ("*",):
        return any(c != "**" for c in child)
    if child[0] == "**":
        return False
    return _segment_covers(head, child[0]) and _covers(parent[1:], child[1:])


def _segment_covers(parent: str, child: str) -> bool:
    """Does every name ``child`` matches also match ``parent`` (one path segment each)?"""
    if parent in (child, "*"):
        return True
    if "[" in parent or "\\" in parent or "[" in child or "\\" in child:
        return False
    if not _META & set(child):
        return fnmatchcase(child, parent)
    if parent.count("*") == 1 and "?" not in parent:
        prefix, _, suffix = parent.partition("*")
        head, tail = child[: len(prefix)], child[len(child) - len(suffix) :] if suffix else ""
        return (
            len(child) >= len(prefix) + len(suffix)
            and head == prefix
            and tail == suffix
            and not _META & set(head + tail)
        )
    return False
