"""``tether daemon``: one resident process per user that answers hook calls over a Unix socket.

A hook call then costs a small process that reads stdin and talks to the socket (no typer, no pydantic)
instead of importing the gate each time. The daemon serves every session of its user (one thread per call;
the store serialises appends per database).

Safety: one daemon per socket — the first to take an exclusive ``flock`` on ``<socket>.lock`` serves, a
second started at the same moment sees the lock held and exits; a socket file left by a daemon that died is
stale exactly when nobody holds the lock, and is replaced. The socket is 0600 in a 0700 directory, and a
peer whose uid (``SO_PEERCRED``) is not the daemon's is refused. A client built from other code (an upgrade)
gets no answer and the daemon exits, so the next call starts a current one. It exits after ``idle_s``
seconds without a call.
"""

from __future__ import annotations

import fcntl
import os
import socket
import struct
import sys
import threading
from typing import Any

from .client import code_stamp, private_dir, socket_path
from .wire import HookInputError, Reply, parse, refuse

IDLE_S = 30 * 60.0
MAX_HEADER = 64 * 1024


def serve(path: str | None = None, *, idle_s: float = IDLE_S) -> int:
    """Serve until idle, told to stop, or given way to; 0, or 1 when the socket's directory is not private."""
    path = path or socket_path()
    if not private_dir(path):
        print(f"tether daemon: {os.path.dirname(path)} is not a directory only this user can open", file=sys.stderr)
        return 1
    lock = open(path + ".lock", "a")  # noqa: SIM115 — held for the daemon's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0  # another daemon serves this socket
    try:
        return _serve_locked(path, idle_s)
    finally:
        lock.close()


def _serve_locked(path: str, idle_s: float) -> int:
    if os.path.lexists(path):
        os.unlink(path)  # stale: its daemon no longer holds the lock
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        server.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    server.listen(64)
    server.settimeout(idle_s)
    stop = threading.Event()
    try:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                break
            threading.Thread(target=_serve_one, args=(conn, stop, path), daemon=True).start()
    finally:
        server.close()
        if os.path.lexists(path):
            os.unlink(path)
    return 0


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _serve_one(conn: socket.socket, stop: threading.Event, path: str) -> None:
    with conn:
        try:
            if _peer_uid(conn) != os.getuid():
                return
            header, raw = _read(conn)
            if header.get("op") == "stop":
                conn.sendall(b"stopped")  # before waking the loop: the process may exit right after
                stop.set()
                _wake(path)
                return
            if header.get("code") != str(code_stamp()):  # the client is other code: let a current daemon start
                stop.set()
                _wake(path)
                return
            conn.sendall(_frame(respond(header, raw)))
        except OSError:
            return


def respond(header: dict[str, Any], raw: bytes) -> Reply:
    """The reply to one call (imports the deciding code on first use, then keeps it)."""
    from .answer import answer

    try:
        data = parse(raw)
    except HookInputError as e:
        return refuse(str(e))
    return answer(header, data)


def _read(conn: socket.socket) -> tuple[dict[str, Any], bytes]:
    """A request as :func:`tether.hooks.client.encode` frames it."""
    buf = b""
    while b"\n\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk or len(buf) > MAX_HEADER:
            raise OSError("no request header")
        buf += chunk
    head, raw = buf.split(b"\n\n", 1)
    header: dict[str, Any] = dict(line.split("=", 1) for line in head.decode().split("\n") if "=" in line)
    size = int(header.get("size", 0))
    while len(raw) < size:
        chunk = conn.recv(max(65536, size - len(raw)))
        if not chunk:
            break
        raw += chunk
    return header, raw


def _frame(reply: Reply) -> bytes:
    out = reply.stdout.encode()
    return f"{reply.exit} {len(out)}\n".encode() + out + reply.stderr.encode()


def _wake(path: str) -> None:
    """Unblock the accept loop so that it sees ``stop``."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
    except OSError:
        pass


def stop_daemon(path: str | None = None) -> bool:
    """Ask the daemon on ``path`` to exit; False when none answered."""
    path = path or socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(path)
            s.sendall(b"op=stop\n\n")
            s.shutdown(socket.SHUT_WR)
            return b"stopped" in s.recv(100)
    except OSError:
        return False


def main(argv: list[str]) -> int:
    path = argv[argv.index("--socket") + 1] if "--socket" in argv else None
    return serve(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
