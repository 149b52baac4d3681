"""Scale: durable appends/s (SQLite vs PostgreSQL) and Temporal-hosted runs (throughput, per-action overhead).

Part ``appends``: durable appends per second with 1, 4 and 16 runs written at once, SQLite against PostgreSQL.

Each run has its own writer process (a driver, as ``tether run`` is one); every append is one event in its
own durable transaction (SQLite: WAL, synchronous=FULL; PostgreSQL: a commit that waits for its WAL flush),
the way the runtime appends an ``action.started`` before a side effect. The writers start together, append
for ``SECONDS`` and stop together; the figure is all events over that time. SQLite has one writer at a time
(a file lock queues them), so its total is expected to stay flat as runs are added; PostgreSQL locks per run
and groups concurrent commits' WAL flushes, so its total should grow with runs.

PostgreSQL is a throwaway server started here (tests/pgkit.py) with fsync ON, on the same disk as the SQLite
file, so the two pay for the same durability. Ratios are printed from one run (the machine is shared).

Part ``temporal``: a throwaway ``temporal server start-dev`` on 127.0.0.1 (tests/temporalkit.py) and real
``tether worker`` processes. (1) Completed runs per minute with 1, 2 and 4 workers: the same K cheap scripted
runs (the bugfix example, scripted to fix and finish: two model turns, verification included), each in its own
copy of the example, all submitted at once; the clock runs until every workflow has ended. (2) Per-action
overhead: the same scripted run, with ``--reads`` extra turns that read a file, in the local loop
(``Harness.run``, in this process) and through one worker (submit to result): milliseconds per action
(``action.started`` events in the log), and their ratio. The server and workers are stopped on the way out,
Ctrl-C and SIGTERM included.

    python benchmarks/scale.py [--part appends|temporal|all] [--seconds S] [--runs 1,4,16]
                               [--workers 1,2,4] [--k K] [--repeat R] [--reads N]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing as mp
import os
import shutil
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # pgkit, temporalkit: throwaway servers

import yaml

from tether.events import open_store

ROOT = Path(__file__).resolve().parents[1]

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


def appends_part(seconds: float, counts: list[int]) -> None:
    import pgkit

    print(f"durable appends/s, each run its own writer process, {seconds:g} s each")
    print(f"{'runs':>5} {'sqlite':>10} {'postgres':>10} {'pg/sqlite':>10}")
    with tempfile.TemporaryDirectory(prefix="tether-scale-") as tmp, pgkit.running(durable=True) as pg:
        rows = []
        for runs in counts:
            sqlite = str(Path(tmp) / f"scale-{runs}.db")
            postgres = pg.url()
            with open_store(postgres):  # the schema, made once as the server's superuser
                pass
            lite = appends_per_second(sqlite, runs, seconds)
            post = appends_per_second(postgres, runs, seconds)
            rows.append((runs, lite, post))
            print(f"{runs:>5} {lite:>10.0f} {post:>10.0f} {post / lite:>10.2f}")
    base = rows[0]
    for runs, lite, post in rows[1:]:
        print(
            f"{runs} runs vs {base[0]}: sqlite x{lite / base[1]:.2f}, postgres x{post / base[2]:.2f} "
            "(1.00 = flat: the writers share one rate)"
        )


#: The cheap scripted run: fix the bug, then finish (verification runs the project's tests, as in every run).
FIX = {
    "path": "src/stats/core.py",
    "old": "    return ordered[middle]\n",
    "new": (
        "    if len(ordered) % 2:\n"
        "        return ordered[middle]\n"
        "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
    ),
}
EDIT = {"name": "edit_file", "args": FIX}
FINISH = {"name": "finish", "args": {"summary": "fixed median"}}
TASK = "fix the median"
WORKERS = (1, 2, 4)
K = 8
REPEAT = 2
READS = 8
WAIT_S = 300.0  # the longest the benchmark waits for one batch of runs; a stuck run is an error, not a hang


def _example(dest: Path, reads: int = 0) -> Path:
    """A private copy of examples/bugfix scripted to the cheap run (after ``reads`` turns that each read one line
    of a file, a different line each: an identical call repeated is a loop the runtime stops); its envelope's
    path."""
    shutil.copytree(ROOT / "examples" / "bugfix", dest, ignore=shutil.ignore_patterns(".tether", "__pycache__"))
    read = [{"name": "read_file", "args": {"path": "src/stats/core.py", "start_line": i + 1}} for i in range(reads)]
    turns = [{"tool_calls": [call]} for call in [*read, EDIT, FINISH]]
    (dest / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}))
    return dest / "envelope.yaml"


def _actions(db: str, run_id: str) -> int:
    with open_store(db, readonly=True, create=False) as store:
        return sum(e.kind == "action.started" for e in store.events(run_id))


async def _hosted(envelopes: list[Path], db: str, address: str) -> list[dict[str, Any]]:
    """Submit one run per envelope at once; their output contracts once every workflow has ended."""
    from tether.distributed.client import outcome, submission, submit

    subs = [submission(env, TASK, db=db, address=address, sandbox="local") for env in envelopes]
    await asyncio.gather(*(submit(sub) for sub in subs))
    ended = asyncio.gather(*(outcome(sub) for sub in subs))
    try:
        return list(await asyncio.wait_for(ended, WAIT_S))
    except TimeoutError:
        sys.exit(f"scale.py: runs {[sub.run_id for sub in subs]} not all ended in {WAIT_S:g} s (a worker stuck?)")


def runs_per_minute(tmp: Path, address: str, workers: int, k: int) -> tuple[float, list[str]]:
    """``k`` runs submitted together to ``workers`` fresh workers: completed runs per minute, and the statuses."""
    import temporalkit

    db = str(tmp / f"workers-{workers}.db")
    envelopes = [_example(tmp / f"w{workers}-run{i}") for i in range(k)]
    started: list[temporalkit.Worker] = []
    try:
        for _ in range(workers):
            started.append(temporalkit.start_worker(address, "--db", db))
        began = time.monotonic()
        contracts = asyncio.run(_hosted(envelopes, db, address))
        elapsed = time.monotonic() - began
    finally:
        for w in started:
            w.stop()
    statuses = [str(c.get("status")) for c in contracts]
    return sum(s == "COMPLETE" for s in statuses) * 60.0 / elapsed, statuses


def per_action(tmp: Path, address: str, repeat: int, reads: int) -> tuple[float, float]:
    """Milliseconds per action of the same scripted run, local loop and through one worker (best of ``repeat``).

    The run's fixed costs (the test baseline before the first step, verification at the end) are in both and
    are spread over its actions: ``reads`` extra one-action turns make the per-step cost the larger part."""
    import temporalkit

    from tether import Harness

    local, hosted = [], []
    db = str(tmp / "overhead.db")
    worker = temporalkit.start_worker(address, "--db", db)
    try:
        for i in range(repeat):
            began = time.monotonic()
            contract = Harness(_example(tmp / f"local-{i}", reads), db=db, sandbox="local").run(TASK)
            local.append((time.monotonic() - began) * 1000 / _actions(db, contract.run_id))
            began = time.monotonic()
            (result,) = asyncio.run(_hosted([_example(tmp / f"hosted-{i}", reads)], db, address))
            if {str(contract.status), str(result["status"])} != {"COMPLETE"}:  # else the two did not do the same
                sys.exit(f"scale.py: the overhead runs ended {contract.status} (local), {result['status']} (hosted)")
            hosted.append((time.monotonic() - began) * 1000 / _actions(db, str(result["run_id"])))
    finally:
        worker.stop()
    return min(local), min(hosted)


def temporal_part(counts: list[int], k: int, repeat: int, reads: int) -> None:
    import temporalkit

    if why := temporalkit.why_not():
        sys.exit(f"scale.py --part temporal: {why}")
    # the runs' test command finds this venv's python, as the workers do (temporalkit puts it first on PATH)
    os.environ["PATH"] = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    with tempfile.TemporaryDirectory(prefix="tether-scale-") as tmp, temporalkit.running(Path(tmp) / "temporal") as t:
        print(f"Temporal dev server {t.address}: {k} scripted runs submitted at once, SQLite store shared by workers")
        print(f"{'workers':>7} {'runs/min':>9} {'vs 1st':>7}  statuses")
        base = None
        for n in counts:
            rate, statuses = runs_per_minute(Path(tmp), t.address, n, k)
            base = base or rate
            tally = ", ".join(f"{count} {status}" for status, count in sorted(Counter(statuses).items()))
            print(f"{n:>7} {rate:>9.1f} {rate / base:>7.2f}  {tally}")
        local, hosted = per_action(Path(tmp), t.address, repeat, reads)
        print(f"per action ({reads + 2} actions a run), best of {repeat}: ", end="")
        print(f"local loop {local:.0f} ms, Temporal-hosted {hosted:.0f} ms")
        print(f"Temporal/local x{hosted / local:.2f} (+{hosted - local:.0f} ms per action)")


def _terminated(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM unwinds like Ctrl-C: the finally blocks stop the workers and the server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("appends", "temporal", "all"), default="all")
    parser.add_argument("--seconds", type=float, default=SECONDS)
    parser.add_argument("--runs", default=",".join(map(str, RUNS)))
    parser.add_argument("--workers", default=",".join(map(str, WORKERS)))
    parser.add_argument("--k", type=int, default=K, help="runs submitted per worker count")
    parser.add_argument("--repeat", type=int, default=REPEAT, help="runs timed for the per-action overhead")
    parser.add_argument("--reads", type=int, default=READS, help="one-action turns added to the overhead run")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _terminated)
    if args.part in ("appends", "all"):
        appends_part(args.seconds, [int(n) for n in args.runs.split(",")])
    if args.part in ("temporal", "all"):
        temporal_part([int(n) for n in args.workers.split(",")], args.k, args.repeat, args.reads)


if __name__ == "__main__":
    main()
