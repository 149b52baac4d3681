"""What each sandbox costs per command, against the same command started without tether, in one run.

    python benchmarks/sandbox.py [N]

Five cases, run round-robin (one of each in turn, N rounds) so that load from other processes falls on all
alike: a raw ``bash -c true``; the same in its own session (as local starts every command; on a loaded
machine a new session is a new scheduler autogroup, which costs wall time, not CPU);
``LocalSandbox.run("true")`` (a shell command, as an agent's ``bash`` tool sends it); raw bubblewrap with
exactly the flags tether passes it, running ``/bin/bash -c true``; and ``BwrapSandbox.run("true")``. For
each: median wall ms per command, CPU ms of this process and of its children per command, and the
difference and ratio to its raw twin. bwrap is skipped (with the reason) if it cannot start here. Then the
CPU the kernel's own threads spend after each command (a namespace's deferred teardown, which no process's CPU
time shows), raw bash against raw bubblewrap with and without its network namespace. Then the
cost bwrap adds per command for covering ``filesystem.deny`` (the walk that lists what to cover) on a
generated 10,000-file workspace, against a bare ``os.walk`` of it.
"""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from tether.sandbox import BwrapSandbox, LocalSandbox, bwrap_available
from tether.sandbox.mask import Listings, masks
from tether.snapshot import RACY_WINDOW_NS


@dataclass
class Case:
    name: str
    fn: Callable[[], object]
    twin: str | None = None
    """The raw case this one is compared with."""
    wall: list[float] = field(default_factory=list)
    cpu_self: float = 0.0
    cpu_children: float = 0.0


def cpu(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def measure(cases: list[Case], n: int) -> None:
    """Round-robin: one call of each case per round, after a few warm-up rounds."""
    for _ in range(min(5, n)):
        for case in cases:
            case.fn()
    for _ in range(n):
        for case in cases:
            s, c, t = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            case.fn()
            case.wall.append(time.perf_counter() - t)
            case.cpu_self += cpu(resource.RUSAGE_SELF) - s
            case.cpu_children += cpu(resource.RUSAGE_CHILDREN) - c


def must_pass(done: object) -> None:
    ok = done.returncode == 0 if isinstance(done, subprocess.CompletedProcess) else getattr(done, "ok", False)
    if not ok:
        raise SystemExit(f"a benchmarked command failed: {done}")


RAW_BASH = "raw bash -c true"
RAW_BWRAP = "raw bwrap (tether's flags)"


def reap_all() -> None:
    """Wait for every child left: this process is a subreaper (the local sandbox made it one), so bubblewrap's
    inner process comes back to it when the outer one exits first. Reaped here, its CPU counts for the raw case
    (as it does for the sandbox, which reaps it too) and no zombie piles up."""
    with contextlib.suppress(ChildProcessError):
        while True:
            os.waitpid(-1, 0)


def sandbox_cases(ws: Path) -> list[Case]:
    def raw(argv: list[str], env: dict[str, str] | None = None, session: bool = False) -> Callable[[], object]:
        def run() -> None:
            must_pass(subprocess.run(argv, cwd=ws, env=env, capture_output=True, start_new_session=session))
            reap_all()

        return run

    local = LocalSandbox()
    cases = [
        Case(RAW_BASH, raw(["bash", "-c", "true"])),
        Case("raw bash, own session", raw(["bash", "-c", "true"], session=True), RAW_BASH),
        Case("LocalSandbox.run('true')", lambda: must_pass(local.run("true", cwd=ws, timeout_s=30)), RAW_BASH),
    ]
    reason = bwrap_available()
    if reason is not None:
        print(f"bwrap skipped: {reason}")
        return cases
    bwrap = BwrapSandbox(ws)
    bwrap.prepare(ws)
    argv = bwrap.argv(["/bin/bash", "-c", "true"], workspace=ws, cwd=ws)
    cases.append(Case(RAW_BWRAP, raw(argv, bwrap.env(None))))
    run = lambda: must_pass(bwrap.run("true", cwd=ws, timeout_s=30))  # noqa: E731
    cases.append(Case("BwrapSandbox.run('true')", run, RAW_BWRAP))
    return cases


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as d:
        cases = sandbox_cases(Path(d).resolve())
        measure(cases, n)
    by_name = {c.name: c for c in cases}
    print(f"per command, {n} rounds (median wall; CPU means: this process / its children)")
    print(f"{'case':28} {'wall ms':>8} {'cpu ms':>7} {'child ms':>9} {'vs raw':>17}")
    for case in cases:
        med = statistics.median(case.wall)
        versus = ""
        if case.twin is not None:
            raw = statistics.median(by_name[case.twin].wall)
            versus = f"{(med - raw) * 1e3:+.2f} ms {med / raw:5.2f}x"
        print(
            f"{case.name:28} {med * 1e3:8.2f} {case.cpu_self / n * 1e3:7.2f} {case.cpu_children / n * 1e3:9.2f}"
            f" {versus:>17}"
        )
    print("aims: bwrap <= raw bwrap + 1.5 ms per command; local's added cost as small as possible")
    deferred(max(50, n // 2))
    deny_cover()


def kernel_threads_cpu() -> float:
    """CPU seconds used so far by the kernel's own threads (kthreadd, pid 2, and its children: kworkers, RCU, ...),
    system-wide, from ``/proc``; threads that exited since are not counted (kworkers are long-lived)."""
    total = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        with contextlib.suppress(OSError):
            with open(f"/proc/{name}/stat", "rb") as f:
                data = f.read()
            fields = data[data.rfind(b")") + 2 :].split()
            if name == "2" or fields[1] == b"2":
                total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def deferred(n: int) -> None:
    """CPU the kernel spends per command after it, in its own threads (a namespace's teardown: the network
    namespace's cleanup runs in a workqueue), which neither the command's nor this process's CPU time shows. It
    competes with whatever runs next on the machine's cores: on a small machine, with the next step of an agent.
    Blocks of ``n`` commands each, in turn: a raw ``bash -c true`` (the kernel's own background work, and other
    load's), raw bubblewrap with tether's flags, and the same without ``--unshare-net``; system-wide figures."""
    if bwrap_available() is not None:
        return
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as d:
        ws = Path(d).resolve()
        box = BwrapSandbox(ws)
        box.prepare(ws)
        full = box.argv(["/bin/bash", "-c", "true"], workspace=ws, cwd=ws)
        cases = {
            "raw bash -c true": ["bash", "-c", "true"],
            RAW_BWRAP: full,
            "raw bwrap, no --unshare-net": [a for a in full if a != "--unshare-net"],
        }
        got: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(2):
            for name, argv in cases.items():
                before = kernel_threads_cpu()
                for _ in range(n):
                    must_pass(subprocess.run(argv, cwd=ws, env=box.env(None), capture_output=True))
                    reap_all()
                time.sleep(0.5)  # what the last commands left to the kernel's workqueues
                got[name].append((kernel_threads_cpu() - before) / n)
    for name, per in got.items():
        print(
            f"kernel threads' CPU after each {name}: {', '.join(f'{x * 1e3:.2f}' for x in per)} ms (two blocks of {n})"
        )


def deny_cover(dirs: int = 100, files: int = 100) -> None:
    """The walk that lists what to cover: from scratch (what the first command of a sandbox pays) and when the
    directories are those of the last walk (every later command's, unless the tree changed), against os.walk."""
    deny = [".env", "**/*.pem", "**/id_rsa*"]
    with tempfile.TemporaryDirectory(prefix="tether-bench-mask-") as d:
        ws = Path(d)
        for i in range(dirs):
            (ws / f"pkg{i}").mkdir()
            for j in range(files):
                (ws / f"pkg{i}" / f"m{j}.py").touch()
        (ws / ".env").touch()
        time.sleep(RACY_WINDOW_NS / 1e9 + 0.1)  # a directory changed within the racy window is always listed
        walk, cover, kept, watched = [], [], [], []
        listings = Listings(watch=None)  # each directory's lstat against its kept listing
        masks(ws, deny, listings)
        quiet = Listings()  # inotify: nothing looked at while no event came
        masks(ws, deny, quiet)
        for _ in range(20):  # alternating, so that load falls on all alike
            walk += timed(lambda: sum(len(f) for _, _, f in os.walk(ws)), 1)
            cover += timed(lambda: masks(ws, deny), 1)
            kept += timed(lambda: masks(ws, deny, listings), 1)
            watched += timed(lambda: masks(ws, deny, quiet), 1)
        listed = listings.listed
    w, c, k, q = (statistics.median(x) * 1e3 for x in (walk, cover, kept, watched))
    print(
        f"deny cover list, {dirs * files} files in {dirs + 1} directories: {c:.1f} ms from scratch, {k:.2f} ms when "
        f"no directory changed since the last walk (bare os.walk {w:.1f} ms; listed again: {listed - dirs - 1}), "
        f"{q:.3f} ms when inotify told of no change (walks: {quiet.walked})"
    )


def timed(fn: Callable[[], object], n: int) -> list[float]:
    fn()  # warm up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


if __name__ == "__main__":
    main()
