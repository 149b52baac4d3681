"""Commits per step: a tool step is written in two transactions, the first synced before its command runs.

The runtime stages a step's events and writes them where it matters (kernel/runtime.py ``flush``); these tests
count the store connection's commits, look at the log from another process while the command runs, count
fsyncs with strace, and break the write in the middle of a step (docs/store.md, "Commits per step").
"""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, FIX, write_script
from test_crash_resume import MARK, marker_lines

import tether.kernel.runtime as runtime_module
from tether import EventStore, Harness
from tether.errors import HeadMoved
from tether.events import Store
from tether.events.kinds import Checkpoint
from tether.events.store import Batch, Event
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel

STEPS = 4
# Run by each step's command: what the log holds at that moment, read by another process.
PROBE = """import json, sqlite3
db = sqlite3.connect("file:{db}?mode=ro", uri=True)
kind, payload = db.execute("SELECT kind, payload FROM events ORDER BY seq DESC LIMIT 1").fetchone()
print("LOG-HEAD", kind, json.loads(payload).get("call_id"))
"""


def probing_model(steps: int, first: str = "") -> FunctionModel:
    """``steps`` calls of the probe (each its own call id and arguments; ``first``, a command before it), then a
    refusal that ends the run."""
    calls = [0]

    def provider(messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        calls[0] += 1
        if calls[0] > steps:
            return ModelResponse("done", (), "refusal", "refusal", Usage(), "fn")
        call = ToolCall(f"c{calls[0]}", "bash", {"command": f"{first}python probe.py {calls[0]}"})
        return ModelResponse("", (call,), "tool_request", "tool_use", Usage(1, 1), "fn")

    return FunctionModel(provider)


def with_probe(bugfix: Path) -> Path:
    db = bugfix / "t.db"
    (bugfix / "project" / "probe.py").write_text(PROBE.format(db=db))
    return db


class Traced:
    """Every COMMIT on the store's connection, with the ``synchronous`` mode it ran under, and every batch written."""

    def __init__(self) -> None:
        self.mode = "FULL"  # what EventStore.open sets
        self.log: list[tuple[str, Any]] = []  # ("commit", mode) | ("batch", (durable, kinds)) | ("model", None)

    def sql(self, statement: str) -> None:
        found = re.match(r"\s*PRAGMA synchronous=(\w+)", statement)
        if found:
            self.mode = found.group(1)
        elif statement.lstrip()[:6].upper() == "COMMIT":
            self.log.append(("commit", self.mode))

    def steps(self) -> list[list[tuple[str, Any]]]:
        """What happened between one model call and the next: one list per tool step."""
        marks = [i for i, (what, _) in enumerate(self.log) if what == "model"]
        return [self.log[a + 1 : b] for a, b in itertools.pairwise(marks)]


def traced_harness(bugfix: Path, db: Path, traced: Traced, sink: Callable[[Event], None]) -> Harness:
    model = probing_model(STEPS)
    asked = model.complete

    def complete(*args: Any, **kwargs: Any) -> ModelResponse:
        traced.log.append(("model", None))
        return asked(*args, **kwargs)

    model.complete = complete  # type: ignore[method-assign]

    class Counted(Harness):
        def store(self) -> Store:
            store = super().store()
            assert isinstance(store, EventStore)
            store._conn.set_trace_callback(traced.sql)
            write = store.append_batch

            def append_batch(batch: Batch) -> None:
                write(batch)
                traced.log.append(("batch", (batch.durable, [e.kind for e in batch.events])))

            store.append_batch = append_batch  # type: ignore[method-assign]
            return store

    return Counted(bugfix / "envelope.yaml", model=model, db=db, sandbox="local", on_event=sink)


def test_a_tool_step_is_two_commits_the_first_synced_before_its_command_runs(bugfix: Path) -> None:
    db = with_probe(bugfix)
    traced = Traced()
    late: list[str] = []

    def sink(e: Event) -> None:  # told of an event only once another connection can read it
        with EventStore.open(db, readonly=True) as reader:
            if reader.head(e.run_id)[0] < e.seq:
                late.append(e.kind)

    traced_harness(bugfix, db, traced, sink).run("probe the log")
    assert late == []
    steps = traced.steps()
    assert len(steps) == STEPS
    for step in steps:  # two commits, nothing else commits in a step; the synced one carries action.started
        assert [what for what, _ in step] == ["commit", "batch", "commit", "batch"], step
        (_, first), (_, (synced, turn)), (_, second), (_, (also_synced, after)) = step
        assert (first, synced, turn[0], turn[-1]) == ("FULL", True, "model.responded", "action.started"), step
        assert (second, also_synced, after[0], after[-1]) == ("NORMAL", False, "action.completed", "model.requested")
    with EventStore.open(db, readonly=True) as store:
        (info,) = store.runs()
        outputs = [e.payload["result"]["content"] for e in store.events(info.run_id) if e.kind == "action.completed"]
    # While each command ran, the log (read by another process) ended with that very call's action.started.
    assert [re.findall(r"LOG-HEAD (\S+) (\S+)", out) for out in outputs] == [
        [("action.started", f"c{i}")] for i in range(1, STEPS + 1)
    ]


STRACED = """
import sys
sys.path[:0] = sys.argv[4:]
from test_commits import probing_model
from tether import Harness
Harness(sys.argv[1], model=probing_model(int(sys.argv[2])), db=sys.argv[3], sandbox="local").run("probe")
"""


@pytest.mark.slow
@pytest.mark.strace
def test_one_fsync_per_tool_step_and_it_comes_before_the_command(bugfix: Path, tmp_path: Path) -> None:
    """strace follows the run and its commands: between one step's command and the next there is exactly one
    fsync (the durable commit), so every command starts after its action.started is on disk."""
    db = with_probe(bugfix)
    out = tmp_path / "strace.txt"
    here = Path(__file__).parent  # and tests/, whose helpers runkit imports: the test modules' path, as pytest's
    traced = ["strace", "-f", "-qq", "-o", str(out), "-e", "trace=fsync,fdatasync,execve"]
    run = [
        sys.executable,
        "-c",
        STRACED,
        str(bugfix / "envelope.yaml"),
        str(STEPS),
        str(db),
        str(here),
        str(here.parent),
    ]
    proc = subprocess.run(
        [*traced, *run],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    calls = [
        "sync" if re.search(r"\b(fsync|fdatasync)\(", line) else "probe"
        for line in out.read_text().splitlines()
        if re.search(r"\b(fsync|fdatasync)\(", line) or re.search(r'execve\("[^"]*", \["python", "probe\.py"', line)
    ]
    probes = [i for i, c in enumerate(calls) if c == "probe"]
    assert len(probes) == STEPS, calls
    between = [calls[a + 1 : b].count("sync") for a, b in itertools.pairwise(probes)]
    assert between == [1] * (STEPS - 1), calls
    assert "sync" in calls[: probes[0]]


@pytest.mark.slow
def test_an_error_mid_step_keeps_what_was_recorded_and_resume_goes_on(
    bugfix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An exception between staging and writing (here the decider breaking) writes what was staged, whole, on
    the way out; the log verifies and a resumed run decides the proposed call, runs it once and completes."""
    write_script(bugfix, [{"tool_calls": [MARK]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    monkeypatch.setattr(runtime_module, "decide", broken)
    with pytest.raises(RuntimeError, match="the decider broke"):
        Harness(bugfix / "envelope.yaml", db=db, sandbox="local").run("fix the median")
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    assert kinds[-2:] == ["model.responded", "action.proposed"] and "action.decided" not in kinds
    monkeypatch.undo()
    contract = Harness(bugfix / "envelope.yaml", db=db, sandbox="local").resume(info.run_id)
    assert contract.status.value == "COMPLETE", contract
    assert marker_lines(bugfix) == 1


def broken(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the decider broke")


def test_a_staged_step_whose_write_fails_is_dropped_whole_and_nothing_runs(
    bugfix: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer moves the head while a step is staged: the durable write before the command fails
    (HeadMoved), none of the step's events land, the command never runs, and the log verifies."""
    write_script(bugfix, [{"tool_calls": [MARK]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    decide = runtime_module.decide

    def interloper(*args: Any, **kwargs: Any) -> Any:
        with EventStore.open(db) as other:
            (info,) = other.runs()
            other.append(info.run_id, Checkpoint(label="other", note="another writer"))
        return decide(*args, **kwargs)

    monkeypatch.setattr(runtime_module, "decide", interloper)
    with pytest.raises(HeadMoved):
        Harness(bugfix / "envelope.yaml", db=db, sandbox="local").run("fix the median")
    assert marker_lines(bugfix) == 0
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    assert kinds[-2:] == ["model.requested", Checkpoint.KIND]  # the staged turn, decision and start: none of them
    assert not {"model.responded", "action.decided", "action.started"} & set(kinds)
