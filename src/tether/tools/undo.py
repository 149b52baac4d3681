"""Applying undo records produced by the write built-ins.

Record shape: ``{"kind": "file", "path": "<workspace-relative>", "before": "<text>" | None}``.
``before: None`` means the file did not exist, so undoing deletes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tether.errors import InputError

from ._paths import relative, resolve
from .files import atomic_write
from .result import ToolFailure


def apply_undo(record: Mapping[str, Any], workspace: Path) -> str:
    """Restore what ``record`` describes; return the workspace-relative path restored.

    Raises ``InputError`` for a record that is malformed or points outside the workspace.
    """
    if record.get("kind") != "file" or not isinstance(record.get("path"), str):
        raise InputError(f"undo record: expected {{'kind': 'file', 'path': str, 'before': str | None}}, got {record!r}")
    before = record.get("before")
    if before is not None and not isinstance(before, str):
        raise InputError(f"undo record for {record['path']}: 'before' must be text or null")
    try:
        real = resolve(workspace, record["path"], for_write=True)
    except ToolFailure as e:
        raise InputError(f"undo record: {e.message}") from e
    if before is None:
        real.unlink(missing_ok=True)
    else:
        atomic_write(real, before)
    return relative(workspace, real)
