"""tether's pytest reporter, run for real (pytest in a guarded subprocess), and what the host accepts from it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tether.sandbox.local import LocalSandbox
from tether.verify.testreport import REPORT_PREFIX, ReportError, Reporting, TestReport, run_reported, runner_of

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"

OUTCOMES = """
import unittest
import pytest

@pytest.fixture
def broken():
    raise RuntimeError("setup fails")

def test_pass():
    assert True

def test_fail():
    assert 1 == 2

@pytest.mark.skip(reason="not today")
def test_marked_skip():
    assert False

def test_runtime_skip():
    pytest.skip("later")

@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False

@pytest.mark.xfail(reason="known")
def test_xpass():
    assert True

def test_setup_error(broken):
    assert True

@pytest.mark.parametrize("n", [1, 2])
def test_param(n):
    assert n == 1

def test_deselect_me():
    assert True

class CaseTest(unittest.TestCase):
    def test_unit(self):
        self.assertEqual(1, 1)

    @unittest.skip("off")
    def test_unit_skipped(self):
        self.assertEqual(1, 2)
"""


def run(ws: Path, command: str = PYTEST, **kw: object) -> tuple[object, TestReport | ReportError]:
    return run_reported(LocalSandbox(), ws, command, timeout_s=120, **kw)  # type: ignore[arg-type]


def test_every_outcome_is_reported_with_its_function_and_class(tmp_path: Path) -> None:
    (tmp_path / "test_all.py").write_text(OUTCOMES)
    receipt, report = run(tmp_path, PYTEST + " -k 'not deselect_me'")
    assert isinstance(report, TestReport), report
    got = {t.id.split("::", 1)[1]: t.outcome for t in report.tests}
    assert got == {
        "test_pass": "passed",
        "test_fail": "failed",
        "test_marked_skip": "skipped",
        "test_runtime_skip": "skipped",
        "test_xfail": "xfailed",
        "test_xpass": "xpassed",
        "test_setup_error": "error",
        "test_param[1]": "passed",
        "test_param[2]": "failed",
        "CaseTest::test_unit": "passed",
        "CaseTest::test_unit_skipped": "skipped",
    }
    assert report.deselected == ["test_all.py::test_deselect_me"]
    assert report.exitstatus == receipt.exit_code == 1  # type: ignore[attr-defined]
    by_id = report.by_id()
    assert by_id["test_all.py::test_param[2]"].function == "test_param"
    assert by_id["test_all.py::CaseTest::test_unit"].cls == "CaseTest"
    assert by_id["test_all.py::test_pass"].file == "test_all.py"  # workspace-relative
    assert not list(tmp_path.glob(f"{REPORT_PREFIX}*"))  # read once, then removed


def test_collect_only_and_collection_errors(tmp_path: Path) -> None:
    (tmp_path / "test_ok.py").write_text("def test_a():\n    assert True\n")
    (tmp_path / "test_broken.py").write_text("import nonexistent_module_xyz\n")
    _, report = run(tmp_path, collect_only=True)
    assert isinstance(report, TestReport)
    assert report.collect_only and [t.outcome for t in report.tests] == ["not_run"]
    assert [e.id for e in report.errors] == ["test_broken.py"] and "nonexistent_module_xyz" in report.errors[0].message


def test_a_conftest_that_forges_the_report_is_rejected(tmp_path: Path) -> None:
    """Code in the test process can write the report file; without this run's nonce it is not believed."""
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert False\n")
    (tmp_path / "conftest.py").write_text(
        "import json, os\n"
        "def pytest_unconfigure(config):\n"
        "    json.dump({'nonce': 'guess', 'exitstatus': 0, 'collect_only': False, 'tests': [],"
        " 'deselected': [], 'errors': []}, open(os.environ['TETHER_REPORT'], 'w'))\n"
    )
    _, report = run(tmp_path)
    assert isinstance(report, ReportError) and "nonce" in str(report)


def test_the_projects_config_cannot_switch_the_reporter_off(tmp_path: Path) -> None:
    """``-p no:tether_report`` in addopts comes before tether's own ``-p tether_report``, which wins."""
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert True\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = -p no:tether_report\n")
    _, report = run(tmp_path)
    assert isinstance(report, TestReport) and [t.outcome for t in report.tests] == ["passed"]


def test_collect_only_smuggled_into_the_config_shows_as_tests_not_run(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    assert False\n")
    (tmp_path / "pytest.ini").write_text("[pytest]\naddopts = --co\n")
    receipt, report = run(tmp_path)
    assert receipt.exit_code == 0  # type: ignore[attr-defined]
    assert isinstance(report, TestReport) and report.collect_only
    assert [t.outcome for t in report.tests] == ["not_run"]


def test_an_early_exit_leaves_no_report(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("import os\n\ndef test_x():\n    os._exit(0)\n")
    receipt, report = run(tmp_path)
    assert receipt.exit_code == 0  # type: ignore[attr-defined]
    assert isinstance(report, ReportError) and "no report" in str(report)


def test_the_host_reads_no_symlink_and_no_oversized_or_malformed_report(tmp_path: Path) -> None:
    reporting = Reporting.fresh(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"nonce": reporting.nonce}))
    os.symlink(secret, reporting.path)
    with pytest.raises(ReportError, match="cannot open"):
        reporting.read(tmp_path)
    reporting.path.write_text("{not json")
    with pytest.raises(ReportError, match="malformed"):
        reporting.read(tmp_path)
    assert not reporting.path.exists()
    reporting.path.write_text(json.dumps({"nonce": reporting.nonce, "exitstatus": 0}))
    with pytest.raises(ReportError, match="malformed"):
        reporting.read(tmp_path)


def test_nonces_and_paths_are_fresh_per_run(tmp_path: Path) -> None:
    a, b = Reporting.fresh(tmp_path), Reporting.fresh(tmp_path)
    assert a.nonce != b.nonce and a.path != b.path and len(a.nonce) == 32
    env = a.env()
    assert env["PYTEST_ADDOPTS"] == "-p tether_report" and Path(env["PYTHONPATH"]).is_dir()
    assert not Path(env["PYTHONPATH"]).is_relative_to(tmp_path)  # loaded from tether's install


@pytest.mark.parametrize(
    ("command", "runner"),
    [
        ("pytest -q", "pytest"),
        ("python -m pytest tests/", "pytest"),
        (".venv/bin/pytest -x", "pytest"),
        ("py.test", "pytest"),
        ("python -m unittest", "other"),
        ("make test", "other"),
        ("pytest 'unterminated", "other"),
    ],
)
def test_runner_of(command: str, runner: str) -> None:
    assert runner_of(command) == runner
