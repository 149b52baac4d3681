"""``tether daemon``: one resident process per user that answers hook calls over a Unix socket and loopback TCP.

A hook call then costs a small client instead of importing the gate each time: the Python client
(:mod:`tether.hooks.client`) on the Unix socket, or the bash client (``hook.sh``, no interpreter start-up) on a
loopback TCP port, since bash cannot open a Unix socket. The daemon serves every session of its user (one thread
per call, at most :data:`MAX_CALLS` at once; the store serialises appends per database).

Safety: one daemon per socket — the first to take an exclusive ``flock`` on ``<socket>.lock`` serves, a
second started at the same moment sees the lock held and exits; a socket file left by a daemon that died is
stale exactly when nobody holds the lock, and is replaced. The socket is 0600 in a 0700 directory, and a
peer whose uid (``SO_PEERCRED``) is not the daemon's is refused.

The TCP port (127.0.0.1, chosen by the OS) is published in ``<socket>.tcp`` (0600, in the same directory,
written atomically, replaced at each start and removed at exit) with two fresh 256-bit tokens. A connection must
send the client token first (compared in constant time), come from a socket of the daemon's uid as the kernel
reports it (``sock_diag``, else ``/proc/net/tcp``), and arrive while the endpoint file is still private; only
then does the daemon send the server token, which proves to the client that this is its daemon and not another
process that took a stale port, before the client sends the hook input. Anything else is closed without a byte.

A daemon answers only for its own code: a Python client of other code (an upgrade), or a bash client calling
after the code on disk changed, gets no answer and the daemon exits, so the next call starts a current one. It
exits after ``idle_s`` seconds without a call, when told to stop, or on SIGTERM. However it ends, it first finishes the
calls it took (their replies and the work after them): ended with the process, a call decided and logged would reach
its client as a cut connection, and a Stop's sensors would die halfway. Still running the code on disk, it then leaves
each session it answered a fold checkpoint at its head (``hooks/session.py`` ``checkpoint_left``).
"""

from __future__ import annotations

import fcntl
import gc
import hmac
import os
import secrets
import select
import signal
import socket
import stat
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from .client import HOOK_SCRIPT
from .relay import code_stamp, endpoint_path, lock_path, private_dir, socket_path
from .wire import AGENTS, MAX_INPUT_BYTES, HookInputError, Reply, parse, refuse

IDLE_S = 30 * 60.0
MAX_HEADER = 64 * 1024
HANDSHAKE_S = 5.0  # a TCP peer that does not send its token within this is closed
#: A client sends its whole request at once (a few KiB, at most 8 MiB, on a local socket): one that has not within
#: this many seconds is closed, so a client that hangs halfway holds a thread of the daemon this long, not for ever.
REQUEST_S = 10.0
#: Calls served at once, a thread each (Claude Code runs a session's hooks concurrently; a few sessions at once need
#: a few dozen). A connection over it is declined (:class:`Crowd`): its client decides in-process, cold.
MAX_CALLS = 32
#: How long a daemon that stops waits for the calls it took to end: the Stop hook's timeout ``tether hook install``
#: writes (``install.STOP_TIMEOUT_S``), after which the agent has given the call up.
DRAIN_S = 600.0


def modules_running() -> str:
    """The stamp of every module of tether as this process found them (guard/cachefile.py ``code_stamp``, taken at
    the daemon's start, when it imports the deciding code: :meth:`Collections.take`)."""
    from tether.guard.cachefile import code_stamp

    return code_stamp()


def modules_on_disk() -> str:
    """The same stamp of the modules on disk now (a walk of ~300 files: 1.2 ms at best, 5.0 ms median at load ~4)."""
    from tether.guard.cachefile import code_stamp_now

    return code_stamp_now()


def modules_root() -> str:
    """The folder of tether's package, as guard/cachefile.py ``code_stamp_now`` walks it."""
    from tether.guard import cachefile

    return os.path.dirname(os.path.dirname(os.path.realpath(cachefile.__file__)))


def watch_modules(root: str) -> Any:
    """An inotify watch (tether/watch.py ``TreeWatch``) on every folder under ``root`` but ``__pycache__``; None
    where inotify is not available (then the stamp is polled: :class:`Code`)."""
    from tether.watch import TreeWatch, WatchUnavailable, open_dir

    try:
        watch = TreeWatch()
    except WatchUnavailable:
        return None
    try:
        for folder, subdirs, _ in os.walk(root):
            subdirs[:] = [d for d in subdirs if d != "__pycache__"]
            fd = open_dir(folder)
            try:
                watch.add(os.path.relpath(folder, root).removeprefix("."), fd)
            finally:
                os.close(fd)
    except OSError:  # WatchUnavailable too: a watch limit reached
        watch.close()
        return None
    return watch


class Code:
    """Whether this daemon still runs the code on disk. The protocol's stamp (``relay.code_stamp``: the mtimes of
    the client's files, which an upgrade by pip rewrites) is asked at every call; so is whether any module of tether
    changed (what a ``git pull`` of an editable install, or any edit to the gate, the schema or the guard changes,
    and the protocol's stamp does not see): an inotify watch on every folder of the modules, set before the stamp
    of the modules on disk is compared once with the running one, is read at each call (one non-blocking read: the
    kernel queues an event before the writer's system call returns, so no call after a change is decided by the
    code before it), and the stamp taken again only when the watch saw something (a new ``__pycache__`` is not new
    code). A folder made or removed, or a queue that overflowed, counts as changed. Without inotify the stamp is
    compared at most every :attr:`EVERY_S` seconds. Once they differ the daemon declines every call (the client
    decides in-process, with the code on disk) and exits."""

    EVERY_S = 1.0

    def __init__(self, stamp: str) -> None:
        self.stamp, self.modules = stamp, modules_running()
        self.lock = threading.Lock()
        self.due = time.monotonic() + self.EVERY_S
        self.watch = watch_modules(modules_root()) if self.modules else None
        self.moved = self.watch is not None and modules_on_disk() != self.modules  # changed before the watch was set

    def current(self, stamp: str | None = None) -> bool:
        """The protocol's ``stamp`` (the client's, or the files' now) and the modules are still this daemon's."""
        if (code_stamp() if stamp is None else stamp) != self.stamp:
            return False
        with self.lock:
            if self.moved or not self.modules:
                return not self.moved
            if self.watch is not None:
                self.moved = self._seen(self.watch)
            elif time.monotonic() >= self.due:
                self.moved = modules_on_disk() != self.modules
                self.due = time.monotonic() + self.EVERY_S
            return not self.moved

    def close(self) -> None:
        if self.watch is not None:
            self.watch.close()

    def _seen(self, watch: Any) -> bool:
        """The watch saw the modules change (a folder of them made, moved or removed counts, but a ``__pycache__``;
        a file written is confirmed by the stamp)."""
        changed = watch.changes()
        if changed is None:
            return True
        if any(os.path.basename(p) != "__pycache__" for p in changed.replaced):
            return True
        return bool(changed.dirs) and modules_on_disk() != self.modules


class Endpoint:
    """The loopback TCP listener the bash client uses, and the secrets its endpoint file shares."""

    __slots__ = ("client_token", "file", "server_token")

    def __init__(self, file: str) -> None:
        self.file = file
        self.client_token, self.server_token = secrets.token_hex(32).encode(), secrets.token_hex(32).encode()

    def publish(self, port: int) -> None:
        """Write ``PORT CLIENT_TOKEN SERVER_TOKEN SCRIPT`` to a 0600 file and move it into place at once."""
        tmp = f"{self.file}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            line = f"{port} {self.client_token.decode()} {self.server_token.decode()} {HOOK_SCRIPT}\n"
            os.write(fd, line.encode())
        finally:
            os.close(fd)
        os.replace(tmp, self.file)

    def private(self) -> bool:
        """The endpoint file is still this user's alone (a token others could read is not honoured)."""
        try:
            st = os.lstat(self.file)
        except OSError:
            return False
        return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def serve(path: str | None = None, *, idle_s: float = IDLE_S) -> int:
    """Serve until idle, told to stop, or given way to; 0, or 1 when the socket's directory is not private."""
    path = path or socket_path()
    if not private_dir(path):
        print(f"tether daemon: {os.path.dirname(path)} is not a directory only this user can open", file=sys.stderr)
        return 1
    lock = open(lock_path(path), "a")  # noqa: SIM115 — held for the daemon's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0  # another daemon serves this socket
    try:
        return _serve_locked(path, idle_s)
    finally:
        lock.close()


def _listen_tcp(path: str) -> tuple[socket.socket, Endpoint] | None:
    """The loopback listener and its published endpoint; None where loopback TCP is unavailable (the bash client
    then falls back to the Python one)."""
    endpoint = Endpoint(endpoint_path(path))
    try:
        server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    except OSError:
        return None
    try:
        server.bind(("127.0.0.1", 0))
        server.listen(64)
        endpoint.publish(server.getsockname()[1])
    except OSError:
        server.close()
        return None
    return server, endpoint


def _serve_locked(path: str, idle_s: float) -> int:
    stamp = code_stamp()
    stop = threading.Event()
    collections = Collections()
    previous = _stop_on_term(stop, path)
    try:
        # The deciding code imported before the socket is there (~0.3 s, pydantic's models and all): a call meanwhile
        # finds none and is decided cold (its client starts no second daemon while this one holds the lock), where
        # one queued on a socket bound first waited for the whole import, several times a cold call.
        collections.take()
        code = Code(stamp)  # after the imports: the modules' stamp names the code they loaded
        sweep()
        listeners = _listen(path)
        try:
            _accept(listeners, stop, path, code, idle_s)
            if code.current():  # not when giving way: the code on disk reads no checkpoint of this code's
                from .session import checkpoint_left

                checkpoint_left()
        finally:
            code.close()
            for server in listeners:
                server.close()
            _remove_own(path)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        collections.give_back()
    return 0


def _listen(path: str) -> dict[socket.socket, Endpoint | None]:
    """The Unix socket at ``path`` and the loopback listener with its endpoint file, listening, not blocking; what a
    daemon that no longer holds the lock left there replaced. Bound and listening under a private name, then renamed
    into place: a socket file at ``path`` always accepts (bound but not yet listening, a client's connect was
    refused, and it decided cold or spawned)."""
    for stale in (path, endpoint_path(path)):
        if os.path.lexists(stale):
            os.unlink(stale)
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    pending = os.path.join(os.path.dirname(path), f".{os.getpid()}.s")  # no longer than hookd.sock: sun_path
    if os.path.lexists(pending):
        os.unlink(pending)
    old = os.umask(0o177)
    try:
        unix.bind(pending)
    finally:
        os.umask(old)
    os.chmod(pending, 0o600)
    unix.listen(64)
    os.rename(pending, path)
    listeners: dict[socket.socket, Endpoint | None] = {unix: None}
    tcp = _listen_tcp(path)
    if tcp is not None:
        listeners[tcp[0]] = tcp[1]
    for server in listeners:
        server.setblocking(False)
    return listeners


def _stop_on_term(stop: threading.Event, path: str) -> Any:
    """SIGTERM (a logout, a service manager) ends the daemon as ``tether daemon --stop`` does: the calls it took are
    finished and its sessions checkpointed at their heads, where the signal's default cut them and left the next cold
    call up to 256 events to fold. Only where signals are handled (the main thread); the handler it replaces, or
    None."""
    if threading.current_thread() is not threading.main_thread():
        return None

    def term(signum: int, frame: Any) -> None:
        stop.set()
        _wake(path)  # the accept loop waits in poll: a connection wakes it, and it sees ``stop``

    return signal.signal(signal.SIGTERM, term)


def _remove_own(path: str) -> None:
    """The socket and the endpoint file, this daemon's (it holds the lock: no other has made them since)."""
    for own in (path, endpoint_path(path)):
        if os.path.lexists(own):
            os.unlink(own)


def _accept(
    listeners: dict[socket.socket, Endpoint | None], stop: threading.Event, path: str, code: Code, idle_s: float
) -> None:
    """Accept calls, each served by a thread of its own while a slot is free (:class:`Crowd`), until told to stop
    or idle; between them, the checkpoints of sessions gone quiet (:func:`_quiet`), asked ``QUIET_S`` after each call
    and again while one is waiting or a call is in flight."""
    from .session import QUIET_S  # the deciding code is imported already (Collections.take)

    crowd = Crowd(MAX_CALLS)
    called = time.monotonic()  # the latest connection
    quiet: float | None = None  # when to ask for quiet sessions' checkpoints next; None: not before a call
    try:
        while not stop.is_set():
            now = time.monotonic()
            left = called + idle_s - now  # past it with a call still in flight: idle_s again, as before
            wait = crowd.wait(left if left > 0 else idle_s)
            ready = _readable(
                [*listeners, *crowd.declined], wait if quiet is None else min(wait, max(0.0, quiet - now))
            )
            now = time.monotonic()
            if ready:
                called, quiet = now, min(quiet, now + QUIET_S) if quiet is not None else now + QUIET_S
            elif now - called >= idle_s and not crowd.declined and not crowd.busy:
                break  # idle: no call came, none is in flight (a Stop's sensors may outlast ``idle_s``)
            if quiet is not None and now >= quiet:
                quiet = _quiet(crowd, now)
            crowd.drain(ready)
            for server in ready:
                if server not in listeners:
                    continue
                try:
                    conn, _ = server.accept()
                except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                    continue
                if not crowd.take():
                    crowd.decline(conn, tcp=listeners[server] is not None)
                    continue
                conn.setblocking(True)
                call = (conn, stop, path, code, listeners[server], crowd)
                threading.Thread(target=_serve_one, args=call, daemon=True).start()
        _remove_own(path)  # no connection lands in the backlog any more: a client finds no daemon, decides cold
        crowd.turn_away(listeners)
        for server in listeners:
            server.close()  # a client that read the endpoint before it went is refused, not left in a backlog
        crowd.settle(DRAIN_S)
    finally:
        for conn in crowd.declined:
            conn.close()


def _readable(socks: list[socket.socket], timeout: float) -> list[socket.socket]:
    """Those of ``socks`` ready to read (or closed) within ``timeout`` seconds. ``poll``, not ``select``, which takes
    no descriptor past 1023: a daemon holding many (its sessions' stores, its clients) ended its accept loop, and so
    itself, on the first connection it declined numbered past it."""
    poller = select.poll()
    by_fd = {}
    for sock in socks:
        by_fd[sock.fileno()] = sock
        poller.register(sock, select.POLLIN)
    return [by_fd[fd] for fd, _ in poller.poll(timeout * 1000)]


class Crowd:
    """The bound on calls served at once (:data:`MAX_CALLS` slots, one per serving thread), and the connections
    declined over it.

    A declined Unix connection is told "declined" as a client of other code is, by a connection closed without a
    byte: the daemon shuts its side for writing (the client reads the end at once, so it decides in-process) and
    reads the request to its end before closing, here in the accept loop (non-blocking, no thread): a socket closed
    with unread bytes resets its peer, which the clients once took for a recorded call and refused (they read a reset
    before any byte of a reply as a request never read whole now, and decide it in-process: ``relay.exchange``). A
    declined connection costs a descriptor, not a thread: up to :attr:`DRAINED` per slot are drained at once, each
    for :data:`REQUEST_S` at most; beyond that the oldest is closed (a client that is still sending after its younger
    peers are done is most likely one that hung; it decides in-process if it ever goes on). A declined TCP connection
    is closed before the handshake: the bash client, given no server token, hands the call to the
    Python launcher."""

    DRAINED = 8

    def __init__(self, limit: int) -> None:
        self.calls, self.busy = limit, 0
        self.ended = threading.Condition()
        self.limit = limit * self.DRAINED
        self.declined: dict[socket.socket, float] = {}  # in the order declined: the first is the oldest

    def take(self) -> bool:
        """A slot for one more call, if one is free."""
        with self.ended:
            if self.busy >= self.calls:
                return False
            self.busy += 1
            return True

    def give_back(self) -> None:
        with self.ended:
            self.busy -= 1
            self.ended.notify_all()

    def settle(self, within: float) -> None:
        """Wait until every call taken has ended, at most ``within`` seconds."""
        with self.ended:
            self.ended.wait_for(lambda: not self.busy, within)

    def decline(self, conn: socket.socket, *, tcp: bool) -> None:
        if tcp:
            conn.close()
            return
        if len(self.declined) >= self.limit:
            oldest = next(iter(self.declined))
            del self.declined[oldest]
            oldest.close()
        try:
            conn.setblocking(False)
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            conn.close()
            return
        self.declined[conn] = time.monotonic() + REQUEST_S

    def drain(self, ready: list[socket.socket]) -> None:
        """Read what the declined clients sent; close each at its end, its error, or its deadline."""
        now = time.monotonic()
        for conn in list(self.declined):
            done = self.declined[conn] <= now
            if conn in ready:
                try:
                    done = done or not conn.recv(1 << 16)
                except BlockingIOError:
                    pass
                except OSError:
                    done = True
            if done:
                del self.declined[conn]
                conn.close()

    def turn_away(self, listeners: dict[socket.socket, Endpoint | None], within: float = 1.0) -> None:
        """At the daemon's end: decline the connections still queued in the listeners' backlogs. Closed with them,
        a listener resets each: a client then knows only that its request was never read whole (``relay.exchange``),
        where a declined one is told so."""
        for server, endpoint in listeners.items():
            while True:
                try:
                    conn, _ = server.accept()
                except OSError:  # BlockingIOError: none left
                    break
                self.decline(conn, tcp=endpoint is not None)
        deadline = time.monotonic() + within
        while self.declined and time.monotonic() < deadline:
            ready = _readable(list(self.declined), max(0.0, deadline - time.monotonic()))
            self.drain(ready)

    def wait(self, idle_s: float) -> float:
        """How long the accept loop may wait: until the first declined connection's deadline, or ``idle_s``."""
        if not self.declined:
            return idle_s
        return max(0.0, min(idle_s, min(self.declined.values()) - time.monotonic()))


def sweep() -> None:
    """Housekeeping no call pays for, at the daemon's start: the pins of sessions idle for a month
    (hooks/pin.py ``prune``). A failure here is a file left, never a daemon that does not serve."""
    from tether.scoped import suppress

    from .pin import prune

    with suppress(Exception):
        prune()


class Collections:
    """The daemon schedules the garbage collector's full collections itself: after a reply, never during one.

    A full (generation 2) collection walks every object the process tracks: the deciding code's modules, classes
    and schemas (~50,000 objects) and each resident session's state. In the middle of a call that is a latency
    spike like the checkpoint's (17 ms of CPU, once in 700 calls, measured). So, once the deciding code is
    imported at start, what the imports made is frozen (``gc.freeze``: never walked again; it lives as long as
    the process anyway), the interpreter's own trigger for full collections is raised out of reach, and
    :func:`collect_if_due` runs one after a reply when as many younger collections have passed as would have
    triggered it (the interpreter's default, 10). Both are undone when the daemon stops (``serve`` may run in a
    process that goes on: the tests). Reference counting, and the young generations, work as ever."""

    FULL_EVERY = 10
    NEVER = 2**31 - 1

    def __init__(self) -> None:
        self.threshold: tuple[int, int, int] | None = None

    def take(self) -> None:
        from tether.records import standing_in

        with standing_in():  # the libraries' dataclasses made as tether's are, as in a cold call (hooks/entry.py)
            from tether.guard.session import load_gate, load_observer

            from . import answer  # noqa: F401 — the deciding code: imported once, before the first call

            load_gate()  # and the gate, which the guard imports where it is used
            load_observer()  # and the control layer, which a receipt's view of it needs
            from tether.events.payload import REGISTRY

            REGISTRY.complete()  # every kind module: a cold call builds only its own kinds', a daemon all, once
            from tether.policy.knowledge import make_all

            make_all()  # every option table: a cold call makes those its command reads, a daemon all, once
        build_models()  # every validator: a cold call builds those it meets, a daemon all, once
        # The modules as they are now, taken now: the code this process runs. Taken at the first checkpoint (hours
        # later, after a `git pull` of modules the protocol's stamp does not cover), they would name the tree on
        # disk then (the stamp it gives way by; what its fold checkpoints and kept envelopes say wrote them), and a
        # cold process of that other code would unpickle this code's classes.
        from tether.guard.cachefile import code_stamp, first_seen

        code_stamp()
        first_seen()

        self.threshold = gc.get_threshold()
        gc.collect()
        gc.freeze()
        gc.set_threshold(self.threshold[0], self.threshold[1], self.NEVER)

    def give_back(self) -> None:
        if self.threshold is not None:
            gc.set_threshold(*self.threshold)
            gc.unfreeze()
            self.threshold = None


def build_models() -> None:
    """Build every validator of tether's pydantic models that waits for its first use (``defer_build``: the
    envelope's, the payload kinds'): the daemon's first answered call built those it met, ~10 ms (~22 ms for all 139
    at the daemon's start, before it listens). One that cannot be built yet (a name it refers to not defined) is left
    to its first use."""
    from pydantic import BaseModel

    from tether.scoped import suppress

    todo = BaseModel.__subclasses__()
    while todo:
        model = todo.pop()
        todo.extend(model.__subclasses__())
        if model.__module__.startswith("tether.") and not model.__pydantic_complete__:
            with suppress(Exception):  # its first use builds it, or says why it cannot
                model.model_rebuild()


def collect_if_due() -> None:
    """A full collection, when it is due (:class:`Collections`); called once a reply has been sent."""
    if gc.get_count()[2] >= Collections.FULL_EVERY:
        gc.collect()


def _peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


#: sock_diag (linux/sock_diag.h, linux/inet_diag.h): a request for one socket by its addresses and ports.
NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST = 4, 20, 1
_UID_AT = 16 + 4 + 48 + 12  # nlmsghdr, inet_diag_msg's family/state/timer/retrans, its sockid, expires/queues


def tcp_peer_uid(conn: socket.socket) -> int | None:
    """The uid owning the client's end of an accepted loopback connection, as Linux reports it; None where it
    cannot tell (not Linux), -1 when it does not know the connection (then it is refused).

    Asked of ``sock_diag`` over netlink for exactly that socket (microseconds); where netlink is refused, read
    from ``/proc/net/tcp`` (milliseconds: the kernel lists every socket)."""
    (peer, peer_port), (host, port) = conn.getpeername(), conn.getsockname()
    sockid = struct.pack(
        "!HH16s16s", peer_port, port, socket.inet_aton(peer).ljust(16, b"\0"), socket.inet_aton(host).ljust(16, b"\0")
    ) + struct.pack("=III", 0, 0xFFFFFFFF, 0xFFFFFFFF)  # any interface, no cookie
    request = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF) + sockid
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
            nl.sendto(header + request, (0, 0))
            answer = nl.recv(8192)
    except (OSError, AttributeError):  # no AF_NETLINK here, or netlink refused
        return proc_net_tcp_uid(conn)
    if len(answer) < _UID_AT + 4 or struct.unpack_from("=H", answer, 4)[0] != SOCK_DIAG_BY_FAMILY:
        return -1  # an error message: no such socket
    return int(struct.unpack_from("=I", answer, _UID_AT)[0])


def _tcp_address(host: str, port: int) -> str:
    """An IPv4 address as ``/proc/net/tcp`` spells it: the address as a native-endian word, the port, in hex."""
    return f"{int.from_bytes(socket.inet_aton(host), sys.byteorder):08X}:{port:04X}"


def proc_net_tcp_uid(conn: socket.socket, table: str = "/proc/net/tcp") -> int | None:
    """:func:`tcp_peer_uid` from the kernel's socket table; None where there is none, -1 when it lacks the socket."""
    want = (_tcp_address(*conn.getpeername()), _tcp_address(*conn.getsockname()))
    try:
        f = open(table)  # noqa: SIM115 — closed below; a missing table is a normal case, not an error
    except OSError:
        return None
    with f:
        for line in f:
            fields = line.split()
            if len(fields) > 7 and (fields[1], fields[2]) == want:
                return int(fields[7])
    return -1


def _admit(conn: socket.socket, endpoint: Endpoint, stop: threading.Event, path: str, code: Code) -> bytes | None:
    """The TCP handshake: the client token, the peer's uid, a private endpoint, current code; then the server
    token. The bytes the client sent after its token line (the start of its request), or None: close."""
    conn.settimeout(HANDSHAKE_S)
    buf = b""
    while b"\n" not in buf:
        chunk = conn.recv(128)
        if not chunk:
            return None
        buf += chunk
        if b"\n" not in buf[: len(endpoint.client_token) + 1] and len(buf) > len(endpoint.client_token):
            return None  # no token line where one must be
    token, rest = buf.split(b"\n", 1)
    if not hmac.compare_digest(token, endpoint.client_token):
        return None
    uid = tcp_peer_uid(conn)
    if (uid is not None and uid != os.getuid()) or not endpoint.private() or not private_dir(path):
        return None
    if not code.current():  # tether changed on disk: let a current daemon start
        stop.set()
        _wake(path)
        return None
    conn.sendall(endpoint.server_token + b"\n")
    conn.settimeout(REQUEST_S)  # the request: bounded; the reply, after a Stop's sensors, is not (_converse)
    return rest


def _quiet(crowd: Crowd, now: float) -> float | None:
    """The checkpoints of the sessions gone quiet (``hooks/session.py`` ``checkpoint_quiet``), written in a thread
    holding one of the crowd's slots: no call of another session waits behind them in the accept loop, and a stop
    waits for them as for a call. When to ask again: as soon as the next session is due; after ``QUIET_S`` when
    these were started, no slot was free, or a call in flight (it files its session once its reply is out); never,
    until a call comes, when none waits."""
    from .session import QUIET_S, checkpoint_quiet, quiet_due

    due = quiet_due()
    if due is not None and due <= 0:
        if crowd.take():
            threading.Thread(target=_quiet_thread, args=(checkpoint_quiet, crowd), daemon=True).start()
        due = QUIET_S
    elif due is None and crowd.busy:
        due = QUIET_S
    return None if due is None else now + due


def _quiet_thread(write: Callable[[], None], crowd: Crowd) -> None:
    try:
        write()
    finally:
        crowd.give_back()


def _serve_one(
    conn: socket.socket,
    stop: threading.Event,
    path: str,
    code: Code,
    endpoint: Endpoint | None,
    crowd: Crowd,
) -> None:
    """One call, in a thread holding one of :class:`Crowd`'s slots until its work is done."""
    try:
        later: list[Callable[[], None]] = []
        with conn:
            try:
                _converse(conn, stop, path, code, endpoint, later)
            except (OSError, ValueError):
                return
        # The reply is sent and the connection closed (the client reads to the end: it has its answer), and the
        # events it depends on were on disk before it was sent. Only now the work nobody waits for: a fold
        # checkpoint, and a full garbage collection when one is due.
        for work in later:
            work()
        collect_if_due()
    finally:
        crowd.give_back()


def _converse(
    conn: socket.socket,
    stop: threading.Event,
    path: str,
    code: Code,
    endpoint: Endpoint | None,
    later: list[Callable[[], None]],
) -> None:
    if endpoint is not None:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # each reply at once, not held for an ACK
        rest = _admit(conn, endpoint, stop, path, code)
        if rest is None:
            return
        header, raw = _read(conn, rest, b"\0")
        conn.settimeout(None)  # a Stop's sensors may take minutes; the agent's own hook timeout bounds the client
        conn.sendall(_frame(respond(_tcp_request(header), raw, later)))
        return
    if _peer_uid(conn) != os.getuid():
        return
    conn.settimeout(REQUEST_S)
    header, raw = _read(conn)
    conn.settimeout(None)
    if header.get("op") == "stop":
        conn.sendall(b"stopped")  # before waking the loop: the process may exit right after
        stop.set()
        _wake(path)
        return
    if not code.current(header.get("code", "")):  # the client, or the modules on disk, are other code: make way
        stop.set()
        _wake(path)
        return
    conn.sendall(_frame(respond(header, raw, later)))


def _tcp_request(header: dict[str, str]) -> dict[str, str]:
    """The bash client's request: its agent and absolute paths (normalised here, as ``os.path.abspath`` does in
    the Python client) or a store URL; ValueError for anything else."""
    agent = header.get("agent", "")
    if agent not in AGENTS:
        raise ValueError(f"unknown agent {agent!r}")
    request = {"agent": agent}
    for key in ("envelope", "db", "project"):
        value = header.get(key)
        if key == "db" and value and "://" in value:
            request[key] = value  # a store URL, as given
        elif value:
            if not value.startswith("/"):
                raise ValueError(f"{key} is not an absolute path")
            request[key] = os.path.normpath(value)
    return request


def respond(header: dict[str, Any], raw: bytes, later: list[Callable[[], None]] | None = None) -> Reply:
    """The reply to one call (imports the deciding code on first use, then keeps it); with ``later``, work that
    need not delay the reply (a fold checkpoint) is left there to run once it is sent."""
    from .answer import answer

    try:
        data = parse(raw)
    except HookInputError as e:
        return refuse(str(e))
    return answer(header, data, later)


def _read(conn: socket.socket, buf: bytes = b"", sep: bytes = b"\n") -> tuple[dict[str, str], bytes]:
    """A request: ``key=value`` fields each ended by ``sep`` (a newline from :func:`tether.hooks.client.encode`,
    a NUL from the bash client), an empty field, exactly ``size`` bytes of input. A request cut short is an
    error, never answered (the client then decides itself)."""
    while sep + sep not in buf:
        chunk = conn.recv(65536)
        if not chunk or len(buf) > MAX_HEADER:
            raise OSError("no request header")
        buf += chunk
    head, raw = buf.split(sep + sep, 1)
    header = dict(line.split("=", 1) for line in head.decode().split(sep.decode()) if "=" in line)
    size = int(header.get("size", "0"))
    if not 0 <= size <= MAX_INPUT_BYTES + 1:
        raise ValueError(f"request size {size} out of range")
    if len(raw) > size:
        raise ValueError("more input than the request's size")
    data = bytearray(raw)
    while len(data) < size:
        chunk = conn.recv(min(1 << 20, size - len(data)))
        if not chunk:
            raise OSError("request cut short")
        data += chunk
    return header, bytes(data)


def _frame(reply: Reply) -> bytes:
    """``<exit> <stdout bytes> <stderr bytes>\n<stdout><stderr>``: both sizes, so a client sees a reply cut short."""
    out, err = reply.stdout.encode(), reply.stderr.encode()
    return f"{reply.exit} {len(out)} {len(err)}\n".encode() + out + err


def _wake(path: str) -> None:
    """Unblock the accept loop so that it sees ``stop``. Never waits: with the socket's backlog full a connect would
    block (in SIGTERM's handler, the accept loop's own thread: for good), and a full backlog wakes the loop anyway."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.setblocking(False)
            s.connect(path)
    except OSError:
        pass


def stop_daemon(path: str | None = None) -> bool:
    """Ask the daemon on ``path`` to exit; False when none answered."""
    path = path or socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2.0)
            s.connect(path)
            s.sendall(b"op=stop\n\n")
            s.shutdown(socket.SHUT_WR)
            return b"stopped" in s.recv(100)
    except OSError:
        return False


def run(path: str | None = None, *, idle_s: float = IDLE_S) -> int:
    """:func:`serve`, in a daemon's own process: with pydantic's plugins off, as in every hook process that decides
    (``entry.no_pydantic_plugins``). The daemon had them on, so the first call it answered built its first models'
    validators with pydantic's loader, which imported ``importlib.metadata`` and scanned every installed
    distribution's entry points (~14 ms of that call)."""
    from .entry import no_pydantic_plugins

    no_pydantic_plugins()  # before the deciding code imports pydantic (Collections.take)
    return serve(path, idle_s=idle_s)


def main(argv: list[str]) -> int:
    path = argv[argv.index("--socket") + 1] if "--socket" in argv else None
    return run(path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
