"""Memory independent of run length (issue 18): the runtime never holds the run's log whole.

The folds keep what the next step needs; the few readers of the whole history (verification, compaction,
the closing) read the store a page at a time (:mod:`tether.events.stream`). Checked by counting, never by
timing: no read of the store during a drive returns more than a page, and what the closing allocates on top
of what the run holds does not grow with the run's length (tracemalloc, with a generous margin).
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from benchkit import bench

from tether import EventStore, Harness
from tether.events import stream
from tether.events.protocol import Store
from tether.events.store import Event
from tether.kernel.session import Options, attach
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.state import RunState

PAGE = 64
LOOP = bench("loop")  # the test runs the benchmark's workload (its envelope and workspace)


class Measured:
    """One scripted run of ``n`` shell steps: the largest read of the store, and the closing's own allocations
    (tracemalloc's peak after the last model call, over what was held at that call)."""

    def __init__(self, root: Path, n: int) -> None:
        self.n, self.largest_read, self.events = n, 0, 0
        self.held = self.closing_peak = 0
        root.mkdir()
        ws = LOOP.make_workspace(root, git=False)
        measured = self

        class Counting(Harness):
            def store(self) -> Store:
                store = super().store()
                read = store.events

                def events(*a: Any, **k: Any) -> list[Event]:
                    out = read(*a, **k)
                    measured.largest_read = max(measured.largest_read, len(out))
                    return out

                store.events = events  # type: ignore[method-assign]
                return store

        model = FunctionModel(self.script, name="bench")
        self.db = root / "t.db"
        self.harness = Counting(LOOP.build_envelope(root, n), model=model, workspace=ws, db=self.db, sandbox="local")
        self.calls = 0

    def script(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        self.calls += 1
        if self.calls > self.n:  # the last call: what the run holds now; the closing comes next
            gc.collect()
            self.held = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            return ModelResponse("over", (), "refusal", "refusal", Usage(), "bench")
        call = ToolCall(f"c{self.calls}", "bash", {"command": f"true {self.calls}"})
        return ModelResponse("", (call,), "tool_request", "tool_use", Usage(1, 1), "bench")

    def run(self) -> Measured:
        tracemalloc.start()
        try:
            contract = self.harness.run("run true many times")
            self.closing_peak = tracemalloc.get_traced_memory()[1] - self.held
        finally:
            tracemalloc.stop()
        assert self.calls == self.n + 1, contract
        self.run_id = contract.run_id
        with EventStore.open(self.db) as store:
            self.events = len(store.events(contract.run_id))
        return self


def test_a_long_run_reads_its_log_a_page_at_a_time_and_its_closing_does_not_grow_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stream, "PAGE", PAGE)  # smaller than the short run's log: both closings read pages
    short = Measured(tmp_path / "short", 15).run()
    long = Measured(tmp_path / "long", 150).run()
    assert long.events > 2 * PAGE  # the whole log is pages long
    assert long.largest_read <= PAGE  # no read during the run held more than a page of it
    # The closing read the whole log as a list before (~2.5 KiB per event: 3 MiB here); now a page at a time.
    assert long.closing_peak < short.closing_peak + 1024 * 1024, (short.closing_peak, long.closing_peak)

    # Resuming it rebuilds the run from its log a page at a time too, to the same state.
    largest = 0
    with EventStore.open(long.db) as store:
        read = store.events

        def events(*a: Any, **k: Any) -> list[Event]:
            nonlocal largest
            out = read(*a, **k)
            largest = max(largest, len(out))
            return out

        store.events = events  # type: ignore[method-assign]
        runtime = attach(store, long.run_id, Options(model=FunctionModel(long.script, name="bench"), sandbox="local"))
        runtime.snapshots.close()
        store.events = read  # type: ignore[method-assign]
        whole = RunState.from_events(store.events(long.run_id))
    assert largest <= PAGE
    assert runtime.state.status == whole.status and runtime.head == (whole.last_seq, whole.head_hash)
    assert runtime.state.actions == whole.actions and runtime.state.used == whole.used


def test_the_invariant_block_from_the_paged_log_is_the_one_from_the_list(tmp_path: Path) -> None:
    """Compaction's invariant block reads only the kinds each part folds from the paged log: the same block
    as from the whole list, for a log with a plan, beliefs, a contradiction (one re-observed, one open),
    failed and repaired calls and a refused claim; staged events included."""
    from tether.events.stream import PagedLog
    from tether.kernel.compaction import invariants

    def proposed(call: str, tool: str, args: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("action.proposed", {"call_id": call, "tool": tool, "args": args, "args_hash": f"h-{args}", "turn": 1})

    def belief(key: str, value: Any, cite: str) -> tuple[str, dict[str, Any]]:
        return (
            "belief.recorded",
            {"key": key, "kind": "file_exists", "value": value, "generation": 1, "cites": [cite]},
        )

    plan = {"tasks": [{"id": "t1", "title": "fix it", "status": "ACTIVE"}]}
    with EventStore.open(tmp_path / "t.db") as store:
        run = store.create_run("t", [("run.started", {"task": "t", "budgets": {"turns": 10}})])
        store.append_many(
            run,
            [
                proposed("c1", "plan", plan),
                ("action.completed", {"call_id": "c1", "tool": "plan", "ok": True}),
                proposed("c2", "read_file", {"path": "a.py"}),
                ("action.failed", {"call_id": "c2", "tool": "read_file", "error": "missing", "failure_class": "x"}),
                proposed("c3", "bash", {"command": "make"}),
                ("action.completed", {"call_id": "c3", "tool": "bash", "ok": False, "result": {"content": "no"}}),
                belief("file:a.py", True, f"{run}#3"),
                (
                    "contradiction.detected",
                    {
                        "key": "file:a.py",
                        "severity": "high",
                        "previous": True,
                        "observed": False,
                        "explanation": "gone",
                        "cites": [f"{run}#4"],
                    },
                ),
                (
                    "contradiction.detected",
                    {
                        "key": "file:b.py",
                        "severity": "low",
                        "previous": 1,
                        "observed": 2,
                        "explanation": "moved",
                        "cites": [f"{run}#1"],
                    },
                ),
                belief("file:b.py", 2, f"{run}#6"),
                proposed("c4", "bash", {"command": "make"}),
                ("action.completed", {"call_id": "c4", "tool": "bash", "ok": True}),
            ],
        )
        whole = store.events(run)
        staged = [
            Event(
                run, len(whole), "", "completion.refused", {"reasons": ["tests fail"], "refusals": 1, "max_refusals": 3}
            )
        ]
        expected = invariants([*whole, *staged], "a.py changed")
        for page in (1, 2, 5, 512):
            view = PagedLog(store, run, lambda w=whole, s=staged: (len(w) - 1, s), page=page)
            assert invariants(view, "a.py changed") == expected
    assert "fix it" in expected and "gone" in expected and "moved" not in expected and "tests fail" in expected
    assert "read_file" in expected and "make" not in expected.split("Unresolved failures")[1]


class Growth(Measured):
    """The same run, and what it holds (tracemalloc, after a collection) at two of its model calls."""

    AT = (50, 250)

    def __init__(self, root: Path, n: int) -> None:
        super().__init__(root, n)
        self.at: dict[int, int] = {}

    def script(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> ModelResponse:
        if self.calls + 1 in self.AT:
            gc.collect()
            self.at[self.calls + 1] = tracemalloc.get_traced_memory()[0]
        return super().script(messages, tools)


def test_what_a_run_holds_per_step_is_bounded(tmp_path: Path) -> None:
    """Issue 18: what the run holds grows by a bounded amount per step. Measured 6.7 KiB a step (50th to
    250th call) while the fold kept every command's whole result (its cwd, stdout, stderr, sizes...), 5.4 KiB
    since it keeps a result's ``data`` only for the finish call, 2.7 KiB since the manifest keeps its records
    column by column, the per-call records are slotted, repeated strings shared and the fold keeps of a result
    only what is read from it (docs/design.md). Most of the rest is the uncompacted prompt: the benchmark's
    scripted model declares no window, so its transcript never compacts. The bound fails on the 5.4 KiB."""
    low, high = Growth.AT
    run = Growth(tmp_path / "run", high + 5).run()
    per_step = (run.at[high] - run.at[low]) / (high - low)
    assert per_step < 4000, per_step


def test_the_fold_keeps_of_a_result_only_what_readers_of_the_run_state_read() -> None:
    from tether.state import kept_result

    result = {"ok": True, "content": "$ true\nexit 0", "data": {"stdout": "x" * 100}, "effects": ["exec"], "blob": "b"}
    assert kept_result("bash", result) == {"blob": "b"}  # the content is read from the log (Guard.output)
    assert kept_result("finish", {"ok": True, "data": {"claim": "done"}}) == {"ok": True, "data": {"claim": "done"}}
    assert kept_result("bash", {"ok": False, "failure_class": "x", "content": "no"}) == {}
