from __future__ import annotations

from pathlib import Path

import pytest

from tether.envelope.schema import Sandbox as SandboxSpec
from tether.errors import SandboxUnavailable
from tether.sandbox import BwrapSandbox, LocalSandbox, bwrap_available, make_sandbox


@pytest.fixture
def no_bwrap(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A PATH on which bubblewrap cannot be found (the rest of the tools still are)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "setpriv"):
        (bin_dir / tool).symlink_to(f"/usr/bin/{tool}")
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.mark.usefixtures("no_bwrap")
def test_required_bwrap_missing_fails_closed(workspace: Path) -> None:
    assert bwrap_available() is not None
    with pytest.raises(SandboxUnavailable) as info:
        make_sandbox(SandboxSpec(backend="bwrap", required=True), workspace)
    assert "apt-get install -y bubblewrap" in info.value.fix


@pytest.mark.usefixtures("no_bwrap")
def test_optional_bwrap_missing_falls_back_visibly(workspace: Path) -> None:
    box = make_sandbox(SandboxSpec(backend="bwrap", required=False), workspace)
    assert isinstance(box, LocalSandbox)
    assert box.fallback_reason and "not installed" in box.fallback_reason


def test_local_when_asked(workspace: Path) -> None:
    box = make_sandbox(SandboxSpec(backend="local"), workspace, env_allow=["MY_TOKEN"])
    assert isinstance(box, LocalSandbox) and box.fallback_reason is None and box.env_allow == ("MY_TOKEN",)


@pytest.mark.bwrap
def test_bwrap_when_available(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_TOKEN", "passed-on-purpose")
    box = make_sandbox(SandboxSpec(), workspace, env_allow=["MY_TOKEN"])
    assert isinstance(box, BwrapSandbox)
    r = box.run("echo $MY_TOKEN", cwd=workspace, timeout_s=30)
    assert r.stdout == "passed-on-purpose\n"


def test_secrets_refuse_local_when_asked(workspace: Path) -> None:
    with pytest.raises(SandboxUnavailable) as info:
        make_sandbox(SandboxSpec(backend="local"), workspace, secrets=["gh"])
    assert "declares secrets (gh)" in str(info.value) and "bwrap" in info.value.fix


@pytest.mark.usefixtures("no_bwrap")
def test_secrets_refuse_the_local_fallback(workspace: Path) -> None:
    with pytest.raises(SandboxUnavailable, match="fallback would be local"):
        make_sandbox(SandboxSpec(backend="bwrap", required=False), workspace, secrets=["gh"])


@pytest.mark.bwrap
def test_secrets_run_in_bwrap(workspace: Path) -> None:
    assert isinstance(make_sandbox(SandboxSpec(), workspace, secrets=["gh"]), BwrapSandbox)


@pytest.mark.bwrap
def test_deny_globs_reach_the_bwrap_sandbox(workspace: Path) -> None:
    (workspace / ".env").write_text("TOKEN=hunter2\n")
    box = make_sandbox(SandboxSpec(), workspace, deny=[".env"])
    assert "hunter2" not in box.run("cat .env", cwd=workspace, timeout_s=30).stdout
