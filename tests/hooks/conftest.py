"""The ``hook`` fixture: hook calls of a fresh project, answered in-process; ``home`` (a user of tmp_path's, no
daemon), ``shared``, ``shared_python`` and ``venv`` for the installer and status."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hookkit import Hook, daemons_under, unavailable, wait_for


@pytest.fixture(autouse=True)
def no_daemon_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """Ends a daemon a test's hook call started on its own (a launcher that found no daemon starts one, which
    would otherwise idle for 30 minutes beside the tests after it)."""
    yield
    if "tmp_path" not in request.fixturenames:
        return
    folder = request.getfixturevalue("tmp_path")
    for pid in daemons_under(folder):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for _ in range(500):
        if not daemons_under(folder):
            return
        time.sleep(0.01)
    raise AssertionError(f"a daemon under {folder} did not end")


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
def system_python() -> str:
    """The system's python3 and bash: a managed command's interpreter every user can run. Skipped where there is
    none, never in CI (``.ci/run`` installs them): there a managed-install test that cannot run fails."""
    if not (os.path.isfile(SHARED_PYTHON) and shutil.which("bash")):
        unavailable(f"no {SHARED_PYTHON} or no bash to stand for a command every user can run")
    return SHARED_PYTHON


@pytest.fixture
def shared_python(system_python: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The system's python3 as the interpreter tether's hook commands name."""
    monkeypatch.setattr(sys, "executable", system_python)
    return system_python


@pytest.fixture
def venv(shared: Path, system_python: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A venv of the system's python3 in a directory every user may enter, root's: the interpreter the managed
    command names."""
    subprocess.run([system_python, "-m", "venv", "--without-pip", str(shared / "venv")], check=True)
    monkeypatch.setattr(sys, "executable", str(shared / "venv" / "bin" / "python3"))
    return shared / "venv"


@pytest.fixture
def site_packages(venv: Path) -> Path:
    """The venv's site-packages: where its dependencies and ``.pth`` files live."""
    (found,) = (venv / "lib").glob("python3*/site-packages")
    return found


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


@pytest.fixture
def start_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., tuple[Path, threading.Thread]]]:
    """A daemon served by a thread of this process on a socket under tmp_path (``$TETHER_HOOK_SOCKET`` names it),
    started when the test calls this (after its own monkeypatches; ``idle_s`` its idle time), stopped at the end: its
    socket and the thread."""
    from tether.hooks.daemon import serve, stop_daemon
    from tether.hooks.relay import endpoint_path

    sock = tmp_path / "d" / "hookd.sock"
    threads: list[threading.Thread] = []

    def start(idle_s: float = 60.0) -> tuple[Path, threading.Thread]:
        sock.parent.mkdir(mode=0o700)
        monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
        served = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": idle_s})
        served.start()
        threads.append(served)
        wait_for(sock)
        wait_for(Path(endpoint_path(str(sock))))  # published just after the socket: a test that reads it raced it
        return sock, served

    yield start
    stop_daemon(str(sock))
    for served in threads:
        served.join(timeout=30)
