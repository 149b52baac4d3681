"""Fixtures for the tool tests: a real workspace directory, a real sandbox, real git.

The sandbox is ``tether.sandbox.local.LocalSandbox`` when it exists; otherwise a small
subprocess-backed double implementing the same protocol (``run`` -> receipt).
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tether.envelope.schema import Envelope
from tether.tools import ToolContext

try:  # the real receipt type when the sandbox package provides it
    from tether.sandbox.receipt import Receipt as _Receipt

    RECEIPT: Any = _Receipt
except ImportError:  # pragma: no cover - only until the sandbox lands

    @dataclass
    class _FallbackReceipt:
        backend: str
        command: str
        cwd: str
        exit_code: int
        timed_out: bool
        duration_s: float
        stdout: str
        stderr: str
        stdout_bytes: int
        stderr_bytes: int
        truncated: bool

        @property
        def ok(self) -> bool:
            return self.exit_code == 0 and not self.timed_out

    RECEIPT = _FallbackReceipt


class SubprocessSandbox:
    """A minimal protocol double: runs the command with subprocess, kills the group on timeout."""

    name = "test-subprocess"

    def __init__(self) -> None:
        self.calls: list[str | Sequence[str]] = []

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> Any:
        self.calls.append(command)
        shell = isinstance(command, str)
        start = time.monotonic()
        proc = subprocess.Popen(
            command if shell else list(command),
            shell=shell,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        timed_out = False
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(proc.pid, 9)
            out, err = proc.communicate()
        stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        return RECEIPT(
            backend=self.name,
            command=command if shell else " ".join(command),
            cwd=str(cwd),
            exit_code=proc.returncode if not timed_out else -9,
            timed_out=timed_out,
            duration_s=time.monotonic() - start,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=len(out),
            stderr_bytes=len(err),
            truncated=False,
        )


def _bwrap_skip_reason() -> str | None:
    try:
        from tether.sandbox.bwrap import bwrap_available
    except ImportError:
        return "tether.sandbox.bwrap is not available"
    return bwrap_available()


def make_sandbox(kind: str, workspace: Path) -> Any:
    """``local`` (the real LocalSandbox, or the double until it exists) or ``bwrap`` (skips if it cannot start)."""
    if kind == "bwrap":
        reason = _bwrap_skip_reason()
        if reason is not None:
            pytest.skip(f"bwrap sandbox unavailable: {reason}")
        from tether.sandbox.bwrap import BwrapSandbox

        return BwrapSandbox(workspace)
    try:
        from tether.sandbox.local import LocalSandbox
    except ImportError:
        return SubprocessSandbox()
    return LocalSandbox()


@pytest.fixture
def sandbox(workspace: Path) -> Any:
    """The local sandbox. Command tests override this with a fixture parametrised over every backend."""
    return make_sandbox("local", workspace)


@pytest.fixture(params=["local", "bwrap"])
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
