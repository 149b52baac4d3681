"""Hook latency: how long `tether hook claude-code` takes to answer a PreToolUse, as a whole process.

Usage: ``python benchmarks/hook.py [--calls N]``. Times N whole-process calls each of:

* ``python -c pass`` — the baseline, measured in the same run (the interpreter's own start-up);
* cold — ``tether hook claude-code --no-daemon``: a fresh process that imports the gate and decides;
* daemon — ``tether hook claude-code`` with a running daemon: the console script, the small client and one
  socket round trip;
* daemon, launcher — the command ``tether hook install`` writes (``python -I -S …/tether/hooks/launch.py
  claude-code``) with the same daemon: no ``site``, no console script.

Prints p50 and p95 in milliseconds and each against the baseline's p50. Every call is a new tool call of one
session (its log grows as in a real session); everything lives in a temporary directory, the daemon on its
own socket there, stopped at the end. No thresholds; figures only.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tether.hooks.install import hook_command

TETHER = shutil.which("tether", path=str(Path(sys.executable).parent)) or "tether"
#: Exactly the command ``tether hook install claude-code`` writes (without its ``|| exit 2``).
INSTALLED = shlex.split(hook_command("claude-code", None).removesuffix(" || exit 2"))


def timed(cmd: list[str], stdin: bytes, env: dict[str, str]) -> float:
    start = time.perf_counter()
    out = subprocess.run(cmd, input=stdin, capture_output=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if out.returncode not in (0,):
        raise SystemExit(f"{cmd} failed ({out.returncode}): {out.stderr.decode()[-500:]}")
    return elapsed


def series(cmd: list[str], calls: int, env: dict[str, str], workspace: Path, session: str) -> list[float]:
    times = []
    for i in range(calls):
        data = {
            "session_id": session,
            "cwd": str(workspace),
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": f"grep -n needle{i} src/app.py"},
            "tool_use_id": f"toolu_{i}",
        }
        times.append(timed(cmd, json.dumps(data).encode(), env))
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=40)
    calls = parser.parse_args().calls
    with tempfile.TemporaryDirectory(prefix="tether-hook-bench-") as tmp:
        workspace = Path(tmp)
        sock = workspace / "d" / "hookd.sock"
        sock.parent.mkdir(mode=0o700)
        env = {**os.environ, "TETHER_HOOK_SOCKET": str(sock), "CLAUDE_PROJECT_DIR": str(workspace)}
        env.pop("TETHER_DB", None)
        baseline = [timed([sys.executable, "-c", "pass"], b"", env) for _ in range(calls)]
        cold = series([TETHER, "hook", "claude-code", "--no-daemon"], max(5, calls // 4), env, workspace, "cold")
        daemon = subprocess.Popen([TETHER, "daemon", "--socket", str(sock), "--idle", "300"], env=env)
        try:
            deadline = time.monotonic() + 60
            while not sock.exists():
                if time.monotonic() > deadline:
                    raise SystemExit("the daemon did not start")
                time.sleep(0.05)
            series([TETHER, "hook", "claude-code"], 3, env, workspace, "warmup")  # the daemon's first imports
            warm = series([TETHER, "hook", "claude-code"], calls, env, workspace, "daemon")
            launched = series(INSTALLED, calls, env, workspace, "launch")
        finally:
            subprocess.run([TETHER, "daemon", "--socket", str(sock), "--stop"], env=env, check=False)
            daemon.wait(timeout=30)
    base = statistics.median(baseline)
    print(f"calls: {calls} (cold: {max(5, calls // 4)}); whole processes; milliseconds")
    print(f"{'':28}{'p50':>9}{'p95':>9}{'p50 / baseline':>17}")
    for name, values in (
        ("python -c pass (baseline)", baseline),
        ("cold (--no-daemon)", cold),
        ("daemon", warm),
        ("daemon, launcher", launched),
    ):
        p50, p95 = pct(values, 0.5), pct(values, 0.95)
        print(f"{name:28}{p50:9.1f}{p95:9.1f}{p50 / base:16.1f}x")


if __name__ == "__main__":
    main()
