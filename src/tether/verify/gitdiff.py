"""The workspace's diff against the run's baseline commit, read with git.

This is host-side, read-only inspection of the workspace (``git diff``), not an
agent action, so it runs git directly rather than through the agent's sandbox.

Churn, as used by the policy sensor and the reviewer::

    churn_pct = 100 * (inserted lines + deleted lines) / max(1, lines tracked at the baseline)

Untracked files (honouring .gitignore) count as wholly inserted. Tool and cache
artefacts (``.tether/``, ``__pycache__/``, ``.pytest_cache/`` ...) are never part of the diff.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
GIT_TIMEOUT_S = 30.0
ARTEFACT_DIRS = frozenset(
    {".tether", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".git", ".venv", "venv", ".tox"}
)
HARDENED = ("-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def is_artefact(path: str) -> bool:
    p = PurePosixPath(path)
    return (
        any(part in ARTEFACT_DIRS for part in p.parts[:-1])
        or p.suffix in {".pyc", ".pyo"}
        or p.parts[0] in ARTEFACT_DIRS
    )


@dataclass(frozen=True)
class FileDiff:
    path: str
    status: str  # "added" | "modified" | "deleted" | "untracked"
    added: tuple[tuple[int, str], ...] = ()  # (line number in the new file, text)
    removed: tuple[tuple[int, str], ...] = ()  # (line number in the old file, text)


@dataclass(frozen=True)
class WorkspaceDiff:
    available: bool
    note: str = ""
    files: tuple[FileDiff, ...] = field(default=())
    baseline_lines: int | None = None

    @property
    def paths(self) -> list[str]:
        return [f.path for f in self.files]

    @property
    def insertions(self) -> int:
        return sum(len(f.added) for f in self.files)

    @property
    def deletions(self) -> int:
        return sum(len(f.removed) for f in self.files)

    @property
    def churn_pct(self) -> float | None:
        if self.baseline_lines is None:
            return None
        return 100.0 * (self.insertions + self.deletions) / max(1, self.baseline_lines)

    def file(self, path: str) -> FileDiff | None:
        return next((f for f in self.files if f.path == path), None)


def _git(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Host-side git on a workspace the agent has written to: it must never run a program the agent chose.

    Hooks, fsmonitor and external diff drivers are switched off, and every filter driver the
    repository configures (clean/smudge/process — they run on worktree files during a diff) is
    blanked. Listing the configured drivers only reads config; it runs nothing.
    """
    return subprocess.run(
        ["git", *HARDENED, *neutralised_filters(workspace), "-c", "core.quotepath=off", *args],
        cwd=workspace,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=GIT_TIMEOUT_S,
        check=False,
    )


def neutralised_filters(workspace: Path) -> list[str]:
    listed = subprocess.run(
        ["git", "config", "--get-regexp", r"^filter\..*\.(clean|smudge|process)$"],
        cwd=workspace,
        capture_output=True,
        text=True,
        errors="replace",
        timeout=GIT_TIMEOUT_S,
        check=False,
    )
    names = {line.split()[0].rsplit(".", 1)[0] for line in listed.stdout.splitlines() if line.strip()}
    out: list[str] = []
    for name in sorted(names):  # e.g. "filter.lfs"
        out += [
            "-c",
            f"{name}.clean=",
            "-c",
            f"{name}.smudge=",
            "-c",
            f"{name}.process=",
            "-c",
            f"{name}.required=false",
        ]
    return out


def _resolve_baseline(workspace: Path, baseline: str | None) -> str | None:
    ref = baseline or "HEAD"
    r = _git(workspace, "rev-parse", "--verify", "--quiet", ref + "^{commit}")
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else None


def parse_unified(text: str) -> list[FileDiff]:
    """Parse ``git diff -U0`` output into per-file added/removed lines with line numbers."""
    out: list[FileDiff] = []
    path: str | None = None
    status = "modified"
    added: list[tuple[int, str]] = []
    removed: list[tuple[int, str]] = []
    old_no = new_no = 0

    def flush() -> None:
        if path is not None:
            out.append(FileDiff(path, status, tuple(added), tuple(removed)))

    in_header = False
    for line in text.splitlines():
        if line.startswith("diff --git "):
            flush()
            path, status, added, removed, in_header = None, "modified", [], [], True
            m = re.match(r"diff --git a/(.*) b/(.*)$", line)
            if m:
                path = m.group(2)
        elif in_header and line.startswith("new file mode"):
            status = "added"
        elif in_header and line.startswith("deleted file mode"):
            status = "deleted"
        elif line.startswith("@@"):
            in_header = False
            m = _HUNK.match(line)
            if m:
                old_no, new_no = int(m.group(1)), int(m.group(3))
        elif in_header:
            continue
        elif line.startswith("+"):
            added.append((new_no, line[1:]))
            new_no += 1
        elif line.startswith("-"):
            removed.append((old_no, line[1:]))
            old_no += 1
    flush()
    return [f for f in out if not is_artefact(f.path)]


def _untracked(workspace: Path) -> list[FileDiff]:
    r = _git(workspace, "ls-files", "--others", "--exclude-standard", "-z")
    files = []
    for rel in sorted(p for p in r.stdout.split("\0") if p and not is_artefact(p)):
        try:
            text = (workspace / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        files.append(FileDiff(rel, "untracked", tuple(enumerate(text.splitlines(), start=1)), ()))
    return files


def _baseline_lines(workspace: Path, commit: str) -> int | None:
    r = _git(workspace, "diff", "--numstat", EMPTY_TREE, commit)
    if r.returncode != 0:
        return None
    total = 0
    for row in r.stdout.splitlines():
        ins = row.split("\t", 1)[0]
        if ins.isdigit():
            total += int(ins)
    return total


def workspace_diff(workspace: Path, baseline: str | None) -> WorkspaceDiff:
    """The working tree against ``baseline`` (HEAD when None); unavailable outside a git repository."""
    try:
        inside = _git(workspace, "rev-parse", "--is-inside-work-tree")
    except (OSError, subprocess.TimeoutExpired) as e:
        return WorkspaceDiff(False, f"git unavailable: {e}")
    if inside.returncode != 0:
        return WorkspaceDiff(False, "not a git repository")
    commit = _resolve_baseline(workspace, baseline)
    if commit is None:
        return WorkspaceDiff(False, f"baseline {baseline or 'HEAD'!r} is not a commit")
    r = _git(workspace, "diff", "--no-color", "--no-ext-diff", "--no-renames", "-U0", commit, "--")
    if r.returncode != 0:
        return WorkspaceDiff(False, f"git diff failed: {r.stderr.strip()[:200]}")
    files = parse_unified(r.stdout) + _untracked(workspace)
    return WorkspaceDiff(True, f"against {commit[:12]}", tuple(files), _baseline_lines(workspace, commit))


def fallback_diff(workspace: Path, changed_files: Iterable[str]) -> WorkspaceDiff:
    """Without git: every changed file that exists counts as wholly added (churn unknown)."""
    files = []
    for rel in sorted(set(changed_files)):
        if is_artefact(rel):
            continue
        p = workspace / rel
        if p.is_file():
            text = p.read_text(encoding="utf-8", errors="replace")
            files.append(FileDiff(rel, "untracked", tuple(enumerate(text.splitlines(), start=1)), ()))
        else:
            files.append(FileDiff(rel, "deleted"))
    return WorkspaceDiff(False, "no git baseline; changed files read whole", tuple(files))


def diff_for(workspace: Path, baseline: str | None, changed_files: Sequence[str] = ()) -> WorkspaceDiff:
    d = workspace_diff(workspace, baseline)
    return d if d.available else fallback_diff(workspace, changed_files)
