"""Resource limits (rlimits) applied to a command before it executes."""

from __future__ import annotations

import math
import resource
from dataclasses import dataclass
from functools import lru_cache

GiB = 1024**3


@dataclass(frozen=True)
class Limits:
    """Per-process ceilings. ``None`` leaves a limit as inherited.

    ``cpu_s=None`` derives the CPU limit from the timeout (the wall-clock timeout is the primary bound;
    the CPU limit stops a runaway that somehow survives it). ``processes`` only means something for an
    unprivileged uid: root ignores RLIMIT_NPROC, so it is applied only when the command runs unprivileged.
    """

    cpu_s: int | None = None
    address_space_bytes: int | None = 8 * GiB
    open_files: int | None = 1024
    file_size_bytes: int | None = 1 * GiB
    processes: int | None = 1024

    def cpu_for(self, timeout_s: float) -> int:
        return self.cpu_s if self.cpu_s is not None else max(1, math.ceil(timeout_s)) + 5

    def pairs(self, timeout_s: float, *, unprivileged: bool) -> list[tuple[int, int]]:
        """``(resource, value)`` pairs to set, soft = hard = value."""
        out = [(resource.RLIMIT_CPU, self.cpu_for(timeout_s))]
        if self.address_space_bytes is not None:
            out.append((resource.RLIMIT_AS, self.address_space_bytes))
        if self.open_files is not None:
            out.append((resource.RLIMIT_NOFILE, self.open_files))
        if self.file_size_bytes is not None:
            out.append((resource.RLIMIT_FSIZE, self.file_size_bytes))
        if self.processes is not None and unprivileged:
            out.append((resource.RLIMIT_NPROC, self.processes))
        return out

    def ulimit_script(self, timeout_s: float, *, unprivileged: bool) -> str:
        """The limits as bash ``ulimit`` builtins (soft and hard), which both sandboxes run before the command.

        Rather than a ``preexec_fn`` calling ``setrlimit``: that forces Python to fork its whole address space
        (milliseconds for a large tether) where it otherwise uses vfork. Each limit only ever lowers what is
        inherited; a hard limit that is already lower stays (bash refuses to raise it, which is fine). A pure
        function of the (frozen) limits, the timeout and the flag: built once per combination.
        """
        return _ulimit_script(self, timeout_s, unprivileged)


ULIMIT_FLAGS = {
    resource.RLIMIT_CPU: ("-t", 1),
    resource.RLIMIT_AS: ("-v", 1024),
    resource.RLIMIT_NOFILE: ("-n", 1),
    resource.RLIMIT_FSIZE: ("-f", 1024),
    resource.RLIMIT_NPROC: ("-u", 1),
}
"""bash's ``ulimit`` flag for each rlimit, and the unit it counts in (bytes: KiB)."""


@lru_cache(maxsize=64)
def _ulimit_script(limits: Limits, timeout_s: float, unprivileged: bool) -> str:
    parts = []
    for which, value in limits.pairs(timeout_s, unprivileged=unprivileged):
        flag, unit = ULIMIT_FLAGS[which]
        parts.append(f"ulimit {flag} {max(1, value // unit)}")
    # One redirection for the group (a failing ulimit still lets the next ones run): a redirection per
    # builtin cost bash eight system calls each, on every command.
    return "{ " + "; ".join(parts) + "; } 2>/dev/null"
