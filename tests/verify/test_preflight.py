"""Pre-flight checks and the tests sensor's judgement against the baseline, with real pytest runs."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
from pathlib import Path

import pytest
from verify_helpers import envelope

from tether.envelope.schema import Envelope
from tether.sandbox.local import LocalSandbox
from tether.verify import sensors
from tether.verify.preflight import record_baseline, run_preflight, tool_checks
from tether.verify.sensors import SensorContext

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"
SOURCE = "def double(x):\n    return x + x\n"
TESTS = (
    "from lib import double\n\n\ndef test_two():\n    assert double(2) == 4\n\n\n"
    "def test_known_broken():\n    assert double(3) == 7\n"
)


def env(**verification: object) -> Envelope:
    return envelope(
        verification={"sensors": [{"name": "tests", "required": True}], "test_command": PYTEST, **verification}
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "lib.py").write_text(SOURCE)
    (tmp_path / "test_lib.py").write_text(TESTS)
    return tmp_path


def judge(e: Envelope, ws: Path) -> tuple[str, list[str]]:
    _, base, _ = record_baseline(e, ws, LocalSandbox())
    res = sensors.tests(SensorContext(e, ws, (), LocalSandbox(), None, True, test_baseline=base))
    return res.result, [str(d.code) for d in res.diagnostics]


def test_must_fix_failing_requires_the_baseline_failure_fixed(project: Path) -> None:
    assert judge(env(), project) == ("FAIL", ["test_lib.py::test_known_broken"])


def test_must_fix_naming_a_test_that_does_not_exist_fails(project: Path) -> None:
    assert judge(env(must_fix=["test_lib.py::test_other"]), project)[1][0] == "integrity.still_failing"


@pytest.mark.parametrize("must_fix", ["none", ["test_lib.py::test_two"]])
def test_baseline_failures_outside_must_fix_are_tolerated(project: Path, must_fix: object) -> None:
    result, codes = judge(env(must_fix=must_fix), project)
    assert (result, codes) == ("PASS", [])


def test_tolerated_does_not_mean_regressions_pass(project: Path) -> None:
    e = env(must_fix="none")
    _, base, _ = record_baseline(e, project, LocalSandbox())
    (project / "lib.py").write_text("def double(x):\n    return x * 3\n")
    res = sensors.tests(SensorContext(e, project, (), LocalSandbox(), None, True, test_baseline=base))
    assert res.result == "FAIL" and "integrity.regression" in {d.code for d in res.diagnostics}


def test_a_process_that_lies_about_its_exit_status_fails(project: Path) -> None:
    """A conftest ending the process with 0 after pytest reported failures: the report and the exit disagree."""
    e = env(must_fix="none")
    _, base, _ = record_baseline(e, project, LocalSandbox())
    (project / "conftest.py").write_text("import os\n\n\ndef pytest_unconfigure(config):\n    os._exit(0)\n")
    res = sensors.tests(SensorContext(e, project, (), LocalSandbox(), None, True, test_baseline=base))
    assert res.result == "FAIL" and [d.code for d in res.diagnostics] == ["integrity.report"]
    assert "exited 0 but pytest's session ended with 1" in res.diagnostics[0].message


def test_preflight_records_the_baseline_with_shapes_and_surface(project: Path) -> None:
    pf = run_preflight(env(), project, LocalSandbox())
    assert pf.ok and pf.baseline is not None and pf.baseline.ok
    outcomes = {t.id: (t.outcome, t.shape.asserts if t.shape else None) for t in pf.baseline.tests}
    assert outcomes == {"test_lib.py::test_two": ("passed", 1), "test_lib.py::test_known_broken": ("failed", 1)}
    assert (
        list(pf.baseline.surface) == ["test_lib.py"] and pf.blobs[pf.baseline.surface["test_lib.py"]] == TESTS.encode()
    )
    assert pf.baseline.loaders is not None and pf.blobs[pf.baseline.loaders] == b"{}"  # no .so, .pth
    kept = {*pf.baseline.surface.values(), *(b.blob for b in pf.baseline.bytecode), pf.baseline.loaders}
    assert set(pf.blobs) == kept
    assert "2 tests collected (1 failed, 1 passed)" in pf.checks[-1].detail


def test_preflight_stops_a_command_that_collects_nothing(tmp_path: Path) -> None:
    (tmp_path / "lib.py").write_text(SOURCE)
    pf = run_preflight(env(), tmp_path, LocalSandbox(), collect_only=True)
    (check,) = pf.failed
    assert check.name == "collection" and check.status == "NEEDS_INPUT" and "collects no tests" in check.detail
    assert "verification.test_command" in check.fix


def test_preflight_stops_a_command_that_does_not_run_pytest(project: Path) -> None:
    pf = run_preflight(env(test_command=f"{sys.executable} -m pytest --no-such-option"), project, LocalSandbox())
    (check,) = pf.failed
    assert check.status == "NEEDS_INPUT" and "no test report" in check.detail and "--no-such-option" in check.detail


def test_preflight_names_a_missing_test_program(project: Path) -> None:
    (check,) = tool_checks(env(test_command="no-such-runner -q"), project)
    assert not check.ok and check.status == "BLOCKED_DEPENDENCY" and "no-such-runner" in check.detail


def test_a_non_pytest_command_has_no_per_test_baseline(project: Path) -> None:
    pf = run_preflight(env(test_command=f"{sys.executable} -m unittest -q"), project, LocalSandbox())
    assert pf.ok and pf.baseline is not None and not pf.baseline.ok and pf.baseline.runner == "other"
    assert "pytest" in pf.baseline.detail


def test_bytecode_left_in_the_workspace_is_never_run(tmp_path: Path) -> None:
    """A .pyc compiled from other code, stamped with the real source's mtime and size, would be trusted."""
    real, cheat = "def f():\n    return 1\n", "def f():\n    return 2\n"
    assert len(real) == len(cheat)
    (tmp_path / "test_f.py").write_text("from lib import f\n\n\ndef test_f():\n    assert f() == 2\n")
    lib = tmp_path / "lib.py"
    lib.write_text(cheat)
    os.utime(lib, (1_700_000_000, 1_700_000_000))
    pyc = Path(importlib.util.cache_from_source(str(lib)))
    py_compile.compile(str(lib), cfile=str(pyc), doraise=True)
    planted = pyc.read_bytes()
    lib.write_text(real)
    os.utime(lib, (1_700_000_000, 1_700_000_000))
    plain = LocalSandbox().run(PYTEST, cwd=tmp_path, timeout_s=120)
    assert plain.exit_code == 0  # the planted bytecode ran: the attack is real
    e = env()
    _, base, _ = record_baseline(e, tmp_path, LocalSandbox())
    res = sensors.tests(SensorContext(e, tmp_path, (), LocalSandbox(), None, True, base))
    assert res.result == "FAIL" and "test_f.py::test_f" in {d.code for d in res.diagnostics}
    assert not pyc.exists() or pyc.read_bytes() != planted
