"""The ``hook`` fixture: hook calls of a fresh project, answered in-process; ``shared`` and ``shared_python``
for managed installs."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookkit import Hook


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)


SHARED_PYTHON = "/usr/bin/python3"  # a system interpreter every user may run (the venv's is under /root)


@pytest.fixture
def shared() -> Iterator[Path]:
    """A directory every user may enter (tmp_path is under a 0700 directory): where a managed layer can live."""
    directory = Path(tempfile.mkdtemp(dir="/tmp", prefix="tether-managed-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory)


@pytest.fixture
def shared_python(monkeypatch: pytest.MonkeyPatch) -> str:
    if not os.path.isfile(SHARED_PYTHON):
        pytest.skip("no system python3 to stand for an interpreter every user can run")
    monkeypatch.setattr(sys, "executable", SHARED_PYTHON)
    return SHARED_PYTHON
