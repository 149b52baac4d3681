"""tether as a child subreaper: what a local command leaves behind comes back to tether and is killed.

A command that double-forks or calls ``setsid`` leaves its process group, and one that scrubs its
environment (``env -i``) loses the per-run token the local sandbox sweeps for. On Linux,
``prctl(PR_SET_CHILD_SUBREAPER)`` makes the kernel reparent such orphans to tether instead of to init,
so after the command ends every process whose parent is tether and that was not already tether's child
when the command started (nor the command itself) is the command's leftover: it is killed (through a
pidfd, so a recycled pid is never signalled) and reaped.

Once a subreaper, always one: orphans from *any* command come back, so both backends collect what their
command leaves (for bwrap, the sandbox's own inner process when it outlives the outer one), or it would
stay a zombie for the life of the process.

Every child that was not there when the command started is taken for its leftover, so two commands must
never overlap in one process: a worker hosting several runs at once (``tether worker``) would have each
command's cleanup kill the other's processes. So a command that reaps holds a process-wide lock from the
moment its "before" is taken until its leftovers are reaped: commands of one process run one at a time
(model calls and everything else still overlap). Limits: a leftover whose parent is still alive at that
moment is found one round later, once its parent is killed; a process tether's main thread starts *outside*
the sandboxes while a command runs would still be taken for a leftover, except one started by what a held
command waits for (the runtime's commit, whose event sinks may start processes: :meth:`Leftovers.after`).

Where orphans land: the kernel hands an orphan to the subreaper's first live thread, its main thread (the
thread group leader, whose thread id is the process id: ``find_new_reaper``/``find_alive_thread`` in
``kernel/exit.c``), whichever thread started the command. So "tether's children" here are the main thread's
(``/proc/<pid>/task/<pid>/children``: one small read), not every thread's (a listing of ``/proc/<pid>/task`` and
a read per thread, three times per bwrap command); a child another thread started is not the command's
leftover in any case. The main thread of a Python process lives as long as the process does (it never exits
alone), so the orphans cannot go to another thread while tether runs commands.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable
from functools import cache
from types import TracebackType

TYPE_CHECKING = False  # not typing's, as elsewhere: nothing here needs it at run time
if TYPE_CHECKING:
    import subprocess

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
ROUNDS = 100_000
"""A safety cap only: each round kills one generation of what is left, so a tree needs as many rounds as it is
deep (a chain of ``setsid`` processes, each the parent of the next, is as deep as it is long)."""
_ONE_COMMAND = threading.Lock()  # see the module docstring: commands that reap never overlap in one process


@cache
def libc() -> ctypes.CDLL | None:
    """The C library, loaded once: ``find_library`` runs ``ldconfig`` in a subprocess (~2 ms), far too slow to
    repeat for every command (the bwrap sandbox asks :func:`is_subreaper` per command). None off Linux."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:
        return None


_subreaper_pid = 0  # the process the kernel last said yes for (a forked child is not a subreaper: asked anew)


def become_subreaper() -> bool:
    """Make this process a child subreaper (once per process: a fork's child does not inherit the flag, so it asks
    for itself); False where the kernel or libc does not offer it."""
    if _subreaper_pid == os.getpid():
        return True
    try:
        c = libc()
        yes = c is not None and bool(c.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except AttributeError:
        return False
    if yes:
        _remember_yes()
    return yes


def is_subreaper() -> bool:
    """What the kernel says (``PR_GET_CHILD_SUBREAPER``): for ``tether doctor``, and per bwrap command. A yes is
    remembered for this process (tether never clears the flag, "once a subreaper, always one"; a fork's child does
    not inherit it): no ``prctl`` through ctypes per command then; a no is asked again, since a local sandbox may
    make tether one later."""
    if _subreaper_pid == os.getpid():
        return True
    flag = ctypes.c_int(0)
    try:
        c = libc()
        yes = c is not None and bool(c.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) == 0 and flag.value)
    except AttributeError:
        return False
    if yes:
        _remember_yes()
    return yes


def _remember_yes() -> None:
    global _subreaper_pid
    _subreaper_pid = os.getpid()


def stat_fields(pid: int) -> tuple[int, int] | None:
    """``(ppid, starttime)`` of ``pid`` from ``/proc/<pid>/stat``; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # the command name may contain spaces and parentheses
    return int(fields[1]), int(fields[19])


def in_my_pid_namespace(pid: int) -> bool:
    """Whether ``pid`` (a zombie too) lives in this process's pid namespace, not one below it (a sandbox's): its
    ``NSpid`` in ``/proc`` lists as many pids as this process's. False if that cannot be read (it is gone)."""
    try:
        return _ns_depth(str(pid)) == _own_depth()
    except (OSError, ValueError):
        return False


#: ``(pid, NSpid depth)`` of this process, read once per process by :func:`_own_depth`.
_OWN_DEPTH: tuple[int, int] = (-1, 0)


def _own_depth() -> int:
    """This process's ``NSpid`` depth, read from ``/proc/self/status`` once per process (issue 18: the read was one
    of a held command's five ``/proc`` reads). A process never changes pid namespace (``unshare`` and ``setns``
    move only the children it makes later), so the answer holds for its life; a forked child has another pid and
    reads its own. A failed read is not kept: the next call asks again."""
    global _OWN_DEPTH
    me = os.getpid()
    kept = _OWN_DEPTH
    if kept[0] != me:
        kept = _OWN_DEPTH = (me, _ns_depth("self"))
    return kept[1]


def _ns_depth(pid: str) -> int:
    """How many pid namespaces ``/proc/<pid>`` is seen in from the one ``/proc`` belongs to (``NSpid``'s pids)."""
    status = _read(f"/proc/{pid}/status")
    start = status.index(b"\nNSpid:") + 7
    return len(status[start : status.index(b"\n", start)].split())


def children() -> set[int]:
    """This process's children now that a command's orphans can be among: its main thread's (see the module),
    from ``/proc``."""
    me = os.getpid()
    try:
        return {int(p) for p in _read(f"/proc/{me}/task/{me}/children").split()}
    except OSError:  # a kernel without CONFIG_PROC_CHILDREN: scan every process's parent
        pass
    out: set[int] = set()
    for name in os.listdir("/proc"):
        if name.isdigit() and (fields := stat_fields(int(name))) is not None and fields[0] == me:
            out.add(int(name))
    return out


def _read(path: str) -> bytes:
    """A small ``/proc`` file's bytes through a bare descriptor: open, read, close (a Python file object adds
    four system calls and a text decoder to each of the two reads a command makes)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


class Leftovers:
    """This process's children when a command starts; any other child it has when the command ends is the
    command's leftover. A context: while it is open, no other thread's command runs (see the module)."""

    def __init__(self, active: bool | None = None) -> None:
        self.active = is_subreaper() if active is None else active
        self.before: set[int] = set()

    def __enter__(self) -> Leftovers:
        if self.active:
            _ONE_COMMAND.acquire()
            self.before = children()
        return self

    def __exit__(self, kind: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self.active:
            _ONE_COMMAND.release()

    def after(self, before: Callable[[], None], command: Callable[[], int | None] = lambda: None) -> Callable[[], None]:
        """``before`` (what a held command waits for, :class:`.process.Hold`), then this process's new children in
        its own pid namespace taken as there before the command too: a process ``before`` started (an event sink's,
        told of the synced ``action.started``) is not the command's leftover. Sound because the command is still
        held then: it has run nothing that could have left a child of tether's; the go is sent only after this
        returns. What the sandbox itself hands back meanwhile stays the command's: bubblewrap's inner process (in
        the sandbox's pid namespace), when its outer one died during ``before``, is reaped with the command.

        ``command`` gives the pid of the process the command runs in (the held one): it is no leftover either way
        (:meth:`reap` is given it), so where it lives is not asked (a read of its ``/proc/<pid>/status`` per
        command, issue 18); every other new child still is."""

        def then() -> None:
            before()
            if self.active:
                new = children() - self.before
                held = command()
                if held is not None:
                    new.discard(held)
                self.before |= {pid for pid in new if in_my_pid_namespace(pid)}

        return then

    def reap(self, command_pid: int) -> int:
        return reap_orphans(command_pid, self.before) if self.active else 0


#: The pids of warm shells (``.warm``: started ahead for a command still to come), from their start until their
#: command has run or they are stopped: no command's leftover. One is the child of the thread whose command's end
#: started it; should that thread end first, the kernel hands it to the main thread, whose children a command's end
#: reaps, and handed over while another thread's command ran, it was taken for that command's leftover and killed
#: (its own command then failed unstarted). Each with its process: one reaped (its ``returncode`` set) is spared no
#: more, should its pid be another's since.
AHEAD: dict[int, subprocess.Popen[bytes]] = {}


def started_ahead() -> set[int]:
    """The pids in :data:`AHEAD` whose process has not been reaped. (A bubblewrap sandbox set up ahead needs no
    entry: it is set up on the main thread only, which lives as long as tether does.)"""
    return {pid for pid, proc in list(AHEAD.items()) if proc.returncode is None}


def reap_orphans(command_pid: int, before: set[int]) -> int:
    """Kill and reap this process's children other than ``command_pid`` and those in ``before`` (the children
    it had when the command started); repeat until a round finds none. Returns how many were killed.

    Complete once the command itself is reaped: every process it left then hangs below one of tether's children,
    and reaping a child hands its own children to tether before ``waitpid`` returns, for the next round."""
    killed = 0
    for _ in range(ROUNDS):
        left = children() - before - started_ahead() - {command_pid}
        if not left:
            break
        for pid in left:
            kill_and_reap(pid)
        killed += len(left)
    return killed


def kill_and_reap(pid: int) -> None:
    """SIGKILL a child through a pidfd (a recycled pid is never signalled), then wait for it to be gone."""
    with contextlib.suppress(OSError):
        pidfd = os.pidfd_open(pid)
        try:
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        finally:
            os.close(pidfd)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
