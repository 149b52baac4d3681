"""A daemon that ends finishes the calls it took. It ended with its process: told to stop (``tether daemon --stop``, a
client of newer code) or idle, its accept loop returned at once and the interpreter's exit took the serving threads
with it, so a call already decided and logged reached its client as a cut connection, and a Stop whose sensors
outlasted the idle time died halfway. Now the loop waits for every call in flight (``Crowd.settle``), and idleness
counts only while none is; a call that never ends holds a stopping daemon no longer than ``DRAIN_S``."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hookkit import payload

from tether.hooks import daemon as daemon_module
from tether.hooks.client import ask
from tether.hooks.daemon import stop_daemon
from tether.hooks.install import STOP_TIMEOUT_S
from tether.hooks.relay import endpoint_path
from tether.hooks.wire import Reply

#: conftest's ``start_daemon``: a daemon in a thread of this process, with the idle time given; its socket and thread.
Start = Callable[..., tuple[Path, threading.Thread]]


def test_the_drain_lasts_as_long_as_the_stop_hook_tether_installs() -> None:
    assert daemon_module.DRAIN_S == STOP_TIMEOUT_S


class Held:
    """``daemon.respond`` held until released: the call is in flight, its thread busy, for as long as the test
    says."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        real = daemon_module.respond

        def respond(*args: Any) -> Reply:
            self.entered.set()
            assert self.release.wait(60), "the test never released the call"
            return real(*args)

        monkeypatch.setattr(daemon_module, "respond", respond)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Held:
    return Held(monkeypatch)


def call_in_thread(tmp_path: Path) -> tuple[threading.Thread, list[Reply | None]]:
    """A PreToolUse asked of the daemon from a thread; its reply lands in the list."""
    data = json.dumps(payload("claude-code.PreToolUse", tmp_path, tool_use_id="held")).encode()
    replies: list[Reply | None] = []
    t = threading.Thread(target=lambda: replies.append(ask({"agent": "claude-code", "project": str(tmp_path)}, data)))
    t.start()
    return t, replies


def answered(replies: list[Reply | None]) -> None:
    assert replies and replies[0] is not None, "the call taken was cut off, not answered"
    decision = json.loads(replies[0].stdout)["hookSpecificOutput"]["permissionDecision"]
    assert decision in ("allow", "deny", "ask")


def test_a_daemon_told_to_stop_answers_the_call_in_flight_before_it_ends(
    tmp_path: Path, held: Held, start_daemon: Start
) -> None:
    sock, served = start_daemon()
    port = int(Path(endpoint_path(str(sock))).read_text().split()[0])
    client, replies = call_in_thread(tmp_path)
    assert held.entered.wait(60)
    assert stop_daemon(str(sock))
    served.join(timeout=1.0)
    assert served.is_alive(), "the daemon ended with a call in flight"
    assert not sock.exists(), "a stopping daemon takes no new call"
    with pytest.raises(ConnectionRefusedError):  # a bash client that read the endpoint before it went
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    held.release.set()
    client.join(timeout=60)
    answered(replies)
    served.join(timeout=60)
    assert not served.is_alive()


def test_a_call_that_outlasts_the_idle_time_keeps_the_daemon(tmp_path: Path, held: Held, start_daemon: Start) -> None:
    sock, served = start_daemon(idle_s=0.3)
    client, replies = call_in_thread(tmp_path)
    assert held.entered.wait(60)
    served.join(timeout=1.5)  # five idle times without a new call, one in flight all along
    assert served.is_alive(), "the daemon went idle with a call in flight"
    assert sock.exists(), "the daemon stopped taking calls while one was in flight"
    held.release.set()
    client.join(timeout=60)
    answered(replies)
    served.join(timeout=60)  # idle once the call has ended
    assert not served.is_alive()


def test_a_call_that_never_ends_keeps_a_stopping_daemon_only_for_the_drain_bound(
    tmp_path: Path, held: Held, start_daemon: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(daemon_module, "DRAIN_S", 0.5)
    sock, served = start_daemon()
    client, _ = call_in_thread(tmp_path)
    assert held.entered.wait(60)
    assert stop_daemon(str(sock))
    served.join(timeout=30)
    assert not served.is_alive(), "a call that does not end held the stopping daemon past its drain bound"
    held.release.set()  # the test's own thread, let go
    client.join(timeout=60)
