"""Git built-in (``git_diff``) and the git-status snapshot ``bash`` uses to detect changed files.

Git runs through the sandbox, never on the host: a workspace's ``.git/config`` is
writable by the agent, and git executes configured programs (fsmonitor, diff drivers,
textconv and clean filters). ``core.fsmonitor`` is forced off, external diff drivers and
textconv are disabled, and optional locks are not taken. Clean filters configured in
``.git/config`` cannot be switched off from the command line; the write tools refuse to
touch ``.git/`` so a filter can only be planted by an ``exec`` action.

Git features apply when the workspace is the root of a work tree (``<workspace>/.git``
exists); paths git reports are then workspace-relative.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._paths import clip, relative, resolve
from .context import ToolContext
from .contract import tool
from .result import ToolFailure, ToolResult

if TYPE_CHECKING:
    from tether.sandbox.receipt import Receipt

GIT = (
    "git",
    "--no-pager",
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotepath=false",
    # The sandbox may run as another user than the workspace's owner (bwrap drops root); inside the
    # sandbox the ownership check protects nothing, and without it git refuses to read the repo.
    "-c",
    "safe.directory=*",
)
MAX_DIFF_CHARS = 30_000
GIT_STATUS_TIMEOUT_S = 30.0

#: path -> (porcelain status, mtime_ns, size, inode); a tuple change means the file changed.
Snapshot = dict[str, tuple[Any, ...]]


def is_git_worktree(workspace: Path) -> bool:
    return (workspace / ".git").exists()


def run_git(ctx: ToolContext, args: Sequence[str], *, timeout_s: float | None = None) -> Receipt:
    # A quoted shell string rather than an argv: sandboxes start bash scripts without a preexec fork.
    command = shlex.join([*GIT, *args])
    return ctx.sandbox.run(command, cwd=ctx.workspace, timeout_s=min(timeout_s or ctx.timeout_s, ctx.timeout_s))


def receipt_dict(receipt: Any) -> dict[str, Any]:
    """A JSON-able dump of a sandbox receipt (pydantic model or dataclass)."""
    dump = getattr(receipt, "model_dump", None)
    if callable(dump):
        out: dict[str, Any] = dump(mode="json")
        return out
    import dataclasses

    return dict(dataclasses.asdict(receipt))


def parse_porcelain_z(out: str) -> dict[str, str]:
    """``git status --porcelain=v1 -z`` → {path: XY}. Renames contribute both paths."""
    entries: dict[str, str] = {}
    fields = out.split("\0")
    i = 0
    while i < len(fields):
        item = fields[i]
        i += 1
        if len(item) < 4:
            continue
        status, path = item[:2], item[3:]
        entries[path] = status
        if status[0] in "RC" or status[1] in "RC":
            if i < len(fields) and fields[i]:
                entries[fields[i]] = status
            i += 1
    return entries


def git_snapshot(ctx: ToolContext) -> Snapshot | None:
    """The dirty files of the workspace with their stat signatures, or None if unavailable."""
    if not is_git_worktree(ctx.workspace):
        return None
    receipt = run_git(ctx, ["status", "--porcelain=v1", "-z", "--untracked-files=all"], timeout_s=GIT_STATUS_TIMEOUT_S)
    if receipt.exit_code != 0 or receipt.timed_out or receipt.truncated:
        return None
    snap: Snapshot = {}
    for path, status in parse_porcelain_z(receipt.stdout).items():
        try:
            st = os.lstat(ctx.workspace / path)
            snap[path] = (status, st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            snap[path] = (status,)
    return snap


def changed_between(before: Snapshot, after: Snapshot) -> tuple[str, ...]:
    return tuple(sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p)))


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=30,
    evidence=["git status (short)", "unified diff of tracked changes against HEAD"],
    rollback="not needed (read-only)",
)
def git_diff(ctx: ToolContext, path: str | None = None) -> ToolResult:
    """Show uncommitted changes in the workspace: git status and the diff against HEAD (or the index).

    Args:
        path: Limit to this file or directory, relative to the workspace root.
    """
    if not is_git_worktree(ctx.workspace):
        raise ToolFailure("not_a_git_repo", "the workspace is not the root of a git work tree")
    scope: list[str] = []
    if path is not None:
        scope = ["--", relative(ctx.workspace, resolve(ctx.workspace, path))]
    status = run_git(ctx, ["status", "--short", "--untracked-files=all", *scope])
    if status.exit_code != 0 or status.timed_out:
        raise ToolFailure(
            "nonzero_exit",
            f"git status failed (exit {status.exit_code}): {clip(status.stderr, 2000)}",
            receipt=receipt_dict(status),
        )
    has_head = run_git(ctx, ["rev-parse", "--verify", "--quiet", "HEAD"]).exit_code == 0
    base = ["HEAD"] if has_head else ["--cached"]
    diff = run_git(ctx, ["diff", "--no-ext-diff", "--no-textconv", "--no-color", *base, *scope])
    if diff.exit_code != 0 or diff.timed_out:
        raise ToolFailure(
            "nonzero_exit",
            f"git diff failed (exit {diff.exit_code}): {clip(diff.stderr, 2000)}",
            receipt=receipt_dict(diff),
        )
    against = "HEAD" if has_head else "the index (no commits yet)"
    status_text = status.stdout.rstrip() or "(clean)"
    diff_text = diff.stdout.rstrip() or "(no differences in tracked files)"
    truncated = diff.truncated or len(diff_text) > MAX_DIFF_CHARS
    content = f"git status:\n{status_text}\n\ndiff against {against}:\n{clip(diff_text, MAX_DIFF_CHARS)}"
    return ToolResult(
        ok=True,
        content=content,
        data={
            "path": scope[-1] if scope else None,
            "against": "HEAD" if has_head else "index",
            "status": status.stdout,
            "diff": diff.stdout,
            "truncated": truncated,
        },
    )
