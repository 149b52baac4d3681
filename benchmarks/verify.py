"""The cost of verification, measured against baselines taken in the same run.

    python benchmarks/verify.py [FILES]

Snapshot section: a generated workspace of FILES files (default 10,000; ~40 per directory, a few
hundred bytes each, with a .gitignore) is snapshotted once as the run's baseline, into a real
EventStore (SQLite). Then, per simulated action, K files are rewritten and a snapshot is taken with
the previous one as its stat cache (K = 0, 1 and 100), which is what tether does after every action.
The baseline figure is a bare ``os.scandir`` walk of the same tree that ``lstat``s every entry —
the least any stat-cache snapshot must do — so the ratio is the snapshot's own overhead.
Figures only: nothing is asserted.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether import snapshot
from tether.events.store import EventStore

REPEATS = 15


def generate(root: Path, files: int) -> list[Path]:
    paths = []
    for i in range(files):
        p = root / f"pkg{i // 400}" / f"mod{(i // 40) % 10}" / f"file{i}.py"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# file {i}\n" + "def f():\n    return 1\n" * 10)
        paths.append(p)
    (root / ".gitignore").write_text("*.log\nbuild/\n")
    return paths


def bare_walk(root: str) -> int:
    n, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as it:
            for de in it:
                st = de.stat(follow_symlinks=False)
                n += 1
                if de.is_dir(follow_symlinks=False):
                    stack.append(de.path)
                del st
    return n


def median_ms(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def snapshot_section(files: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        paths = generate(root, files)
        # A checkout is older than the run: let the racy-git window pass so the cache may vouch for files.
        time.sleep(snapshot.RACY_WINDOW_NS / 1e9 + 0.1)
        with EventStore.open(Path(tmp) / "events.db") as store:
            t0 = time.perf_counter()
            base = snapshot.take(root, blobs=store)
            baseline_ms = (time.perf_counter() - t0) * 1000
            walk_ms = median_ms(lambda: bare_walk(str(root)))
            print(f"snapshot: {len(base.entries)} files, bare scandir+lstat walk {walk_ms:.2f} ms (baseline)")
            print(f"  run-start snapshot (read + hash + store every file): {baseline_ms:.0f} ms")
            for k in (0, 1, 100):
                prev, times = base, []
                for r in range(REPEATS):
                    for p in paths[:k]:  # the action: rewrite k files
                        p.write_text(f"# round {r}\n" + p.read_text().split("\n", 1)[1])
                    t0 = time.perf_counter()
                    prev = snapshot.take(root, previous=prev, blobs=store)
                    times.append((time.perf_counter() - t0) * 1000)
                ms = statistics.median(times)
                print(f"  per action, {k:>3} changed: {ms:6.2f} ms  ({ms / walk_ms:.2f}x the bare walk)")


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    snapshot_section(files)


if __name__ == "__main__":
    main()
