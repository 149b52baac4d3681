from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # helpers import the same with or without tests/__init__.py

from verify_helpers import git, take_baseline

from tether.sandbox.local import LocalSandbox


@pytest.fixture
def sandbox() -> LocalSandbox:
    return LocalSandbox()


@pytest.fixture
def project(tmp_path: Path) -> Callable[..., Path]:
    """A tiny Python project (calc.py + tests) committed to git; returns the workspace."""

    def make(files: dict[str, str] | None = None) -> Path:
        ws = tmp_path / "ws"
        ws.mkdir()
        base = {
            "calc.py": "def add(a, b):\n    return a + b\n",
            "util.py": "def shout(s):\n    return s.upper()\n",
            "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
            "tests/test_util.py": "from util import shout\n\n\ndef test_shout():\n    assert shout('a') == 'A'\n",
            ".gitignore": ".tether/\n__pycache__/\n",
        }
        base.update(files or {})
        for rel, text in base.items():
            (ws / rel).parent.mkdir(parents=True, exist_ok=True)
            (ws / rel).write_text(text)
        git(ws, "init", "-q")
        git(ws, "add", "-A")
        git(ws, "commit", "-qm", "base")
        take_baseline(ws)
        return ws

    return make
