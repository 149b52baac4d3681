"""Would a bubblewrap sandbox started ahead (while tether does a step's own work) make a step cheaper? Measured
before building one (docs/sandbox.md, "Round five").

    python benchmarks/bwrap_ahead.py [STEPS] [W_MS ...]

Each step first spins the CPU for W ms (the step's own work: tether's log, gate and model call; about 1.2 ms in
``benchmarks/loop.py``), then runs ``true N`` in bubblewrap with tether's flags, two ways, in blocks of 20 steps
in turn so that load falls on both alike:

- **fresh**: ``BwrapSandbox.run("true N")`` held, as the runtime runs it (bubblewrap starts after the step's work).
- **ahead**: after each command, the next bubblewrap is started at once with the same flags on a waiting shell
  that reads the command's script from a pipe (up to a NUL: a partial write runs nothing) and ``exec``s
  ``bash -c`` on it, the same script a fresh unheld start runs (the limits, then the command on its own line).
  So this side pays a second shell's start on the step's path.
- **ahead, eval**: the same, but the waiting shell is the local sandbox's warm shell (``sandbox/warm.py``: its
  line, and its text of the limits and the command), which evaluates the command itself: what a bubblewrap
  sandbox started ahead would run, with ``$0`` and the command's line numbers as under ``bash -c`` (a syntax
  error names ``eval``).

A prototype only: the ahead side checks nothing a real one would have to (the deny walk, the environment, the
working directory, the limits unchanged since it started). Prints the median and mean wall time per step.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether.sandbox import BwrapSandbox, bwrap_available
from tether.sandbox.warm import go, line

BLOCK = 20


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    works = [float(w) / 1e3 for w in sys.argv[2:]] or [0.0012, 0.003]
    reason = bwrap_available()
    if reason is not None:
        raise SystemExit(f"bubblewrap cannot start here: {reason}")
    with tempfile.TemporaryDirectory(prefix="tether-ahead-") as d:
        ws = Path(d).resolve()
        box = BwrapSandbox(ws)
        box.prepare(ws)
        flags = box.argv(["X"], workspace=ws, cwd=ws)[:-1]
        env = box.env(None)
        limits = box.limits.ulimit_script(30, unprivileged=True)

        def start(evaluates: bool = False) -> tuple[subprocess.Popen[bytes], int]:
            r, w = os.pipe2(os.O_CLOEXEC)
            waiter = f'IFS= read -r -d "" -u {r} s || exit 125; exec {r}<&-; exec /bin/bash -c "$s" bash'
            if evaluates:
                waiter = line(r)
            argv = [*flags, "/bin/bash", "-c", waiter]
            out = subprocess.PIPE
            proc = subprocess.Popen(
                argv, cwd=ws, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=out, pass_fds=(r,)
            )
            os.close(r)
            return proc, w

        def ahead(spare: tuple[subprocess.Popen[bytes], int], i: int, evaluates: bool = False) -> None:
            proc, w = spare
            text = go(limits, f"true {i}") if evaluates else f"{limits}; true\ntrue {i}\0".encode()
            assert text is not None
            os.write(w, text)
            os.close(w)
            _, err = proc.communicate()
            if proc.returncode != 0:
                raise SystemExit(f"the sandbox started ahead failed: {err.decode()}")

        for work in works:
            fresh: list[float] = []
            early: list[float] = []
            evaluated: list[float] = []
            for _ in range(max(1, steps // BLOCK)):
                for i in range(BLOCK):
                    t = time.perf_counter()
                    spin(work)
                    if not box.run(f"true {i}", cwd=ws, timeout_s=30, before=lambda: None).ok:
                        raise SystemExit("a fresh command failed")
                    fresh.append(time.perf_counter() - t)
                for evaluates, into in ((False, early), (True, evaluated)):
                    spare = start(evaluates)
                    for i in range(BLOCK):
                        t = time.perf_counter()
                        spin(work)
                        ahead(spare, i, evaluates)
                        spare = start(evaluates)
                        into.append(time.perf_counter() - t)
                    proc, w = spare
                    os.close(w)  # end-of-file: the waiting shell exits 125, running nothing
                    proc.communicate()
            for name, got in (("fresh", fresh), ("ahead", early), ("ahead, eval", evaluated)):
                print(
                    f"W = {work * 1e3:.1f} ms  {name}: median {statistics.median(got) * 1e3:.2f}"
                    f"  mean {statistics.mean(got) * 1e3:.2f} ms per step ({len(got)} steps)"
                )


if __name__ == "__main__":
    main()
