"""The relay (hooks/relay.py ``exchange``) gives a hook call only to a daemon of this user's: a socket where another
user's process listens — put in the socket's directory by a swap after the relay checked it, or by root's own hand —
is never sent the call (the call is decided in-process), and that process's reply, whatever it says, is never the
hook's answer."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from machinekit import unavailable

from tether.hooks import relay

SERVER = textwrap.dedent(
    """
    import os, socket, sys
    path, uid = sys.argv[1], int(sys.argv[2])
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    os.chmod(path, 0o777)
    if uid != os.getuid():
        os.setgid(uid); os.setuid(uid)  # listen() records the listener's credentials: this uid's
    s.listen(1)
    print("ready", flush=True)
    conn, _ = s.accept()
    got = conn.recv(1 << 20)
    print(len(got), flush=True)
    try:
        conn.sendall(b"0 5 0\\nHELLO")
    except OSError:  # the relay hung up: it sent nothing
        pass
    conn.close()
    """
)


def serve(sock: Path, uid: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(sock), str(uid)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    return proc


def test_a_daemon_of_this_user_is_asked(tmp_path: Path) -> None:
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    proc = serve(folder / "hookd.sock", os.getuid())
    answer = relay.exchange(str(folder / "hookd.sock"), b"agent=claude-code\n\n{}")
    assert answer == b"0 5 0\nHELLO" and relay.decode(answer) == (0, b"HELLO", b"")
    out, _ = proc.communicate(timeout=30)
    assert int(out) > 0


def test_a_socket_another_user_listens_on_is_not_given_the_call(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        unavailable("listening as another user needs root")
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    assert relay.is_private_dir(str(folder)), "the directory check passes: the socket is what is foreign"
    proc = serve(folder / "hookd.sock", 65534)
    try:
        assert relay.exchange(str(folder / "hookd.sock"), b"agent=claude-code\n\n{}") is None
    finally:
        out, _ = proc.communicate(timeout=30)
    assert int(out) == 0, "the request was never sent to it"
