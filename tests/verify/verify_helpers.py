from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.envelope.schema import Envelope
from tether.snapshot import Manifest, MemoryBlobStore, take
from tether.verify.changes import WorkspaceDiff, run_diff

VENV_BIN = Path(sys.executable).parent


def git(ws: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=ws, check=True, capture_output=True, text=True
    ).stdout.strip()


def envelope(**over: object) -> Envelope:
    data: dict[str, object] = {
        "plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
        "environment": {"filesystem": {"read": ["**"], "write": ["*.py", "tests/**"]}},
        "verification": {
            "sensors": [{"name": "syntax", "required": True}],
            "test_command": f"{sys.executable} -m pytest -q",
        },
    }
    data.update(over)
    return Envelope.model_validate(data)


#: workspace -> its baseline snapshot and the blobs it stored (taken when the ``project`` fixture made it).
BASELINES: dict[Path, tuple[Manifest, MemoryBlobStore]] = {}


def take_baseline(ws: Path) -> None:
    blobs = MemoryBlobStore()
    BASELINES[ws] = (take(ws, blobs=blobs), blobs)


def diff_now(ws: Path) -> WorkspaceDiff:
    """The workspace against its baseline snapshot, as the runtime computes it at completion."""
    base, blobs = BASELINES[ws]
    return run_diff(base, take(ws, previous=base, blobs=blobs), blobs, str(ws))
