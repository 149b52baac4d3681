"""When a daemon starts, and when it listens. A call no daemon answered starts one once its reply is out, not before it
decides: the daemon's start-up (all of tether's modules, pydantic's models) took the CPU the decision needed, and
``subprocess``'s import cost the call more than the start itself. The daemon is started by ``posix_spawn`` in a
session of its own, its standard streams on ``/dev/null`` and none of the descriptors the hook inherited (the
agent's, perhaps a pipe it waits on for EOF)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hookkit import daemons_under, payload, wait_for

from tether.hooks import client, entry
from tether.hooks.daemon import stop_daemon


def call(tmp_path: Path, sock: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    """One PreToolUse through :func:`entry.main` with the daemon's socket at ``sock``; what had been written to
    stdout each time a daemon was started (none is: the start is only recorded)."""
    started: list[str] = []
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    monkeypatch.setattr(client, "spawn", lambda path: started.append(capsys.readouterr().out))
    data = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"})
    code = entry.main(["claude-code", "--db", str(tmp_path / "t.db")], json.dumps(data).encode())
    assert code == 0
    return started


def test_no_daemon_the_call_is_decided_and_answered_before_one_is_started(tmp_path, monkeypatch, capsys) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    started = call(tmp_path, sock, monkeypatch, capsys)
    assert len(started) == 1, "no daemon answered: one is started"
    assert json.loads(started[0])["hookSpecificOutput"]["permissionDecision"] == "allow", "after the reply was out"


def test_a_daemon_that_declines_is_not_started_again(tmp_path, monkeypatch, capsys) -> None:
    """A daemon that closes the connection without a byte (it declines clients of other code, calls over its
    bound) is running: the call is decided in-process and no second daemon is started."""
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(sock))
        server.listen()

        def decline() -> None:
            conn, _ = server.accept()
            with conn:
                while conn.recv(65536):
                    pass

        declining = threading.Thread(target=decline)
        declining.start()
        started = call(tmp_path, sock, monkeypatch, capsys)
        declining.join(timeout=10)
    assert started == []
    assert "allow" in capsys.readouterr().out


#: Run in a process of its own: an inheritable pipe opened, a daemon started by ``client.spawn`` (with
#: ``posix_spawn``, or with ``subprocess`` where ``posix_spawn`` is missing), then the pipe's inode and whether
#: ``subprocess`` was imported printed.
SPAWN = """
import json, os, sys
from tether.hooks import client
r, w = os.pipe()
os.set_inheritable(w, True)
if sys.argv[2] == "subprocess":
    del os.posix_spawn
client.spawn(sys.argv[1])
print(json.dumps([os.fstat(w).st_ino, "subprocess" in sys.modules]))
"""


def descriptors(pid: int) -> dict[str, str]:
    """What the process ``pid`` holds open, by descriptor (one it closes meanwhile left out)."""
    held = {}
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(FileNotFoundError):
            held[fd] = os.readlink(f"/proc/{pid}/fd/{fd}")
    return held


@pytest.mark.slow
@pytest.mark.parametrize("how", ["posix_spawn", "subprocess"])
def test_the_started_daemon_holds_none_of_the_hooks_descriptors(tmp_path: Path, how: str) -> None:
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    out = subprocess.run(
        [sys.executable, "-c", SPAWN, str(sock), how], capture_output=True, text=True, timeout=60, check=True
    )
    inode, imported = json.loads(out.stdout)
    try:
        wait_for(sock)
        (pid,) = daemons_under(tmp_path)
        held = descriptors(pid)
        stat = Path(f"/proc/{pid}/stat").read_text()
    finally:
        assert stop_daemon(str(sock))
    assert f"pipe:[{inode}]" not in held.values(), "the hook's inherited pipe is not held by the daemon"
    assert [held[fd] for fd in ("0", "1", "2")] == [os.devnull] * 3
    session = int(stat.rpartition(")")[2].split()[3])  # after the state: ppid, pgrp, session
    assert session == pid, "a session of its own: the agent's signals to its group do not reach it"
    assert imported == (how == "subprocess"), "posix_spawn: subprocess is not imported"

