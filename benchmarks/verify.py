"""The cost of verification, measured against baselines taken in the same run.

    python benchmarks/verify.py [FILES] [TESTS]

Snapshot section: a generated workspace of FILES files (default 10,000; ~40 per directory, a few
hundred bytes each, with a .gitignore) is snapshotted once as the run's baseline, into a real
EventStore (SQLite), arming the inotify watch. Then, per simulated action, K files are rewritten and a
snapshot is taken from the previous one (K = 0, 1 and 100): first as tether does after every action
(the watch says which directories to re-list), then as a checkpoint does (``full=True``: the whole tree
walked with the stat cache). Each line also gives the time to diff the snapshot with the previous one
(``snapshot.changes``, what the action's window costs on top). The baseline figure is a bare
``os.scandir`` walk of the same tree that ``lstat``s every entry — the least any walk must do. For
comparison it also times what per-action snapshots replaced: ``git status`` before and after each
``bash`` action (here run directly, without the sandbox start-up it used to pay twice).

Verification section: a generated project with TESTS passing tests (default 2,000, 100 per file) in the
sandbox tether would use (bwrap where it starts, else local). The baseline figure is the test command
alone, as a user would run it (caches warm). Against it: the command after the workspace's
``__pycache__`` is dropped (what every module recompiling costs), the pre-flight baseline run (the same
command with tether's reporter, from no bytecode, plus the ``ast`` shapes, the test surface's bytes and
the bytecode it compiled), and the completion ``tests`` sensor after the "agent" changed one source
module (drop the caches, restore the baseline's bytecode for unchanged sources, run with the reporter,
read the report, compare against the baseline).
Figures only: nothing is asserted (beyond the suite passing, so that the figures mean something).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tether import snapshot
from tether.envelope.schema import Envelope
from tether.envelope.schema import Sandbox as SandboxSpec
from tether.events.store import EventStore
from tether.sandbox.factory import make_sandbox
from tether.verify import bytecode
from tether.verify.changes import run_diff
from tether.verify.preflight import record_baseline
from tether.verify.sensors import SensorContext
from tether.verify.sensors import tests as tests_sensor

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
            watch = snapshot.Watch()
            t0 = time.perf_counter()
            base = snapshot.take(root, blobs=store, watch=watch)
            baseline_ms = (time.perf_counter() - t0) * 1000
            walk_ms = median_ms(lambda: bare_walk(str(root)))
            print(f"snapshot: {len(base.entries)} files, bare scandir+lstat walk {walk_ms:.2f} ms (baseline)")
            print(f"  run-start snapshot (read + hash + store every file, arm the watch): {baseline_ms:.0f} ms")
            prev = base
            for label, full in (("per action (watched)", False), ("checkpoint (full walk)", True)):
                for k in (0, 1, 100):
                    times, diffs = [], []
                    for r in range(REPEATS):
                        for p in paths[:k]:  # the action: rewrite k files
                            p.write_text(f"# round {r} {label}\n" + p.read_text().split("\n", 1)[1])
                        t0 = time.perf_counter()
                        m = snapshot.take(root, previous=prev, blobs=store, watch=watch, full=full)
                        t1 = time.perf_counter()
                        changed = snapshot.changes(prev, m)
                        times.append((t1 - t0) * 1000)
                        diffs.append((time.perf_counter() - t1) * 1000)
                        assert len(changed) == k, (k, len(changed))
                        prev = m
                    ms, diff_ms = statistics.median(times), statistics.median(diffs)
                    print(
                        f"  {label}, {k:>3} changed: {ms:6.2f} ms ({ms / walk_ms:.2f}x the bare walk)"
                        f" + {diff_ms:5.2f} ms to diff it with the previous snapshot"
                    )
            print(f"  full walks made: {watch.walks} (1 at the start, then one per checkpoint)")
            watch.close()
            if shutil.which("git"):
                git = ["git", "-c", "user.name=b", "-c", "user.email=b@b", "-c", "core.fsmonitor=false"]
                for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
                    subprocess.run([*git, *args], cwd=root, check=True, capture_output=True)
                status = [*git, "status", "--porcelain=v1", "-z", "--untracked-files=all"]
                ms = median_ms(lambda: subprocess.run(status, cwd=root, check=True, capture_output=True), 5)
                print(f"  replaced: git status before and after an action: {2 * ms:6.2f} ms ({2 * ms / walk_ms:.2f}x)")


# ---- completion verification ----------------------------------------------------------------

VERIFY_REPEATS = 5


def generate_suite(root: Path, tests: int, per_file: int = 100) -> None:
    """A project whose suite has ``tests`` passing tests in files of ``per_file``."""
    (root / "tests").mkdir(parents=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n')
    for f in range(tests // per_file):
        body = [f"def test_add_{f}_{i}():\n    assert add({i}, {f}) == {i + f}\n" for i in range(per_file)]
        (root / "tests" / f"test_gen_{f}.py").write_text("from calc import add\n\n\n" + "\n\n".join(body))


def verification_section(tests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        generate_suite(root, tests)
        command = f"{os.path.abspath(sys.executable)} -m pytest -q -p no:cacheprovider"
        env = Envelope.model_validate(
            {"plan": {"path": "p", "hash": "sha256:" + "0" * 64}, "verification": {"test_command": command}}
        )
        sandbox = make_sandbox(SandboxSpec(backend="bwrap", required=False), root)
        alone = sandbox.run(command, cwd=root, timeout_s=600)  # warm the caches once, and check it passes
        assert alone.exit_code == 0, (alone.stdout + alone.stderr)[-800:]
        alone_ms = median_ms(lambda: sandbox.run(command, cwd=root, timeout_s=600), VERIFY_REPEATS)

        def cold() -> None:
            bytecode.drop(root)
            sandbox.run(command, cwd=root, timeout_s=600)

        cold_ms = median_ms(cold, VERIFY_REPEATS)
        blobs = snapshot.MemoryBlobStore()
        manifest = snapshot.take(root, blobs=blobs)  # the run's start, as the runtime takes it
        base: list[object] = []
        baseline_ms = median_ms(lambda: base.append(record_baseline(env, root, sandbox)), VERIFY_REPEATS)
        check, suite, surface = base[-1]  # type: ignore[misc]
        assert suite.ok and len(suite.tests) == tests, check
        for data in surface.values():
            blobs.put_blob(data)
        # The agent's fix: one source module changes (the same behaviour, so the suite still passes).
        (root / "calc.py").write_text("def add(a, b):\n    return b + a\n")
        final = snapshot.take(root, previous=manifest, blobs=blobs)
        diff = run_diff(manifest, final, blobs, str(root))
        ctx = SensorContext(env, root, tuple(diff.paths), sandbox, diff, True, manifest, blobs, suite)
        results: list[object] = []
        verify_ms = median_ms(lambda: results.append(tests_sensor(ctx)), VERIFY_REPEATS)
        result = results[-1]
        assert result.result == "PASS", result  # type: ignore[attr-defined]
        print(f"completion verification: {tests} tests, sandbox {sandbox.name}, median of {VERIFY_REPEATS}")
        print(f"  the test command alone:                        {alone_ms:7.0f} ms (baseline)")
        print(f"  the command, workspace bytecode dropped first: {cold_ms:7.0f} ms ({cold_ms / alone_ms:.2f}x)")
        print(f"  pre-flight baseline run (reporter + shapes):   {baseline_ms:7.0f} ms ({baseline_ms / alone_ms:.2f}x)")
        print(
            f"  tests sensor + integrity comparison:           {verify_ms:7.0f} ms ({verify_ms / alone_ms:.2f}x; "
            f"{len(suite.bytecode)} bytecode files kept by the baseline run, reused for unchanged sources)"
        )


def main() -> None:
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    tests = int(sys.argv[2]) if len(sys.argv) > 2 else 2_000
    snapshot_section(files)
    verification_section(tests)


if __name__ == "__main__":
    main()
