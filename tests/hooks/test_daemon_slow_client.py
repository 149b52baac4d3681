"""A client that sends half a request and then hangs: it never blocks another session's call, and it holds the
daemon's thread for a bounded time (``daemon.REQUEST_S``), not for ever. Fifty such clients held fifty threads of
the daemon until they went away (measured: 51 threads, 10 s later still 51)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hookkit import payload, wait_for

from tether.hooks import daemon as daemon_module
from tether.hooks.client import ask
from tether.hooks.relay import endpoint_path


def closed_within(conn: socket.socket, seconds: float) -> bool:
    conn.settimeout(seconds)
    try:
        return conn.recv(100) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_half_a_request_then_silence_is_closed_and_blocks_nobody(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Callable[[], tuple[Path, threading.Thread]]
) -> None:
    monkeypatch.setattr(daemon_module, "REQUEST_S", 1.0, raising=False)
    sock, _ = start_daemon()
    hung: list[socket.socket] = []
    try:
        wait_for(Path(endpoint_path(str(sock))))
        for _ in range(5):
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.connect(str(sock))
            unix.sendall(b'agent=claude-code\nsize=100\n\n{"hook_')
            hung.append(unix)
        port, token, _, _ = Path(endpoint_path(str(sock))).read_text().split()
        tcp = socket.create_connection(("127.0.0.1", int(port)))
        tcp.sendall(token.encode() + b"\nagent=claude-code\0size=100\0\0{")
        assert tcp.recv(65).strip(), "admitted: the server token came back"
        hung.append(tcp)
        began = time.monotonic()
        data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="a")).encode()
        other = ask({"agent": "claude-code", "project": str(tmp_path)}, data)
        assert other is not None and other.exit == 0 and "allow" in other.stdout, other
        assert all(closed_within(c, 10.0) for c in hung), "each silent client is closed"
        assert time.monotonic() - began < 10.0
    finally:
        for c in hung:
            c.close()
