"""The ``git_diff`` built-in: git for the model, run inside the sandbox.

What changed is tether's to know (``tether.snapshot``, read as bytes on the host); this tool only
shows the model git's own view, and nothing tether decides depends on its output.

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


def is_git_worktree(workspace: Path) -> bool:
    return (workspace / ".git").exists()


def run_git(ctx: ToolContext, args: Sequence[str], *, timeout_s: float | None = None) -> Receipt:
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
