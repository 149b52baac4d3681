"""Paths as strings, as ``PurePosixPath`` spells and compares them, without ``pathlib``.

The policy judges places by their text (a real path, a path relative to the workspace); a ``PurePosixPath`` per
place costs a cold hook call the import of ``pathlib`` and what it imports (``urllib.parse``, ``ipaddress``,
``fnmatch``, ``ntpath``: ~14 M instructions, 6 % of it). These functions give the very strings ``str()`` of
``PurePosixPath``'s operations gives, for any text (``tests/test_places.py`` holds each to ``pathlib`` with
hypothesis: ``..``, ``//``, trailing ``/``, ``~``, NUL, unicode, very long).
"""

from __future__ import annotations


def place(text: str) -> str:
    """``str(PurePosixPath(text))``: empty and ``.`` parts dropped, ``//`` at the start kept (POSIX leaves its
    meaning to the system), any other run of slashes one; ``..`` kept (it is not resolved without the disk)."""
    root = ""
    if text.startswith("/"):
        root = "//" if text.startswith("//") and not text.startswith("///") else "/"
    body = "/".join(p for p in text.split("/") if p and p != ".")
    return root + body if root or body else "."


def parts(path: str) -> tuple[str, ...]:
    """``PurePosixPath(path).parts`` of a ``place``: the root (``/`` or ``//``) its first part."""
    if path.startswith("/"):
        root = "//" if path.startswith("//") else "/"
        rest = path[len(root) :]
        return (root, *rest.split("/")) if rest else (root,)
    return () if path == "." else tuple(path.split("/"))


def name(path: str) -> str:
    """``PurePosixPath(path).name`` of a ``place``: its last part, ``""`` for a root or ``.``."""
    if path == "." or not path.strip("/"):
        return ""
    return path.rpartition("/")[2]


def parent(path: str) -> str:
    """``str(PurePosixPath(path).parent)`` of a ``place``: a root and ``.`` are their own parents."""
    head, sep, tail = path.rpartition("/")
    if not sep:
        return "."
    if not tail or not head.strip("/"):  # a root, or a part right under one
        return head + sep if head.strip("/") == "" else head
    return head


def relative(path: str, base: str) -> str | None:
    """``str(PurePosixPath(path).relative_to(base))`` of two ``place`` s, or None where that raises: ``base`` is
    ``path`` or one of its parents."""
    if path == base:
        return "."
    if base == ".":
        return None if path.startswith("/") else path
    prefix = base if base.endswith("/") else base + "/"  # a root ends with its slash
    rest = path[len(prefix) :] if path.startswith(prefix) else ""
    return rest if rest and not rest.startswith("/") else None  # "//a" is not under "/": another root


def within(path: str, base: str) -> bool:
    """``base == path or base in PurePosixPath(path).parents``, of two ``place`` s."""
    return relative(path, base) is not None


def join(base: str, text: str) -> str:
    """``str(PurePosixPath(base) / text)`` of a ``place`` and any text: an absolute ``text`` replaces ``base``."""
    if text.startswith("/") or base == ".":
        return place(text)
    return place(base + text if base.endswith("/") else f"{base}/{text}")
