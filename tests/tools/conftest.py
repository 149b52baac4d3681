"""Fixtures for the tool tests: a real workspace directory, real sandboxes, real git."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.envelope.schema import Envelope
from tether.sandbox import BwrapSandbox, LocalSandbox, Sandbox
from tether.tools import ToolContext


def make_sandbox(kind: str, workspace: Path) -> Sandbox:
    """``local`` or ``bwrap`` (a test that asks for bwrap is marked ``bwrap``: see tests/conftest.py)."""
    if kind == "bwrap":
        return BwrapSandbox(workspace)
    return LocalSandbox()


@pytest.fixture
def sandbox(workspace: Path) -> Any:
    """The local sandbox. Command tests override this with a fixture parametrised over every backend."""
    return make_sandbox("local", workspace)


@pytest.fixture(params=["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def any_sandbox(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Every sandbox backend that can run here; the sandbox's workspace root is ``tmp_path``."""
    return make_sandbox(str(request.param), tmp_path)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def _make_envelope(**verification: Any) -> Envelope:
    data: dict[str, Any] = {"plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64}}
    if verification:
        data["verification"] = verification
    return Envelope.model_validate(data)


MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def make_ctx(workspace: Path, sandbox: Any) -> MakeCtx:
    def make(*, timeout_s: float = 30, envelope: Envelope | None = None, ws: Path | None = None) -> ToolContext:
        return ToolContext(
            workspace=ws or workspace, sandbox=sandbox, envelope=envelope or _make_envelope(), timeout_s=timeout_s
        )

    return make


@pytest.fixture
def ctx(make_ctx: MakeCtx) -> ToolContext:
    return make_ctx()


def _git(ws: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.invalid",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.invalid",
        "GIT_CONFIG_GLOBAL": "/dev/null",
    }
    return subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def git_workspace(workspace: Path) -> Path:
    """A git repo with one commit: README.md and src/app.py."""
    _git(workspace, "init", "-q", "-b", "main")
    (workspace / "README.md").write_text("# demo\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    _git(workspace, "add", "-A")
    _git(workspace, "commit", "-q", "-m", "init")
    return workspace


@pytest.fixture
def make_envelope() -> Callable[..., Envelope]:
    """Build an envelope; keyword arguments become its ``verification`` section."""
    return _make_envelope


@pytest.fixture
def git() -> Callable[..., str]:
    """Run real git in a directory with a fixed identity and no global config."""
    return _git
