"""Warm shells (sandbox/warm.py): while a run drives the local sandbox, the next shell command's bash is started as
soon as a command ends, and waits on a pipe for its command. Real processes throughout.

Attacked here: that the command runs as under ``bash -c``; that nothing runs before the command is written (a
``before`` that looks, one that raises, tether SIGKILLed while a shell waits or while its command is held); that a
shell is never used for a call it does not fit (the environment or the directory changed, the shell killed, an
argv, the call's own variables, a NUL, a command too long for one write); that two threads never share one
shell nor reap each other's; that timeouts and leftovers are handled as for any command; and that a run's later
commands do use them and leave none behind."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tether.sandbox import TIMEOUT_EXIT_CODE, LocalSandbox
from tether.sandbox.doctor import survivors
from tether.sandbox.process import HELD_EXIT_CODE, NotReleased
from tether.sandbox.reaper import AHEAD, children, started_ahead
from tether.sandbox.warm import MAX_GO, VAR

# What a command can tell of the shell it runs in, beside its environment (printed apart: the token differs).
PROBE = r"""echo "line $LINENO last $_ zero $0 args $# dash $- reply ${REPLY-unset} var ${TETHER_WARM_COMMAND-unset}"
echo "line $LINENO"; declare -p TETHER_WARM_COMMAND 2>&1; cd /proc/$$/fd && echo fds *; cd "$OLDPWD"
ulimit -a; umask; trap -p; shopt | md5sum; set -o | md5sum; pwd
f() { echo "in f line $LINENO"; }; f
not_a_command_anywhere
echo "pid $$"
exit 7"""
ENV = "env -0 | sort -z | tr '\\0' '\\n' | grep -v ^TETHER_SANDBOX_RUN=; echo \"pid $$\""


def waiting(sandbox: LocalSandbox) -> int:
    """The pid of the shell waiting for ``sandbox``'s next shell command (one must wait)."""
    idle = sandbox._slot.idle
    assert idle is not None
    return idle.pid


def ran_in(got: tuple[int, str, str]) -> tuple[tuple[int, str, str], int]:
    """A probe's result without its last line, and the pid that line names (the shell's)."""
    code, out, err = got
    rest, _, pid = out.rstrip("\n").rpartition("\n")
    assert pid.startswith("pid "), out
    return (code, rest + "\n", err), int(pid[4:])


def run(sandbox: LocalSandbox, ws: Path, command: str | list[str], **kw: object) -> tuple[int, str, str]:
    r = sandbox.run(command, cwd=ws, timeout_s=30, **kw)  # type: ignore[arg-type]
    return r.exit_code, r.stdout, r.stderr


def gone(pid: int, within_s: float = 10.0) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie not yet reaped) within ``within_s``; a child of this process is
    reaped."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            return True
        if state in (b"Z", b"X"):
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            return True
        time.sleep(0.02)
    return False


def until(ready: Callable[[], bool], within_s: float = 10.0) -> None:
    """Wait for ``ready``: the test fails, and never hangs, when it does not come within ``within_s``."""
    deadline = time.monotonic() + within_s
    while not ready():
        assert time.monotonic() < deadline, f"not ready within {within_s} s"
        time.sleep(0.01)


def warm_children() -> list[int]:
    """This process's children that are warm shells (their command line is the waiting line)."""
    found = []
    for pid in children():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if VAR.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def test_a_warm_shell_runs_the_command_as_bash_c_would(workspace: Path) -> None:
    """Line numbers, ``$_``, ``$0``, ``$#``, ``$-``, the descriptors, the limits, the umask, the options, the
    directory, a function's line, bash's message for a missing command, the exit status and the environment (but
    the per-command token): the same from a warm shell as from a shell started for the call."""
    cold = LocalSandbox()
    expected, _ = ran_in(run(cold, workspace, PROBE))
    expected_env, _ = ran_in(run(cold, workspace, ENV))
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")  # started as any: the next one waits already
        shell = waiting(sandbox)
        got, pid = ran_in(run(sandbox, workspace, PROBE))
        assert pid == shell
        shell = waiting(sandbox)
        env, pid = ran_in(run(sandbox, workspace, ENV))
        assert pid == shell
    assert sandbox.warm_runs == 2
    assert got == expected and expected[0] == 7
    assert "line 2 last 1048576 zero bash args 0 dash hBc reply unset var unset\nline 3\n" in expected[1]
    assert "fds 0 1 2 3\n" in expected[1] and "in f line 5" in expected[1]
    assert "bash: line 6: not_a_command_anywhere: command not found" in expected[2]
    assert env == expected_env and "PATH=" in env[1]


def test_what_a_warm_shell_tells_differently_is_only_what_its_module_says(workspace: Path) -> None:
    """A syntax error names ``eval`` where ``bash -c`` names ``-c`` (same line, same status); a last external
    command killed by a signal is told by bash (it forked it) where ``bash -c`` exec'd it: the same status."""
    sandbox = LocalSandbox()
    cold = run(sandbox, workspace, "echo a\nif")
    crash = "sh -c 'kill -SEGV $$'"
    cold_crash = run(sandbox, workspace, crash)
    with sandbox.warm():
        run(sandbox, workspace, "true")
        warm = run(sandbox, workspace, "echo a\nif")
        warm_crash = run(sandbox, workspace, crash)
    assert sandbox.warm_runs == 2
    assert cold == (2, "a\n", "bash: -c: line 4: syntax error: unexpected end of file\n")
    assert warm == (2, "a\n", "bash: eval: line 4: syntax error: unexpected end of file\n")
    assert cold_crash[0] == warm_crash[0] == 128 + signal.SIGSEGV
    assert cold_crash[2] == "" and "Segmentation fault" in warm_crash[2]


def test_nothing_runs_until_the_command_is_written_and_the_end_of_warm_stops_the_shell(workspace: Path) -> None:
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")
        shell = waiting(sandbox)
        time.sleep(0.3)  # ample for a shell to have run anything it was going to
        assert os.listdir(workspace) == [] and shell in warm_children()
    assert sandbox._slot.idle is None and gone(shell) and warm_children() == []
    run(sandbox, workspace, "true")  # outside warm(): no shell is started for a later call
    assert sandbox._slot.idle is None and warm_children() == []


def test_a_held_warm_command_waits_for_before_and_never_runs_if_it_raises(workspace: Path) -> None:
    sandbox = LocalSandbox()
    seen: list[bool] = []

    def looks() -> None:
        time.sleep(0.2)
        seen.append((workspace / "acted").exists())

    def fails() -> None:
        raise OSError("the disk is full")

    with sandbox.warm():
        run(sandbox, workspace, "true")
        shell = waiting(sandbox)
        assert run(sandbox, workspace, "touch acted; echo $$", before=looks) == (0, f"{shell}\n", "")
        assert seen == [False]
        (workspace / "acted").unlink()
        shell = waiting(sandbox)
        with pytest.raises(NotReleased, match="the disk is full"):
            run(sandbox, workspace, "touch acted", before=fails)
        assert gone(shell) and not (workspace / "acted").exists()
        shell = waiting(sandbox)  # a new one waits for the next call, which runs
        assert run(sandbox, workspace, "echo $$") == (0, f"{shell}\n", "")
    assert sandbox.warm_runs == 3


KILLED = """
import os, signal, sys
from pathlib import Path
from tether.sandbox import LocalSandbox
ws, when = Path(sys.argv[1]), sys.argv[2]
sandbox = LocalSandbox()
with sandbox.warm():
    sandbox.run("true", cwd=ws, timeout_s=30)
    print(sandbox._slot.idle.pid, flush=True)
    if when == "waiting":
        os.kill(os.getpid(), signal.SIGKILL)
    sandbox.run("touch acted", cwd=ws, timeout_s=30, before=lambda: os.kill(os.getpid(), signal.SIGKILL))
"""


@pytest.mark.parametrize("when", ["waiting", "held"])
def test_tether_killed_leaves_its_warm_shell_to_exit_unrun(workspace: Path, when: str) -> None:
    """SIGKILL of tether while its shell waits, or while the shell's command is held for the commit: no cleanup
    runs, yet the shell reads end-of-file and exits without running anything."""
    proc = subprocess.run(
        [sys.executable, "-c", KILLED, str(workspace), when], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    shell = int(proc.stdout)
    assert gone(shell)  # it exited by itself: nobody was left to kill it
    assert not (workspace / "acted").exists()


def test_a_shell_killed_from_outside_is_replaced_for_the_call(workspace: Path) -> None:
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")
        os.kill(waiting(sandbox), signal.SIGKILL)
        time.sleep(0.1)
        assert run(sandbox, workspace, "echo ran") == (0, "ran\n", "")
    assert sandbox.warm_runs == 0


def test_a_changed_environment_or_directory_is_the_calls_not_the_shells(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host variable the sandbox passes on, changed after the shell started, reaches the command with its new
    value; a workspace removed and made again under the same path is the directory the command runs in."""
    monkeypatch.setenv("TETHER_TEST_PASSED", "old")
    sandbox = LocalSandbox(env_allow=["TETHER_TEST_PASSED"])
    with sandbox.warm():
        run(sandbox, workspace, "true")
        monkeypatch.setenv("TETHER_TEST_PASSED", "new")
        assert run(sandbox, workspace, "echo $TETHER_TEST_PASSED") == (0, "new\n", "")
        assert sandbox.warm_runs == 0
        shutil.rmtree(workspace)
        workspace.mkdir()
        (workspace / "fresh").touch()
        assert run(sandbox, workspace, "ls; pwd -P") == (0, f"fresh\n{workspace.resolve()}\n", "")
        assert sandbox.warm_runs == 0
        other = workspace / "sub"
        other.mkdir()
        assert run(sandbox, other, "pwd") == (0, f"{other}\n", "")
        assert run(sandbox, other, "pwd") == (0, f"{other}\n", "")  # the shell started in sub/ fits
    assert sandbox.warm_runs == 1


def test_calls_a_warm_shell_cannot_carry_start_their_own_and_leave_it_waiting(workspace: Path) -> None:
    """An argv, the call's own variables, a command longer than ``MAX_GO``: each runs as before, the waiting shell
    still waits; a NUL is refused as it is without a warm shell."""
    long = "echo " + "x" * MAX_GO
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")
        shell = waiting(sandbox)
        assert run(sandbox, workspace, ["bash", "-c", "echo $$"])[1] != f"{shell}\n"
        assert run(sandbox, workspace, "echo $OWN", env={"OWN": "mine"}) == (0, "mine\n", "")
        assert run(sandbox, workspace, long) == (0, "x" * MAX_GO + "\n", "")
        with pytest.raises(ValueError, match="null"):
            run(sandbox, workspace, "echo a\0touch acted")
        assert waiting(sandbox) == shell and sandbox.warm_runs == 0
        assert run(sandbox, workspace, "echo $$") == (0, f"{shell}\n", "")
    assert not (workspace / "acted").exists()


def test_a_warm_command_that_times_out_or_leaves_processes_is_killed_whole(workspace: Path) -> None:
    marker = "tether-warm-" + secrets.token_hex(6)
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")
        stays = f"bash -c 'sleep 30; :' {marker}"  # a bash that waits, its command line marked
        r = sandbox.run(f"{stays} & sleep 30", cwd=workspace, timeout_s=0.5)
        assert (r.timed_out, r.exit_code) == (True, TIMEOUT_EXIT_CODE)
        assert 0.5 <= r.duration_s < 10
        assert run(sandbox, workspace, f"setsid {stays} & echo left") == (0, "left\n", "")
    assert sandbox.warm_runs == 2
    assert survivors(marker) == []


def test_two_threads_never_share_a_shell_nor_reap_each_others(workspace: Path) -> None:
    """One sandbox driven by two threads, and two sandboxes each in its own: every command runs once, in a shell of
    its own, and each sandbox's waiting shell survives the other thread's commands (started under the reaper's
    lock, it is no leftover of theirs)."""
    shared = LocalSandbox()
    alone = [LocalSandbox(), LocalSandbox()]
    outputs: dict[str, list[tuple[int, str, str]]] = {}

    def drive(name: str, sandbox: LocalSandbox) -> None:
        outputs[name] = [run(sandbox, workspace, f"echo {name}-{i} $$") for i in range(15)]

    with shared.warm(), alone[0].warm(), alone[1].warm():
        threads = [threading.Thread(target=drive, args=(f"s{i}", shared)) for i in range(2)]
        threads += [threading.Thread(target=drive, args=(f"a{i}", alone[i])) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    pids = []
    for name, got in outputs.items():
        assert [(code, out.split()[0], err) for code, out, err in got] == [(0, f"{name}-{i}", "") for i in range(15)]
        pids += [out.split()[1] for _, out, _ in got]
    assert len(set(pids)) == len(pids) == 60  # no shell ran two commands
    assert [s.warm_runs for s in alone] == [14, 14]  # none was killed as another command's leftover
    assert shared.warm_runs >= 1
    assert warm_children() == []


def test_a_shell_nothing_is_written_to_exits_unrun(workspace: Path) -> None:
    """The pipe closed with nothing written (the run ended, or a write cut short: no NUL): exit 125, no command."""
    sandbox = LocalSandbox()
    with sandbox.warm():
        run(sandbox, workspace, "true")
        idle = sandbox._slot.idle
        assert idle is not None
        sandbox._slot.idle = None
    os.write(idle.hold.w, b"touch acted")  # no NUL: a write cut short
    idle.hold.close()
    proc = idle.spawned[0]
    assert proc.wait(10) == HELD_EXIT_CODE
    for fd in idle.spawned[1:]:
        os.close(fd)
    assert not (workspace / "acted").exists()


def test_an_environment_that_runs_code_as_bash_starts_never_gets_a_warm_shell(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BASH_ENV`` passed on makes bash source a file as it starts, before any line of its own: a shell started
    ahead would run that file before the gate decided the call. So no shell is started ahead; the file runs only
    when a command is started, as it always did."""
    hook = workspace.parent / "bash_env.sh"
    hook.write_text(f"echo sourced >> {workspace.parent / 'ran'}\n")
    monkeypatch.setenv("BASH_ENV", str(hook))
    sandbox = LocalSandbox(env_allow=["BASH_ENV"])
    with sandbox.warm():
        assert run(sandbox, workspace, "echo one") == (0, "one\n", "")
        time.sleep(0.3)  # ample for a shell started ahead to have sourced the file
        assert sandbox._slot.idle is None and warm_children() == []
        assert (workspace.parent / "ran").read_text() == "sourced\n"
        assert run(sandbox, workspace, "echo two") == (0, "two\n", "")
    assert sandbox.warm_runs == 0
    assert (workspace.parent / "ran").read_text() == "sourced\nsourced\n"


def test_a_waiting_shell_whose_starter_thread_ended_is_no_leftover_of_another_command(workspace: Path) -> None:
    """A thread's command ends by starting its sandbox's next shell, that thread's child; when the thread ends, the
    kernel hands the shell to the main thread, whose children a command's end reaps. Handed over while another
    sandbox's command ran, it was taken for that command's leftover and killed, and the first sandbox's next command
    failed unstarted (NotReleased): the race `test_two_threads_never_share_a_shell_nor_reap_each_others` met now and
    then. Here the starter ends while the other command sleeps."""
    first, other = LocalSandbox(), LocalSandbox()
    end = threading.Event()

    def starter() -> None:
        run(first, workspace, "true")
        end.wait(10)

    with first.warm():
        thread = threading.Thread(target=starter)
        thread.start()
        until(lambda: first._slot.idle is not None)
        shell = waiting(first)
        flag = workspace / "sleeping"
        running = threading.Thread(target=run, args=(other, workspace, f"touch {flag}; sleep 0.5"))
        running.start()
        until(flag.exists)
        end.set()  # the starter ends while the other command runs: its shell is handed to the main thread
        thread.join()
        running.join()
        assert waiting(first) == shell and not gone(shell, within_s=0.1)
        assert run(first, workspace, "echo $$") == (0, f"{shell}\n", "")


def test_a_process_started_ahead_is_spared_only_until_it_is_reaped() -> None:
    """Its pid could be another process's once it is reaped: from then on it is spared no more."""
    proc = subprocess.Popen(["sleep", "30"])
    AHEAD[proc.pid] = proc
    try:
        assert proc.pid in started_ahead()
        proc.kill()
        proc.wait()
        assert proc.pid not in started_ahead()
    finally:
        AHEAD.pop(proc.pid, None)
        proc.kill()
        proc.wait()
