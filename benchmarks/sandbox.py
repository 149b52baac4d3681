"""Per-command overhead of the sandboxes against a bare ``subprocess.run(['true'])``, in the same run.

    python benchmarks/sandbox.py [N]

Prints mean and median per command and the ratio to the baseline. bwrap is skipped (with the reason)
if it cannot start here. Then the cost bwrap adds per command for covering ``filesystem.deny`` (the walk
that lists what to cover) on a generated 10,000-file workspace, against a bare ``os.walk`` of it.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.sandbox import BwrapSandbox, LocalSandbox, bwrap_available
from tether.sandbox.mask import masks


def measure(fn: Callable[[], object], n: int) -> list[float]:
    for _ in range(min(5, n)):
        fn()  # warm up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="tether-bench-") as d:
        ws = Path(d)
        cases: dict[str, Callable[[], object]] = {"bare subprocess.run(['true'])": lambda: subprocess.run(["true"])}
        local = LocalSandbox()
        cases["local sandbox ['true']"] = lambda: local.run(["true"], cwd=ws, timeout_s=30)
        reason = bwrap_available()
        if reason is None:
            bwrap = BwrapSandbox(ws)
            cases["bwrap sandbox ['true']"] = lambda: bwrap.run(["true"], cwd=ws, timeout_s=30)
            bare_bwrap = bwrap.argv(["true"], workspace=ws, cwd=ws)
            cases["bare bwrap argv (no tether)"] = lambda: subprocess.run(bare_bwrap)
        else:
            print(f"bwrap skipped: {reason}")
        results = {name: measure(fn, n) for name, fn in cases.items()}
    base = statistics.median(results["bare subprocess.run(['true'])"])
    print(f"{'case':34} {'median ms':>10} {'mean ms':>9} {'x baseline':>11}")
    for name, times in results.items():
        med = statistics.median(times)
        print(f"{name:34} {med * 1e3:10.2f} {statistics.fmean(times) * 1e3:9.2f} {med / base:11.1f}")
    deny_cover()


def deny_cover(dirs: int = 100, files: int = 100) -> None:
    with tempfile.TemporaryDirectory(prefix="tether-bench-mask-") as d:
        ws = Path(d)
        for i in range(dirs):
            (ws / f"pkg{i}").mkdir()
            for j in range(files):
                (ws / f"pkg{i}" / f"m{j}.py").touch()
        (ws / ".env").touch()
        walk = statistics.median(measure(lambda: sum(len(f) for _, _, f in os.walk(ws)), 20))
        cover = statistics.median(measure(lambda: masks(ws, [".env", "**/*.pem", "**/id_rsa*"]), 20))
    print(
        f"deny cover list, {dirs * files} files: {cover * 1e3:.1f} ms (bare os.walk {walk * 1e3:.1f} ms, "
        f"{cover / walk:.1f}x)"
    )


if __name__ == "__main__":
    main()
