"""The ``Sandbox`` protocol: one method, so a test double is a few lines."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from .receipt import Receipt


@runtime_checkable
class Sandbox(Protocol):
    """Runs one command and returns its receipt.

    A ``str`` command runs via ``bash -c``; a sequence runs as argv. A failing command is data (a
    :class:`Receipt`); a sandbox that cannot start raises :class:`tether.errors.SandboxUnavailable`.
    """

    name: str

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> Receipt: ...


def to_argv(command: str | Sequence[str]) -> list[str]:
    """``bash -c`` for a shell string, the argv itself otherwise."""
    if isinstance(command, str):
        return ["bash", "-c", command]
    argv = list(command)
    if not argv:
        raise ValueError("empty command")
    return argv


def display(command: str | Sequence[str]) -> str:
    return command if isinstance(command, str) else shlex.join(command)
