from __future__ import annotations

from pathlib import Path

from control_helpers import Run, envelope

from tether.control import DIMENSIONS, compute


def dims(run: Run) -> dict[str, float]:
    d = compute(run.events, run.env).values
    assert set(d) == set(DIMENSIONS)
    assert all(0.0 <= v <= 1.0 for v in d.values()), d
    return d


def test_fresh_run_is_healthy(tmp_path: Path) -> None:
    assert set(dims(Run(tmp_path)).values()) == {1.0}


def test_progress_rate_falls_with_repeated_observations(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.act("read_file", {"path": "a"}, content="A")
    high = dims(run)["progress_rate"]
    for _ in range(5):
        run.act("read_file", {"path": "a"}, content="A")
    assert dims(run)["progress_rate"] < high
    assert dims(run)["progress_rate"] == round(2 / 7, 4)


def test_failure_recurrence_counts_attempts_not_duplicate_observers(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.run_tests(["t::a"])
    run.sensor("tests", "FAIL", ["t::a"])  # same state, same failure, second observer: still one attempt
    assert dims(run)["failure_recurrence"] == 1.0
    run.write("src/x.py", "1", "2")
    run.run_tests(["t::a"])
    assert dims(run)["failure_recurrence"] == 0.5
    run.write("src/x.py", "2", "3")
    run.run_tests(["t::a"])
    assert dims(run)["failure_recurrence"] == 0.0


def test_oscillation_counts_returns_to_earlier_content(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.write("src/x.py", "A", "B")
    run.write("src/x.py", "B", "C")
    assert dims(run)["oscillation"] == 1.0
    run.write("src/x.py", "C", "A")
    assert dims(run)["oscillation"] == round(1 - 1 / 3, 4)


def test_verification_strength_tracks_required_sensors(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.sensor("tests", "FAIL", ["t::a"])
    assert dims(run)["verification_strength"] == 0.5
    run.sensor("tests", "PASS")
    assert dims(run)["verification_strength"] == 1.0


def test_belief_consistency_drops_with_contradictions(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.run_tests(["t::a"])
    run.sensor("tests", "PASS")  # high contradiction
    assert dims(run)["belief_consistency"] == round(1 / 1.5, 4)


def test_belief_freshness_decays_with_unverified_writes(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.run_tests([])
    assert dims(run)["belief_freshness"] == 1.0
    run.write("src/x.py", "1", "2")
    run.write("src/x.py", "2", "3")
    assert dims(run)["belief_freshness"] == 0.5
    run.run_tests([])
    assert dims(run)["belief_freshness"] == 1.0


def test_evidence_support_counts_refused_claims_and_unverified_task_completion(tmp_path: Path) -> None:
    run = Run(tmp_path, auto_observe=False)
    run.append([("completion.refused", {"reasons": ["x"], "refusals": 1, "max_refusals": 2})])
    assert dims(run)["evidence_support"] == 0.5
    run.act("plan", {"tasks": [{"id": "t1", "status": "ACTIVE"}]})
    run.act("plan", {"tasks": [{"id": "t1", "status": "VERIFYING"}]})
    run.act("plan", {"tasks": [{"id": "t1", "status": "COMPLETE"}]})  # no verification accepted: unsupported
    assert dims(run)["evidence_support"] == round(1 / 3, 4)


def test_budget_headroom(tmp_path: Path) -> None:
    run = Run(tmp_path, envelope(budgets={"tool_calls": 4}), auto_observe=False)
    run.act("read_file", {"path": "a"})
    assert dims(run)["budget_headroom"] == 0.75
    run.act("read_file", {"path": "b"})
    run.act("read_file", {"path": "c"})
    assert dims(run)["budget_headroom"] == 0.25
