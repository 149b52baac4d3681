"""The one place a sandboxed child process is started, watched, bounded and killed.

Both backends call :func:`run_captured`: stdin closed, its own process group (and session), pipes read
incrementally into bounded buffers, a wall-clock deadline after which the whole tree is killed, and a
cleanup kill as soon as the command exits so that background children do not outlive it.

A command may be started *held* (:class:`Hold`): the child starts (bash's exec and start-up, bubblewrap's
namespaces) while tether does what must precede the command — the log's synced commit of ``action.started`` —
and the command's first line waits for one byte from tether before anything of the command runs. If that work
fails, or tether dies, the byte never comes: the line reads end-of-file and the shell exits before the command.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .base import display
from .environment import starts_code
from .output import BoundedBuffer, OutputCap
from .receipt import TIMEOUT_EXIT_CODE, Receipt

CHUNK = 64 * 1024
POLL_S = 0.05
"""Where there are no pidfds: how often an idle, still-running command is checked for exit (only matters while a
background child holds the pipes open; normally the pipes close when the command exits)."""
DRAIN_GRACE_S = 0.5
"""After the command exited and its tree was killed, how long to wait for pipes to reach EOF."""


@dataclass(frozen=True)
class Captured:
    exit_code: int
    timed_out: bool
    duration_s: float
    stdout: BoundedBuffer
    stderr: BoundedBuffer


Killer = Callable[["subprocess.Popen[bytes]"], None]
Spawned = tuple["subprocess.Popen[bytes]", int, int]
"""A started child and the read ends of its stdout and stderr pipes."""
HELD_EXIT_CODE = 125
"""How a held command's shell exits when it is never let go (tether gave up or died): the command did not run."""


class NotReleased(Exception):
    """What had to happen before a held command could begin failed (the cause says what); the command was
    killed before its first line let it run, and reaped. Not an ``OSError``: never taken for a failed start."""


class Hold:
    """A command held at its start until :meth:`release`: a pipe whose read end the child's shell reads one byte
    from (:meth:`line`, the trampoline's line before the command) and whose write end only tether holds
    (close-on-exec, never passed on), so tether dying is end-of-file too.

    ``before`` is what must happen first (the runtime's synced commit); it runs once the child has started, inside
    the command's window: a process it starts (an event sink's) is taken as there before the command
    (:meth:`.reaper.Leftovers.after`), but one that process orphans later would be taken for the command's
    leftover; while it runs no other thread's command starts (the reaper's one-command lock)."""

    def __init__(self, before: Callable[[], None]) -> None:
        self.before = before
        self.r, self.w = os.pipe2(os.O_CLOEXEC)
        self.pid: int | None = None  # the held process's, once release() runs
        self.go = b"."
        """What :meth:`release` writes: the one byte :meth:`line` waits for, or a warm shell's whole command
        (:mod:`.warm`), at most ``PIPE_BUF`` bytes so that one write on the empty pipe carries all of it."""

    def held_pid(self) -> int | None:
        """The held process's pid once :meth:`release` runs, for ``before`` to ask (:meth:`.reaper.Leftovers.after`)."""
        return self.pid

    def line(self) -> str:
        """The shell line that holds the command: one byte, or exit (no byte: never let go); the descriptor is
        closed before the command, which sees none of it (``REPLY`` unset again). ``read`` without a timeout:
        bash takes ``$TMOUT`` as its default, and a commit slower than one passed to the command would have made
        the line give up (the command exiting 125 unrun after a commit that succeeded). The caller puts it on its
        own first line, so the command's lines keep their numbers (``$LINENO``, bash's errors) as unheld; and
        ``$_`` at the command's start is as unheld if what ran last there unheld still runs last (local: the
        limits, put after it) or ends as this line does (bubblewrap: the start byte's ``exec``)."""
        return f"TMOUT= read -r -n 1 -u {self.r} || exit {HELD_EXIT_CODE}; unset REPLY; exec {self.r}<&-"

    def release(self, proc: subprocess.Popen[bytes]) -> None:
        """Run ``before``; then let ``proc``'s command go. If ``before`` raises, or ``proc`` has exited meanwhile,
        nothing is written (the caller kills the child; should that miss, the child reads end-of-file once
        :meth:`close` runs) and ``NotReleased`` says why.

        The exit is asked first because a sandbox's command may outlive the process tether spawned: bubblewrap's
        outer process killed from outside, the kill of its pid namespace has not yet reached the shell, which would
        read the byte and run a command that tether logs as failed. Once the byte is written the command was let go,
        and a kill after that is a kill of a running command, told as such by its receipt."""
        self.pid = proc.pid
        try:
            self.before()
        except Exception as e:
            raise NotReleased(f"the command was not started: {e}") from e
        if proc.poll() is not None:
            raise NotReleased(
                f"the command was not started: its process exited while the command was held ({proc.returncode})"
            )
        try:  # noqa: SIM105 — suppress() is three Python calls, on every command's start (issue 18)
            os.write(self.w, self.go)
        except BrokenPipeError:  # the child died first (a bubblewrap setup failure): told later
            pass

    def close(self) -> None:
        for fd in (self.r, self.w):
            try:  # noqa: SIM105 — as in release
                os.close(fd)
            except OSError:
                pass
        self.r = self.w = -1


def hold_for(before: Callable[[], None] | None, names: Iterable[str]) -> Hold | None:
    """The hold of a command whose shell is given the variables ``names``, for ``before``; None when there is
    nothing to wait for, or when the command cannot be held — its environment makes bash run code before its first
    line (:func:`.environment.starts_code`): then ``before`` runs now, and the command starts only after it, as
    before holding; if it raises, ``NotReleased``, as for a held one."""
    if before is None:
        return None
    if not starts_code(names):
        return Hold(before)
    try:
        before()
    except Exception as e:
        raise NotReleased(f"the command was not started: {e}") from e
    return None


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group led by ``proc`` (it was started in its own session)."""
    try:  # noqa: SIM105 — as in Hold.release
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def exit_fd(proc: subprocess.Popen[bytes]) -> int | None:
    """A pidfd that becomes readable when ``proc`` exits (Linux 5.3+), so the wait for a command wakes the moment
    it ends; None where there is none (then the loop polls every ``POLL_S``)."""
    try:
        return os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        return None


def normalise(returncode: int, timed_out: bool) -> int:
    if timed_out:
        return TIMEOUT_EXIT_CODE
    return 128 - returncode if returncode < 0 else returncode


def run_captured(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    timeout_s: float,
    cap: OutputCap,
    kill: Killer = kill_group,
    pass_fds: Sequence[int] = (),
    new_session: bool = True,
    hold: Hold | None = None,
    spawned: Spawned | None = None,
) -> Captured:
    """Run ``argv`` and capture bounded output. Raises ``OSError`` only if the process cannot be started.

    The process leads its own process group, so that the group kill reaches its tree; with ``new_session``
    (the default) its own session too. bwrap passes False: it gives the command a session of its own
    (``--new-session``), and one more ``setsid`` for bwrap itself costs milliseconds on a loaded machine (each
    session is a new scheduler autogroup there) and isolates nothing more.

    The pipes are bare descriptors read with ``os.read`` and watched with one ``poll`` object: no file objects
    around them and no epoll instance to create, fill and tear down per command (about 20 system calls and
    their Python frames fewer per command, see docs/step-cost.md).

    With ``hold`` (its read end passed on beside ``pass_fds``, its :meth:`Hold.line` in the command's shell), the
    child is let go once ``hold.before`` has returned; the deadline and the duration count from then. If ``before``
    raises, the child is killed and reaped unrun and :class:`NotReleased` is raised. ``spawned``: a child started
    before (a warm shell, :mod:`.warm`, held by ``hold``), run instead of starting ``argv``."""
    start = time.monotonic()
    if spawned is None:
        spawned = spawn(argv, cwd=cwd, env=env, pass_fds=pass_fds, new_session=new_session, hold=hold)
    proc, out_r, err_r = spawned
    buffers = {out_r: BoundedBuffer(cap), err_r: BoundedBuffer(cap)}
    try:
        if hold is not None:
            _release(proc, hold, kill)
            start = time.monotonic()  # the command's own time starts when it may begin
        timed_out = _watch(proc, buffers, start + timeout_s, kill)
    finally:
        for fd in (out_r, err_r):
            os.close(fd)
    duration = time.monotonic() - start
    return Captured(normalise(proc.returncode, timed_out), timed_out, duration, buffers[out_r], buffers[err_r])


def spawn(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    pass_fds: Sequence[int],
    new_session: bool,
    hold: Hold | None,
) -> Spawned:
    """Start ``argv`` (see :func:`run_captured`) with stdin closed and its output on two fresh pipes; the process
    and the pipes' read ends (the caller closes them), whose write ends only the child's tree holds. If it cannot
    be started, the ``OSError`` with no descriptor left open."""
    out_r, out_w = os.pipe2(os.O_CLOEXEC)
    err_r, err_w = os.pipe2(os.O_CLOEXEC)
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
            cwd=cwd,
            env=env,  # read, never changed: Popen encodes it into its own list
            start_new_session=new_session,
            process_group=None if new_session else 0,
            pass_fds=(*pass_fds, hold.r) if hold is not None else tuple(pass_fds),
            close_fds=True,
        )
    except BaseException:
        for fd in (out_r, err_r):
            os.close(fd)
        raise
    finally:
        os.close(out_w)  # the child holds its copies: EOF comes when the last writer of its tree is gone
        os.close(err_w)
    return proc, out_r, err_r


def _release(proc: subprocess.Popen[bytes], hold: Hold, kill: Killer) -> None:
    """Let a held child go; if that fails (or is interrupted), kill and reap it, never let go."""
    try:
        hold.release(proc)
    except BaseException:
        hold.close()  # end-of-file for the child's line, should the kill miss anything
        kill(proc)
        proc.wait()
        kill(proc)
        raise


def _watch(proc: subprocess.Popen[bytes], buffers: dict[int, BoundedBuffer], deadline: float, kill: Killer) -> bool:
    """Read the pipes in ``buffers`` until both close and the command has exited (killing its tree then), or the
    deadline passes (killing it first); return whether it timed out. Stops the command if interrupted."""
    poller = select.poll()
    for fd in buffers:
        poller.register(fd, select.POLLIN)
    pipes = set(buffers)
    exited = exit_fd(proc)
    if exited is not None:
        poller.register(exited, select.POLLIN)
    timed_out = False
    drain_until: float | None = None
    try:
        while True:
            rc = proc.poll()
            now = time.monotonic()
            if rc is None and now >= deadline:
                timed_out = True
                kill(proc)
                rc = proc.wait()
            if rc is not None and drain_until is None:
                kill(proc)  # the command is done: nothing it started may outlive it
                drain_until = time.monotonic() + DRAIN_GRACE_S
                _forget(poller, exited)
                exited = None
            if not pipes and rc is not None:
                break
            if drain_until is not None and now >= drain_until:
                break  # a writer escaped the kill; stop reading rather than hang
            wait = max(0.0, (drain_until if drain_until is not None else deadline) - now)
            if exited is None and not pipes:  # no pidfd: the pipes are closed, wait for the exit itself
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=wait)
                continue
            _read_ready(poller, pipes, buffers, wait if exited is not None else min(wait, POLL_S))
    finally:
        if exited is not None:
            os.close(exited)
        if proc.poll() is None:  # interrupted (an exception): stop the command, then clean up after it
            kill(proc)
            proc.wait()
            kill(proc)
    return timed_out


def _forget(poller: select.poll, exited: int | None) -> None:
    """Stop watching the exit's pidfd (readable from now on: it would wake every poll) and close it."""
    if exited is not None:
        poller.unregister(exited)
        os.close(exited)


def _read_ready(poller: select.poll, pipes: set[int], buffers: dict[int, BoundedBuffer], wait_s: float) -> None:
    """Wait up to ``wait_s`` for ``poller``'s descriptors; read what the ready pipes hold into their buffers, and
    forget a pipe at its end-of-file. A ready pidfd is left alone: the exit is seen by ``proc.poll()``."""
    for fd, _ in poller.poll(1000 * wait_s):
        if fd not in pipes:
            continue
        data = os.read(fd, CHUNK)
        if data:
            buffers[fd].feed(data)
        else:
            poller.unregister(fd)
            pipes.discard(fd)


def to_receipt(got: Captured, *, backend: str, command: str | Sequence[str], cwd: Path) -> Receipt:
    return Receipt(
        backend=backend,
        command=display(command),
        cwd=str(cwd),
        exit_code=got.exit_code,
        timed_out=got.timed_out,
        duration_s=got.duration_s,
        stdout=got.stdout.text(),
        stderr=got.stderr.text(),
        stdout_bytes=got.stdout.total,
        stderr_bytes=got.stderr.total,
        truncated=got.stdout.truncated or got.stderr.truncated,
    )


def not_executable(backend: str, command: str | Sequence[str], cwd: Path, error: OSError) -> Receipt:
    """The receipt for a program that could not be executed (127 not found, 126 not permitted), like a shell."""
    code = 127 if isinstance(error, FileNotFoundError) else 126
    message = f"tether: cannot execute {error.filename or to_name(command)}: {error.strerror}\n"
    return Receipt(
        backend=backend,
        command=display(command),
        cwd=str(cwd),
        exit_code=code,
        timed_out=False,
        duration_s=0.0,
        stdout="",
        stderr=message,
        stdout_bytes=0,
        stderr_bytes=len(message.encode()),
        truncated=False,
    )


def to_name(command: str | Sequence[str]) -> str:
    return "bash" if isinstance(command, str) else (list(command) or ["?"])[0]
