"""``run_captured`` holds bare pipe descriptors and a pidfd: every one is closed on every path out."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest

from tether.sandbox import Sandbox
from tether.sandbox.output import OutputCap
from tether.sandbox.process import run_captured


def open_fds() -> set[tuple[str, str]]:
    """This process's open descriptors, each with what it is open on: one a call left open shows up even under the
    number of another that was closed meanwhile (a garbage-collected file of an earlier test), and one closed
    meanwhile is no descriptor of the call's."""
    fds = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since it was listed (the listing's own)
            fds.add((fd, os.readlink(f"/proc/self/fd/{fd}")))
    return fds


def test_no_descriptor_outlives_any_kind_of_command(sandbox: Sandbox, workspace: Path) -> None:
    sandbox.run("true", cwd=workspace, timeout_s=30)  # whatever a backend opens once (bwrap's probes) is open now
    before = open_fds()
    for command in (
        "echo out; echo err >&2; exit 3",
        "head -c 300000 /dev/zero",  # more than a pipe holds: several reads
        "setsid sleep 300 & echo quick",  # a child holding the pipes: the drain grace ends the read
        "sleep 300",  # timed out
        ["/nonexistent/program"],  # a failed start (local) or bwrap's own failure
    ):
        sandbox.run(command, cwd=workspace, timeout_s=0.5 if command == "sleep 300" else 30)
    assert open_fds() - before == set()


def test_a_start_that_fails_closes_both_pipes(workspace: Path) -> None:
    before = open_fds()
    with pytest.raises(FileNotFoundError):
        run_captured(["/nonexistent/program"], cwd=workspace, env={}, timeout_s=5, cap=OutputCap())
    assert open_fds() - before == set()


def test_an_interrupted_wait_kills_the_command_and_closes_everything(workspace: Path) -> None:
    """An exception inside the wait (here: the output buffer failing) stops the command, closes every descriptor
    and propagates: nothing is left running and nothing leaks."""
    before = open_fds()
    marker = workspace / "pid"

    import tether.sandbox.process as process

    real = process.BoundedBuffer

    class Failing(real):  # type: ignore[misc,valid-type]
        def feed(self, data: bytes) -> None:
            raise RuntimeError("buffer failed")

    process.BoundedBuffer = Failing  # type: ignore[misc]
    try:
        with pytest.raises(RuntimeError, match="buffer failed"):
            run_captured(
                ["bash", "-c", f"echo $$ > {marker}; echo hi; exec sleep 300"],
                cwd=workspace,
                env={"PATH": "/usr/bin:/bin"},
                timeout_s=30,
                cap=OutputCap(),
            )
    finally:
        process.BoundedBuffer = real  # type: ignore[misc]
    pid = int(marker.read_text())
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped
    assert open_fds() - before == set()


def test_commands_from_many_threads_leak_nothing(sandbox: Sandbox, workspace: Path) -> None:
    sandbox.run("true", cwd=workspace, timeout_s=30)
    before = open_fds()
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for i in range(5):
                r = sandbox.run(f"echo {i}", cwd=workspace, timeout_s=30)
                assert r.stdout == f"{i}\n"
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert open_fds() - before == set()


def test_a_command_that_closes_its_pipes_and_keeps_running_still_times_out(sandbox: Sandbox, workspace: Path) -> None:
    """Both pipes at EOF long before the exit: the wait goes on on the exit itself, and the deadline still holds."""
    r = sandbox.run("echo early; exec >&- 2>&-; exec sleep 300", cwd=workspace, timeout_s=0.5)
    assert r.timed_out and r.stdout == "early\n"
    assert r.duration_s < 30


def test_a_command_that_closes_its_pipes_then_exits_is_waited_for(sandbox: Sandbox, workspace: Path) -> None:
    r = sandbox.run("exec >&- 2>&-; sleep 0.3; exit 7", cwd=workspace, timeout_s=30)
    assert (r.exit_code, r.timed_out, r.stdout, r.stderr) == (7, False, "", "")


def test_both_pipes_full_at_once_do_not_deadlock(sandbox: Sandbox, workspace: Path) -> None:
    """A megabyte on each stream, written alternately in small pieces: neither pipe may be left to fill up."""
    script = "for i in $(seq 2000); do head -c 512 /dev/zero; head -c 512 /dev/zero >&2; done"
    r = sandbox.run(script, cwd=workspace, timeout_s=60)
    assert r.ok and not r.timed_out
    assert (r.stdout_bytes, r.stderr_bytes) == (1_024_000, 1_024_000)
