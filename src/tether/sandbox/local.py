"""``local``: a guarded subprocess on the host.

Enforces: minimal environment (allowlist + guards), stdin closed, cwd, own session and process group,
timeout that kills the whole tree (exit 124), rlimits, bounded output, and no leftovers: when the command
ends or times out, its process group is killed, then (on Linux, where tether is a child subreaper, see
:mod:`.reaper`) every orphan the kernel reparented to tether — which catches double-forked, ``setsid`` and
``env -i`` children alike. Only where tether cannot be a subreaper does it instead scan ``/proc`` for every
process carrying the command's per-run token in its environment (which ``env -i`` escapes): the scan costs
about a millisecond per command and finds nothing the subreaper does not (see ``docs/sandbox.md``).

Does *not* enforce (it is not an isolation boundary): the user's files outside the workspace are readable
and writable, the network is the host's, and other processes of the same user — their environments,
memory and files under ``/proc`` — are reachable. ``tether doctor`` reports those as "not enforced", and
an envelope that declares secrets refuses this backend.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from tether.errors import FileError

from . import warm as warmth
from .base import to_argv
from .environment import build_env, starts_code
from .limits import Limits
from .output import OutputCap
from .process import Captured, Hold, hold_for, kill_group, not_executable, run_captured, to_receipt
from .reaper import Leftovers, become_subreaper
from .receipt import Receipt

TOKEN_VAR = "TETHER_SANDBOX_RUN"


def sweep(token: str, *, rounds: int = 20) -> int:
    """SIGKILL every process whose environment carries ``TETHER_SANDBOX_RUN=token``; return how many.

    Uses pidfds so a recycled pid is never signalled by mistake. Repeats until a scan finds nothing
    (a forking child may spawn between scans).
    """
    needle = f"{TOKEN_VAR}={token}".encode()
    me = os.getpid()
    killed = 0
    for _ in range(rounds):
        found = 0
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == me:
                continue
            try:
                pidfd = os.pidfd_open(int(name))
            except OSError:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as f:
                    environ = f.read()
                if needle in environ.split(b"\0"):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    found += 1
            except OSError:
                pass
            finally:
                os.close(pidfd)
        killed += found
        if not found:
            break
    return killed


class LocalSandbox:
    """A guarded host subprocess. Not an isolation boundary; see the module docstring."""

    name = "local"

    def __init__(
        self,
        *,
        env_allow: Sequence[str] = (),
        limits: Limits | None = None,
        cap: OutputCap | None = None,
        fallback_reason: str | None = None,
    ) -> None:
        self.env_allow = tuple(env_allow)
        self.limits = limits or Limits()
        self.cap = cap or OutputCap()
        self.fallback_reason = fallback_reason
        """Set when this sandbox stands in for an unavailable ``bwrap`` that was not required."""
        self.bash = shutil.which("bash", path="/usr/bin:/bin") or shutil.which("bash") or "bash"
        """The system's bash, found once: an argv command must run whatever PATH the command is given."""
        self.subreaper = become_subreaper()
        """Whether orphans of a command come back to tether (Linux); otherwise only the token sweep finds them."""
        self._slot: warmth.Slot[warmth.Warm] = warmth.Slot()  # the next shell command's bash, started (see warm())

    @contextmanager
    def warm(self) -> Iterator[None]:
        """While it lasts (a run's drive), each command's end starts the next shell command's bash, which then
        waits for that command (:mod:`.warm`); at its end the waiting shell is stopped, unrun."""
        with self._slot.driving():
            yield

    @property
    def warm_runs(self) -> int:
        """How many commands ran in a warm shell (:mod:`.warm`): what a caller or test can check the shells by."""
        return self._slot.runs

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
        before: Callable[[], None] | None = None,
    ) -> Receipt:
        """Run ``command``; with ``before``, started held (:class:`.process.Hold`): bash starts while ``before``
        runs, and the command begins only once it has returned (if it raises, never: ``NotReleased``). ``before``
        runs only if bash started: a caller whose ``before`` was not run runs it itself before going on."""
        if not os.path.isdir(cwd):  # what Path.is_dir does (a link followed, an error is no), without its frames
            raise FileError(f"{cwd}: working directory does not exist")
        warm = self._take(command, cwd, timeout_s, env, before)
        if warm is not None:
            try:
                got = self.captured([], cwd, warm.env, timeout_s, warm.token, warm.hold, warm)
            finally:
                warm.close()
            return to_receipt(got, backend=self.name, command=command, cwd=cwd)
        token = os.urandom(8).hex()  # what secrets.token_hex(8) returns
        child_env = self.environment(token, env)
        hold = hold_for(before, (*self.env_allow, *(env or ())))
        try:
            got = self.captured(self.argv(command, timeout_s, hold), cwd, child_env, timeout_s, token, hold)
        except (FileNotFoundError, PermissionError) as e:
            # bash could not be executed: that is the command failing, so it is data (a missing program is
            # bash's 127, a program that may not run its 126).
            return not_executable(self.name, command, cwd, e)
        finally:
            if hold is not None:
                hold.close()
        return to_receipt(got, backend=self.name, command=command, cwd=cwd)

    def _take(
        self,
        command: str | Sequence[str],
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None,
        before: Callable[[], None] | None,
    ) -> warmth.Warm | None:
        """The waiting shell, given this call's command and ``before`` (:meth:`warm`), if it is what the call would
        start; a shell that is not (the environment or the directory changed, it died) is stopped. None, the shell
        left waiting, for a call it cannot carry: an argv, the call's own variables, a text :func:`.warm.go`
        refuses."""
        if self._slot.idle is None or not isinstance(command, str) or env:
            return None
        text = warmth.go(self.limits.ulimit_script(timeout_s, unprivileged=os.geteuid() != 0), command)
        if text is None:
            return None
        idle = self._slot.take()
        if idle is None:
            return None
        if not idle.fits(cwd, self.environment(idle.token)):
            idle.discard()
            return None
        idle.hold.go = text
        if before is not None:
            idle.hold.before = before
        return idle

    def environment(self, token: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A command's environment as built now: the host's allowed variables, ``extra`` (the call's own) and the
        per-command ``token``."""
        return build_env(os.environ, env_allow=self.env_allow, extra=extra, overrides={TOKEN_VAR: token})

    def argv(self, command: str | Sequence[str], timeout_s: float, hold: Hold | None) -> list[str]:
        """bash, setting the limits as builtins on its first line (held: after waiting for tether's go on it), then
        running a shell command on the next ones or exec'ing an argv. No preexec_fn, whose fork copies tether's whole
        address space (~5 ms CPU for a 200 MB tether) where Python otherwise uses vfork."""
        limits = self.limits.ulimit_script(timeout_s, unprivileged=os.geteuid() != 0)
        if hold is not None:  # waits for tether's go on the limits' line (the command's lines, and $_, as unheld)
            limits = f"{hold.line()}; {limits}"
        if isinstance(command, str):
            return [self.bash, "-c", f"{limits}\n{command}", "bash"]  # $0 as for `bash -c`
        return [self.bash, "-c", f'{limits}\nexec "$@"', "tether", *to_argv(command)]

    def captured(
        self,
        argv: list[str],
        cwd: Path,
        env: Mapping[str, str],
        timeout_s: float,
        token: str,
        hold: Hold | None,
        warm: warmth.Warm | None = None,
    ) -> Captured:
        """``argv`` (or the ``warm`` shell, held by ``hold``) run to its end with its output captured,
        and every process it left behind killed: the orphans that come back to tether (a subreaper), or, where
        tether cannot be one, those carrying ``token``. While :meth:`warm` lasts, the next shell command's bash is
        then started, under the reaper's lock, so that no other thread's command takes it for a leftover."""
        with Leftovers(active=self.subreaper) as leftovers:
            if warm is not None:  # the command's own process: started before, but no bystander
                leftovers.before.discard(warm.pid)
            if hold is not None:  # what the commit starts (a sink's process) is not the command's
                hold.before = leftovers.after(hold.before, hold.held_pid)

            def kill(proc: subprocess.Popen[bytes]) -> None:
                kill_group(proc)
                if leftovers.active:  # every descendant comes back to tether: no need to scan /proc
                    leftovers.reap(proc.pid)
                else:
                    sweep(token)

            spawned = warm.spawned if warm is not None else None
            try:
                return run_captured(
                    argv, cwd=cwd, env=env, timeout_s=timeout_s, cap=self.cap, kill=kill, hold=hold, spawned=spawned
                )
            finally:
                self._warm_next(cwd)
                if warm is not None:
                    self._slot.runs += 1

    def _warm_next(self, cwd: Path) -> None:
        """While :meth:`warm` lasts, start the next shell command's bash in ``cwd`` unless one waits already (or the
        environment makes bash run code as it starts: such a command is never held)."""
        slot = self._slot
        if not slot.drives or starts_code(self.env_allow):
            return
        with slot.lock:
            if slot.drives and slot.idle is None:  # (the drive may have ended since: it stops what it finds)
                token = os.urandom(8).hex()
                slot.idle = warmth.start(self.bash, cwd, self.environment(token), token)
