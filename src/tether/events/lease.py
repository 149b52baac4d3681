"""The run lease: who drives a run, and whether that driver is still alive.

One driver per run. A driver (``tether run``/``resume``, an approval) writes a lease row for the run
before acting; a second driver finds it and stops. A lease whose holder is gone is taken over:

- on the same host, the holder is gone when its pid no longer exists, is a zombie, or now belongs to
  another process (the start time recorded with the pid differs). A live holder on the same host is
  never taken over, however old its heartbeat: a stopped process may still wake up and act.
- on another host (a shared database file), the holder is gone when its heartbeat is older than the
  lease's time to live; the holder refreshes it while it drives.

This module decides; the store reads and writes the row in one SQL transaction.
"""

from __future__ import annotations

import os

from tether.clock import UTC, datetime
from tether.records import dataclass

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable

LEASE_TTL_S = 30.0


@dataclass(frozen=True)
class Lease:
    """A driver's hold on a run: whose it is (owner, host, pid), since when, its last heartbeat and time to live."""

    run_id: str
    owner: str  # random per acquisition: a holder recognises its own lease by it
    host: str
    pid: int
    pid_start: str  # the process's start time (Linux /proc), so a reused pid is not mistaken for the holder
    since: str
    heartbeat: float  # unix time of the holder's last sign of life
    ttl_s: float

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} (since {self.since}, lease {self.owner[:8]})"


def this_host() -> str:
    import socket  # here: a hook deciding one call in a fresh process takes no lease (~2 ms of imports)

    return socket.gethostname()


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot), or None if it is gone or a zombie.

    Outside Linux (no /proc) this falls back to ``kill(pid, 0)`` and returns "" for a live pid.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
    except FileNotFoundError:
        return None
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except PermissionError:
            return ""
        return ""
    fields = stat[stat.rfind(")") + 2 :].split()  # the command name may contain spaces and parentheses
    if not fields or fields[0] in ("Z", "X"):
        return None
    return fields[19] if len(fields) > 19 else ""


def holder_is_gone(lease: Lease, host: str, now: float) -> bool:
    """Whether ``lease``'s holder can no longer act, seen from ``host`` at unix time ``now``."""
    if lease.host == host:
        start = process_start(lease.pid)
        return start is None or (bool(lease.pid_start) and bool(start) and start != lease.pid_start)
    return now > lease.heartbeat + lease.ttl_s


class Heartbeat:
    """A holder's sign of life: a daemon thread calling ``beat`` every ``interval`` seconds until stopped.

    A beat that fails is tried again at the next interval; a lease lost meanwhile is caught by the next append.
    """

    def __init__(self, interval: float, beat: Callable[[], None]) -> None:
        import threading  # here: a hook process imports this module, and never beats

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval, beat), name="tether-lease-heartbeat")
        self._thread.daemon = True
        self._thread.start()

    def _run(self, interval: float, beat: Callable[[], None]) -> None:
        while not self._stop.wait(interval):
            try:
                beat()
            except Exception:
                continue

    def stop(self) -> None:
        import threading

        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join()


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
