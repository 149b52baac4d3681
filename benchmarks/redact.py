"""What redaction costs: scanning tool output for every form of every secret, against copying it.

For 1 MiB of command output (text with lines, and the same as bytes) and 1, 5 and 20 secrets, prints the
median time of :meth:`Redactor.text` / :meth:`Redactor.data` on a clean output (the common case: nothing to
redact, every byte still looked at) and its ratio to the baseline measured in the same run: what the store
pays for the same text anyway (its JSON encoding and SHA-256). Then the time to append one 64 KiB event to
a real store with and without a redactor.

    .venv/bin/python benchmarks/redact.py
"""

from __future__ import annotations

import hashlib
import json
import random
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.events.kinds import SandboxFailed
from tether.events.redact import Redactor
from tether.events.store import EventStore

TRIALS = 7
SIZE = 1 << 20


def median(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(TRIALS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def output(rng: random.Random) -> str:
    words = ["".join(rng.choices(string.ascii_letters + string.digits + "/+=_-.", k=rng.randint(2, 12)))]
    words += ["PASS", "tests/test_x.py::test_y", "0x7f3a", "error:", "==", "YWJjZGVm", "deadbeef"]
    lines, size = [], 0
    while size < SIZE:
        line = " ".join(rng.choice(words) for _ in range(rng.randint(3, 14)))
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)[:SIZE]


def main() -> None:
    rng = random.Random(7)
    text = output(rng)
    data = text.encode()
    base = median(lambda: hashlib.sha256(json.dumps(text).encode()).hexdigest())
    print(f"baseline: JSON-encode and SHA-256 {SIZE // 1024} KiB of output: {base * 1e3:.2f} ms")
    for n in (1, 5, 20):
        secrets = {f"S{i}": "tok-" + "".join(rng.choices(string.ascii_letters, k=32)) for i in range(n)}
        start = time.perf_counter()
        r = Redactor(secrets)
        built = time.perf_counter() - start
        assert r.text(text) == text  # nothing to redact: the common case
        dirty = text[: SIZE // 2] + secrets["S0"] + text[SIZE // 2 :]
        assert secrets["S0"] not in r.text(dirty)
        hit = median(lambda r=r, dirty=dirty: r.text(dirty))  # type: ignore[misc]
        t = median(lambda r=r: r.text(text))  # type: ignore[misc]
        b = median(lambda r=r: r.data(data))  # type: ignore[misc]
        print(
            f"{n:>2} secrets: build {built * 1e3:.1f} ms; text {t * 1e3:.1f} ms ({t / base:.2f}x baseline), "
            f"bytes {b * 1e3:.1f} ms ({b / base:.2f}x), {SIZE / t / 1e6:.0f} MB/s; "
            f"holding one value (the exact scan) {hit * 1e3:.0f} ms"
        )
    with tempfile.TemporaryDirectory() as d:
        store = EventStore.open(Path(d) / "t.db")
        run = store.create_run("bench")
        event = SandboxFailed(error=text[: 64 * 1024])
        plain = median(lambda: store.append(run, event))
        store.redact_also({f"S{i}": "tok-" + "".join(rng.choices(string.ascii_letters, k=32)) for i in range(5)})
        redacted = median(lambda: store.append(run, event))
        store.close()
    print(
        f"append of a 64 KiB event: {plain * 1e3:.2f} ms plain, {redacted * 1e3:.2f} ms with 5 secrets "
        f"({redacted / plain:.2f}x)"
    )


if __name__ == "__main__":
    sys.exit(main())
