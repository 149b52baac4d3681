"""Per-action overhead of the full tether loop against bare commands, measured in the same run.

    python benchmarks/overhead.py [N]

A scripted model (:class:`tether.models.function.FunctionModel`) asks for one ``bash`` action with the
command ``true`` per turn, N times, and the run goes through everything a real run does: context
compiled from the log, the policy gate, the execution review, the sandbox, the durable SQLite log
(WAL, synchronous=FULL), receipts, and the control layer's ``observe``. The loop is timed from the
first model call to the (N+1)-th, so envelope loading, run start and finish are not counted.

Baselines, in the same process: N bare ``subprocess.run(['true'])``, and N bare runs of the same
sandbox (``sandbox.run("true")``: the bash tool runs its command via ``bash -c``) — the difference to the
latter is the *tether overhead on top of the sandbox* (aim: under 3 ms per action).

Cases: the local sandbox and, where it can start here, bwrap; each on a plain temp-dir workspace, and
on a git workspace (which costs nothing extra now: tether reads its own workspace snapshot after each
action and runs no git).
Figures only: nothing is asserted.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import yaml

from tether.envelope.compile import compile_envelope
from tether.envelope.schema import Sandbox as SandboxSpec
from tether.events.store import EventStore
from tether.kernel import session
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.sandbox.factory import bwrap_available, make_sandbox

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "bugfix"


def build_envelope(root: Path, n: int) -> Path:
    """examples/bugfix's plan and envelope, copied, with budgets raised for N actions, recompiled."""
    dest = root / "envelope"
    dest.mkdir()
    shutil.copy(EXAMPLE / "plan.yaml", dest / "plan.yaml")
    data = yaml.safe_load((EXAMPLE / "envelope.yaml").read_text())
    headroom = 2 * n + 20  # the control layer escalates when less than 15% of a budget is left
    data["agent"]["max_turns"] = headroom
    data["budgets"].update(turns=headroom, tool_calls=headroom, tokens=10**9, usd=1000.0, wall_s=86400)
    out = dest / "envelope.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    compile_envelope(dest / "plan.yaml", out)
    return out


class BashTrue:
    """The scripted model: ``bash true`` N times, one per turn, then a refusal (a cheap, clean stop).

    Records when each call starts, so the loop can be timed between model calls.
    """

    def __init__(self, n: int) -> None:
        self.n = n
        self.calls: list[float] = []

    def __call__(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        self.calls.append(time.perf_counter())
        i = len(self.calls)
        if i > self.n:
            return ModelResponse("benchmark over", (), "refusal", "refusal", Usage(), "bench")
        # `true N`: the same command, with an argument `true` ignores, so that the control layer's stuck
        # detector does not (rightly) stop a run repeating one identical action with one identical result.
        call = ToolCall(f"c{i}", "bash", {"command": f"true {i}"})
        return ModelResponse("", (call,), "tool_request", "tool_use", Usage(1, 1), "bench")


@dataclass
class LoopResult:
    per_action: float  # seconds
    status: str
    executed: int


def run_loop(envelope: Path, workspace: Path, db: Path, backend: str, n: int) -> LoopResult:
    script = BashTrue(n)
    options = session.Options(model=FunctionModel(script, name="bench"), workspace=workspace, sandbox=backend)
    with EventStore.open(db) as store:
        runtime = session.start(store, envelope, "run `true` many times", options)
        contract = runtime.drive()
        executed = sum(1 for e in store.events(contract.run_id) if e.kind == "action.completed")
    calls = script.calls
    if len(calls) < n + 1 or executed != n:
        raise SystemExit(f"the loop did not run {n} actions: {executed} executed, status {contract.status}")
    return LoopResult((calls[n] - calls[0]) / n, contract.status, executed)


def per_call(fn: Callable[[], object], n: int) -> float:
    for _ in range(min(5, n)):
        fn()  # warm up
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.fmean(times)


def make_workspace(root: Path, name: str, git: bool) -> Path:
    ws = root / name
    ws.mkdir()
    (ws / "README.md").write_text("benchmark workspace\n")
    # One test, so the run's pre-flight (the test command must collect a test) lets the loop start;
    # the pre-flight's baseline test run happens before the first model call and is not timed.
    (ws / "tests").mkdir()
    (ws / "tests" / "test_sum.py").write_text("def test_sum():\n    assert sum([1, 2]) == 3\n")
    if git:
        for cmd in (
            ["git", "init", "-q", "-b", "main"],
            ["git", "add", "-A"],
            ["git", "-c", "user.name=bench", "-c", "user.email=bench@tether.dev", "commit", "-qm", "initial"],
        ):
            subprocess.run(cmd, cwd=ws, check=True, capture_output=True)
    return ws


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    backends = ["local"]
    reason = bwrap_available()
    if reason is None:
        backends.append("bwrap")
    rows: list[tuple[str, float, float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="tether-overhead-") as d:
        root = Path(d)
        envelope = build_envelope(root, n)
        bare = per_call(lambda: subprocess.run(["true"]), n)
        for backend in backends:
            for git in (False, True):
                label = f"{backend}, {'git' if git else 'plain'} workspace"
                ws = make_workspace(root, f"ws-{backend}-{'git' if git else 'plain'}", git)
                sandbox = make_sandbox(SandboxSpec(backend=backend, required=True), ws)
                bare_sandbox = per_call(partial(sandbox.run, "true", cwd=ws, timeout_s=30), n)
                loop = run_loop(envelope, ws, root / f"{backend}-{git}.db", backend, n)
                rows.append((label, bare, bare_sandbox, loop.per_action, loop.per_action - bare_sandbox))
    print(f"N = {n} actions per case; mean ms per action")
    if reason is not None:
        print(f"bwrap skipped: {reason}")
    head = f"{'case':26} {'bare true':>10} {'sandbox':>9} {'tether':>9} {'overhead':>9} {'x bare':>7} {'x sandbox':>10}"
    print(head)
    for label, b, s, t, o in rows:
        print(f"{label:26} {b * 1e3:10.2f} {s * 1e3:9.2f} {t * 1e3:9.2f} {o * 1e3:9.2f} {t / b:7.1f} {t / s:10.2f}")
    print("overhead = tether loop - bare sandbox run (aim: < 3 ms per action)")


if __name__ == "__main__":
    main()
