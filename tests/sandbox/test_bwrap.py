"""What only the bubblewrap backend promises: isolation, checked from the host side."""

from __future__ import annotations

import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.errors import SandboxUnavailable
from tether.sandbox import BwrapSandbox
from tether.sandbox.bwrap import interpreter_paths
from tether.sandbox.doctor import listener

pytestmark = pytest.mark.bwrap


@pytest.fixture
def box(workspace: Path) -> BwrapSandbox:
    return BwrapSandbox(workspace)


def test_interpreter_running_tether_is_reachable(box: BwrapSandbox, workspace: Path) -> None:
    r = box.run("python3 -c 'import sys; print(sys.version.split()[0])'", cwd=workspace, timeout_s=30)
    assert r.ok, r.stderr
    assert r.stdout.strip() == sys.version.split()[0]


def test_system_dirs_read_only_and_host_dirs_hidden(box: BwrapSandbox, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)
    r = box.run(
        f"touch /usr/tether-probe; echo x > {outside}/escaped; ls /root /home /var/lib", cwd=workspace, timeout_s=30
    )
    assert not (outside / "escaped").exists()
    assert not Path("/usr/tether-probe").exists()
    assert "Read-only file system" in r.stderr or "Permission denied" in r.stderr


@pytest.mark.root
def test_root_only_file_unreadable_even_when_mounted(workspace: Path, tmp_path: Path) -> None:
    secret_dir = tmp_path / "secret"
    secret_dir.mkdir()
    (secret_dir / "key").write_text("TOPSECRET")
    (secret_dir / "key").chmod(0o600)
    box = BwrapSandbox(workspace, ro_paths=[secret_dir])
    r = box.run(f"cat {secret_dir}/key; cat /etc/shadow; id -u", cwd=workspace, timeout_s=30)
    assert "TOPSECRET" not in r.stdout and "root:" not in r.stdout
    assert r.stdout.split()[-1] != "0"  # the command is not root


def test_tmp_and_home_are_private(box: BwrapSandbox, workspace: Path) -> None:
    r = box.run("echo private > /tmp/x && echo home > $HOME/y && echo $HOME && ls -A /tmp", cwd=workspace, timeout_s=30)
    assert r.ok, r.stderr
    home, *listing = r.stdout.split()
    assert home == "/home/sandbox"
    # ours, plus the way to the workspace and to a Python that lives under /tmp (a checkout there)
    ways = [workspace.resolve(), *(p for p in interpreter_paths() if p.is_relative_to("/tmp"))]
    assert "x" in listing and set(listing) <= {"x", *(w.parts[2] for w in ways)}
    assert not Path("/tmp/x").is_file() or Path("/tmp/x").read_text() != "private\n"


def test_no_network_and_host_loopback_unreachable(box: BwrapSandbox, workspace: Path) -> None:
    with listener("host-token") as port:
        # sanity: the listener really answers on the host
        with socket.create_connection(("127.0.0.1", port), timeout=5) as c:
            assert c.recv(64).startswith(b"host-token")
        r = box.run(f"exec 3<>/dev/tcp/127.0.0.1/{port} && head -n1 <&3", cwd=workspace, timeout_s=30)
    assert "host-token" not in r.stdout and not r.ok
    r = box.run("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '", cwd=workspace, timeout_s=30)
    assert r.stdout.split() == ["lo"]


def test_no_capabilities_and_no_new_privs(box: BwrapSandbox, workspace: Path) -> None:
    r = box.run("grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status", cwd=workspace, timeout_s=30)
    fields = dict(line.split(":\t") for line in r.stdout.splitlines())
    assert fields["CapEff"] == fields["CapPrm"] == "0000000000000000"
    assert fields["NoNewPrivs"] == "1"


def test_own_pid_namespace(box: BwrapSandbox, workspace: Path) -> None:
    r = box.run("ls /proc | grep -c '^[0-9]'", cwd=workspace, timeout_s=30)
    assert int(r.stdout) < 10


def test_cwd_outside_workspace_is_refused(box: BwrapSandbox, tmp_path: Path) -> None:
    from tether.errors import FileError

    with pytest.raises(FileError):
        box.run("true", cwd=tmp_path, timeout_s=30)


def test_cwd_resolution_is_checked_after_every_link(box: BwrapSandbox, workspace: Path, tmp_path: Path) -> None:
    """The working directory is resolved as the kernel resolves it before the workspace check: a link inside the
    workspace that leads out, a prefix sibling (``ws-evil`` beside ``ws``), a file, a missing path and a directory
    removed are refused; a link that stays inside runs there, under its resolved path."""
    from tether.errors import FileError

    outside = tmp_path / "outside"
    outside.mkdir()
    sibling = tmp_path / (workspace.name + "-evil")
    sibling.mkdir()
    (workspace / "out").symlink_to(outside)
    (workspace / "sub").mkdir()
    (workspace / "in").symlink_to(workspace / "sub")
    (workspace / "file").write_text("x")
    gone = workspace / "gone"
    gone.mkdir()
    gone.rmdir()
    for bad in (workspace / "out", sibling, workspace / "file", workspace / "missing", gone):
        with pytest.raises(FileError):
            box.run("touch escaped", cwd=bad, timeout_s=30)
    assert not (outside / "escaped").exists() and not (sibling / "escaped").exists()
    r = box.run("pwd", cwd=workspace / "in", timeout_s=30)
    assert r.ok and r.stdout.strip() == str((workspace / "sub").resolve()) and r.cwd == r.stdout.strip()


def test_resolve_dir_is_realpath_for_directories(tmp_path: Path) -> None:
    from tether.sandbox.base import is_within, resolve_dir

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "l").symlink_to(tmp_path / "a")
    (tmp_path / "f").write_text("")
    for path in (tmp_path, tmp_path / "a" / "b", tmp_path / "l" / "b", tmp_path / "l" / "b" / "..", Path("/")):
        assert resolve_dir(path) == str(path.resolve())
    for path in (tmp_path / "f", tmp_path / "nope", tmp_path / "f" / "x"):
        assert resolve_dir(path) is None
    assert is_within("/a/b", "/a") and is_within("/a", "/a") and is_within("/a", "/")
    assert not is_within("/ab", "/a") and not is_within("/", "/a")


def test_setup_failure_raises_instead_of_returning_a_receipt(workspace: Path) -> None:
    class Broken(BwrapSandbox):
        def argv(self, inner: object, **kw: Any) -> list[str]:  # type: ignore[override]
            args = super().argv(inner, **kw)  # type: ignore[arg-type]
            return [args[0], "--ro-bind", "/tether/does/not/exist", "/x", *args[1:]]

    with pytest.raises(SandboxUnavailable, match="does/not/exist"):
        Broken(workspace).run("echo never", cwd=workspace, timeout_s=30)


def test_failing_command_that_prints_like_bwrap_is_still_data(box: BwrapSandbox, workspace: Path) -> None:
    r = box.run("echo 'bwrap: fake' >&2; exit 1", cwd=workspace, timeout_s=30)
    assert r.exit_code == 1


def test_environment_built_once_carries_nothing_from_one_command_to_the_next(
    box: BwrapSandbox, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sandbox's own variables (PATH, HOME, USER, ...) are built once per sandbox; the rest is read per command.
    Attack on that cache: a call's own variables and a twin's carried secret never reach a later command, a call
    cannot change the fixed variables (for itself or the next), and the host's allowlisted variables are read anew."""
    from tether.sandbox.bwrap import Carried

    monkeypatch.setenv("TZ", "Europe/Paris")
    show = 'echo "[$TETHER_CARRIED][$MINE][$TZ][$PATH][$HOME][$USER]"'
    twin = box.carrying(Carried(env={"TETHER_CARRIED": "s3cret"}))
    first = twin.run(
        show, cwd=workspace, timeout_s=30, env={"MINE": "x", "PATH": "/evil", "HOME": "/evil", "USER": "root"}
    )
    assert first.ok, first.stderr
    carried, mine, tz, path, home, user = first.stdout.strip()[1:-1].split("][")
    assert (carried, mine, tz, home) == ("s3cret", "x", "Europe/Paris", "/home/sandbox")
    assert "/evil" not in path and user == box.user.name
    monkeypatch.delenv("TZ")
    later = box.run(show, cwd=workspace, timeout_s=30)
    assert later.ok, later.stderr
    assert later.stdout == f"[][][][{path}][/home/sandbox][{user}]\n"
    assert box.env(None) == {**box.env(None), "PATH": path}  # nothing the calls passed was kept
