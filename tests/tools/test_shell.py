from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tether.envelope.schema import Envelope
from tether.tools import ToolContext
from tether.tools.shell import MAX_STDOUT_CHARS, bash, parse_pytest, run_tests

MakeCtx = Callable[..., ToolContext]


@pytest.fixture
def sandbox(any_sandbox: Any) -> Any:
    """Every test here runs once per sandbox backend (local, and bwrap where it can start)."""
    return any_sandbox


# --------------------------------------------------------------------------- bash


def test_bash_success_reports_exit_and_output(ctx: ToolContext, workspace: Path) -> None:
    r = bash.invoke({"command": "echo hello; echo oops >&2; pwd"}, ctx)
    assert r.ok and r.failure_class is None
    lines = r.content.splitlines()
    assert lines[0] == "$ echo hello; echo oops >&2; pwd"
    assert lines[1].startswith("exit 0 (")
    assert "--- stdout ---\nhello\n" in r.content
    assert r.data["stdout"].splitlines()[1] == str(workspace.resolve())
    assert "--- stderr ---\noops" in r.content
    assert r.data["exit_code"] == 0 and r.data["stdout"].startswith("hello\n")
    assert r.changed_files == ()


def test_bash_nonzero_exit_is_data(ctx: ToolContext) -> None:
    r = bash.invoke({"command": "echo before; exit 3"}, ctx)
    assert (r.ok, r.failure_class) == (False, "nonzero_exit")
    assert r.content.splitlines()[1].startswith("exit 3 (")
    assert r.data["exit_code"] == 3


def test_bash_timeout(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(timeout_s=0.5)
    r = bash.invoke({"command": "sleep 10"}, ctx)
    assert (r.ok, r.failure_class) == (False, "timeout")
    assert "timed out after 0.5s" in r.content
    assert r.data["duration_s"] < 9


def test_bash_timeout_argument_can_only_shorten(make_ctx: MakeCtx) -> None:
    ctx = make_ctx(timeout_s=0.5)
    r = bash.invoke({"command": "sleep 5", "timeout_s": 600}, ctx)
    assert r.failure_class == "timeout" and r.data["timeout_s"] == 0.5
    ctx = make_ctx(timeout_s=60)
    r = bash.invoke({"command": "sleep 5", "timeout_s": 0.3}, ctx)
    assert r.failure_class == "timeout" and r.data["timeout_s"] == 0.3


def test_bash_bounds_output_keeping_the_tail(ctx: ToolContext) -> None:
    r = bash.invoke({"command": "for i in $(seq 1 20000); do echo line$i; done"}, ctx)
    assert r.ok
    assert len(r.content) < MAX_STDOUT_CHARS + 1000
    assert "line20000" in r.content and "line1\n" in r.content and "characters omitted" in r.content


def test_bash_rejects_empty_command(ctx: ToolContext) -> None:
    from tether.tools import ToolArgsError

    with pytest.raises(ToolArgsError, match=r"\$.command"):
        bash.validate({"command": ""})


def test_bash_preview_names_command_cwd_and_timeout(make_ctx: MakeCtx, workspace: Path) -> None:
    ctx = make_ctx(timeout_s=20)
    text = bash.preview({"command": "rm -rf build", "timeout_s": 5}, ctx)
    assert text.splitlines()[0] == "$ rm -rf build"
    assert f"cwd: {workspace}" in text and "timeout: 5s" in text and f"sandbox: {ctx.sandbox.name}" in text


# --------------------------------------------------------------------------- run_tests

PROJECT_TESTS = """
import pytest

def test_one():
    assert 1 == 1

def test_two():
    assert 2 == 2

def test_bad():
    assert 1 == 2

@pytest.mark.skip
def test_skipped():
    pass
"""


PYTEST = f"{sys.executable} -m pytest -q -rfE -p no:cacheprovider"
MakeEnvelope = Callable[..., Envelope]


def test_run_tests_reports_counts_and_failing_ids(
    make_ctx: MakeCtx, make_envelope: MakeEnvelope, workspace: Path
) -> None:
    (workspace / "test_proj.py").write_text(PROJECT_TESTS)
    ctx = make_ctx(envelope=make_envelope(test_command=PYTEST))
    r = run_tests.invoke({}, ctx)
    assert (r.ok, r.failure_class) == (False, "tests_failed")
    assert r.data["counts"] == {"failed": 1, "passed": 2, "skipped": 1}
    assert r.data["failing"] == ["test_proj.py::test_bad"]
    assert "tests FAILED: 1 failed, 2 passed, 1 skipped (exit 1" in r.content


def test_run_tests_passes_with_quoted_args(make_ctx: MakeCtx, make_envelope: MakeEnvelope, workspace: Path) -> None:
    (workspace / "test_proj.py").write_text(PROJECT_TESTS)
    ctx = make_ctx(envelope=make_envelope(test_command=PYTEST))
    r = run_tests.invoke({"args": ["-k", "one or two"]}, ctx)
    assert r.ok, r.content
    assert r.data["counts"] == {"passed": 2, "deselected": 2}
    assert r.data["command"].endswith("-k 'one or two'")
    assert "tests PASSED" in r.content


def test_run_tests_args_cannot_inject_shell(make_ctx: MakeCtx, make_envelope: MakeEnvelope, workspace: Path) -> None:
    (workspace / "test_proj.py").write_text("def test_ok():\n    pass\n")
    ctx = make_ctx(envelope=make_envelope(test_command=PYTEST))
    run_tests.invoke({"args": ["; touch injected"]}, ctx)
    assert not (workspace / "injected").exists()


def test_run_tests_no_tests(make_ctx: MakeCtx, make_envelope: MakeEnvelope) -> None:
    ctx = make_ctx(envelope=make_envelope(test_command=PYTEST))
    r = run_tests.invoke({}, ctx)
    assert (r.ok, r.failure_class) == (False, "no_tests")


def test_run_tests_other_exit_codes_and_preview(make_ctx: MakeCtx, make_envelope: MakeEnvelope) -> None:
    ctx = make_ctx(envelope=make_envelope(test_command="exit 2"))
    r = run_tests.invoke({}, ctx)
    assert (r.ok, r.failure_class) == (False, "nonzero_exit") and r.data["counts"] == {}
    assert run_tests.preview({"args": ["-x"]}, ctx).splitlines()[0] == "$ exit 2 -x"
    assert run_tests.contract.idempotent is True


def test_parse_pytest_summary_variants() -> None:
    out = "....F\n=== 1 failed, 4 passed, 2 warnings, 1 error in 0.52s ===\n"
    assert parse_pytest(out)["counts"] == {"failed": 1, "passed": 4, "warnings": 2, "errors": 1}
    assert parse_pytest("3 passed in 1.00s\n")["counts"] == {"passed": 3}
    assert parse_pytest("no tests ran in 0.01s\n")["counts"] == {}
    assert parse_pytest("make: *** [all] Error 2\n") == {"counts": {}, "failing": []}
    # a test that prints a summary-looking line earlier does not win over the real (last) summary
    assert parse_pytest("1 passed in 0.1s\nFAILED t.py::x - boom\n2 failed in 0.2s\n") == {
        "counts": {"failed": 2},
        "failing": ["t.py::x"],
    }


def test_run_tests_in_git_workspace_uses_envelope_command(
    make_ctx: MakeCtx, make_envelope: MakeEnvelope, git: Callable[..., str], git_workspace: Path
) -> None:
    (git_workspace / "test_x.py").write_text("def test_x():\n    assert True\n")
    git(git_workspace, "add", "-A")
    ctx = make_ctx(ws=git_workspace, envelope=make_envelope(test_command=PYTEST))
    r = run_tests.invoke({}, ctx)
    assert r.ok and r.data["counts"] == {"passed": 1}
