"""What the guard costs a framework's tool call: one decided call, and one allowed call with its receipts.

Usage: ``python benchmarks/guard.py [--calls N]``. In one governed session (examples/guarded's envelope, a
store in a temporary directory) it times ``Guard.check`` of an allowed call (proposal, decision, both
appended durably) and ``check`` + ``run_call`` (the receipts around a no-op tool), as p50 and p95 per call.
The baseline, measured in the same run on the same store, is one durable ``append`` of a one-event
transaction: the floor any logged decision pays. No thresholds; figures and ratios only.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.events import EventStore
from tether.events.kinds import RunResumed
from tether.guard import Guard

GUARDED = Path(__file__).resolve().parents[1] / "examples" / "guarded"


def timed(fn: Callable[[int], object], n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - start) * 1000)
    return out


def line(label: str, ms: list[float], base: float) -> str:
    p50, p95 = statistics.median(ms), statistics.quantiles(ms, n=20)[18]
    return f"{label:34} p50 {p50:7.2f} ms   p95 {p95:7.2f} ms   {p50 / base:5.1f}x baseline"


def envelope(directory: Path, *, calls: int) -> Envelope:
    """The example's envelope with a tool-call budget the benchmark's calls fit in (the guard enforces it)."""
    env = load_envelope(directory / "envelope.yaml")
    env = env.model_copy(
        update={"budgets": env.budgets.model_copy(update={"tool_calls": calls}), "contract_hash": None}
    )
    return env.model_copy(update={"environment": env.environment.model_copy(update={"workspace": str(directory)})})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    n = parser.parse_args().calls
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(GUARDED, Path(tmp) / "guarded", ignore=shutil.ignore_patterns(".tether"))
        with EventStore.open(Path(tmp) / "bench.db") as store:
            guard = Guard.open(store, envelope(Path(tmp) / "guarded", calls=20 + 2 * n), "bench", framework="bench")
            timed(lambda i: guard.check("get_weather", {"city": f"warm-{i}"}), 20)  # warm up
            baseline = timed(lambda i: store.append(guard.run_id, RunResumed(reason=f"baseline {i}")), n)
            guard.refresh()
            checks = timed(lambda i: guard.check("get_weather", {"city": f"c-{i}"}), n)

            def call(i: int) -> None:
                answer = guard.check("get_weather", {"city": f"r-{i}"})
                guard.run_call(answer.call_id, lambda: "sunny")

            receipts = timed(call, n)
    base = statistics.median(baseline)
    print(f"{n} calls each, one session; baseline: one durable one-event append")
    print(line("append (baseline)", baseline, base))
    print(line("check (ALLOW, decided and logged)", checks, base))
    print(line("check + run_call (with receipts)", receipts, base))


if __name__ == "__main__":
    main()
