"""Scale: durable appends per second with 1, 4 and 16 runs written at once, SQLite against PostgreSQL.

Each run has its own writer process (a driver, as ``tether run`` is one); every append is one event in its
own durable transaction (SQLite: WAL, synchronous=FULL; PostgreSQL: a commit that waits for its WAL flush),
the way the runtime appends an ``action.started`` before a side effect. The writers start together, append
for ``SECONDS`` and stop together; the figure is all events over that time. SQLite has one writer at a time
(a file lock queues them), so its total is expected to stay flat as runs are added; PostgreSQL locks per run
and groups concurrent commits' WAL flushes, so its total should grow with runs.

PostgreSQL is a throwaway server started here (tests/pgkit.py) with fsync ON, on the same disk as the SQLite
file, so the two pay for the same durability. Ratios are printed from one run (the machine is shared).

    python benchmarks/scale.py [--seconds S] [--runs 1,4,16]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # pgkit: the throwaway PostgreSQL

from tether.events import open_store

SECONDS = 3.0
RUNS = (1, 4, 16)
EVENT = ("model.requested", {"turn": 1, "model": "scripted:bench", "n_messages": 3})


def _writer(spec: str, run_id: str, start: Any, seconds: float, out: Any) -> None:
    """One driver: open the store, wait for the start line, append durably until the time is up."""
    with open_store(spec, create=False) as store:
        head = store.head(run_id)
        start.wait()
        n, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            head = store.append(run_id, *EVENT, expect=head).head
            n += 1
        out.put(n)


def appends_per_second(spec: str, runs: int, seconds: float) -> float:
    """Durable appends per second, all ``runs`` writers together."""
    with open_store(spec) as store:
        ids = [store.create_run("bench", [("run.started", {"task": "bench", "budgets": {}})]) for _ in range(runs)]
    ctx = mp.get_context("spawn")  # a fresh interpreter per writer: no connection or lock inherited
    start, out = ctx.Barrier(runs + 1), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(spec, rid, start, seconds, out)) for rid in ids]
    for p in procs:
        p.start()
    start.wait()
    began = time.monotonic()
    total = sum(out.get(timeout=seconds + 120) for _ in procs)
    elapsed = max(time.monotonic() - began, seconds)
    for p in procs:
        p.join()
    with open_store(spec, readonly=True, create=False) as store:
        assert all(store.verify(rid) > 0 for rid in ids)  # every chain intact after the race
    return total / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--runs", default=",".join(map(str, RUNS)))
    args = parser.parse_args()
    counts = [int(n) for n in args.runs.split(",")]
    import pgkit

    print(f"durable appends/s, each run its own writer process, {args.seconds:g} s each")
    print(f"{'runs':>5} {'sqlite':>10} {'postgres':>10} {'pg/sqlite':>10}")
    with tempfile.TemporaryDirectory(prefix="tether-scale-") as tmp, pgkit.running(durable=True) as pg:
        rows = []
        for runs in counts:
            sqlite = str(Path(tmp) / f"scale-{runs}.db")
            postgres = pg.url()
            with open_store(postgres):  # the schema, made once as the server's superuser
                pass
            lite = appends_per_second(sqlite, runs, args.seconds)
            post = appends_per_second(postgres, runs, args.seconds)
            rows.append((runs, lite, post))
            print(f"{runs:>5} {lite:>10.0f} {post:>10.0f} {post / lite:>10.2f}")
    base = rows[0]
    for runs, lite, post in rows[1:]:
        print(
            f"{runs} runs vs {base[0]}: sqlite x{lite / base[1]:.2f}, postgres x{post / base[2]:.2f} "
            "(1.00 = flat: the writers share one rate)"
        )


if __name__ == "__main__":
    main()
