"""The ``search`` built-in: a regular expression over workspace text files.

Honours ``.gitignore`` files at every level (and ``.git/info/exclude``) with gitignore
semantics (pathspec), never descends into ``.git``, ``.tether`` or ``.venv``, skips
binary files, files over a size cap and symlinks that leave the workspace.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import pathspec
from pydantic import Field

from ._paths import looks_binary, relative, resolve
from .context import ToolContext
from .contract import tool
from .result import ToolFailure, ToolResult

ALWAYS_SKIPPED_DIRS = frozenset({".git", ".tether", ".venv"})
MAX_FILE_BYTES = 2_000_000
MAX_MATCH_TEXT = 300
MAX_RESULTS_CAP = 1000


@dataclass(frozen=True)
class _Ignore:
    base: str  # workspace-relative directory holding the ignore file ("" for the root)
    spec: pathspec.GitIgnoreSpec

    def local(self, rel: str, is_dir: bool) -> str | None:
        """``rel`` relative to this file's directory, or None when the file does not apply."""
        if self.base:
            if not rel.startswith(self.base + "/"):
                return None
            rel = rel[len(self.base) + 1 :]
        return rel + "/" if is_dir else rel


def _load_ignore(path: Path, base: str) -> _Ignore | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return _Ignore(base, pathspec.GitIgnoreSpec.from_lines(lines))


class _Ignorer:
    """Gitignore rules from the workspace root down to the directory being walked."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.rules: list[_Ignore] = []
        for candidate in (root / ".git" / "info" / "exclude", root / ".gitignore"):
            rule = _load_ignore(candidate, "") if candidate.is_file() else None
            if rule:
                self.rules.append(rule)
        self._loaded = {""}

    def enter(self, rel_dir: str) -> None:
        """Load ``rel_dir/.gitignore`` (once) before its entries are checked."""
        if rel_dir in self._loaded:
            return
        self._loaded.add(rel_dir)
        candidate = self.root / rel_dir / ".gitignore"
        rule = _load_ignore(candidate, rel_dir) if candidate.is_file() else None
        if rule:
            self.rules.append(rule)

    def ignored(self, rel: str, is_dir: bool) -> bool:
        # Later (deeper) files override earlier ones only through negation; a simple
        # "last rule that has an opinion wins" over the stack matches git closely enough.
        verdict = False
        for rule in self.rules:
            local = rule.local(rel, is_dir)
            if local is None:
                continue
            result = rule.spec.check_file(local)
            if result.include is not None:
                verdict = result.include
        return verdict


def _under(rel_dir: str, name: str) -> str:
    return f"{rel_dir}/{name}" if rel_dir else name


def _walk(root: Path, start: Path, ignorer: _Ignorer) -> Any:
    """Yield (workspace-relative path, real path) of candidate files under ``start``."""
    start_rel = "" if start == root else start.relative_to(root).as_posix()
    # Load ignore files of the ancestors of a sub-directory start point.
    parts = start_rel.split("/") if start_rel else []
    for i in range(1, len(parts)):
        ignorer.enter("/".join(parts[:i]))
    for dirpath, dirnames, filenames in os.walk(start):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        ignorer.enter(rel_dir)
        keep = []
        for d in sorted(dirnames):
            rel = _under(rel_dir, d)
            if d in ALWAYS_SKIPPED_DIRS or os.path.islink(os.path.join(dirpath, d)) or ignorer.ignored(rel, True):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            rel = _under(rel_dir, f)
            if ignorer.ignored(rel, False):
                continue
            yield rel, Path(dirpath) / f


@tool(
    effects=["read"],
    idempotent=True,
    timeout_s=30,
    evidence=["matching lines as path:line: text", "number of files scanned"],
    rollback="not needed (read-only)",
)
def search(
    ctx: ToolContext,
    pattern: str,
    path: str = ".",
    glob: str | None = None,
    max_results: Annotated[int, Field(ge=1, le=MAX_RESULTS_CAP)] = 100,
) -> ToolResult:
    """Search workspace text files for a regular expression (Python syntax), honouring .gitignore.

    Args:
        pattern: Regular expression, matched against each line.
        path: File or directory to search, relative to the workspace root.
        glob: Only files matching this gitignore-style pattern, e.g. "*.py" or "src/**/*.ts".
        max_results: Stop after this many matching lines.
    """
    try:
        regex = re.compile(pattern)
    except re.error as e:
        raise ToolFailure("invalid_args", f"pattern {pattern!r} is not a valid regular expression: {e}") from e
    glob_spec = pathspec.GitIgnoreSpec.from_lines([glob]) if glob else None
    root = ctx.workspace.resolve()
    start = resolve(ctx.workspace, path)
    start_rel = relative(ctx.workspace, start)
    if not start.exists():
        raise ToolFailure("not_found", f"{start_rel}: no such file or directory", path=start_rel)
    candidates = [(start_rel, start)] if start.is_file() else _walk(root, start, _Ignorer(root))
    scan = _Scan()
    for rel, file in candidates:
        if glob_spec is not None and not glob_spec.match_file(rel):
            continue
        data = scan.read(root, file)
        if data is not None and not scan.match(rel, data, regex, max_results):
            break
    return ToolResult(
        ok=True,
        content=_summary(pattern, start_rel, scan, max_results),
        data={
            "pattern": pattern,
            "path": start_rel,
            "glob": glob,
            "matches": scan.matches,
            "files_scanned": scan.scanned,
            "skipped_binary": scan.skipped_binary,
            "skipped_large": scan.skipped_large,
            "truncated": scan.truncated,
        },
    )


@dataclass
class _Scan:
    """What a search found so far and what it passed over, counted for the result's data: the model is told how
    much was searched, so "no matches" over no files is not taken for "not there"."""

    matches: list[dict[str, Any]] = field(default_factory=list)
    scanned: int = 0
    skipped_binary: int = 0
    skipped_large: int = 0
    truncated: bool = False

    def read(self, root: Path, file: Path) -> bytes | None:
        """The file's bytes when it is a searchable text file: a regular file inside the workspace (a symlink is
        followed only while it stays inside), at most :data:`MAX_FILE_BYTES`, not binary. None otherwise, counted
        when it was skipped for its size or content; an unreadable file is passed over silently."""
        try:
            real = Path(os.path.realpath(file))
            if not real.is_relative_to(root) or not real.is_file():
                return None
            if real.stat().st_size > MAX_FILE_BYTES:
                self.skipped_large += 1
                return None
            data = real.read_bytes()
        except OSError:
            return None
        if looks_binary(data):
            self.skipped_binary += 1
            return None
        self.scanned += 1
        return data

    def match(self, rel: str, data: bytes, regex: re.Pattern[str], max_results: int) -> bool:
        """Add the file's matching lines (each cut at :data:`MAX_MATCH_TEXT`); False once a match is found past
        ``max_results`` (the search stops there, marked truncated)."""
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if regex.search(line):
                if len(self.matches) >= max_results:
                    self.truncated = True
                    return False
                text = line if len(line) <= MAX_MATCH_TEXT else line[:MAX_MATCH_TEXT] + " [...]"
                self.matches.append({"path": rel, "line": n, "text": text})
        return True


def _summary(pattern: str, start_rel: str, scan: _Scan, max_results: int) -> str:
    """What the model reads: one ``path:line: text`` row per match, or how many files held none, and when the
    search stopped early, how to narrow it."""
    scope = f" in {start_rel}" if start_rel != "." else ""
    if not scan.matches:
        return f"no matches for /{pattern}/{scope} ({scan.scanned} files scanned)"
    rows = [f"{m['path']}:{m['line']}: {m['text']}" for m in scan.matches]
    more = f"\n[... stopped at {max_results} matches; narrow the pattern, path or glob]" if scan.truncated else ""
    return f"{len(scan.matches)} matches for /{pattern}/{scope}:\n" + "\n".join(rows) + more
