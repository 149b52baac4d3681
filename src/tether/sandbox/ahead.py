"""The next shell command's bubblewrap sandbox, set up before its call: a sandbox started *ahead* (issue 18).

bubblewrap's set-up (namespaces, mounts: ~6 ms here) is most of a sandboxed step, and a held command overlaps it
only with the step's commit. So while a run drives the sandbox (:meth:`.bwrap.BwrapSandbox.warm`), each command's
end starts the next command's sandbox at once, with the flags a call would be given then (the deny walk's masks
included) and, inside it, the local sandbox's warm shell (:mod:`.warm`): one line waiting for the command on a
pipe only tether writes to. The model's answer, the gate and the commit then run while bubblewrap sets up; the
command and its limits come over the pipe once the gate has allowed it and ``action.started`` is on disk.

Each command still gets a sandbox of its own, set up for it alone and torn down after it: nothing is shared from
one command to the next but what a fresh sandbox shares (the workspace). A sandbox started ahead is used only
when it is exactly what the call would start now (:meth:`Ahead.fits`): alive, the same flags (the same masks, the
same working directory), the same environment, the same workspace directory by inode, and no deny walk since the
one that worked out its covers (the call's, or any call's in between, would have looked again only for an
inotify event: :mod:`.mask`): nothing in the workspace changed since the sandbox was set up. A name replaced
under a covered path (``mv new .env``) is such a change: the cover bound over the old file would not hide the new
one. Anything else, and every call a warm shell cannot carry (an argv, the call's own variables, carried secrets,
an egress proxy, a command over :data:`.warm.MAX_GO`), starts a fresh sandbox as before, and the one waiting is
stopped unrun or left for the next call.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .process import Hold, kill_group
from .reaper import children, kill_and_reap

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .process import Spawned

STOP_WAIT_S = 2.0
"""How long a stopped sandbox is given to end on its own (its shell reads end-of-file and exits unrun, bubblewrap
with it) before its group is killed."""


class Ahead:
    """One sandbox set up ahead, its shell waiting, and what it was started with."""

    def __init__(
        self,
        spawned: Spawned,
        hold: Hold,
        start_r: int,
        flags: Sequence[str],
        env: Mapping[str, str],
        root: tuple[int, int] | None,
        walks: int | None,
        argv: Sequence[str] = (),
    ) -> None:
        self.spawned = spawned
        self.hold = hold
        self.start_r = start_r
        """The start pipe's read end: the byte the shell wrote once the sandbox was set up (read after the
        command, as for a fresh sandbox: none means bubblewrap failed before it)."""
        self.flags = list(flags)
        self.env = dict(env)
        self.root = root
        self.walks = walks
        """The workspace's deny-walk count once its flags were worked out (``BwrapSandbox._walks``)."""
        self.cmdline = b"".join(os.fsencode(a) + b"\0" for a in argv)
        """bubblewrap's command line as ``/proc/<pid>/cmdline`` shows it, its inner process's too (a fork of it)."""

    @property
    def pid(self) -> int:
        return self.spawned[0].pid

    def fits(
        self, flags: Sequence[str], env: Mapping[str, str], root: tuple[int, int] | None, walks: int | None
    ) -> bool:
        """Whether this sandbox is what a call with bubblewrap ``flags`` and ``env``, in the workspace whose
        ``(st_dev, st_ino)`` is ``root``, would start: still running, and all the same, the deny walk's count
        (``walks``) too: any walk since its own, whichever call made it, means the workspace changed since."""
        if walks is None or walks != self.walks or root is None or root != self.root:
            return False
        return self.spawned[0].poll() is None and list(flags) == self.flags and env == self.env

    def close(self) -> None:
        """Close what tether holds of it once its command has run: the hold and the start pipe."""
        self.hold.close()
        os.close(self.start_r)

    def discard(self) -> None:
        """Stop it unrun: the pipe closed (the shell reads end-of-file and exits, bubblewrap after it), its group
        killed should it not end within :data:`STOP_WAIT_S`; reaped, its pipes closed. If bubblewrap's outer process
        died first (killed from outside, or killed by us), its inner one may be left waiting for it for good
        (running as root, bubblewrap's parent-death signal does not reach it): come back to tether (a subreaper),
        it is found by its command line and killed, as a command's leftovers are."""
        proc, out_r, err_r = self.spawned
        died = proc.poll() is not None
        self.close()
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            proc.wait()
            died = True
        for fd in (out_r, err_r):
            os.close(fd)
        if died:
            self._reap_inner()

    def _reap_inner(self) -> None:
        for pid in children():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    mine = f.read() == self.cmdline
            except OSError:
                continue
            if mine:
                kill_and_reap(pid)
