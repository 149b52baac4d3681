"""The held start's window (sandbox/process.py ``Hold``): what happens while the command is held, beyond "nothing of
the command runs".

- An orphan handed back to tether during the commit: the reaper takes what the commit started (an event sink's
  process) as there before the command, but the sandbox's own process coming back then (bubblewrap's inner process,
  its outer one killed) is the command's, and is reaped with it: no zombie outlives the call.
- ``$_`` at the command's first line is what it is unheld (the command's shell ran tether's lines before it).
- A slow ``before`` (a slow event sink, told inside the commit) delays the command no more than unheld, where the
  sinks were told before the command was spawned: the command begins once it returned, and its deadline and
  duration count from then.
"""

from __future__ import annotations

import os
import secrets
import signal
import time
from pathlib import Path

import pytest

from tether.sandbox import BwrapSandbox, LocalSandbox, Sandbox
from tether.sandbox.doctor import survivors
from tether.sandbox.process import NotReleased
from tether.sandbox.reaper import become_subreaper, children, in_my_pid_namespace, kill_and_reap


def run_held(sandbox: Sandbox, ws: Path, command: str, before: object, timeout_s: float = 30.0) -> object:
    assert isinstance(sandbox, LocalSandbox | BwrapSandbox)
    return sandbox.run(command, cwd=ws, timeout_s=timeout_s, before=before)  # type: ignore[arg-type]


def wait_for(check: object, timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return True
        time.sleep(0.005)
    return False


@pytest.mark.bwrap
def test_bubblewraps_inner_process_coming_back_during_the_commit_is_reaped(workspace: Path) -> None:
    """bubblewrap's outer process dies while the command is held (killed from outside, during the commit): its inner
    one (the sandbox's pid 1, in another pid namespace) is handed to tether, the subreaper, inside the window where
    what the commit started is taken as there before the command. It is the command's, and is reaped at its end:
    no zombie of it is left. The sandbox's own process having died, the command is never let go (``NotReleased``):
    its shell, alive until the kill of its pid namespace reaches it, would otherwise read the start byte and run the
    command that tether then logs as failed."""
    assert become_subreaper()
    marker = "tether-held-" + secrets.token_hex(6)
    had = children()
    seen: list[int] = []

    def before() -> None:  # the commit: meanwhile bubblewrap's outer process is SIGKILLed
        assert wait_for(lambda: children() - had)
        (outer,) = children() - had
        assert wait_for(lambda: Path(f"/proc/{outer}/task/{outer}/children").read_bytes().strip())  # forked its inner
        os.kill(outer, signal.SIGKILL)
        assert wait_for(lambda: children() - had - {outer})  # its inner process came back to tether
        seen.extend(children() - had - {outer})

    try:
        with pytest.raises(NotReleased, match="exited while the command was held"):
            run_held(BwrapSandbox(workspace), workspace, f": {marker}; touch acted", before)
        assert seen, "the inner process did not come back to tether"
        left = children() - had  # (another test's orphan may come back to this worker meanwhile: not the call's)
        assert not set(seen) & left  # the inner process was reaped: no zombie of the call is left
        assert not {pid for pid in left if not in_my_pid_namespace(pid)}  # nor any process of the sandbox's
    finally:
        for pid in children() - had:  # not to leave this test's zombie to the rest of the session
            kill_and_reap(pid)
    assert survivors(marker) == [] and not (workspace / "acted").exists()


def test_dollar_underscore_at_the_commands_start_is_as_unheld(sandbox: Sandbox, workspace: Path) -> None:
    """``$_`` (the last argument of the shell's previous command) is the same whether the command was held or not:
    the hold's line does not run last before it."""
    command = 'echo "[$_]"'
    unheld = sandbox.run(command, cwd=workspace, timeout_s=30)
    held = run_held(sandbox, workspace, command, lambda: None)
    assert unheld.ok and held.ok, (unheld.stderr, held.stderr)  # type: ignore[attr-defined]
    assert held.stdout == unheld.stdout  # type: ignore[attr-defined]


def test_a_slow_before_delays_the_command_once_and_is_not_its_time(sandbox: Sandbox, workspace: Path) -> None:
    """A slow event sink (told inside the commit, ``before``): the command begins only once it returned, as it did
    unheld (the sinks were told before the spawn then); the command's own deadline and duration leave it out."""
    marker = workspace / "began"
    times: list[float] = []

    def before() -> None:
        time.sleep(0.5)
        times.append(time.time())

    r = run_held(sandbox, workspace, f"date +%s.%N > {marker}", before, timeout_s=0.4)
    assert r.ok, r.stderr  # type: ignore[attr-defined]
    assert float(marker.read_text()) >= times[0]
    assert r.duration_s < 0.4  # type: ignore[attr-defined]


def test_a_local_command_whose_shell_is_killed_during_the_commit_is_not_let_go(workspace: Path) -> None:
    """The local shell killed from outside while held: ``NotReleased`` (not a receipt of a command that ran and was
    killed), and nothing of it ran."""
    assert become_subreaper()
    had = children()

    def before() -> None:
        assert wait_for(lambda: children() - had)
        (shell,) = children() - had
        os.kill(shell, signal.SIGKILL)
        assert wait_for(lambda: Path(f"/proc/{shell}/stat").read_text().split(") ")[1].startswith("Z"))

    with pytest.raises(NotReleased, match="exited while the command was held"):
        run_held(LocalSandbox(), workspace, "touch acted", before)
    assert not (workspace / "acted").exists()
