"""What binding skills costs at the start of a run: 10, 100 and 1,000 installed skills.

For each catalog size, the median time to find and parse every ``SKILL.md`` (``discover``) and to rank
them all against a task and bind the best three (``bind``), against a baseline measured in the same run:
reading the same files' bytes with plain ``open()``. Ranking imports numpy (``rank_bm25``) on first use;
that import is timed once, separately.

    .venv/bin/python benchmarks/skills.py
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether.skills import SkillRoot, bind, discover

TRIALS = 7
_TOPICS = "parse render deploy migrate lint format release notes database schema pdf form test fixture docker"
WORDS = _TOPICS.split()
TASK = "Write the release notes and a database schema migration for version 2"


def make(root: Path, n: int) -> None:
    for i in range(n):
        d = root / f"skill-{i}"
        d.mkdir(parents=True)
        topic = " ".join(WORDS[(i + k) % len(WORDS)] for k in range(4))
        (d / "SKILL.md").write_text(f"---\nname: skill-{i}\ndescription: How to {topic} ({i}).\n---\n" + "step\n" * 40)
        (d / "run.sh").write_text("echo hi\n")


def median(fn: Callable[[], object]) -> float:
    times = []
    for _ in range(TRIALS):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    start = time.perf_counter()
    import rank_bm25  # noqa: F401  (numpy underneath)

    print(f"first import of rank_bm25 (numpy): {(time.perf_counter() - start) * 1000:.0f} ms (once per process)")
    print(f"{'skills':>7} {'read (baseline)':>16} {'discover':>10} {'bind':>8} {'discover/read':>14}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in (10, 100, 1000):
            root = Path(tmp) / str(n)
            make(root, n)
            files = sorted(root.glob("*/SKILL.md"))
            roots = [SkillRoot(root, "user")]
            baseline = median(lambda files=files: [f.read_bytes() for f in files])  # type: ignore[misc]
            found = median(lambda roots=roots: discover(roots))  # type: ignore[misc]
            catalog = discover(roots)
            bound = median(lambda catalog=catalog: bind(catalog, TASK, limit=3))  # type: ignore[misc]
            print(
                f"{n:>7} {baseline * 1000:>13.2f} ms {found * 1000:>7.2f} ms {bound * 1000:>5.2f} ms "
                f"{found / baseline:>13.1f}x"
            )


if __name__ == "__main__":
    main()
