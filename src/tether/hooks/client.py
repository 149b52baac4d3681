"""The hook's side of the daemon: find the user's socket, ask it, start it when nobody answers.

Standard library only (this runs on every tool call); the protocol itself is :mod:`.relay`'s, which the Python
launcher runs without importing tether at all. The socket lives in a directory only its user can enter
(``$TETHER_HOOK_SOCKET``, else ``$XDG_RUNTIME_DIR/tether/hookd.sock``, else ``/tmp/tether-<uid>/hookd.sock``); a
directory that another user owns or others can open is not used. No answer from a daemon is never an answer:
the caller then decides in-process. A reply that is not well formed is a refusal: the daemon had the request.

The bash client (``hook.sh`` beside this file) reaches the same daemon over loopback TCP; the daemon publishes
that endpoint in ``<socket>.tcp`` (:func:`.relay.endpoint_path`).
"""

from __future__ import annotations

import os
import sys

from .relay import decode, encode, exchange, lock_path, private_dir, socket_path
from .wire import Reply, refuse

#: The bash client: ``bash hook.sh PYTHON AGENT [OPTIONS]`` (what ``tether hook install`` writes where bash exists).
HOOK_SCRIPT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "hook.sh")


class NoDaemon:
    """No daemon answered at ``path``: the call is decided in-process, and then :meth:`start` starts one for the next
    call. Not before: its start-up (all of tether's modules, pydantic's models) would take CPU from the decision, and
    the call's own process would pay for starting it."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def start(self) -> None:
        """Start a daemon, unless one holds the socket's lock: one starting (it imports its code before its socket
        is there) or ending (its socket removed first). A second would only find the lock taken and exit, its
        start-up spent on the CPU the calls meanwhile need."""
        if not held(lock_path(self.path)):
            spawn(self.path)


def held(lock: str) -> bool:
    """Does a daemon hold the lock file ``lock`` (``flock``, exclusive)? Asked with a shared lock that is let go at
    once: a daemon trying to take it at that very moment gives way, but then this says False and one is started."""
    import fcntl

    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # none yet: no daemon ever served this socket
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # locks not supported there: as before, start one (it finds out)
        return False
    finally:
        os.close(fd)
    return False


def ask(request: dict[str, str], raw: bytes) -> Reply | NoDaemon | None:
    """The daemon's reply to one hook call; None when a daemon declined it or no daemon may be used (a stale one, a
    directory others can open): decide in-process; :class:`NoDaemon` when none answered: decide in-process, then
    start one. A refusal when the daemon had the request but its reply is malformed or cut short."""
    path = socket_path()
    message = encode(request, raw)
    if message is None or not private_dir(path):
        return None
    answer = exchange(path, message)
    if answer is None:
        return NoDaemon(path)
    if not answer:
        return None
    reply = decode(answer)
    if reply is None:
        return refuse("the daemon's reply is malformed or cut short")
    code, out, err = reply
    return Reply(out.decode(errors="replace"), err.decode(errors="replace"), code)


#: How a daemon starts: as a hook process does (launch.py, then :func:`.entry.full_path`), ``-I -S`` (no
#: ``PYTHON*`` variables, no user site, no working directory on the path), this tether's directory appended,
#: then ``site``. ``python -m`` would put the working directory first on the path: the project's, where the
#: agent runs its hooks, so a cloned repository's ``tether/`` (or ``yaml.py``) would run as the developer and
#: stay resident as their gate; ``PYTHONPATH`` or the user site would let a developer replace a managed gate.
DAEMON = (
    "import sys; sys.path.append(sys.argv.pop(1)); import site; site.main(); import runpy;"
    " runpy.run_module('tether.hooks.daemon', run_name='__main__', alter_sys=True)"
)


def spawn(path: str) -> None:
    """Start a daemon for ``path`` in its own session (:data:`DAEMON`), its standard streams on ``/dev/null`` and no
    other descriptor of this process; if another starts at once, one of them gives way. ``posix_spawn``, not
    ``subprocess`` (whose import, with ``selectors``, ``threading`` and ``signal``, cost the call more than the
    spawn): the descriptors this process inherited open (the agent's, perhaps a pipe it waits on) are closed in the
    child as ``close_fds`` closes them. Where a descriptor cannot be listed or a new session not asked of
    ``posix_spawn``, ``subprocess`` does it."""
    parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    argv = [sys.executable, "-I", "-S", "-c", DAEMON, parent, "--socket", path]
    try:
        actions: list[tuple[object, ...]] = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, flags, 0) for fd, flags in _STREAMS]
        actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inherited()]
        os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions, setsid=True)
    except (AttributeError, NotImplementedError, OSError):  # no posix_spawn, no setsid or no listing
        _popen(argv)


def _popen(argv: list[str]) -> None:
    """Start ``argv`` as :func:`spawn` does, with ``subprocess``."""
    import subprocess

    from tether.scoped import suppress

    with suppress(OSError):  # this call is answered in-process anyway
        subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )


#: The daemon's standard streams, each opened on ``/dev/null``.
_STREAMS = ((0, os.O_RDONLY), (1, os.O_WRONLY), (2, os.O_WRONLY))


def _inherited() -> list[int]:
    """This process's open descriptors past the standard streams that a program it starts would inherit (those
    without close-on-exec; Python opens its own with it). OSError where they cannot be listed."""
    listed = os.listdir("/proc/self/fd" if os.path.isdir("/proc/self/fd") else "/dev/fd")
    kept = []
    for fd in map(int, listed):
        try:
            if fd > 2 and os.get_inheritable(fd):
                kept.append(fd)
        except OSError:  # the listing's own descriptor, closed since
            pass
    return kept
