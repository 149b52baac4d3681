"""Workspace path resolution and text bounding shared by the built-ins.

Every built-in takes workspace-relative paths. ``resolve`` follows symlinks and ``..``
and refuses anything that lands outside the workspace — the gate checks paths too; this
is the second line (defence in depth).
"""

from __future__ import annotations

import os
from pathlib import Path

from .result import ToolFailure

#: Top-level directories the write tools never touch: git's internals (a written ``.git/config`` can make
#: git run programs — filters, hooks — the next time any git command runs) and tether's own run state.
PROTECTED_DIRS = (".git", ".tether")

#: Bytes sniffed for a NUL to decide a file is binary (git uses the same heuristic).
BINARY_SNIFF_BYTES = 8192


def resolve(workspace: Path, path: str, *, for_write: bool = False) -> Path:
    """The real path of ``path`` (relative to ``workspace``), or ``ToolFailure('outside_workspace')``.

    Absolute paths are accepted only when they resolve inside the workspace. Symlinks are
    followed even when dangling, so a link pointing outside is refused before anything is
    written through it. With ``for_write``, paths inside ``PROTECTED_DIRS`` are refused
    (``protected_path``).
    """
    root = workspace.resolve()
    if "\x00" in path:
        raise ToolFailure("invalid_args", f"path {path!r} contains a NUL byte", path=path)
    candidate = Path(path) if os.path.isabs(path) else root / path
    real = Path(os.path.realpath(candidate))
    if real != root and not real.is_relative_to(root):
        raise ToolFailure(
            "outside_workspace",
            f"path {path!r} resolves to {real}, which is outside the workspace; use a workspace-relative path",
            path=path,
        )
    if for_write:
        rel = real.relative_to(root).parts
        if rel and rel[0] in PROTECTED_DIRS:
            raise ToolFailure(
                "protected_path", f"path {path!r} is inside {rel[0]}/, which tools may not modify", path=path
            )
    return real


def relative(workspace: Path, real: Path) -> str:
    """The POSIX workspace-relative form of a resolved path ("." for the root)."""
    rel = real.relative_to(workspace.resolve()).as_posix()
    return rel or "."


def looks_binary(head: bytes) -> bool:
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


def clip(text: str, limit: int, *, keep_tail: bool = False) -> str:
    """Bound ``text`` to about ``limit`` characters, saying how much was left out.

    With ``keep_tail`` the end is kept too (a quarter head, three quarters tail), which is
    what matters for command output (the summary line of a test run comes last).
    """
    if len(text) <= limit:
        return text
    omitted = len(text) - limit
    if keep_tail:
        head = limit // 4
        tail = limit - head
        return f"{text[:head]}\n[... {omitted} characters omitted ...]\n{text[len(text) - tail :]}"
    return f"{text[:limit]}\n[... {omitted} more characters truncated ...]"
