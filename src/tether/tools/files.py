"""File built-ins: read_file, list_dir, write_file, edit_file.

Paths are workspace-relative and resolved through symlinks; anything outside the
workspace is refused (``outside_workspace``). Writes are atomic (temporary file +
rename, mode preserved). What a write changed is recorded by the kernel from its workspace
snapshots, as for any action (a rollback receipt; ``tether undo`` applies it): a tool keeps no undo
record of its own.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from ._paths import clip, looks_binary, relative, resolve
from .context import ToolContext
from .contract import tool
from .result import ToolFailure, ToolResult

MAX_READ_LINES = 2000
MAX_READ_CHARS = 60_000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 500
MAX_WRITE_CHARS = 2_000_000
MAX_EDIT_FILE_BYTES = 10_000_000
MAX_PREVIEW_CHARS = 200_000
MAX_DIFF_IN_RESULT = 4000


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _existing_file(ctx: ToolContext, path: str, *, for_write: bool = False) -> tuple[Path, str]:
    real = resolve(ctx.workspace, path, for_write=for_write)
    rel = relative(ctx.workspace, real)
    if not real.exists():
        raise ToolFailure("not_found", f"{rel}: no such file", path=rel)
    if real.is_dir():
        raise ToolFailure("is_a_directory", f"{rel} is a directory; use list_dir", path=rel)
    return real, rel


def _read_text(real: Path, rel: str, *, limit: int | None = None) -> str:
    """The file's text, exactly (line endings preserved), or ToolFailure for binary / non-UTF-8 / too large."""
    if limit is not None and real.stat().st_size > limit:
        raise ToolFailure("too_large", f"{rel} is {real.stat().st_size} bytes; the limit is {limit}", path=rel)
    data = real.read_bytes()
    if looks_binary(data):
        raise ToolFailure("not_text", f"{rel} looks binary (contains NUL bytes)", path=rel)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ToolFailure("not_text", f"{rel} is not valid UTF-8 text (byte {e.start})", path=rel) from e


def _before_text(real: Path, rel: str) -> str | None:
    """Current content of a file about to be written (None if absent)."""
    if not real.exists():
        return None
    if real.is_dir():
        raise ToolFailure("is_a_directory", f"{rel} is a directory", path=rel)
    return _read_text(real, rel, limit=MAX_EDIT_FILE_BYTES)


def unified_diff(rel: str, before: str | None, after: str | None) -> str:
    """A git-style unified diff of one file (``/dev/null`` for creation or deletion)."""
    a = (before or "").splitlines(keepends=True)
    b = (after or "").splitlines(keepends=True)
    lines = difflib.unified_diff(
        a,
        b,
        fromfile="/dev/null" if before is None else f"a/{rel}",
        tofile="/dev/null" if after is None else f"b/{rel}",
    )
    out = []
    for line in lines:
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _diff_stat(diff: str) -> dict[str, int]:
    added = sum(1 for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++"))
    removed = sum(1 for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---"))
    return {"added": added, "removed": removed}


NEW_FILE_MODE = 0o644


def atomic_write(real: Path, text: str) -> None:
    """Write ``text`` to ``real`` atomically, keeping the existing file's mode (a new file gets 0644).

    ``mkstemp`` creates 0600 files: a new module or test would then be unreadable to the unprivileged
    user the sandbox runs commands as, and the project's own tests could not import it.
    """
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(real.stat().st_mode) if real.exists() else NEW_FILE_MODE
    fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tether-tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# --------------------------------------------------------------------------- read_file


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=10,
    evidence=["file content with line numbers", "sha256 of the whole file", "total line count"],
    rollback="not needed (read-only)",
)
def read_file(
    ctx: ToolContext,
    path: str,
    start_line: Annotated[int, Field(ge=1)] = 1,
    end_line: Annotated[int | None, Field(ge=1)] = None,
) -> ToolResult:
    """Read a text file from the workspace, with line numbers, optionally a line range.

    Args:
        path: File path relative to the workspace root.
        start_line: First line to show (1-based).
        end_line: Last line to show, inclusive (default: the end, within the size caps).
    """
    real, rel = _existing_file(ctx, path)
    if end_line is not None and end_line < start_line:
        raise ToolFailure("invalid_args", f"end_line ({end_line}) is before start_line ({start_line})", path=rel)
    data = real.read_bytes()
    if looks_binary(data):
        raise ToolFailure("not_text", f"{rel} looks binary (contains NUL bytes); not shown", path=rel)
    text = data.decode("utf-8", errors="replace")
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return ToolResult(
            ok=True,
            content=f"{rel}: empty file",
            data={"path": rel, "total_lines": 0, "start_line": 1, "end_line": 0, "sha256": _sha256(data)},
        )
    if start_line > total:
        raise ToolFailure("invalid_args", f"{rel} has {total} lines; start_line {start_line} is past the end", path=rel)
    want_end = min(end_line or total, total)
    shown, last = _numbered(lines, start_line, want_end)
    truncated = last < want_end
    header = f"{rel} (lines {start_line}-{last} of {total})"
    body = "\n".join(shown)
    footer = _footer(last, truncated, total)
    return ToolResult(
        ok=True,
        content=f"{header}\n{body}{footer}",
        data={
            "path": rel,
            "start_line": start_line,
            "end_line": last,
            "total_lines": total,
            "truncated": truncated,
            "sha256": _sha256(data),
        },
    )


def _numbered(lines: list[str], start_line: int, want_end: int) -> tuple[list[str], int]:
    """Lines ``start_line`` to ``want_end`` numbered, each clipped at :data:`MAX_LINE_CHARS`, as many as fit
    :data:`MAX_READ_LINES` and :data:`MAX_READ_CHARS`; with the number of the last one shown."""
    shown: list[str] = []
    chars = 0
    last = start_line - 1
    for n in range(start_line, want_end + 1):
        line = lines[n - 1]
        if len(line) > MAX_LINE_CHARS:
            line = line[:MAX_LINE_CHARS] + f" [... line clipped, {len(line) - MAX_LINE_CHARS} more characters]"
        row = f"{n:>6}\t{line}"
        if len(shown) >= MAX_READ_LINES or chars + len(row) > MAX_READ_CHARS:
            break
        shown.append(row)
        chars += len(row) + 1
        last = n
    return shown, last


def _footer(last: int, truncated: bool, total: int) -> str:
    """What follows the lines shown: how to read on when the caps cut them, else how many lines are left."""
    if truncated:
        return f"\n[... output capped at line {last}; call read_file with start_line={last + 1} to continue]"
    if last < total:
        return f"\n[... {total - last} more lines; file has {total}]"
    return ""


# --------------------------------------------------------------------------- list_dir


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=10,
    evidence=["directory entries with kinds and sizes"],
    rollback="not needed (read-only)",
)
def list_dir(ctx: ToolContext, path: str = ".") -> ToolResult:
    """List a workspace directory: subdirectories (with a trailing /), files with sizes, symlinks.

    Args:
        path: Directory relative to the workspace root.
    """
    real = resolve(ctx.workspace, path)
    rel = relative(ctx.workspace, real)
    if not real.exists():
        raise ToolFailure("not_found", f"{rel}: no such directory", path=rel)
    if not real.is_dir():
        raise ToolFailure("not_a_directory", f"{rel} is a file; use read_file", path=rel)
    entries: list[dict[str, Any]] = []
    for child in sorted(real.iterdir(), key=lambda p: (not p.is_dir() or p.is_symlink(), p.name)):
        if child.is_symlink():
            entries.append({"name": child.name, "kind": "symlink", "target": os.readlink(child)})
        elif child.is_dir():
            entries.append({"name": child.name, "kind": "dir"})
        else:
            entries.append({"name": child.name, "kind": "file", "size": child.stat().st_size})
    total = len(entries)
    shown = entries[:MAX_LIST_ENTRIES]
    rows = []
    for e in shown:
        if e["kind"] == "dir":
            rows.append(f"{e['name']}/")
        elif e["kind"] == "symlink":
            rows.append(f"{e['name']} -> {e['target']}")
        else:
            rows.append(f"{e['name']}  ({e['size']} bytes)")
    more = f"\n[... {total - len(shown)} more entries]" if total > len(shown) else ""
    content = f"{rel}/ ({total} entries)\n" + "\n".join(rows) + more
    return ToolResult(ok=True, content=content, data={"path": rel, "entries": shown, "total": total})


# --------------------------------------------------------------------------- write_file


def _preview_write(ctx: ToolContext, path: str, content: str) -> str:
    real = resolve(ctx.workspace, path, for_write=True)
    rel = relative(ctx.workspace, real)
    before = _before_text(real, rel)
    if before == content:
        return f"write_file {rel}: no change (content identical)"
    return clip(unified_diff(rel, before, content), MAX_PREVIEW_CHARS)


@tool(
    effects=["write"],
    idempotent=True,
    timeout_s=10,
    evidence=["unified diff of the change", "sha256 before and after", "rollback receipt (tether's snapshots)"],
    rollback="tether undo: restores the previous content from the rollback receipt (removes a created file)",
    preview=_preview_write,
)
def write_file(ctx: ToolContext, path: str, content: Annotated[str, Field(max_length=MAX_WRITE_CHARS)]) -> ToolResult:
    """Create or overwrite a workspace text file with the given content (parent directories are created).

    Args:
        path: File path relative to the workspace root.
        content: The complete new content of the file.
    """
    real = resolve(ctx.workspace, path, for_write=True)
    rel = relative(ctx.workspace, real)
    before = _before_text(real, rel)
    after_bytes = content.encode("utf-8")
    if before == content:
        return ToolResult(
            ok=True,
            content=f"{rel}: unchanged (already has this content)",
            data={"path": rel, "created": False, "changed": False, "sha256_after": _sha256(after_bytes)},
        )
    diff = unified_diff(rel, before, content)
    atomic_write(real, content)
    stats = _diff_stat(diff)
    verb = "created" if before is None else "wrote"
    return ToolResult(
        ok=True,
        content=(
            f"{verb} {rel} ({len(after_bytes)} bytes, {len(content.splitlines())} lines; "
            f"+{stats['added']} -{stats['removed']})"
        ),
        data={
            "path": rel,
            "created": before is None,
            "changed": True,
            "bytes": len(after_bytes),
            "diff_stat": stats,
            "diff": clip(diff, MAX_DIFF_IN_RESULT),
            "sha256_before": None if before is None else _sha256(before.encode("utf-8")),
            "sha256_after": _sha256(after_bytes),
        },
        changed_files=(rel,),
    )


# --------------------------------------------------------------------------- edit_file


def _positions(text: str, old: str) -> list[int]:
    """Every start offset of ``old`` in ``text``, overlapping occurrences included."""
    found = []
    i = text.find(old)
    while i != -1:
        found.append(i)
        i = text.find(old, i + 1)
    return found


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _plan_edit(ctx: ToolContext, path: str, old: str, new: str) -> tuple[Path, str, str, str]:
    """Validate an edit and compute the new text without writing. Returns (real, rel, before, after)."""
    if old == "":
        raise ToolFailure("invalid_args", "old must not be empty; use write_file to create or replace a file")
    if old == new:
        raise ToolFailure("invalid_args", "old and new are identical; nothing to change")
    real, rel = _existing_file(ctx, path, for_write=True)
    before = _read_text(real, rel, limit=MAX_EDIT_FILE_BYTES)
    hits = _positions(before, old)
    if not hits:
        hint = ""
        stripped = old.strip()
        if stripped and stripped != old and stripped in before:
            at_line = _line_of(before, before.find(stripped))
            hint = f" (the text without its leading/trailing whitespace occurs at line {at_line})"
        elif "\r\n" in before and "\r\n" not in old and old.replace("\n", "\r\n") in before:
            hint = " (the file uses CRLF line endings; the text matches if \\n is written as \\r\\n)"
        raise ToolFailure(
            "no_match",
            f"{rel}: old text not found (0 matches){hint}; read the file and copy the text exactly",
            path=rel,
            matches=0,
        )
    if len(hits) > 1:
        lines = [_line_of(before, h) for h in hits]
        shown = ", ".join(str(n) for n in lines[:20]) + (" ..." if len(lines) > 20 else "")
        raise ToolFailure(
            "ambiguous_match",
            f"{rel}: old text occurs {len(hits)} times (starting at lines {shown}); "
            "include more surrounding lines so it matches exactly once",
            path=rel,
            matches=len(hits),
            lines=lines,
        )
    at = hits[0]
    after = before[:at] + new + before[at + len(old) :]
    return real, rel, before, after


def _preview_edit(ctx: ToolContext, path: str, old: str, new: str) -> str:
    _, rel, before, after = _plan_edit(ctx, path, old, new)
    return clip(unified_diff(rel, before, after), MAX_PREVIEW_CHARS)


@tool(
    effects=["write"],
    idempotent=False,
    timeout_s=10,
    evidence=["unified diff of the change", "line number of the match", "rollback receipt (tether's snapshots)"],
    rollback="tether undo: restores the previous content from the rollback receipt",
    preview=_preview_edit,
)
def edit_file(ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    """Replace one exact, unique occurrence of `old` with `new` in a workspace text file.

    Args:
        path: File path relative to the workspace root.
        old: Text to replace; must occur exactly once (include surrounding lines to make it unique).
        new: Replacement text.
    """
    real, rel, before, after = _plan_edit(ctx, path, old, new)
    line = _line_of(before, before.find(old))
    diff = unified_diff(rel, before, after)
    atomic_write(real, after)
    stats = _diff_stat(diff)
    return ToolResult(
        ok=True,
        content=f"edited {rel} at line {line} (+{stats['added']} -{stats['removed']})\n"
        + clip(diff, MAX_DIFF_IN_RESULT),
        data={
            "path": rel,
            "line": line,
            "diff_stat": stats,
            "diff": clip(diff, MAX_DIFF_IN_RESULT),
            "sha256_before": _sha256(before.encode("utf-8")),
            "sha256_after": _sha256(after.encode("utf-8")),
        },
        changed_files=(rel,),
    )
