"""A local shell command's bash started before its call: a *warm* shell, waiting for the command itself (issue 18).

A held command (:class:`.process.Hold`) lets bash start while the step commits, but the commit is shorter than
bash's start: after the go a step still waited ~0.6 ms for bash to reach its first line, tether's process idle
(docs/step-cost.md). So while a run drives the local sandbox (:meth:`.local.LocalSandbox.warm`), the sandbox
starts the *next* command's bash as soon as a command has ended — the model's answer, the gate and the commit then
all run while it starts. That shell holds no call: the sandbox's environment (with a fresh per-command token), the
workspace as its directory, and one line that waits for the command on a pipe only tether writes to
(close-on-exec, never passed on). The command, with the limits before it, comes over that pipe only once the
gate has allowed it and ``action.started`` is on disk (the hold's ``before``), as one write of at most
:data:`MAX_GO` bytes ending in a NUL; the shell reads it and evaluates it.

What it does not change: a shell nothing was written to exits 125 without running anything when the pipe closes
(tether gave up, the run ended, or tether died: end-of-file); a partial write (tether killed during it) has no
NUL, and ``read`` fails on it the same way. The command runs as under ``bash -c``: its lines keep their numbers
(``$LINENO``, bash's messages), ``$0``, ``$#`` and ``$_`` are the same, and the variable the command was read into
is unset before its first line. What differs, visibly: a syntax error is reported as ``bash: eval: line N`` where
``bash -c`` says ``bash: -c: line N``; bash forks for a last external command where ``bash -c`` would exec it
(the same exit status, one more process in the tree the group kill reaches; a signal that kills it is told by
bash on stderr); and the process's command line is the waiting line, not the command.

A shell is used only when it is what the call would have started (:meth:`Warm.fits`): still running, the same
directory by path and by inode (a workspace removed and made again is another directory), and the environment the
call builds now equal to the one it was started with (a host variable the envelope passes on, changed since, is
the new value). Anything else — an argv command, a call's own variables, a NUL, a command longer than
:data:`MAX_GO` — starts a fresh bash as before and leaves the warm one for the next call.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from .process import HELD_EXIT_CODE, Hold, Spawned, kill_group, spawn
from .reaper import AHEAD

VAR = "TETHER_WARM_COMMAND"
"""The shell variable the command is read into; unset by the evaluated text before the command's first line."""
MAX_GO = min(2048, select.PIPE_BUF)
"""The most bytes one write to the shell may carry: whole in one write (a pipe writes up to ``PIPE_BUF`` bytes at
once), and short enough to be worth it: bash's ``read`` takes a pipe a byte at a time (~0.45 us each here), so at
~3.8 kB the read cost what the warm start saves (go to end 2.37 ms against a fresh bash's 2.29; 0.51 against 2.15
at 100 bytes, 0.86 against 1.83 at 1 kB)."""


def line(fd: int) -> str:
    """The warm shell's only line: read the text up to a NUL from ``fd`` (or exit unrun), close ``fd``, evaluate
    the text after unsetting the variable. The text is ``limits\\ncommand``: evaluated from this line, its second
    line is numbered 2, as the command's first line is under ``bash -c 'limits\\ncommand'``."""
    return (
        f"TMOUT= IFS= read -r -d '' -u {fd} {VAR} || exit {HELD_EXIT_CODE}; exec {fd}<&-; eval \"unset {VAR}; ${VAR}\""
    )


def go(limits: str, command: str) -> bytes | None:
    """What is written to a warm shell to run ``command`` after ``limits``; None when a warm shell cannot carry it
    (a NUL, which ``bash -c`` refuses as an argument and ``read`` would cut the command at, or longer than
    :data:`MAX_GO`)."""
    if "\0" in command:
        return None
    text = os.fsencode(f"{limits}\n{command}") + b"\0"
    return text if len(text) <= MAX_GO else None


class Warm:
    """One idle shell and what it was started with."""

    def __init__(self, spawned: Spawned, hold: Hold, cwd: Path, env: Mapping[str, str], token: str) -> None:
        self.spawned = spawned
        self.hold = hold
        self.cwd = cwd
        self.inode = inode(cwd)
        self.env = dict(env)
        self.token = token
        AHEAD[self.pid] = spawned[0]

    @property
    def pid(self) -> int:
        return self.spawned[0].pid

    def close(self) -> None:
        """Once its command has run (or it is stopped): the hold closed, and no longer a process started ahead."""
        self.hold.close()
        AHEAD.pop(self.pid, None)

    def fits(self, cwd: Path, env: Mapping[str, str]) -> bool:
        """Whether this shell is what a call in ``cwd`` with ``env`` would start: alive, in that directory (the same
        path, the same inode), with that environment."""
        alive = self.spawned[0].poll() is None
        return alive and cwd == self.cwd and self.inode is not None and inode(cwd) == self.inode and env == self.env

    def discard(self) -> None:
        """Close the pipe (the shell reads end-of-file and exits unrun), kill its group should it not, reap it and
        close its output pipes."""
        proc, out_r, err_r = self.spawned
        self.hold.close()
        kill_group(proc)
        proc.wait()
        self.close()
        for fd in (out_r, err_r):
            os.close(fd)


def start(bash: str, cwd: Path, env: Mapping[str, str], token: str) -> Warm | None:
    """A warm shell in ``cwd`` with ``env``; None if it cannot be started (the next call then starts its own and
    reports why)."""
    hold = Hold(_nothing)
    try:
        spawned = spawn([bash, "-c", line(hold.r), "bash"], cwd=cwd, env=env, pass_fds=(), new_session=True, hold=hold)
    except (OSError, ValueError):
        hold.close()
        return None
    return Warm(spawned, hold, cwd, env, token)


def inode(path: Path) -> tuple[int, int] | None:
    """``(st_dev, st_ino)`` of the directory at ``path`` (None if it is gone): one removed and made again under the
    same path is another directory, which a shell (or a sandbox) started in the old one does not see."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _nothing() -> None:
    """A warm shell's ``before`` until a call gives it its own: an unheld call's command goes at once."""


class Discards(Protocol):
    def discard(self) -> None: ...


W = TypeVar("W", bound=Discards)


class Slot(Generic[W]):
    """The one shell (or bubblewrap sandbox, :mod:`.ahead`) a sandbox keeps started ahead, shared by its per-call views
    (``copy.copy``), and how many drives want one. Two threads' calls never take one, nor start two; and none is
    started once the last drive has ended (it stops what it finds: starters check :attr:`drives` under the lock)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.drives = 0
        self.idle: W | None = None
        self.runs = 0
        """How many commands ran in one started ahead: what a caller or test can check them by."""

    @contextmanager
    def driving(self) -> Iterator[None]:
        """While it lasts, commands' ends start the next one; at the last drive's end the waiting one is discarded."""
        with self.lock:
            self.drives += 1
        try:
            yield
        finally:
            with self.lock:
                self.drives -= 1
                idle = None
                if not self.drives:
                    idle, self.idle = self.idle, None
            if idle is not None:
                idle.discard()

    def take(self) -> W | None:
        with self.lock:
            idle, self.idle = self.idle, None
        return idle
