"""A governed step against a bare one: per-step time, memory, storage, commits and fsyncs, in one run.

    python benchmarks/loop.py [--steps 50,200,1000,5000] [--repeat 3] [--cases local-plain,local-git,...]

The workload (issue 18): a scripted model asks for one shell command running ``true`` per step, N steps.
Each measurement runs in a fresh interpreter (so its peak RSS is its own) and the two sides alternate,
``--repeat`` times; the table shows medians.

- **tether**: the scripted model through :class:`tether.Harness` on the case's sandbox (local or bubblewrap)
  and workspace (plain temp dir, or a git repository): context from the log, the gate, the sandbox, the
  durable log, receipts, the control layer. Timed from the first model call to the (N+1)-th, so loading
  the envelope and finishing the run are not counted.
- **bare**: the same commands in a plain loop that runs each one the way the case's sandbox would — ``bash
  -c`` for local, bubblewrap *with the same flags tether passes it* for bwrap — and appends and fsyncs one
  JSON line per step. This is the floor a governed step is measured against.
- **langgraph** (only where ``langgraph`` and ``langgraph-checkpoint-sqlite`` are installed: ``pip install
  -e '.[bench]'``): the same loop as a LangGraph graph (agent node → tool node running ``bash -c``) with
  its SQLite checkpointer, local-plain only, up to N = 1,000.

Also printed: SQLite commits per step (counted in the store's connection between the first and last model
call), fsyncs per step (``strace -c`` of two runs of different length, the difference divided by the extra
steps, so start-up and finish cancel), peak RSS, and bytes of log per step. Figures only: nothing is
asserted here; the aims are printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
EXAMPLE = HERE.parents[1] / "examples" / "bugfix"
CASES = ("local-plain", "local-git", "bwrap-plain", "bwrap-git")
LG_MAX = 1000
"""LangGraph's column stops here: its checkpoints grow with the history (about 500 KiB per step at N = 1,000),
so N = 5,000 would take most of an hour for a figure the aims do not need (they compare at N = 200)."""


# ---- the child: one measurement in a fresh interpreter ------------------------------------------


def build_envelope(root: Path, n: int) -> Path:
    """examples/bugfix's plan and envelope, copied, with budgets raised for N steps, recompiled."""
    import yaml

    from tether.envelope.compile import compile_envelope

    dest = root / "envelope"
    dest.mkdir(exist_ok=True)
    shutil.copy(EXAMPLE / "plan.yaml", dest / "plan.yaml")
    data = yaml.safe_load((EXAMPLE / "envelope.yaml").read_text())
    headroom = 2 * n + 20  # the control layer escalates when less than 15% of a budget is left
    data["agent"]["max_turns"] = headroom
    data["budgets"].update(turns=headroom, tool_calls=headroom, tokens=10**9, usd=1000.0, wall_s=86400)
    out = dest / "envelope.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    compile_envelope(dest / "plan.yaml", out)
    return out


def make_workspace(root: Path, git: bool) -> Path:
    """A small project with one test (the run's pre-flight needs a test to collect), optionally a git repo."""
    ws = root / "ws"
    ws.mkdir()
    (ws / "README.md").write_text("benchmark workspace\n")
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


def peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def tether_loop(root: Path, backend: str, git: bool, n: int, paired: bool = False) -> dict[str, Any]:
    """tether's loop, timed from the first model call to the (N+1)-th. ``paired``: in each of its N steps, once the
    command has ended, a helper process runs and times one bare step (:class:`BareSteps`, the case's command as the
    bare loop runs it, in an interpreter of its own as there) while this one waits, and that wait is taken out of
    the tether step's time; so the two alternate step by step and each pair meets the same moment of the host. The
    bare step runs before the sandbox starts the next command's shell or sandbox ahead (sandbox/warm.py,
    sandbox/ahead.py), whose start then overlaps tether's own work as in the loop, never the bare step. Returns each
    pair's times too."""
    from tether import Harness
    from tether.events.store import EventStore
    from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
    from tether.models.function import FunctionModel

    ws = make_workspace(root, git)
    bare = BareHelper(root, backend, ws) if paired else None
    commits = [0]
    marks: list[tuple[float, float, int]] = []  # (model call's start, time waited for bare steps so far, commits)
    raws: list[float] = []  # each bare step's time (paired)
    waited = [0.0]

    def bare_step() -> None:
        """One bare step after each model call's command (not the run's pre-flight, none after the N-th)."""
        if bare is not None and len(raws) < min(n, len(marks)):
            start = time.perf_counter()
            raws.append(bare.step(len(raws) + 1))
            waited[0] += time.perf_counter() - start

    if bare is not None:
        before_next(backend, bare_step)

    def script(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        i = len(marks) + 1
        marks.append((time.perf_counter(), waited[0], commits[0]))
        if i > n:
            return ModelResponse("benchmark over", (), "refusal", "refusal", Usage(), "bench")
        # `true I`: an argument `true` ignores, so that the stuck detector does not (rightly) stop a run
        # that repeats one identical action with one identical result.
        call = ToolCall(f"c{i}", "bash", {"command": f"true {i}"})
        return ModelResponse("", (call,), "tool_request", "tool_use", Usage(1, 1), "bench")

    class Counted(Harness):
        def store(self) -> EventStore:
            store = super().store()
            store._conn = CountingConnection(store._conn, commits)
            return store

    db = root / "tether.db"
    model = FunctionModel(script, name="bench")
    harness = Counted(build_envelope(root, n), model=model, workspace=ws, db=db, sandbox=backend)
    try:
        contract = harness.run("run `true` many times")
    finally:
        if bare is not None:
            bare.close()
    if len(marks) < n + 1:
        raise SystemExit(
            f"tether ran {len(marks) - 1} of {n} steps: {contract.status}: {contract.result}"
            f" | {contract.last_error} | {contract.unknowns} | next: {contract.next_action}"
        )
    steps = [(marks[i + 1][0] - marks[i][0]) - (marks[i + 1][1] - marks[i][1]) for i in range(n)]
    out = {
        "per_step": sum(steps) / n,
        "commits": (marks[n][2] - marks[0][2]) / n,
        "rss_kib": peak_rss_kib(),
        "bytes": sum(p.stat().st_size for p in root.glob("tether.db*")) / n,
    }
    if paired:
        out |= {"steps": steps, "raws": raws}
    return out


def before_next(backend: str, step: Any) -> None:
    """Run ``step`` at each command's end, before the sandbox starts the next command's shell (local) or sandbox
    (bubblewrap) ahead: the point of a step where nothing of tether's runs in the background."""
    from tether.sandbox import BwrapSandbox, LocalSandbox

    cls: Any = BwrapSandbox if backend == "bwrap" else LocalSandbox
    name = "_set_up_next" if backend == "bwrap" else "_warm_next"
    then = getattr(cls, name)

    def first_the_step(self: Any, *args: Any) -> None:
        step()
        then(self, *args)

    setattr(cls, name, first_the_step)


class CountingConnection:
    """The store's connection, counting the COMMITs it is asked to execute (from any thread).

    Not ``set_trace_callback``: that Python callback runs inside SQLite while it holds the connection's mutex,
    so when the lease heartbeat thread's COMMIT called it while the main thread held the GIL and waited for
    that mutex (binding a read's parameters), both waited for ever: seen once in about fifteen runs."""

    def __init__(self, conn: Any, commits: list[int]) -> None:
        self._conn, self._commits = conn, commits

    def execute(self, sql: str, *args: Any) -> Any:
        if sql.lstrip()[:6].upper() == "COMMIT":
            self._commits[0] += 1
        return self._conn.execute(sql, *args)

    def executemany(self, sql: str, rows: Any) -> Any:
        """Passed on as it is (no COMMIT comes this way), without ``__getattr__``: a miss on this object raises
        and clears an ``AttributeError`` inside CPython first, twice a step, which is the benchmark's cost, not
        tether's."""
        return self._conn.executemany(sql, rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class BareSteps:
    """The bare loop's step: the case's command run the way its sandbox would start it — ``bash -c`` for local,
    bubblewrap *with the same flags tether passes it* for bwrap — then one JSON line appended and fsynced."""

    def __init__(self, root: Path, backend: str, ws: Path) -> None:
        self.ws, self.env = ws, None
        self.flags = ["/bin/bash", "-c"]
        if backend == "bwrap":
            from tether.envelope.schema import Sandbox as SandboxSpec
            from tether.sandbox.factory import make_sandbox

            sandbox: Any = make_sandbox(SandboxSpec(backend="bwrap", required=True), ws)
            sandbox.prepare(ws)
            self.env = sandbox.env(None)
            # Built once: the raw side runs none of tether's per-command work (the deny walk, the argument list),
            # only the same flags; the command's text is its last argument.
            self.flags = sandbox.argv(["/bin/bash", "-c", "true"], workspace=ws, cwd=ws)[:-1]
        self.log = root / "bare.jsonl"
        self.file = open(self.log, "ab")  # noqa: SIM115 -- closed by close(), after the loop that writes it

    def step(self, i: int) -> None:
        done = subprocess.run([*self.flags, f"true {i}"], cwd=self.ws, env=self.env, capture_output=True)
        self.file.write(json.dumps({"step": i, "exit": done.returncode, "out": done.stdout.decode()}).encode() + b"\n")
        self.file.flush()
        os.fsync(self.file.fileno())

    def close(self) -> None:
        self.file.close()


class BareHelper:
    """A process of its own that runs :class:`BareSteps` one at a time when asked (``--bare-steps``): a paired run's
    bare side, so that its Python work and its children's are another process's, as in the bare loop, not work in
    tether's process and caches. Each answer is the step's time by the helper's clock (the round trip is in
    neither side's time)."""

    def __init__(self, root: Path, backend: str, ws: Path) -> None:
        spec = json.dumps({"root": str(root), "backend": backend, "ws": str(ws)})
        argv = [sys.executable, str(HERE), "--bare-steps", spec]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._answer()  # ready: its imports and the bubblewrap flags are behind it

    def _answer(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the bare steps' helper ended (exit {self.proc.wait()})")
        return line

    def step(self, i: int) -> float:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(f"{i}\n")
        except BrokenPipeError:
            raise SystemExit(f"the bare steps' helper ended (exit {self.proc.wait()})") from None
        return float(self._answer())

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        if self.proc.wait() != 0:
            raise SystemExit(f"the bare steps' helper failed (exit {self.proc.returncode})")


def serve_bare_steps(spec: dict[str, Any]) -> None:
    """``--bare-steps``: a :class:`BareHelper`'s process. Says ready, then for each step number read, runs that bare
    step and answers its time in seconds."""
    bare = BareSteps(Path(spec["root"]), spec["backend"], Path(spec["ws"]))
    try:
        print("ready", flush=True)
        for line in sys.stdin:
            t0 = time.perf_counter()
            bare.step(int(line))
            print(repr(time.perf_counter() - t0), flush=True)
    finally:
        bare.close()


def bare_loop(root: Path, backend: str, git: bool, n: int) -> dict[str, Any]:
    """N bare steps in a plain loop: the floor a governed step is measured against."""
    bare = BareSteps(root, backend, make_workspace(root, git))
    try:
        t0 = time.perf_counter()
        for i in range(1, n + 1):
            bare.step(i)
        t1 = time.perf_counter()
    finally:
        bare.close()
    size = bare.log.stat().st_size
    return {"per_step": (t1 - t0) / n, "commits": 0.0, "rss_kib": peak_rss_kib(), "bytes": size / n}


def langgraph_loop(root: Path, n: int) -> dict[str, Any]:
    """The same loop as a LangGraph graph with its SQLite checkpointer (one checkpoint per node)."""
    import sqlite3
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langgraph.checkpoint.sqlite import SqliteSaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.graph.message import add_messages

    ws = make_workspace(root, False)

    # The functional form: evaluated here, so LangGraph can read the reducer (a class body's annotations would
    # be strings under `from __future__ import annotations`, naming locals it cannot resolve).
    State = TypedDict("State", {"messages": Annotated[list[AnyMessage], add_messages], "step": int})  # noqa: UP013

    def agent(state: Any) -> dict[str, Any]:
        i = state["step"] + 1
        if i > n:
            return {"messages": [AIMessage("benchmark over")], "step": i}
        call = {"name": "bash", "args": {"command": f"true {i}"}, "id": f"c{i}"}
        return {"messages": [AIMessage("", tool_calls=[call])], "step": i}

    def tools(state: Any) -> dict[str, Any]:
        call = state["messages"][-1].tool_calls[0]  # type: ignore[union-attr]
        done = subprocess.run(["/bin/bash", "-c", call["args"]["command"]], cwd=ws, capture_output=True)
        return {"messages": [ToolMessage(done.stdout.decode(), tool_call_id=call["id"])]}

    def route(state: Any) -> str:
        return "tools" if state["messages"][-1].tool_calls else END  # type: ignore[union-attr]

    graph = StateGraph(State)
    graph.add_node("agent", agent)
    graph.add_node("tools", tools)
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", route)
    graph.add_edge("tools", "agent")
    db = root / "langgraph.db"
    conn = sqlite3.connect(db, check_same_thread=False)
    app = graph.compile(checkpointer=SqliteSaver(conn))
    t0 = time.perf_counter()
    app.invoke({"messages": [], "step": 0}, {"configurable": {"thread_id": "bench"}, "recursion_limit": 2 * n + 10})
    t1 = time.perf_counter()
    conn.close()
    size = sum(p.stat().st_size for p in root.glob("langgraph.db*"))
    return {"per_step": (t1 - t0) / n, "commits": float("nan"), "rss_kib": peak_rss_kib(), "bytes": size / n}


def child(spec: dict[str, Any]) -> None:
    root = Path(spec["root"])
    backend, _, kind = spec["case"].partition("-")
    git = kind == "git"
    if spec["side"] in ("tether", "paired"):
        out = tether_loop(root, backend, git, spec["n"], paired=spec["side"] == "paired")
    elif spec["side"] == "bare":
        out = bare_loop(root, backend, git, spec["n"])
    else:
        out = langgraph_loop(root, spec["n"])
    print(json.dumps(out))


# ---- the parent: alternate, take medians, print the table -----------------------------------------


def measure(side: str, case: str, n: int, prefix: Sequence[str] = ()) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="tether-loop-") as d:
        spec = {"side": side, "case": case, "n": n, "root": d}
        argv = [*prefix, sys.executable, str(HERE), "--child", json.dumps(spec)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{side} {case} N={n} failed:\n{done.stdout}\n{done.stderr}")
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def fsyncs_per_step(case: str, short: int = 20, long: int = 60) -> float | None:
    """fsync + fdatasync calls per extra step between two runs of different length (strace -c)."""
    if shutil.which("strace") is None:
        return None
    counts = []
    for n in (short, long):
        with tempfile.NamedTemporaryFile(prefix="tether-strace-") as out:
            measure("tether", case, n, ["strace", "-f", "-c", "-e", "trace=fsync,fdatasync", "-o", out.name])
            text = Path(out.name).read_text()
        counts.append(
            sum(
                int(m.group(1))
                for m in re.finditer(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s.*?(?:fsync|fdatasync)\s*$", text, re.M)
            )
        )
    return (counts[1] - counts[0]) / (long - short)


def median_of(results: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key] for r in results)


def bwrap_works() -> bool:
    from tether.sandbox.factory import bwrap_available

    return bwrap_available() is None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", default="50,200,1000,5000")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs per side (N >= 1000: one)")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument(
        "--no-paired", action="store_true", help="skip the paired runs (a bare step inside each tether step)"
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--bare-steps", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    if args.bare_steps:
        serve_bare_steps(json.loads(args.bare_steps))
        return
    steps = [int(s) for s in args.steps.split(",")]
    cases = [c for c in args.cases.split(",") if c]
    if not bwrap_works():
        print("bwrap cases skipped: bubblewrap cannot start here")
        cases = [c for c in cases if not c.startswith("bwrap")]
    try:
        import langgraph.checkpoint.sqlite  # noqa: F401

        with_langgraph = True
    except ImportError:
        with_langgraph = False
    rows: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    pairs: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for n in steps:
        for case in cases:
            runs: dict[str, list[dict[str, Any]]] = {"tether": [], "bare": []}
            lg = with_langgraph and case == "local-plain" and n <= LG_MAX
            sides = ["tether", "bare"] + (["langgraph"] if lg else []) + ([] if args.no_paired else ["paired"])
            for r in range(args.repeat if n < 1000 else 1):
                for side in sides if r % 2 == 0 else sides[::-1]:
                    runs.setdefault(side, []).append(measure(side, case, n))
            pairs[(case, n)] = runs.pop("paired", [])
            rows[(case, n)] = {side: {k: median_of(v, k) for k in v[0]} for side, v in runs.items()}
    report(rows, cases, steps, with_langgraph)
    if not args.no_paired:
        report_pairs(pairs, cases, steps)


def report(
    rows: dict[tuple[str, int], dict[str, dict[str, Any]]], cases: list[str], steps: list[int], lg: bool
) -> None:
    print("separate runs (tether's and the bare loop's, each timed in runs of its own; medians of the runs):")
    print(
        f"{'case':12} {'N':>5} {'tether ms':>10} {'bare ms':>8} {'x bare':>7} {'+ms':>6} {'commits':>8}"
        f" {'KiB/step':>9} {'RSS MiB':>8} {'lg ms':>7} {'x lg':>6}"
    )
    for case in cases:
        for n in steps:
            t, b = rows[(case, n)]["tether"], rows[(case, n)]["bare"]
            lgr = rows[(case, n)].get("langgraph")
            lcol = (
                f"{lgr['per_step'] * 1e3:7.2f} {t['per_step'] / lgr['per_step']:6.2f}" if lgr else f"{'-':>7} {'-':>6}"
            )
            print(
                f"{case:12} {n:5d} {t['per_step'] * 1e3:10.2f} {b['per_step'] * 1e3:8.2f}"
                f" {t['per_step'] / b['per_step']:7.2f} {(t['per_step'] - b['per_step']) * 1e3:6.2f}"
                f" {t['commits']:8.2f} {t['bytes'] / 1024:9.2f} {t['rss_kib'] / 1024:8.1f} {lcol}"
            )
    print("aims: local <= 2.5 ms/step and <= 3x bare; bwrap <= bare (raw bwrap, same flags) + 1.5 ms (judged on")
    print("      the paired median below where it was run: separate runs of raw bwrap differ by more than the aim);")
    print("      <= 2 commits and <= 1 fsync per step; <= 4 KiB/step; N=5000 per-step within 10% of N=200;")
    print("      RSS at N=5000 within 20 MiB of N=50; <= 0.5x LangGraph at N=200")
    for case in cases:
        if 200 in steps and 5000 in steps:
            a, z = rows[(case, 200)]["tether"]["per_step"], rows[(case, 5000)]["tether"]["per_step"]
            print(f"{case}: per-step N=5000 / N=200 = {z / a:.2f}")
        if 50 in steps and max(steps) > 50:
            lo, hi = rows[(case, 50)]["tether"]["rss_kib"], rows[(case, max(steps))]["tether"]["rss_kib"]
            print(f"{case}: peak RSS N={max(steps)} - N=50 = {(hi - lo) / 1024:.1f} MiB")
    for case in cases:
        f = fsyncs_per_step(case)
        print(f"{case}: fsyncs per step = {'strace not found' if f is None else f'{f:.2f}'}")
    if not lg:
        print("LangGraph column: not installed (pip install -e '.[bench]')")


def paired_summary(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """What the paired runs say: each pair's difference (tether step minus the bare step run inside it), their
    median over all runs' pairs, its spread (quartiles of the pairs, the median of each run) and a 95 % interval
    for the median from the order statistics (ranks n/2 -+ 0.98 sqrt(n); it takes the pairs as independent, which
    neighbouring steps on a loaded host are not, so the runs' medians are printed beside it)."""
    diffs = sorted(t - r for run in runs for t, r in zip(run["steps"], run["raws"], strict=True))
    if not diffs:
        raise ValueError("paired_summary: no pairs (each run needs 'steps' and 'raws' of equal, non-zero length)")
    n = len(diffs)
    half = 0.98 * n**0.5
    lo, hi = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half + 0.999))
    q1, _, q3 = statistics.quantiles(diffs, n=4) if n > 1 else (diffs[0],) * 3
    return {
        "pairs": n,
        "tether": statistics.median(t for run in runs for t in run["steps"]),
        "bare": statistics.median(r for run in runs for r in run["raws"]),
        "median": statistics.median(diffs),
        "q1": q1,
        "q3": q3,
        "ci": (diffs[lo], diffs[hi]),
        "runs": [statistics.median(t - r for t, r in zip(run["steps"], run["raws"], strict=True)) for run in runs],
        "ratio": statistics.median(t / r for run in runs for t, r in zip(run["steps"], run["raws"], strict=True)),
    }


def report_pairs(pairs: dict[tuple[str, int], list[dict[str, Any]]], cases: list[str], steps: list[int]) -> None:
    print()
    print("paired runs (in each tether step, at its command's end, a bare step in a helper process, its time taken")
    print("out of tether's; N pairs a run; +ms: tether step minus its bare step, median over all runs' pairs, the")
    print("pairs' quartiles, a 95 % interval of the median taking pairs as independent, and each run's median):")
    print(
        f"{'case':12} {'N':>5} {'pairs':>6} {'tether ms':>10} {'bare ms':>8} {'+ms':>6} {'quartiles':>13}"
        f" {'95% of median':>14} {'x bare':>7}  each run's +ms"
    )
    for case in cases:
        for n in steps:
            if not pairs.get((case, n)):
                continue
            s = paired_summary(pairs[(case, n)])
            print(
                f"{case:12} {n:5d} {s['pairs']:6d} {s['tether'] * 1e3:10.2f} {s['bare'] * 1e3:8.2f}"
                f" {s['median'] * 1e3:+6.2f} {s['q1'] * 1e3:+6.2f}..{s['q3'] * 1e3:+.2f}"
                f" {s['ci'][0] * 1e3:+6.2f}..{s['ci'][1] * 1e3:+.2f} {s['ratio']:7.2f}  "
                + " ".join(f"{m * 1e3:+.2f}" for m in s["runs"])
            )


if __name__ == "__main__":
    main()
