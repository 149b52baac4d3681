from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from control_helpers import Run, envelope

from tether.control import BeliefView, ControlState, control_state, guidance, observe, stop_reason
from tether.control.recovery import LADDER
from tether.errors import StaleBelief
from tether.kernel.steps import human_required, verification_exhausted
from tether.review import judge_completion
from tether.state import RunState


def assert_idempotent(run: Run) -> None:
    assert observe(run.events, run.env) == []


def test_false_done_is_refused_then_verify_failed(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.run_tests(["tests/test_calc.py::test_add"])
    for i in range(3):
        run.append([("completion.claimed", {"call_id": f"f{i}", "summary": "done!"})])
        run.sensor("tests", "FAIL", ["tests/test_calc.py::test_add"])
        out = judge_completion(run.events, run.env, call_id=f"f{i}")
        assert out[-1].KIND == "completion.refused"
        run.append(out)
        if i < 2:
            assert (
                stop_reason(run.events) is None
                and verification_exhausted(RunState.from_events(run.events), run.env) is None
            )
            text = guidance(run.events)
            assert text is not None and "refused" in text and "tests/test_calc.py:3" in text
    status, reason = verification_exhausted(RunState.from_events(run.events), run.env) or (
        "",
        "",
    )  # decided by next_step
    assert status == "VERIFY_FAILED" and "3 times" in reason
    run.observe()
    assert_idempotent(run)


def test_accepted_completion_cites_sensor_events(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.sensor("tests", "PASS")
    out = judge_completion(run.events, run.env, call_id="f")
    assert out[-1].KIND == "completion.accepted"
    sensor_ids = [e.id for e in run.kinds("sensor.result")]
    assert set(sensor_ids) <= set(out[-1].model_dump()["evidence"])
    assert stop_reason([*run.events]) is None


def test_missing_required_sensor_blocks_completion(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.sensor("tests", "SKIPPED")
    run.append(
        [
            (
                "verify.completed",
                {
                    "results": {"tests": "SKIPPED"},
                    "accepted": False,
                    "reasons": ["required sensor tests was SKIPPED: pytest missing"],
                },
            )
        ]
    )
    out = judge_completion(run.events, run.env)
    assert out[-1].KIND == "completion.refused"
    assert "SKIPPED" in out[-1].model_dump()["reasons"][0]


def test_repeated_identical_failures_climb_the_ladder_to_no_progress(tmp_path: Path) -> None:
    run = Run(tmp_path)
    seen: list[str] = []
    for i in range(40):
        run.write("src/calc.py", f"v{i}", f"v{i + 1}")  # a different edit each time...
        run.run_tests(["tests/test_calc.py::test_add"])  # ...with the same failure
        switched = run.kinds("recovery.switched")
        seen = [e.payload["strategy"] for e in switched]
        if stop_reason(run.events):
            break
    assert seen == list(LADDER[1:])
    assert control_state(run.events) == ControlState.HUMAN_REQUIRED
    stop = stop_reason(run.events)
    assert stop is not None and stop.no_progress
    status, reason = human_required(stop)  # the status is the kernel's to name
    assert status == "NO_PROGRESS" and "escalate_human" in reason
    changes = run.kinds("control.changed")
    assert any(c.payload["state"] == "BLOCKED" and c.payload["dimension"] == "failure_recurrence" for c in changes)
    # Every switch carried structured guidance and the budget it was checked against.
    assert all("Recovery strategy:" in e.payload["guidance"] and "Do:" in e.payload["guidance"] for e in switched[:-1])
    assert all("plan_revisions" in e.payload["budget"] for e in switched)
    assert_idempotent(run)


def test_blocked_run_recovers_when_the_new_strategy_progresses(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for i in range(3):
        run.write("src/calc.py", f"v{i}", f"v{i + 1}")
        run.run_tests(["t::a"])
    assert control_state(run.events) == ControlState.BLOCKED
    text = guidance(run.events)
    assert text is not None and "trace_execution" in text and "Only read-only" in text
    run.model("looking", calls=1)
    run.act("read_file", {"path": "src/calc.py"}, content="def add(): ...")
    assert control_state(run.events) == ControlState.NORMAL
    run.write("src/calc.py", "v3", "fixed")
    run.run_tests([])
    assert control_state(run.events) == ControlState.NORMAL
    assert stop_reason(run.events) is None


def test_recovery_budget_exhausted_escalates(tmp_path: Path) -> None:
    run = Run(tmp_path, envelope(budgets={"tool_calls": 8}))
    for i in range(3):
        run.write("src/calc.py", f"v{i}", f"v{i + 1}")
        run.run_tests(["t::a"])
    assert control_state(run.events) == ControlState.HUMAN_REQUIRED
    last = run.kinds("control.changed")[-1].payload
    assert "recovery budget exhausted" in last["reason"] and "tool calls left" in last["reason"]


def test_contradiction_blocks_until_reobserved(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.write("src/new.py", None, "x = 1\n")
    run.act("read_file", {"path": "src/new.py"}, ok=False, content="not found", failure_class="not_found")
    c = run.kinds("contradiction.detected")
    assert len(c) == 1 and c[0].payload["severity"] == "system_breaking"
    assert control_state(run.events) == ControlState.BLOCKED
    assert run.kinds("control.changed")[-1].payload["tier"] == "contradiction"
    assert_idempotent(run)
    run.act("list_dir", {"path": "src"}, content="calc.py")
    run.act("read_file", {"path": "src/new.py"}, ok=False, content="still not found", failure_class="not_found")
    assert control_state(run.events) != ControlState.BLOCKED


def test_tests_disagreeing_on_same_state_is_a_high_contradiction(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.run_tests(["t::a"])
    run.sensor("tests", "PASS")
    c = run.kinds("contradiction.detected")
    assert [x.payload["severity"] for x in c] == ["high"]
    run.write("src/calc.py", "a", "b")
    run.run_tests(["t::a"])
    assert len(run.kinds("contradiction.detected")) == 1  # a new state: no contradiction


def test_beliefs_cite_receipts_and_generations_increase(tmp_path: Path) -> None:
    run = Run(tmp_path)
    first = run.run_tests(["t::a", "t::b"])
    bv = BeliefView.from_events(run.events)
    b = bv.read("tests.failing")
    assert b is not None and b.value == ["t::a", "t::b"] and b.cites == (first.id,)
    pinned = b.generation
    second = run.run_tests(["t::b"])
    bv = BeliefView.from_events(run.events)
    with pytest.raises(StaleBelief):
        bv.read("tests.failing", pinned)
    fresh = bv.read("tests.failing", bv.generation)
    assert fresh is not None and fresh.value == ["t::b"] and fresh.cites == (second.id,)
    gens = [e.payload["generation"] for e in run.kinds("belief.recorded")]
    assert gens == sorted(gens) and len(set(gens)) == len(gens)


def test_command_availability_belief(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.act("bash", {"command": "rg foo"}, ok=False, data={"exit_code": 127}, failure_class="nonzero_exit")
    run.act("bash", {"command": "rg bar"}, ok=False, data={"exit_code": 127}, failure_class="nonzero_exit")
    beliefs = [e for e in run.kinds("belief.recorded") if e.payload["key"] == "command:rg"]
    assert len(beliefs) == 1 and beliefs[0].payload["value"] is False


def test_oscillating_edit_revert_raises_control(tmp_path: Path) -> None:
    run = Run(tmp_path)
    states = ["A", "B", "A", "B", "A"]
    for before, after in itertools.pairwise(states):
        run.write("src/calc.py", before, after)
    diag = run.kinds("diagnostics.computed")[-1].payload
    assert diag["dimensions"]["oscillation"] == 0.0 and "3 edit/revert flips" in diag["notes"]["oscillation"]
    change = run.kinds("control.changed")
    assert [c.payload["state"] for c in change][:2] == ["CAUTIOUS", "BLOCKED"]
    assert change[1].payload["dimension"] == "oscillation"


def test_stuck_repeated_action_but_polling_is_exempt(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for i in range(4):
        run.act("bash", {"command": "job status"}, content=f"running: {i * 10}% done", data={"exit_code": 0})
    assert run.kinds("stuck.detected") == []
    for _ in range(3):
        run.act("bash", {"command": "job status"}, content="running: 40% done", data={"exit_code": 0})
    stuck = run.kinds("stuck.detected")
    assert [s.payload["pattern"] for s in stuck] == ["repeated_action"]
    assert control_state(run.events) == ControlState.BLOCKED
    assert_idempotent(run)


def test_stuck_alternation_and_no_action(tmp_path: Path) -> None:
    run = Run(tmp_path)
    for _ in range(2):
        run.act("read_file", {"path": "a.py"}, content="A")
        run.act("read_file", {"path": "b.py"}, content="B")
    assert "alternation" in [s.payload["pattern"] for s in run.kinds("stuck.detected")]
    run2 = Run(tmp_path / "two")
    for _ in range(3):
        run2.model("I think I should look at the code")
    assert [s.payload["pattern"] for s in run2.kinds("stuck.detected")] == ["no_action"]
    assert stop_reason(run2.events) is None


def test_observe_is_idempotent_everywhere(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.write("src/calc.py", "a", "b")
    run.run_tests(["t::a"])
    run.act("read_file", {"path": "src/gone.py"}, ok=False, failure_class="not_found")
    out = run.observe()
    assert {p.KIND for p in out} >= {"belief.recorded", "diagnostics.computed"}
    assert_idempotent(run)
    assert observe(run.events, run.env) == []
