from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.envelope.schema import Envelope

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
