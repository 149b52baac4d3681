"""A shell step's command starts while its ``action.started`` is written and synced, held until that is done
(kernel/runtime.py ``execute`` and ``Commit``; sandbox/held.py). What these attack: the write failing while the
command is held, tether killed in the middle of it (local and bubblewrap), and a sandbox that cannot hold."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, write_script
from test_crash_resume import KILLER, marker_lines

from tether import EventStore, Harness
from tether.events.store import Event
from tether.kernel.runtime import Commit, held_context
from tether.kernel.session import load_checked
from tether.sandbox import LocalSandbox, Receipt
from tether.sandbox.doctor import survivors
from tether.sandbox.held import Held
from tether.tools.context import ToolContext

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"


def marking(token: str) -> dict[str, Any]:
    """The step's command: acts (a line in the marker file), with ``token`` in its command line to find it by."""
    return {"name": "bash", "args": {"command": f": {token}; echo ran >> src/marker.txt"}}


class SinkBroke(Exception):
    pass


def test_a_sink_that_breaks_on_the_durable_write_stops_the_held_command(bugfix: Path) -> None:
    """The write of action.started succeeds but what follows it in ``flush`` (the event sink) raises: as before
    holding, that error ends the run, the command never runs, and the log holds the step up to action.started."""
    token = "tether-held-" + secrets.token_hex(6)
    write_script(bugfix, [{"tool_calls": [marking(token)]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"

    def sink(e: Event) -> None:
        if e.kind == "action.started":
            raise SinkBroke("the sink broke")

    with pytest.raises(SinkBroke, match="the sink broke"):
        Harness(bugfix / "envelope.yaml", db=db, sandbox="local", on_event=sink).run("fix the median")
    assert survivors(token) == []
    assert marker_lines(bugfix) == 0
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    assert kinds[-1] == "action.started" and "action.failed" not in kinds


class Double:
    """A sandbox that cannot hold a command (a test double, another backend)."""

    name = "double"

    def run(self, command: object, *, cwd: Path, timeout_s: float, env: object = None) -> Receipt:
        raise AssertionError("not run here")


def test_a_sandbox_that_cannot_hold_gets_the_write_before_the_call(tmp_path: Path) -> None:
    """``held_context``: a sandbox that cannot hold is handed on as it is, the write done first (as for any tool);
    one that can is wrapped, the write left to its command's start; either way ``settle`` writes exactly once."""
    envelope = load_checked(EXAMPLE / "envelope.yaml").envelope
    writes: list[str] = []
    for sandbox, wrapped in ((Double(), False), (LocalSandbox(), True)):
        writes.clear()
        ctx = ToolContext(tmp_path, sandbox, envelope, 10.0)  # type: ignore[arg-type]
        commit = Commit(lambda: writes.append("write"))
        got = held_context(ctx, commit)
        assert isinstance(got.sandbox, Held) is wrapped
        assert writes == ([] if wrapped else ["write"])
        commit.settle()
        commit.settle()
        assert writes == ["write"]


def test_settle_raises_the_write_error_the_tool_swallowed() -> None:
    """The write failed inside the sandbox (the tool made it a failed result): ``settle`` raises it again, every
    time, and never writes twice."""
    error = RuntimeError("disk full")
    calls: list[int] = []

    def write() -> None:
        calls.append(1)
        raise error

    commit = Commit(write)
    with pytest.raises(RuntimeError):
        commit()
    for _ in range(2):
        with pytest.raises(RuntimeError) as caught:
            commit.settle()
        assert caught.value is error
    assert calls == [1]


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
@pytest.mark.parametrize("when", ["unwritten", "written"])
def test_killed_while_the_command_is_held_it_never_runs(bugfix: Path, backend: str, when: str) -> None:
    """SIGKILL just before the synced write of action.started (the batch lost) or just after it (written, the go
    never sent): either way the held command exits unrun by itself, the log verifies, and a resumed run (after
    the written start) asks a human rather than run a non-idempotent command blind."""
    token = "tether-held-" + secrets.token_hex(6)
    write_script(bugfix, [{"tool_calls": [marking(token)]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    killer = KILLER.replace('sandbox="local"', f"sandbox={backend!r}")
    proc = subprocess.run(
        [sys.executable, "-c", killer, str(bugfix / "envelope.yaml"), str(db), "action.started", "bash", when],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert survivors(token, grace_s=10) == []  # the held child went by itself: its go never came
    assert marker_lines(bugfix) == 0
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    assert ("action.started" in kinds) is (when == "written")
    if when == "written":
        contract = Harness(bugfix / "envelope.yaml", db=db, sandbox=backend).resume(info.run_id)
        assert contract.status.value == "NEEDS_INPUT" and "not idempotent" in contract.result
        assert marker_lines(bugfix) == 0
