"""An ``on_event`` sink that starts a process when told of a step's first events (a desktop notifier, a log
shipper): with the held start those events are written, and sinks told, inside the command's window, where the
reaper (sandbox/reaper.py) takes every new child of tether for the command's leftover. The sink's process is not
the command's: it must live on (as before the held start), while what the command itself leaves is still killed."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest
from runkit import FINISH, write_script

from tether import Harness
from tether.events.store import Event
from tether.sandbox.doctor import survivors


@pytest.mark.parametrize("backend", ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def test_a_process_a_sink_starts_on_action_started_is_not_the_commands_leftover(bugfix: Path, backend: str) -> None:
    token = "tether-left-" + secrets.token_hex(6)
    # the command leaves a process of its own behind, out of its process group (setsid), with the token
    leaves = f"setsid bash -c 'sleep 30; : {token}' >/dev/null 2>&1 </dev/null & echo ran"
    write_script(bugfix, [{"tool_calls": [{"name": "bash", "args": {"command": leaves}}]}, {"tool_calls": [FINISH]}])
    started: list[subprocess.Popen[bytes]] = []

    def sink(e: Event) -> None:
        if e.kind == "action.started" and not started:
            started.append(subprocess.Popen(["sleep", "30"]))

    try:
        Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox=backend, on_event=sink).run("fix the median")
        assert len(started) == 1
        assert started[0].poll() is None  # alive: not killed (nor reaped) as the command's leftover
        assert survivors(token, grace_s=5) == []  # what the command left is killed, as ever
    finally:
        for p in started:
            p.kill()
            p.wait()
