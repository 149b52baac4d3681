"""The ``Sandbox`` protocol: one method, so a test double is a few lines."""

from __future__ import annotations

import os
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


def resolve_dir(path: str | os.PathLike[str]) -> str | None:
    """``path`` with every symbolic link resolved, as the kernel resolves it, if it is a directory; else None.

    One ``O_PATH`` open and a ``readlink`` of its ``/proc/self/fd`` entry: ``Path.resolve`` (``os.path.realpath``)
    makes an ``lstat`` and a dozen Python steps per component, and ``is_dir`` one more ``stat`` (27 us against
    3 us for a six-component path). Where ``/proc`` cannot tell (not mounted; the directory removed meanwhile),
    ``os.path.realpath`` of the path."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = ""
    finally:
        os.close(fd)
    if not target.startswith("/") or target.endswith(" (deleted)"):
        return os.path.realpath(path) if os.path.isdir(path) else None
    return target


def is_within(path: str, root: str) -> bool:
    """Is the resolved ``path`` ``root`` or below it (both resolved, absolute, without a trailing slash but ``/``)?"""
    return path == root or path.startswith(root if root.endswith("/") else root + "/")
