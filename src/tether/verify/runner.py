"""The slice of the sandbox interface the sensors use.

Sensors that run commands (lint, types, tests) run them through a sandbox passed
in; they never spawn processes themselves. This protocol is structural, so
``tether.sandbox.local.LocalSandbox`` (and any test double with the same
``run``) satisfies it without importing anything from here.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

#: Exit status shells use for "command not found"; a sensor reports SKIPPED for it, never PASS.
NOT_FOUND_EXIT = 127


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


def find_tool(name: str, workspace: Path) -> str | None:
    """Where ``name`` is: the workspace's own virtualenv first, then ``PATH``. None when missing."""
    for venv in (".venv", "venv"):
        candidate = workspace / venv / "bin" / name
        if candidate.is_file():
            return str(candidate)
    return shutil.which(name)
