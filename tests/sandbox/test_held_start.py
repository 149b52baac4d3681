"""A command started held (sandbox/process.py ``Hold``): the child starts while ``before`` runs (the runtime's synced
commit), and nothing of the command runs until ``before`` has returned; if it raises, or tether dies, never.

Each attack runs against both backends, with real processes: a ``before`` that looks for the command's effect
while it is held, one that raises, one that kills tether outright, a held command that times out."""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_process_fds import open_fds

from tether.sandbox import TIMEOUT_EXIT_CODE, BwrapSandbox, LocalSandbox, Receipt, Sandbox
from tether.sandbox.doctor import survivors
from tether.sandbox.held import Held, held
from tether.sandbox.process import NotReleased


def run_held(sandbox: Sandbox, ws: Path, command: str | list[str], before: object, timeout_s: float = 30.0) -> Receipt:
    assert isinstance(sandbox, LocalSandbox | BwrapSandbox)
    return sandbox.run(command, cwd=ws, timeout_s=timeout_s, before=before)  # type: ignore[arg-type]


def alive_with(marker: str) -> list[int]:
    """Pids whose command line holds ``marker`` now (no grace: the held child is there while ``before`` runs)."""
    return survivors(marker, grace_s=0)


@pytest.mark.parametrize("form", ["shell", "argv"])
def test_the_command_begins_only_after_before_returned(sandbox: Sandbox, workspace: Path, form: str) -> None:
    """While ``before`` runs, the child is up (its command line is there) and the command has done nothing; once it
    returns, the command runs as it would unheld: no descriptor of tether's, ``REPLY`` unset, ``$0`` as for -c."""
    marker = "tether-held-" + secrets.token_hex(6)
    seen: list[tuple[bool, bool]] = []

    def before() -> None:
        for _ in range(200):  # the child started (held), so its command line is there: wait for it to appear
            if alive_with(marker):
                break
            time.sleep(0.01)
        time.sleep(0.2)  # ample time for an unheld command to have acted
        seen.append((bool(alive_with(marker)), (workspace / "acted").exists()))

    if form == "shell":
        command: str | list[str] = f": {marker}; touch acted; echo $0 ${{REPLY-unset}}; cd /proc/$$/fd && echo *"
    else:
        command = ["bash", "-c", 'touch acted; echo "$0" "${REPLY-unset}"; cd /proc/$$/fd && echo *', marker]
    r = run_held(sandbox, workspace, command, before)
    assert seen == [(True, False)]  # held: started, not acted
    assert r.ok and (workspace / "acted").exists(), r.stderr
    assert r.stdout == ("bash unset\n0 1 2 3\n" if form == "shell" else f"{marker} unset\n0 1 2 3\n")


def test_a_before_that_raises_stops_the_command_unrun_and_leaves_nothing(sandbox: Sandbox, workspace: Path) -> None:
    """The runtime's commit failing (a moved head, a full disk): ``NotReleased`` with the error as its cause, the
    command never ran, its child is gone and reaped, and no descriptor of the call is left open in tether."""
    marker = "tether-held-" + secrets.token_hex(6)
    sandbox.run("true", cwd=workspace, timeout_s=30)  # what a backend keeps open once (bwrap's watch) is open now
    fds = open_fds()
    error = RuntimeError("the commit failed")

    def before() -> None:
        raise error

    with pytest.raises(NotReleased) as caught:
        run_held(sandbox, workspace, f": {marker}; touch acted", before)
    assert caught.value.__cause__ is error
    assert survivors(marker) == []
    assert not (workspace / "acted").exists()
    assert open_fds() - fds == set()


def test_an_interrupt_in_before_stops_the_command_too(sandbox: Sandbox, workspace: Path) -> None:
    """A ``BaseException`` (Ctrl-C during the commit) is not wrapped: it propagates, and the command never ran."""
    marker = "tether-held-" + secrets.token_hex(6)

    def before() -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_held(sandbox, workspace, f": {marker}; touch acted", before)
    assert survivors(marker) == [] and not (workspace / "acted").exists()


def test_the_deadline_counts_from_the_release(sandbox: Sandbox, workspace: Path) -> None:
    """A slow commit is not the command's time: held longer than its timeout, the command still runs whole (counted
    from the spawn, the deadline would have passed before the release), and its receipt's duration leaves the
    hold out."""
    r = run_held(sandbox, workspace, "echo ran", lambda: time.sleep(2.0), timeout_s=1.5)
    assert (r.ok, r.timed_out, r.stdout) == (True, False, "ran\n"), r.stderr
    assert r.duration_s < 2.0


def test_a_held_command_that_times_out_is_killed_as_any(sandbox: Sandbox, workspace: Path) -> None:
    marker = "tether-held-" + secrets.token_hex(6)
    calls: list[int] = []
    r = run_held(sandbox, workspace, f"exec -a {marker} sleep 300", lambda: calls.append(1), timeout_s=0.3)
    assert (r.timed_out, r.exit_code, calls) == (True, TIMEOUT_EXIT_CODE, [1])
    assert survivors(marker) == []


KILLED = """
import os, signal, sys
from pathlib import Path
from tether.sandbox import BwrapSandbox, LocalSandbox
ws, backend, marker = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
sandbox = LocalSandbox() if backend == "local" else BwrapSandbox(ws)
sandbox.run(f": {marker}; touch acted", cwd=ws, timeout_s=30, before=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


def test_tether_killed_while_the_command_is_held_never_lets_it_run(sandbox: Sandbox, workspace: Path) -> None:
    """SIGKILL of tether during ``before`` (a crash in the middle of the commit): no cleanup runs, yet the held
    child reads end-of-file instead of its go and exits without running the command."""
    marker = "tether-held-" + secrets.token_hex(6)
    backend = "local" if isinstance(sandbox, LocalSandbox) else "bwrap"
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(workspace), backend, marker], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert survivors(marker, grace_s=10) == []  # it exited by itself: nobody was left to kill it
    assert not (workspace / "acted").exists()


def test_held_hands_before_to_the_first_command_only(workspace: Path) -> None:
    """A call's second command (if a tool ran two) runs as usual: ``before`` has run, once."""
    calls: list[int] = []
    sandbox = held(LocalSandbox(), lambda: calls.append(1))
    assert isinstance(sandbox, Held) and sandbox.name == "local"
    first = sandbox.run("echo one", cwd=workspace, timeout_s=10)
    second = sandbox.run("echo two", cwd=workspace, timeout_s=10)
    assert (first.stdout, second.stdout, calls) == ("one\n", "two\n", [1])


def test_a_sandbox_that_cannot_hold_is_not_wrapped() -> None:
    """A test double or another backend: None, and the caller runs ``before`` itself before the call."""

    class Double:
        name = "double"

        def run(self, command: object, *, cwd: Path, timeout_s: float, env: object = None) -> Receipt:
            raise AssertionError("not run")

    assert held(Double(), lambda: None) is None  # type: ignore[arg-type]


def test_held_commands_of_two_threads_each_run_once_and_whole(workspace: Path) -> None:
    """A worker hosting two runs: each thread's held command waits for its own ``before`` only (the reaper's
    one-command lock serialises them; neither's cleanup takes the other's command for a leftover)."""
    sandbox = LocalSandbox()
    results: dict[int, Receipt] = {}
    calls: list[int] = []

    def one(i: int) -> None:
        def before() -> None:
            time.sleep(0.1)
            calls.append(i)

        results[i] = sandbox.run(f"echo {i}; touch done{i}", cwd=workspace, timeout_s=30, before=before)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(calls) == [0, 1, 2, 3]
    assert {i: (r.ok, r.stdout) for i, r in results.items()} == {i: (True, f"{i}\n") for i in range(4)}
    assert all((workspace / f"done{i}").exists() for i in range(4))
