from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from control_helpers import Run, envelope

import tether.control.fold as fold_module
from tether.control import fold_plan
from tether.control.hypotheses import hypothesis_events
from tether.envelope.schema import ToolContract
from tether.review import review, review_action
from tether.review.execution import consecutive_failures
from tether.snapshot import Manifest, MemoryBlobStore, take
from tether.state import RunState
from tether.verify.changes import WorkspaceDiff, run_diff

BASELINES: dict[Path, tuple[Manifest, MemoryBlobStore]] = {}


def repo(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (ws / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n    assert add(0, 0) == 0\n"
    )
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", *args], cwd=ws, check=True)
    blobs = MemoryBlobStore()
    BASELINES[ws] = (take(ws, blobs=blobs), blobs)
    return ws


def diff(ws: Path) -> WorkspaceDiff:
    base, blobs = BASELINES[ws]
    return run_diff(base, take(ws, previous=base, blobs=blobs), blobs, str(ws))


def checks(findings: list) -> set[str]:  # type: ignore[type-arg]
    return {f.check for f in findings}


def test_editing_tests_to_pass_is_flagged(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    run = Run(tmp_path)
    (ws / "tests" / "test_calc.py").write_text(
        "import pytest\nfrom calc import add\n\n\n@pytest.mark.skip\ndef test_add():\n    pass\n"
    )
    found = review(envelope(), diff(ws), run.events)
    assert {"tests_edited", "assertions_removed", "skip_added"} <= checks(found)
    assert all(f.view == "adversarial" for f in found if f.check in {"tests_edited", "skip_added"})


def test_honest_fix_has_no_blocking_findings(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    run = Run(tmp_path)
    run.run_tests(["tests/test_calc.py::test_add"])
    (ws / "src" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    run.write("src/calc.py", "def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b\n")
    run.run_tests([])
    found = review(envelope(), diff(ws), run.events)
    assert [f for f in found if f.severity != "low"] == []


def test_scope_secrets_regressions_stale_and_hypothesis(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    run = Run(tmp_path)
    run.run_tests(["tests/test_calc.py::test_add"])
    run.act("hypothesis", {"id": "h1", "statement": "add is wrong", "files": ["src/calc.py"], "act": True})
    (ws / "notes.md").write_text("token = 'ghp_" + "a" * 36 + "'\n")
    run.write("notes.md", None, "x")
    run.run_tests(["tests/test_calc.py::test_add", "tests/test_calc.py::test_sub"])
    run.write("src/other.py", None, "y")
    found = review(envelope(), diff(ws), run.events)
    got = checks(found)
    assert {"policy.write_set", "policy.secret", "regression", "stale_verification", "hypothesis_incompatible"} <= got


def test_plan_tasks_not_complete_and_reopened_by_finding(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    run = Run(tmp_path)
    run.act("plan", {"tasks": [{"id": "fix", "title": "fix add", "status": "ACTIVE", "files": ["src/**"]}]})
    found = review(envelope(), diff(ws), run.events)
    assert "plan_incomplete" in checks(found)
    run.act("plan", {"tasks": [{"id": "fix", "status": "VERIFYING"}]})
    run.act("plan", {"tasks": [{"id": "fix", "status": "COMPLETE"}]})
    assert fold_plan(run.events).tasks["fix"].status == "COMPLETE"
    run.append(
        [
            (
                "review.finding",
                {"view": "reviewer", "severity": "high", "check": "x", "message": "bad", "file": "src/calc.py"},
            )
        ]
    )
    run.observe()
    assert fold_plan(run.events).tasks["fix"].status == "ACTIVE"
    assert run.kinds("plan.updated")[-1].payload["tasks"][0]["status"] == "ACTIVE"


def test_plan_state_machine_refuses_bad_transitions(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.act("plan", {"tasks": [{"id": "a", "title": "A"}, {"id": "b", "depends_on": ["a"]}]})
    run.act(
        "plan",
        {
            "tasks": [
                {"id": "b", "status": "ACTIVE"},
                {"id": "a", "status": "COMPLETE"},
                {"id": "c", "depends_on": ["zz"]},
            ]
        },
    )
    p = fold_plan(run.events)
    assert p.tasks["a"].status == "PENDING" and p.tasks["b"].status == "PENDING" and "c" not in p.tasks
    rejected = run.kinds("plan.updated")[-1].payload["rejected"]
    assert any("before a COMPLETE" in r for r in rejected)
    assert any("PENDING -> COMPLETE is not allowed" in r for r in rejected)
    assert any("unknown" in r for r in rejected)


def test_hypothesis_scored_by_beliefs(tmp_path: Path) -> None:
    run = Run(tmp_path)
    run.act("hypothesis", {"id": "h", "statement": "s", "tests": ["t::a"], "act": True})
    assert run.kinds("hypothesis.recorded")[-1].payload["score"] == 0.5
    run.run_tests(["t::a"])
    assert run.kinds("hypothesis.recorded")[-1].payload["score"] > 0.5
    run.write("src/x.py", "1", "2")
    run.run_tests(["t::b"])
    last = run.kinds("hypothesis.recorded")[-1].payload
    assert last["score"] < 0.5 and last["acted_on"] and last["refute"]
    assert hypothesis_events(run.events) == []


def contract(*effects: str) -> ToolContract:
    return ToolContract(name="t", purpose="p", effects=list(effects))  # type: ignore[arg-type]


def test_review_gate(tmp_path: Path) -> None:
    run = Run(tmp_path)
    env = envelope()
    ok = review_action(contract("read"), {"path": "anything"}, run.events, env)
    assert ok.ok and ok.risk == "LOW"
    out = review_action(contract("write"), {"path": "setup.py"}, run.events, env)
    assert not out.ok and out.risk == "HIGH" and "outside the write set" in out.reasons[0]
    run.run_tests(["tests/test_calc.py::test_add"])
    test_edit = review_action(contract("write"), {"path": "tests/test_calc.py"}, run.events, env)
    assert not test_edit.ok and "fix the code under test" in test_edit.reasons[0] and test_edit.risk == "MEDIUM"
    assert review_action(contract("write"), {"path": "src/calc.py"}, run.events, env).ok
    run.act("plan", {"tasks": [{"id": "a", "status": "ACTIVE", "files": ["src/calc.py"]}]})
    scoped = review_action(contract("write"), {"path": "src/other.py"}, run.events, env)
    assert not scoped.ok and "outside the files of the active task" in scoped.reasons[0]
    assert review_action(contract("network"), {}, run.events, env).risk == "HIGH"
    for result in (scoped, test_edit):
        run.append([("review.gate", result.to_payload("c", "write_file"))])
    assert consecutive_failures(run.events) == 2


#: The paths a write's review is asked about below: a test that fails or once failed, code in and out of a task's
#: files, and a path outside the write set.
WRITTEN = ("tests/test_calc.py", "tests/test_other.py", "src/calc.py", "src/other.py", "setup.py")


def test_the_run_state_answers_a_writes_review_as_the_control_layers_fold_does(tmp_path: Path) -> None:
    """A write's review reads the failing tests and whether a plan was made from the run state when it is given (a
    hook's PreToolUse then needs no fold of the control layer): at every step of a run that fails tests, passes them,
    fails others, plans and replans, its answer with the state is the fold's."""
    run = Run(tmp_path)
    env = envelope()

    def same() -> None:
        events = run.events
        state = RunState.from_events(events)
        for path in WRITTEN:
            with_state = review_action(contract("write"), {"path": path}, events, env, state)
            by_fold = review_action(contract("write"), {"path": path}, events, env)
            assert (with_state.ok, with_state.risk, with_state.reasons) == (by_fold.ok, by_fold.risk, by_fold.reasons)

    same()
    run.run_tests(["tests/test_calc.py::test_add"])
    same()
    assert RunState.from_events(run.events).failing_tests == ["tests/test_calc.py::test_add"]
    run.run_tests([])
    same()
    run.run_tests(["tests/test_other.py::test_x", "tests/test_calc.py::test_add"])
    same()
    assert not RunState.from_events(run.events).planned
    run.act("plan", {"tasks": [{"id": "a", "status": "ACTIVE", "files": ["src/calc.py"]}]})
    assert RunState.from_events(run.events).planned
    same()
    run.act("plan", {"tasks": [{"id": "a", "status": "VERIFYING"}]})
    same()


def test_a_plan_carried_or_called_in_vain_is_read_from_the_fold_and_a_finding_makes_none(tmp_path: Path) -> None:
    """Whatever may make the plan other than the empty one marks the run state ``planned``: a plan call that completes
    (even one that failed: the state does not judge the call), a plan carried from an earlier run. Then a write's
    review reads the plan from the fold. A reviewer's finding (a hook session's stop records them) reopens only a task
    a plan holds: alone it leaves the plan empty, and the state unplanned, answering as the fold does."""
    for i, make in enumerate(
        (
            lambda run: run.act("plan", {"tasks": []}, ok=False),
            lambda run: run.append([("plan.carried", {"from_run": "r0", "from_seq": 0, "tasks": []})]),
        )
    ):
        run = Run(tmp_path / str(i))
        run.run_tests([])
        assert not RunState.from_events(run.events).planned
        make(run)
        assert RunState.from_events(run.events).planned, i
    run = Run(tmp_path / "finding")
    run.run_tests(["tests/test_calc.py::test_add"])
    run.append([("review.finding", {"view": "reviewer", "severity": "high", "check": "c", "message": "m"})])
    state, env = RunState.from_events(run.events), envelope()
    assert not state.planned
    for path in WRITTEN:
        with_state = review_action(contract("write"), {"path": path}, run.events, env, state)
        by_fold = review_action(contract("write"), {"path": path}, run.events, env)
        assert (with_state.ok, with_state.reasons) == (by_fold.ok, by_fold.reasons), path


def test_a_writes_review_given_the_run_state_folds_no_control_layer_unless_a_plan_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a hook's cold PreToolUse of a write relies on: with the state, the failing tests refuse an edit of their
    file without the fold; once a plan is made, the plan is read from the fold."""
    run = Run(tmp_path, auto_observe=False)
    run.run_tests(["tests/test_calc.py::test_add"])
    run.observe()  # the belief on the failing tests
    state, env = RunState.from_events(run.events), envelope()

    def no_fold(events: object) -> None:
        raise AssertionError("the control layer's fold was read")

    with monkeypatch.context() as patched:
        patched.setattr(fold_module, "folded", no_fold)
        refused = review_action(contract("write"), {"path": "tests/test_calc.py"}, run.events, env, state)
        assert not refused.ok and "fix the code under test" in refused.reasons[0]
        assert review_action(contract("write"), {"path": "src/calc.py"}, run.events, env, state).ok
    run.act("plan", {"tasks": [{"id": "a", "status": "ACTIVE", "files": ["src/calc.py"]}]})
    state = RunState.from_events(run.events)
    monkeypatch.setattr(fold_module, "folded", no_fold)
    with pytest.raises(AssertionError, match="fold was read"):
        review_action(contract("write"), {"path": "src/other.py"}, run.events, env, state)
