"""A daemon stops answering once tether's modules on disk are no longer the code it runs.

The protocol's stamp (hooks/relay.py ``code_stamp``) is the mtimes of ``relay.py``, ``client.py`` and ``hook.sh``:
an upgrade by pip rewrites them, but a ``git pull`` of an editable install (or any change to the gate, the envelope
schema, the guard) leaves them as they were, and the daemon went on deciding every call with the gate it imported
at its start, for as long as calls kept coming. Now it compares the stamp of all of tether's modules
(guard/cachefile.py ``code_stamp``: path, size and mtime of each) with the one it took at its start, at most once a
second, and on a change declines the call (the client decides it in-process, with the code on disk) and exits."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hookkit import payload, wait_for

from tether.hooks import daemon as daemon_module
from tether.hooks.client import ask
from tether.hooks.daemon import stop_daemon


def test_a_daemon_whose_modules_changed_on_disk_declines_and_exits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Callable[[], tuple[Path, threading.Thread]]
) -> None:
    monkeypatch.setattr(daemon_module.Code, "EVERY_S", 0.0)
    monkeypatch.setattr(daemon_module, "watch_modules", lambda root: None)  # no inotify: the stamp polled
    on_disk = ["as started"]
    monkeypatch.setattr(daemon_module, "modules_on_disk", lambda: on_disk[0])
    monkeypatch.setattr(daemon_module, "modules_running", lambda: "as started")
    sock, served = start_daemon()
    request = {"agent": "claude-code", "project": str(tmp_path)}
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="a")).encode()
    first = ask(request, data)
    assert first is not None and first.exit == 0 and "allow" in first.stdout, first
    on_disk[0] = "pulled"  # a module of tether changed on disk
    assert ask(request, data) is None, "declined: decided in-process, with the code on disk"
    served.join(timeout=30)
    assert not served.is_alive(), "the daemon exits, so that the next call starts a current one"
    assert not sock.exists()


def test_a_module_changed_on_disk_is_seen_by_the_very_next_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Callable[[], tuple[Path, threading.Thread]]
) -> None:
    """The window closed: the modules' stamp was compared at most once a second, so for up to a second after a
    ``git pull`` a call was decided by the code from before it. Now inotify watches every folder of the modules
    (the kernel queues the event before the writer's system call returns), a call reads the queue (one
    non-blocking read), and the stamp is taken again only when it holds something. A copy of tether stands for the
    tree on disk; the change is written in place (same inode, as an editor or ``git`` may write it)."""
    import shutil

    import tether
    from tether.guard.cachefile import code_stamp_now

    copy = tmp_path / "tree" / "tether"
    shutil.copytree(Path(tether.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__"))
    started = code_stamp_now(str(copy))
    monkeypatch.setattr(daemon_module, "modules_root", lambda: str(copy))
    monkeypatch.setattr(daemon_module, "modules_running", lambda: started)
    monkeypatch.setattr(daemon_module, "modules_on_disk", lambda: code_stamp_now(str(copy)))
    sock, served = start_daemon()
    request = {"agent": "claude-code", "project": str(tmp_path)}
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="a")).encode()
    for _ in range(3):
        first = ask(request, data)
        assert first is not None and first.exit == 0 and "allow" in first.stdout, first
    (copy / "policy" / "__pycache__").mkdir()  # bytecode written beside the modules is not a change of them
    first = ask(request, data)
    assert first is not None and "allow" in first.stdout, "a new __pycache__ is no new code"
    gate = copy / "policy" / "gate.py"
    with open(gate, "r+b") as f:  # in place: no rename, the folder's own mtime unchanged
        text = f.read()
        f.seek(0)
        f.write(text.replace(b"def ", b"def  ", 1))
    assert ask(request, data) is None, "declined at once: decided in-process, with the code on disk"
    served.join(timeout=30)
    assert not served.is_alive() and not sock.exists()


@pytest.mark.slow
def test_a_real_daemon_makes_way_after_a_module_of_the_gate_changes(tmp_path: Path) -> None:
    """Real processes on a copy of tether: the daemon answers, a module the protocol's stamp does not cover changes
    (``policy/gate.py``, as a ``git pull`` changes it), and the next call is answered while the daemon exits."""
    import os
    import shutil
    import subprocess
    import sys

    import tether

    src = tmp_path / "src"
    shutil.copytree(Path(tether.__file__).parent, src / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    sock = run / "hookd.sock"
    env = {**os.environ, "PYTHONPATH": str(src), "TETHER_HOOK_SOCKET": str(sock), "CLAUDE_PROJECT_DIR": str(tmp_path)}
    daemon = subprocess.Popen([sys.executable, "-m", "tether.hooks.daemon", "--socket", str(sock)], env=env)
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="a"))

    def call() -> subprocess.CompletedProcess[str]:
        hook = [sys.executable, "-m", "tether.cli.main", "hook", "claude-code"]
        return subprocess.run(hook, input=data, capture_output=True, text=True, env=env, timeout=300)

    try:
        wait_for(sock)
        assert call().returncode == 0 and daemon.poll() is None
        gate = src / "tether" / "policy" / "gate.py"
        gate.write_text(gate.read_text() + "\n# pulled\n")
        time.sleep(daemon_module.Code.EVERY_S + 0.2)
        after = call()
        assert after.returncode == 0 and "allow" in after.stdout, after.stderr
        assert daemon.wait(timeout=30) == 0, "the daemon of the old code exits"
    finally:
        if daemon.poll() is None:
            daemon.kill()
        stop_daemon(str(sock))  # the current one the call started
