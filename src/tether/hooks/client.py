"""The hook's side of the daemon: find the user's socket, ask it, start it when nobody answers.

Standard library only (this runs on every tool call). The socket lives in a directory only its user can
enter (``$TETHER_HOOK_SOCKET``, else ``$XDG_RUNTIME_DIR/tether/hookd.sock``, else
``/tmp/tether-<uid>/hookd.sock``); a directory that another user owns or others can open is not used.
No answer from a daemon is never an answer: the caller then decides in-process.

The bash client (``hook.sh`` beside this file) reaches the same daemon over loopback TCP; the daemon publishes
that endpoint in ``<socket>.tcp`` (:func:`endpoint_path`).
"""

from __future__ import annotations

import _socket  # the C module: socket.py's imports (selectors, enum classes) cost the client milliseconds
import os
import stat
import sys

from .wire import Reply

CONNECT_TIMEOUT_S = 1.0
#: The bash client: ``bash hook.sh PYTHON AGENT [OPTIONS]`` (what ``tether hook install`` writes where bash exists).
HOOK_SCRIPT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "hook.sh")


def socket_path() -> str:
    explicit = os.environ.get("TETHER_HOOK_SOCKET")
    if explicit:
        return explicit
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    base = os.path.join(runtime, "tether") if runtime else f"/tmp/tether-{os.getuid()}"
    return os.path.join(base, "hookd.sock")


def endpoint_path(socket: str) -> str:
    """The daemon's loopback TCP endpoint for the bash client: ``PORT CLIENT_TOKEN SERVER_TOKEN SCRIPT``, 0600."""
    return socket + ".tcp"


def private_dir(path: str) -> bool:
    """Create the socket's directory 0700, or check that an existing one is the user's alone."""
    directory = os.path.dirname(path) or "."
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def code_stamp() -> str:
    """Which tether code this is (this file's and the bash client's mtimes): a daemon started from other code (an
    upgrade) is not asked, and a daemon whose code changed on disk while it ran stops answering."""
    stamps = []
    for path in (__file__, HOOK_SCRIPT):
        try:
            stamps.append(str(os.stat(path).st_mtime_ns))
        except OSError:
            stamps.append("-")
    return ".".join(stamps)


def encode(request: dict[str, str], raw: bytes) -> bytes | None:
    """The request as the daemon reads it: ``key=value`` lines, a blank line, the hook input (no JSON here:
    importing ``json`` costs the client more than the whole socket round trip)."""
    lines = [f"{k}={v}" for k, v in {**request, "size": str(len(raw)), "code": code_stamp()}.items()]
    if any("\n" in line for line in lines):
        return None
    return ("\n".join(lines) + "\n\n").encode() + raw


def decode(answer: bytes) -> Reply | None:
    """``<exit> <stdout bytes> <stderr bytes>\n<stdout><stderr>``, exit 0 or 2 and exactly the bytes announced;
    None for anything else (a refusing, dying or cut-off daemon)."""
    head, sep, body = answer.partition(b"\n")
    fields = head.split(b" ")
    if not sep or len(fields) != 3 or fields[0] not in (b"0", b"2") or not all(f.isdigit() for f in fields[1:]):
        return None
    out, err = int(fields[1]), int(fields[2])
    if len(body) != out + err:
        return None
    return Reply(body[:out].decode(errors="replace"), body[out:].decode(errors="replace"), int(fields[0]))


def ask(request: dict[str, str], raw: bytes, *, start: bool = True) -> Reply | None:
    """The daemon's reply to one hook call, or None (no daemon, a stale one, or a failure: decide in-process).

    With ``start``, a missing daemon is started in the background for the next call.
    """
    path = socket_path()
    message = encode(request, raw)
    if message is None or not private_dir(path):
        return None
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        conn.settimeout(CONNECT_TIMEOUT_S)
        try:
            conn.connect(path)
        except OSError:
            if start:
                spawn(path)
            return None
        conn.settimeout(None)  # a Stop's sensors may take minutes; the agent's own hook timeout bounds us
        conn.sendall(message)
        conn.shutdown(_socket.SHUT_WR)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    except OSError:
        return None
    finally:
        conn.close()
    return decode(b"".join(chunks))


def spawn(path: str) -> None:
    """Start a daemon for ``path`` in its own session; if another starts at once, one of them gives way."""
    import subprocess

    try:  # noqa: SIM105 — importing contextlib costs the client milliseconds
        subprocess.Popen(
            [sys.executable, "-m", "tether.hooks.daemon", "--socket", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # this call is answered in-process anyway
