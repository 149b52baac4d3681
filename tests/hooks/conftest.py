"""The ``hook`` fixture: hook calls of a fresh project, answered in-process; ``home`` (a user of tmp_path's, no
daemon), ``shared`` and ``shared_python`` for the installer and status."""

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


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """HOME under tmp_path, no agent config directory from the environment, and a daemon socket nobody serves:
    installs, uninstalls and status never touch the real user's files or daemon."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(tmp_path / "no-daemon" / "hookd.sock"))
    return home
