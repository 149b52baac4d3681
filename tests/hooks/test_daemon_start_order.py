"""When a daemon starts, and when it listens. A call no daemon answered starts one once its reply is out, not before it
decides: the daemon's start-up (all of tether's modules, pydantic's models) took the CPU the decision needed, and
``subprocess``'s import cost the call more than the start itself. The daemon is started by ``posix_spawn`` in a
session of its own, its standard streams on ``/dev/null`` and none of the descriptors the hook inherited (the
agent's, perhaps a pipe it waits on for EOF). It imports its code before its socket is there: a call meanwhile is
decided cold, where one queued on a socket bound first waited for the whole import; it starts no second daemon while
the first holds the lock; and a daemon process decides with pydantic's plugins off, as a hook process does."""

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


def test_no_second_daemon_is_started_while_one_holds_the_lock(tmp_path: Path, monkeypatch) -> None:
    import fcntl

    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    started: list[str] = []
    monkeypatch.setattr(client, "spawn", started.append)
    client.NoDaemon(str(sock)).start()
    assert started == [str(sock)], "no lock file yet: no daemon ever served there"
    with open(f"{sock}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a daemon starting (importing) or ending
        client.NoDaemon(str(sock)).start()
        assert started == [str(sock)], "one holds the lock: none started"
        fcntl.flock(lock, fcntl.LOCK_UN)
        client.NoDaemon(str(sock)).start()
    assert started == [str(sock)] * 2, "the lock let go (the daemon gone): one started"


def test_a_daemon_starting_while_a_client_asks_gives_way_and_the_client_starts_one(tmp_path: Path) -> None:
    """The instant a client asks whether a daemon holds the lock (its shared lock held), a daemon starting then finds
    the lock taken and exits; the client, which got its shared lock, says none holds it, and starts one: never both
    gone."""
    import fcntl

    from tether.hooks.daemon import serve

    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    with open(f"{sock}.lock", "a") as asking:
        fcntl.flock(asking, fcntl.LOCK_SH)  # the client's question, caught in the act
        assert serve(str(sock)) == 0 and not sock.exists(), "the starting daemon gives way"
        assert not client.held(f"{sock}.lock"), "and the client, asking then, starts one"


def test_the_daemon_listens_only_once_its_code_is_imported(tmp_path: Path, monkeypatch) -> None:
    """While the daemon imports, its socket is not there: a call then is decided in-process (and starts no daemon,
    the lock being held), instead of waiting in the socket's backlog for the import to end."""
    from tether.hooks.daemon import Collections, serve

    importing, imported = threading.Event(), threading.Event()
    take = Collections.take

    def slow_take(self: Collections) -> None:
        importing.set()
        assert imported.wait(timeout=60)
        take(self)

    monkeypatch.setattr(Collections, "take", slow_take)
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    served = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": 60})
    served.start()
    try:
        assert importing.wait(timeout=60)
        data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_input={"command": "ls"})).encode()
        request = {"agent": "claude-code", "db": str(tmp_path / "t.db")}
        assert not sock.exists(), "no socket while the code is imported"
        assert isinstance(client.ask(request, data), client.NoDaemon), "decided in-process meanwhile"
        assert client.held(f"{sock}.lock"), "and no second daemon started"
    finally:
        imported.set()
        wait_for(sock)
        stopped = stop_daemon(str(sock))
        served.join(timeout=30)
    assert stopped


#: A daemon process's start, its serving replaced by a report of pydantic's plugin setting and loader.
PLUGINS = """
import json, os, sys
from tether.hooks import daemon
def report(path, idle_s):
    import pydantic  # as the deciding code does
    from pydantic.plugin._loader import get_plugins
    plugins = os.environ.get("PYDANTIC_DISABLE_PLUGINS")
    print(json.dumps([plugins, list(get_plugins()), "importlib.metadata" in sys.modules]))
    return 0
daemon.serve = report
sys.exit(daemon.main(["--socket", sys.argv[1]]))
"""


def test_a_daemon_process_decides_with_pydantics_plugins_off(tmp_path: Path) -> None:
    """As every hook process that decides does: with them on, its first answered call imported
    ``importlib.metadata`` and scanned every installed distribution for plugins."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    out = subprocess.run(
        [sys.executable, "-c", PLUGINS, str(tmp_path / "hookd.sock")],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env=env,
    )
    assert json.loads(out.stdout) == ["__all__", [], False]
