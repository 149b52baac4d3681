"""The slice of the sandbox interface the sensors use, and how a sensor finds its tool.

Sensors that run commands (lint, types, tests) run them through a sandbox passed
in; they never spawn processes themselves. This protocol is structural, so
``tether.sandbox.local.LocalSandbox`` (and any test double with the same
``run``) satisfies it without importing anything from here.

Where a tool is found (:func:`find_tool`), the same from the CLI and the API, whatever ``PATH`` is:

1. the path the envelope names (``verification.tools: {ruff: /opt/ruff/bin/ruff}``);
2. the environment tether itself runs from (next to ``sys.executable``) — read-only in the sandbox,
   so the agent cannot replace it;
3. the workspace's own virtualenv (``.venv/bin``, ``venv/bin``) — agent-writable, hence after 2;
4. ``PATH``.

A sensor's result names the binary that ran and its version (:func:`describe_tool`).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

#: Exit status shells use for "command not found"; a sensor reports SKIPPED for it, never PASS.
NOT_FOUND_EXIT = 127
VERSION_TIMEOUT_S = 30.0


class ReceiptLike(Protocol):
    @property
    def exit_code(self) -> int | None: ...
    @property
    def timed_out(self) -> bool: ...
    @property
    def stdout(self) -> str: ...
    @property
    def stderr(self) -> str: ...
    @property
    def duration_s(self) -> float: ...


class CommandSandbox(Protocol):
    def run(
        self, command: str | Sequence[str], *, cwd: Path, timeout_s: float, env: Mapping[str, str] | None = None
    ) -> ReceiptLike: ...


def find_tool(name: str, workspace: Path, configured: Mapping[str, str] | None = None) -> str | None:
    """Where ``name`` is, in the order of the module docstring; None when it is nowhere."""
    named = (configured or {}).get(name)
    if named is not None:
        return shutil.which(named) if os.sep not in named else (named if os.access(named, os.X_OK) else None)
    candidates = [Path(sys.executable).parent / name]
    candidates += [workspace / venv / "bin" / name for venv in (".venv", "venv")]
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which(name)


_VERSIONS: dict[tuple[str, int], str] = {}


def describe_tool(exe: str, sandbox: CommandSandbox, workspace: Path) -> str:
    """``<path> (<first line of --version>)``, asked once per binary through the sandbox."""
    try:
        key = (exe, os.stat(exe).st_mtime_ns)
    except OSError:
        return exe
    if key not in _VERSIONS:
        r = sandbox.run([exe, "--version"], cwd=workspace, timeout_s=VERSION_TIMEOUT_S)
        first = (r.stdout or r.stderr).strip().splitlines()[:1]
        _VERSIONS[key] = first[0][:100] if first and r.exit_code == 0 else f"version unknown (exit {r.exit_code})"
    return f"{exe} ({_VERSIONS[key]})"
