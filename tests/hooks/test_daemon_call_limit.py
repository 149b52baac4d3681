"""A bound on the calls the daemon serves at once. Each connection had a thread of its own, however many the user's
processes opened (a hung client, a runaway script of the same uid): 200 silent connections held 200 threads for
``REQUEST_S`` each, and as many more as were opened meanwhile. Over the bound a connection is declined as a client of
other code is (closed without a byte, the request read to its end so the client reads no reset): the client decides
in-process, cold, and is never told allow by an absent answer."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hookkit import payload, wait_for

from tether.hooks import daemon as daemon_module
from tether.hooks.client import ask
from tether.hooks.relay import endpoint_path

LIMIT = 4


def serving() -> int:
    return sum(1 for t in threading.enumerate() if "_serve_one" in t.name)


def settle(until: Callable[[], bool], why: str) -> None:
    deadline = time.monotonic() + 60
    while not until():
        assert time.monotonic() < deadline, why
        time.sleep(0.01)


def served_so_far(sock: Path) -> None:
    """Until the daemon has accepted and ended every connection made before now. ``wait_for``'s probe, which
    connects to see the socket accept, is a connection like any other: accepted after this fixture's clients had
    queued behind it, it held a slot, so the last client was declined (CI on c981ab9: the slots never all taken), or it
    let the slot go once they were counted (a call then answered where it must be declined). A marker that sends
    nothing is accepted after the probe (the backlog is first in, first out) and closed once read: its end seen,
    what came before it was accepted too."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as marker:
        marker.connect(str(sock))
        marker.shutdown(socket.SHUT_WR)
        marker.settimeout(60)
        assert marker.recv(1) == b"", "the daemon answered an empty request"
    settle(lambda: serving() == 0, "the daemon's first connections did not end")


@pytest.fixture
def crowded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, start_daemon: Callable[[], tuple[Path, threading.Thread]]
) -> Iterator[tuple[Path, list[socket.socket]]]:
    """A daemon whose every slot is held by a client that sent half a request and went silent."""
    monkeypatch.setattr(daemon_module, "MAX_CALLS", LIMIT, raising=False)
    monkeypatch.setattr(daemon_module, "REQUEST_S", 30.0)
    # an earlier test's daemon threads, still ending, would count as this one's slots held (ci13: a free slot)
    settle(lambda: serving() == 0, "an earlier daemon's serving threads did not end")
    sock, _ = start_daemon()
    wait_for(Path(endpoint_path(str(sock))))
    served_so_far(sock)
    hung: list[socket.socket] = []
    try:
        for _ in range(LIMIT):
            unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            unix.connect(str(sock))
            unix.sendall(b'agent=claude-code\nsize=100\n\n{"hook_')
            hung.append(unix)
        settle(lambda: serving() >= LIMIT, "the daemon did not take every slot")
        yield sock, hung
    finally:
        for c in hung:
            c.close()
        # every slot free before the teardown's stop, which a daemon still full would decline (and it then waited
        # out its idle time: a 30 s join under load)
        settle(lambda: serving() == 0, "the daemon's serving threads did not end")


def test_connections_over_the_bound_hold_no_thread_and_are_declined_not_answered(
    crowded: tuple[Path, list[socket.socket]], tmp_path: Path
) -> None:
    sock, hung = crowded
    for _ in range(60):  # each would have been a thread more
        extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        extra.connect(str(sock))
        extra.sendall(b'agent=claude-code\nsize=100\n\n{"hook_')
        hung.append(extra)
    time.sleep(0.5)
    assert serving() <= LIMIT
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="a")).encode()
    request = {"agent": "claude-code", "project": str(tmp_path)}
    for _ in range(20):  # declined (None: decide in-process), never a refusal read off a reset, never an answer
        assert ask(request, data) is None


def test_a_tcp_client_over_the_bound_gets_no_server_token(crowded: tuple[Path, list[socket.socket]]) -> None:
    sock, _ = crowded
    port, token, _, _ = Path(endpoint_path(str(sock))).read_text().split()
    with socket.create_connection(("127.0.0.1", int(port))) as tcp:
        tcp.settimeout(10)
        try:
            tcp.sendall(token.encode() + b"\n")
            got = tcp.recv(65)
        except ConnectionResetError:
            got = b""
    assert got == b"", "closed before the handshake: the bash client falls back to the launcher"


def test_a_slot_freed_is_served_again(crowded: tuple[Path, list[socket.socket]], tmp_path: Path) -> None:
    _, hung = crowded
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="b")).encode()
    request = {"agent": "claude-code", "project": str(tmp_path)}
    assert ask(request, data) is None
    hung.pop().close()
    deadline = time.monotonic() + 10
    while serving() >= LIMIT and time.monotonic() < deadline:
        time.sleep(0.01)
    reply = ask(request, data)
    assert reply is not None and reply.exit == 0 and "allow" in reply.stdout, reply


@pytest.mark.parametrize("turned_away", [True, False])
def test_a_call_queued_when_the_daemon_stops_is_declined_not_reset(tmp_path: Path, turned_away: bool) -> None:
    """A connection still in the backlog when the daemon stops (a call right behind the one that found the code
    changed) was reset as the listener closed: its client, which had sent its request, refused the call (exit 2:
    tests/hooks/test_daemon_stale_code.py's real daemon met it). Turned away, it reads "declined" and decides cold."""
    path = str(tmp_path / "s")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)
    server.setblocking(False)
    clients = []
    for _ in range(3):
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        client.sendall(b"agent=claude-code\nsize=2\n\n{}")
        client.shutdown(socket.SHUT_WR)
        clients.append(client)
    if turned_away:
        daemon_module.Crowd(4).turn_away({server: None})
    server.close()
    for client in clients:
        client.settimeout(10)
        if turned_away:
            assert client.recv(100) == b""
        else:
            with pytest.raises(ConnectionResetError):
                client.recv(100)
        client.close()


def test_declined_connections_past_descriptor_1024_keep_the_daemon_serving(
    crowded: tuple[Path, list[socket.socket]], tmp_path: Path
) -> None:
    """``select`` takes no descriptor past 1023 (ValueError): a daemon holding many (its sessions' stores, its
    clients) that declined one numbered past it ended its accept loop, and so itself."""
    import os

    sock, hung = crowded
    filler = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        for _ in range(5):
            extra = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            extra.connect(str(sock))
            extra.sendall(b'agent=claude-code\nsize=100\n\n{"hook_')
            hung.append(extra)
        assert max(c.fileno() for c in hung) > 1024
        time.sleep(0.5)
        data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="c")).encode()
        request = {"agent": "claude-code", "project": str(tmp_path)}
        assert ask(request, data) is None, "declined"
        assert sock.exists(), "the daemon still serves"
        hung.pop(0).close()
        deadline = time.monotonic() + 10
        while serving() >= LIMIT and time.monotonic() < deadline:
            time.sleep(0.01)
        reply = ask(request, data)
        assert reply is not None and "allow" in reply.stdout, reply
    finally:
        for fd in filler:
            os.close(fd)
