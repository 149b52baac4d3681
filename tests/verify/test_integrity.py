"""The test-integrity comparison, test shapes, the test surface and special-casing: pure functions, attacked."""

from __future__ import annotations

from pathlib import Path

import pytest
from verify_helpers import envelope

from tether.events.kinds_baseline import CaseRecord, SuiteBaseline
from tether.review.test_integrity import allows_test_edits, forbids_test_edits, literals_in_tests, special_cases
from tether.verify.integrity import baseline_shapes, compare, tolerated_failures
from tether.verify.testreport import ReportedCase, TestReport
from tether.verify.testshape import ShapeReader
from tether.verify.testsurface import changes, digest, is_surface, surface_files

ORIGINAL = b"""import pytest


def test_a():
    assert f(1) == 2
    assert f(2) == 3


class TestK:
    def test_b(self):
        self.assertEqual(f(1), 2)
        with pytest.raises(ValueError):
            f(-1)

    def test_c(self):
        def helper():
            return 1
        assert helper() == 1
"""


def shapes(source: bytes) -> ShapeReader:
    return ShapeReader(lambda p: source if p == "t.py" else None)


def test_shapes_count_asserts_returns_and_skips_of_the_function_itself() -> None:
    r = shapes(ORIGINAL)
    a, b, c = r.shape("t.py", None, "test_a"), r.shape("t.py", "TestK", "test_b"), r.shape("t.py", "TestK", "test_c")
    assert a is not None and (a.asserts, a.returns, a.skips) == (2, 0, 0)
    assert b is not None and (b.asserts, b.returns, b.skips) == (2, 0, 0)
    assert c is not None and (c.asserts, c.returns) == (1, 0)  # the helper's return is not the test's
    assert r.shape("t.py", None, "test_b") is None and r.shape("gone.py", None, "test_a") is None


@pytest.mark.parametrize(
    ("edit", "field", "delta"),
    [
        (("    assert f(1) == 2\n", "    return\n    assert f(1) == 2\n"), "returns", 1),
        (("    assert f(2) == 3\n", "    f(2)\n"), "asserts", -1),
        (("def test_a():\n", "@pytest.mark.skip\ndef test_a():\n"), "skips", 1),
        (("def test_a():\n", "@pytest.mark.xfail(reason='x')\ndef test_a():\n"), "skips", 1),
        (("    assert f(1) == 2\n", "    pytest.skip('later')\n    assert f(1) == 2\n"), "skips", 1),
        (("    assert f(1) == 2\n", "    if True:\n        return\n    assert f(1) == 2\n"), "returns", 1),
    ],
)
def test_each_neutering_edit_changes_the_shape(edit: tuple[str, str], field: str, delta: int) -> None:
    old, new = edit
    edited = ORIGINAL.decode().replace(old, new, 1).encode()
    before, after = shapes(ORIGINAL).shape("t.py", None, "test_a"), shapes(edited).shape("t.py", None, "test_a")
    assert before is not None and after is not None
    assert getattr(after, field) - getattr(before, field) == delta


def test_a_skip_decorator_on_the_class_counts_for_its_tests() -> None:
    edited = ORIGINAL.replace(b"class TestK:", b"@unittest.skip('off')\nclass TestK:")
    after = shapes(edited).shape("t.py", "TestK", "test_b")
    assert after is not None and after.skips == 1


# ---- compare ---------------------------------------------------------------------------------


def case(name: str, outcome: str, file: str = "t.py", cls: str | None = None) -> ReportedCase:
    return ReportedCase(
        id=f"{file}::{cls + '::' if cls else ''}{name}",
        file=file,
        cls=cls,
        function=name.split("[")[0],
        outcome=outcome,
    )  # type: ignore[arg-type]


def report(*cases: ReportedCase, deselected: tuple[str, ...] = ()) -> TestReport:
    return TestReport(
        nonce="n", exitstatus=0, collect_only=False, tests=list(cases), deselected=list(deselected), errors=[]
    )


def baseline(source: bytes, *cases: ReportedCase) -> SuiteBaseline:
    recs = baseline_shapes(list(cases), lambda p: source if p == "t.py" else None)
    return SuiteBaseline(command="pytest", runner="pytest", ok=True, tests=recs)


BASE = baseline(ORIGINAL, case("test_a", "failed"), case("test_b", "passed", cls="TestK"))


def techniques(final: TestReport, source: bytes | None = ORIGINAL, must_fix: object = "failing") -> set[str]:
    found = compare(BASE, final, lambda p: source if p == "t.py" else None, must_fix)  # type: ignore[arg-type]
    assert all(p.test and p.file for p in found)
    return {f"{p.test.split('::', 1)[1]}:{p.technique.value}" for p in found}


def test_an_honest_fix_has_no_problems() -> None:
    assert techniques(report(case("test_a", "passed"), case("test_b", "passed", cls="TestK"))) == set()


@pytest.mark.parametrize(
    ("final", "source", "expected"),
    [
        (report(case("test_a", "skipped"), case("test_b", "passed", cls="TestK")), ORIGINAL, {"test_a:skipped"}),
        (report(case("test_a", "xfailed"), case("test_b", "passed", cls="TestK")), ORIGINAL, {"test_a:xfailed"}),
        (report(case("test_b", "passed", cls="TestK"), deselected=("t.py::test_a",)), ORIGINAL, {"test_a:deselected"}),
        (report(case("test_b", "passed", cls="TestK")), ORIGINAL, {"test_a:uncollected"}),
        (
            report(case("test_b", "passed", cls="TestK")),
            ORIGINAL.replace(b"def test_a", b"def check_a"),
            {"test_a:renamed"},
        ),
        (report(), None, {"test_a:deleted", "TestK::test_b:deleted"}),
        (report(case("test_a", "not_run"), case("test_b", "passed", cls="TestK")), ORIGINAL, {"test_a:not_run"}),
        (
            report(case("test_a", "passed"), case("test_b", "failed", cls="TestK")),
            ORIGINAL,
            {"TestK::test_b:regression"},
        ),
        (
            report(case("test_a", "passed"), case("test_b", "passed", cls="TestK")),
            ORIGINAL.replace(b"    assert f(1) == 2\n", b"    return\n    assert f(1) == 2\n"),
            {"test_a:early_return"},
        ),
        (
            report(case("test_a", "passed"), case("test_b", "passed", cls="TestK")),
            ORIGINAL.replace(b"    assert f(2) == 3\n", b""),
            {"test_a:asserts_dropped"},
        ),
    ],
)
def test_each_technique_is_named_with_its_test(final: TestReport, source: bytes | None, expected: set[str]) -> None:
    assert techniques(final, source) == expected


def test_must_fix_decides_which_baseline_failures_are_tolerated() -> None:
    assert tolerated_failures(BASE, "failing") == set()
    assert tolerated_failures(BASE, "none") == {"t.py::test_a"}
    assert tolerated_failures(BASE, ["t.py::test_other"]) == {"t.py::test_a"}
    still = report(case("test_a", "failed"), case("test_b", "passed", cls="TestK"))
    assert techniques(still, must_fix=["t.py::nope"]) == {"nope:still_failing"}


def test_a_new_test_does_not_replace_a_lost_one() -> None:
    final = report(case("test_a2", "passed"), case("test_b", "passed", cls="TestK"))
    assert techniques(final, ORIGINAL.replace(b"def test_a", b"def test_a2")) == {"test_a:renamed"}


def test_baseline_records_round_trip_as_event_payloads() -> None:
    rec = BASE.tests[0]
    assert CaseRecord.model_validate(rec.model_dump()) == rec and rec.shape is not None and rec.shape.asserts == 2


# ---- the test surface ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "surface"),
    [
        ("tests/test_x.py", True),
        ("pkg/tests/helpers.py", True),
        ("tests/data/expected.json", True),
        ("x_test.py", True),
        ("conftest.py", True),
        ("sub/conftest.py", True),
        ("pytest.ini", True),
        (".pytest.ini", True),  # pytest reads these four ahead of pyproject.toml
        ("pytest.toml", True),
        (".pytest.toml", True),
        ("tox.ini", True),
        ("pyproject.toml", True),
        ("setup.cfg", True),
        ("src/pkg/core.py", False),
        ("src/pkg/testing.py", False),
        ("README.md", False),
    ],
)
def test_is_surface(path: str, surface: bool) -> None:
    assert is_surface(path) is surface


def write(ws: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)


def record(ws: Path) -> tuple[dict[str, str], dict[str, bytes]]:
    blobs = {digest((ws / p).read_bytes()): (ws / p).read_bytes() for p in surface_files(ws)}
    return {p: digest((ws / p).read_bytes()) for p in surface_files(ws)}, blobs


PYPROJECT = '[project]\nname = "x"\nversion = "1"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'


def test_surface_changes_by_any_means_with_diffs(tmp_path: Path) -> None:
    write(
        tmp_path,
        {"tests/test_x.py": "def test_x():\n    assert 1\n", "pyproject.toml": PYPROJECT, "src/a.py": "x = 1\n"},
    )
    write(tmp_path, {".venv/lib/test_ignored.py": "", "node_modules/tests/x.js": ""})
    surface, blobs = record(tmp_path)
    assert sorted(surface) == ["pyproject.toml", "tests/test_x.py"]
    assert changes(surface, tmp_path, blobs.get) == []
    # Not test changes: source edits, and pyproject edits outside [tool.pytest*].
    write(tmp_path, {"src/a.py": "x = 2\n", "pyproject.toml": PYPROJECT.replace('version = "1"', 'version = "2"')})
    assert changes(surface, tmp_path, blobs.get) == []
    write(tmp_path, {"pyproject.toml": PYPROJECT + "addopts = \"-k 'not x'\"\n", "conftest.py": "# hook\n"})
    (tmp_path / "tests/test_x.py").rename(tmp_path / "tests/check_x.py")
    got = {c.path: c.kind for c in changes(surface, tmp_path, blobs.get)}
    assert got == {
        "pyproject.toml": "modified",
        "conftest.py": "added",
        "tests/test_x.py": "deleted",
        "tests/check_x.py": "added",
    }
    diff = next(c for c in changes(surface, tmp_path, blobs.get) if c.path == "pyproject.toml").diff()
    assert "+addopts = \"-k 'not x'\"" in diff and diff.startswith("--- a/pyproject.toml")


def test_every_config_file_pytest_reads_first_is_a_change_when_added(tmp_path: Path) -> None:
    """pytest 9 reads any of these ahead of ``pyproject.toml``: a new one replaces the project's settings."""
    write(tmp_path, {"tests/test_x.py": "def test_x():\n    assert 1\n", "pyproject.toml": PYPROJECT})
    surface, blobs = record(tmp_path)
    names = ["pytest.toml", ".pytest.toml", ".pytest.ini", "sub/.pytest.ini"]
    write(tmp_path, dict.fromkeys(names, "[pytest]\naddopts = -p forge\n"))
    assert {c.path: c.kind for c in changes(surface, tmp_path, blobs.get)} == dict.fromkeys(names, "added")


def test_a_config_that_no_longer_parses_counts_as_changed(tmp_path: Path) -> None:
    write(tmp_path, {"setup.cfg": "[metadata]\nname = x\n\n[tool:pytest]\ntestpaths = tests\n"})
    surface, blobs = record(tmp_path)
    write(tmp_path, {"setup.cfg": "[metadata\nname = x\n"})
    assert [c.kind for c in changes(surface, tmp_path, blobs.get)] == ["modified"]


# ---- tests_may_change and special-casing ------------------------------------------------------


@pytest.mark.parametrize(
    "constraint",
    [
        "Do not edit the tests.",
        "don't modify tests",
        "Never change the test files",
        "You must not touch any of the tests",
        "Tests are read-only.",
        "Leave the tests alone",
        "The tests must not be modified",
        "No changes to tests",
    ],
)
def test_plan_phrasings_that_forbid_test_edits(constraint: str) -> None:
    assert forbids_test_edits([constraint])
    env = envelope()
    assert allows_test_edits(env, {"constraints": ["Stay in the project.", constraint]}) is False


@pytest.mark.parametrize(
    "constraint", ["Do not push.", "Add tests for new behaviour", "Run the tests before finishing"]
)
def test_plan_phrasings_that_do_not(constraint: str) -> None:
    assert not forbids_test_edits([constraint])
    assert allows_test_edits(envelope(), {"constraints": [constraint]}) is True


def test_the_envelope_setting_wins_over_the_plan() -> None:
    env = envelope(verification={"tests_may_change": True})
    assert allows_test_edits(env, {"constraints": ["Do not edit the tests."]}) is True
    assert allows_test_edits(envelope(verification={"tests_may_change": False}), None) is False


TESTS = {
    "tests/test_stats.py": b"def test_even():\n    assert median([4, 1, 3, 2]) == 2.5\n    assert mean([1, 2]) == 1.5\n"
}


@pytest.mark.parametrize(
    "added",
    [
        "    if xs == [4, 1, 3, 2]:\n        return 2.5\n",
        "    if list(xs) == [4, 1, 3, 2]:\n        return 2.5\n",
        "    if tuple(xs) == (4, 1, 3, 2):\n        return 2.5\n",
        "    if [4, 1, 3, 2] == xs:\n        return 2.5\n",
        "    if xs in ([4, 1, 3, 2],):\n        return 2.5\n",
    ],
)
def test_source_that_special_cases_a_tests_input_is_flagged(added: str) -> None:
    src = "def median(xs):\n" + added + "    return sorted(xs)[len(xs) // 2]\n"
    lines = set(range(2, 2 + added.count("\n")))
    found = special_cases({"src/stats.py": src.encode()}, {"src/stats.py": lines}, literals_in_tests(TESTS))
    assert found and found[0].check == "special_case" and found[0].severity == "high"
    assert "tests/test_stats.py" in found[0].message and found[0].file == "src/stats.py"


def test_a_general_fix_and_unchanged_lines_are_not_flagged() -> None:
    fix = (
        "def median(xs):\n    o = sorted(xs)\n    if len(o) % 2 == 0:\n"
        "        return (o[len(o) // 2 - 1] + o[len(o) // 2]) / 2\n"
    )
    assert special_cases({"src/stats.py": fix.encode()}, {"src/stats.py": {2, 3, 4}}, literals_in_tests(TESTS)) == []
    old = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n"
    assert special_cases({"src/stats.py": old.encode()}, {"src/stats.py": {1}}, literals_in_tests(TESTS)) == []
