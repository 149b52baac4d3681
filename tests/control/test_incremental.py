"""The control layer's incremental fold: same output as from scratch, and work per call that does not grow.

``observe``, ``control_state`` and ``stop_reason`` read a per-run fold cached by chain hash
(``tether.control.fold``), the package's only path; ``oracle.observe_log`` is the from-scratch
composition of the same stages, kept here, that they must equal.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from control_helpers import Run, envelope
from oracle import last, observe_log

from tether.canonical import canonical_json
from tether.control import control_state, fold, observe, stop_reason
from tether.control.receipts import LogView
from tether.envelope.schema import Effect, ToolContract
from tether.events.chain import event_hash
from tether.events.store import Event
from tether.review import judge_completion, review_action
from tether.status import ControlState


def trajectory(run: Run) -> None:
    """A run touching every input of the control layer: plan and hypotheses, writes that oscillate,
    failing tests and sensors, a contradiction, stuck patterns, recovery switches, completion claims."""
    run.act("plan", {"tasks": [{"id": "fix", "title": "fix add", "status": "ACTIVE", "files": ["src/**"]}]})
    run.run_tests(["tests/test_calc.py::test_add", "tests/test_calc.py::test_sub"])
    run.act("hypothesis", {"id": "h1", "statement": "add is wrong", "files": ["src/calc.py"], "tests": ["test_add"]})
    run.write("src/new.py", None, "x = 1\n")
    run.act("read_file", {"path": "src/new.py"}, ok=False, content="not found", failure_class="not_found")
    run.act("list_dir", {"path": "src"}, content="calc.py")
    run.act("read_file", {"path": "src/new.py"}, content="x = 1\n")
    for before, after in [("a", "b"), ("b", "a"), ("a", "b"), ("b", "c")]:
        run.write("src/calc.py", before, after)
    run.act("bash", {"command": "rg foo"}, ok=False, data={"exit_code": 127}, failure_class="nonzero_exit")
    run.model("thinking")
    run.model("still thinking")
    run.model("more thinking")
    run.model("a tool call", calls=1)
    run.model("one")
    run.model("two")
    run.append([("action.proposed", {"call_id": "d1", "tool": "bash", "args": {}, "args_hash": "x", "turn": 1})])
    run.model("three")  # an action was proposed since "one" and "two": not three responses in a row
    for _ in range(2):
        run.act("read_file", {"path": "a.py"}, content="A")
        run.act("read_file", {"path": "b.py"}, content="B")
    run.act("hypothesis", {"id": "h1", "act": True})
    run.act("plan", {"tasks": [{"id": "fix", "status": "VERIFYING"}]})
    run.sensor("tests", "FAIL", ["tests/test_calc.py::test_add"])
    run.act("plan", {"tasks": [{"id": "fix", "status": "COMPLETE"}, {"id": "bad", "status": "COMPLETE"}]})
    for i in range(12):
        run.write("src/calc.py", f"v{i}", f"v{i + 1}")
        run.run_tests(["tests/test_calc.py::test_add"])
        if stop_reason(run.events):
            break
    run.sensor("syntax", "PASS")
    for status in ("ACTIVE", "VERIFYING", "COMPLETE"):  # a task completed on an accepted verification
        run.act("plan", {"tasks": [{"id": "docs", "status": status}]})
    run.write("src/calc.py", "v", "w")  # ...and one completed after a later write: not supported
    for status in ("ACTIVE", "VERIFYING", "COMPLETE"):
        run.act("plan", {"tasks": [{"id": "docs2", "status": status}]})
    run.append([("completion.claimed", {"call_id": "f1", "summary": "done"})])
    run.sensor("tests", "FAIL", ["tests/test_calc.py::test_add"])
    run.append(judge_completion(run.events, run.env, call_id="f1"))
    run.observe()


def prefixes(events: list[Event]) -> Iterator[list[Event]]:
    for k in range(1, len(events) + 1):
        yield events[:k]


def test_observe_warm_equals_cold_equals_from_scratch_on_every_prefix(tmp_path: Path) -> None:
    run = Run(tmp_path, envelope(budgets={"tool_calls": 200, "turns": 100, "usd": 5.0}))
    trajectory(run)
    log = run.events
    kinds = {e.kind for e in log}
    # the log exercises every stage: beliefs, contradictions, plan, hypotheses, stuck, diagnostics, resolution
    assert {"contradiction.detected", "plan.updated", "hypothesis.recorded", "stuck.detected"} <= kinds
    assert {"recovery.switched", "control.changed", "completion.refused"} <= kinds
    fold.clear()
    nonempty = 0
    for events in prefixes(log):  # warm: each call extends the fold of the previous prefix
        warm = observe(events, run.env)
        assert warm == observe_log(events, run.env), f"at seq {events[-1].seq}"
        assert control_state(events) == _reference_state(events)
        for path in ("src/calc.py", "tests/test_calc.py", "docs/x.md"):
            write = ToolContract(name="t", purpose="p", effects=[Effect.WRITE])
            unchained = list(_unchained(events))
            assert review_action(write, {"path": path}, events, run.env) == review_action(
                write, {"path": path}, unchained, run.env
            )
        nonempty += bool(warm)
    assert nonempty > 10  # many prefixes end before the control layer's output: observe had work to do
    for events in [log[:40], log[:200], log]:  # cold: nothing cached
        fold.clear()
        assert observe(events, run.env) == observe_log(events, run.env)
        fold.clear()
        assert stop_reason(events) == stop_reason(list(_unchained(events)))


def test_repeated_calls_on_a_log_whose_output_was_not_appended(tmp_path: Path) -> None:
    """The resumed belief replay keeps output that was computed but not appended."""
    run = Run(tmp_path, auto_observe=False)
    run.run_tests(["t::a"])
    first = observe(run.events, run.env)
    assert first and first == observe(run.events, run.env)
    run.write("src/calc.py", "a", "b")  # more input, the earlier output still not appended
    run.run_tests(["t::a", "t::b"])
    assert observe(run.events, run.env) == observe_log(run.events, run.env)
    run.observe()
    assert observe(run.events, run.env) == [] == observe_log(run.events, run.env)


def test_a_log_that_is_not_a_chain_gets_a_fresh_fold_each_call(tmp_path: Path) -> None:
    run = Run(tmp_path)
    trajectory(run)
    log = run.events
    gap = [e for e in log if e.kind != "model.responded"]  # hashes no longer link
    fold.clear()
    assert fold.folded(gap) is not fold.folded(gap)  # never cached: a cache is keyed by the chain
    assert observe(gap, run.env) == observe_log(gap, run.env)
    assert control_state(gap) == _reference_state(gap)
    assert fold.folded(log) is fold.folded(log)
    unchained = list(_unchained(log))
    assert observe(unchained, run.env) == observe_log(unchained, run.env)
    assert stop_reason(unchained) == stop_reason(log)


def test_a_log_rewritten_behind_the_cached_fold_is_not_read_from_the_cache(tmp_path: Path) -> None:
    """The cache is keyed by the chain hash at the fold's head: a log whose past was rewritten (and
    re-chained, as a rewrite must be to pass verification) is folded anew."""
    run = Run(tmp_path)
    trajectory(run)
    log = run.events
    fold.folded(log)
    i = next(i for i, e in enumerate(log) if e.kind == "control.changed" and e.payload["state"] != "NORMAL")
    e = log[i]
    edited = Event(e.run_id, e.seq, e.ts, e.kind, {**e.payload, "state": "NORMAL"})
    rewritten = rechain([*log[:i], edited, *log[i + 1 :]])
    assert rewritten[-1].hash != log[-1].hash
    assert fold.folded(rewritten) is not fold.folded(log)
    assert observe(rewritten, run.env) == observe_log(rewritten, run.env)
    assert control_state(rewritten) == _reference_state(rewritten)


def rechain(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    prev = events[0].prev_hash
    for e in events:
        h = event_hash(prev, e.run_id, e.seq, e.ts, e.kind, canonical_json(e.payload))
        out.append(Event(e.run_id, e.seq, e.ts, e.kind, e.payload, prev, h))
        prev = h
    return out


def _reference_state(events: list[Event]) -> ControlState:
    changed = last(events, "control.changed")
    return ControlState(changed.payload["state"]) if changed else ControlState.NORMAL


def _unchained(events: list[Event]) -> Iterator[Event]:
    for e in events:
        yield Event(e.run_id, e.seq, e.ts, e.kind, e.payload, "", "")


def counting(monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> list[int]:
    """Count calls of ``cls.name``."""
    calls = [0]
    original: Callable[..., Any] = getattr(cls, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(cls, name, wrapper)
    return calls


def test_work_per_call_does_not_grow_with_the_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kernel step's control calls take in only the events appended since the previous step."""
    touched = counting(monkeypatch, LogView, "add")  # events taken into a log view
    replayed = counting(monkeypatch, fold, "record_observations")  # receipts replayed by derive
    run = Run(tmp_path, envelope(budgets={"tool_calls": 10_000, "turns": 10_000}), auto_observe=False)
    per_step: list[tuple[int, int, int]] = []
    for i in range(150):
        run.act("bash", {"command": f"true {i}"}, data={"exit_code": 0})
        events = run.events
        touched[0] = replayed[0] = 0
        stop_reason(events)
        control_state(events)
        run.append(observe(events, run.env))
        assert observe(run.events, run.env) == []
        per_step.append((len(events), touched[0], replayed[0]))
    assert per_step[-1][0] > 600
    # the same work at 60 events as at 600: the events of one step, and no view rebuilt from the start
    assert {t for _, t, _ in per_step[10:]} == {per_step[10][1]}
    assert per_step[10][1] <= 12
    assert max(r for _, _, r in per_step[10:]) <= 1


def test_the_folds_receipts_join_the_proposals_a_standalone_view_keeps() -> None:
    """The run's fold reads each call's proposal from its run state (issue 18), not from a copy of its own: its
    receipts join the same arguments and hash as a standalone :class:`LogView`'s, for a call id proposed again
    with other arguments and a failure."""

    def proposed(call: str, tool: str, args: dict[str, Any], h: str) -> tuple[str, dict[str, Any]]:
        return "action.proposed", {"call_id": call, "tool": tool, "args": args, "args_hash": h, "turn": 1}

    def completed(call: str, tool: str) -> tuple[str, dict[str, Any]]:
        return "action.completed", {"call_id": call, "tool": tool, "ok": True, "result": {"content": call}}

    log = [
        ("run.started", {"task": "t"}),
        proposed("c1", "bash", {"command": "ls"}, "h-ls"),
        completed("c1", "bash"),
        proposed("c1", "bash", {"command": "pwd"}, "h-pwd"),  # the same id again, other arguments
        ("action.failed", {"call_id": "c1", "tool": "bash", "error": "x", "failure_class": "crash"}),
        proposed("c2", "read_file", {"path": "a.py"}, "h-a"),
        completed("c2", "read_file"),
    ]
    events = [Event("r", seq, "2026-01-01T00:00:00+00:00", kind, payload) for seq, (kind, payload) in enumerate(log)]
    run_fold = fold.RunFold()
    run_fold.extend(events, chained=False)
    joined = [(a.call_id, a.args, a.args_hash, a.ok) for a in run_fold.window.last4]
    alone = LogView(events)
    for e in events:
        alone.add(e)
    assert joined == [(a.call_id, a.args, a.args_hash, a.ok) for a in alone.actions]
    assert [j[2] for j in joined] == ["h-ls", "h-pwd", "h-a"]
    assert run_fold.lv.proposals is run_fold.state.actions and not run_fold.lv._proposals  # no second copy
