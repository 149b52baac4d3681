"""review.test_integrity.runner_probes: added source lines that look at the test run rather than the problem."""

from __future__ import annotations

import pytest

from tether.review.test_integrity import runner_probes


def probes(source: str, path: str = "src/pkg/core.py", lines: set[int] | None = None) -> list[str]:
    added = set(range(1, source.count("\n") + 2)) if lines is None else lines
    return [f.message for f in runner_probes({path: source.encode()}, {path: added})]


@pytest.mark.parametrize(
    ("line", "what"),
    [
        ('on = "pytest" in sys.modules', "names 'pytest'"),
        ('on = os.environ.get("PYTEST_CURRENT_TEST")', "names 'PYTEST_CURRENT_TEST'"),
        ('path = os.environ["TETHER_REPORT"]', "names 'TETHER_REPORT'"),
        ('env = open("/proc/self/environ").read()', "names '/proc/self/environ'"),
        ('expected = open("tests/test_core.py").read()', "names the test file 'tests/test_core.py'"),
        ('root = here / "tests"', "names 'tests'"),
        ("import pytest", "imports pytest"),
        ("from _pytest.config import Config", "imports _pytest.config"),
        ("caller = sys._getframe(1)", "uses sys._getframe"),
        ("caller = inspect.stack()[1]", "uses inspect.stack"),
        ("everything = gc.get_objects()", "uses gc.get_objects"),
        ("os._exit(0)", "uses os._exit"),
        ("atexit.register(rewrite)", "uses atexit.register"),
        ("name = frame.f_back.f_code.co_name", "uses frame.f_back"),
    ],
)
def test_each_probe_is_named(line: str, what: str) -> None:
    assert probes(f"x = 1\n{line}\n") == [f"line 2 {what}: source that looks at the test run, not the problem"]


def test_only_added_lines_of_source_files_count() -> None:
    source = "import pytest\n\n\ndef f():\n    return 1\n"
    assert probes(source, lines={4, 5}) == []  # the import was there before the run
    assert probes(source, path="tests/helpers.py") == []  # the test surface is judged as such, not here
    assert probes(source, path="conftest.py") == []
    assert probes(source, path="README.md") == []


def test_ordinary_code_and_prose_are_not_probes() -> None:
    source = '''"""Runs under pytest in CI; see tests/test_core.py."""

import os
import sys


class Config:
    """Reads pyproject.toml, like pytest does."""

    def load(self, path="pyproject.toml"):
        mode = os.environ.get("APP_MODE", "test")
        pick = lambda m: "a" if m else "b"  # noqa: E731 (an expression body)
        return sys.exit if mode == "exit" else open(path).read() + pick(mode)
'''
    assert probes(source) == []


@pytest.mark.parametrize(
    "line",
    [
        "signal.signal(signal.SIGTERM, shutdown)",
        "atexit.register(flush)",
        "os._exit(1)",
        'find_packages(exclude=["tests"])',
    ],
)
def test_what_ordinary_programs_do_is_shown_but_does_not_refuse(line: str) -> None:
    """A graceful shutdown or a setup script's ``exclude=["tests"]`` is a task's ordinary work: the finding is
    recorded (low) and the completion goes on; a probe of the test run in the same file still refuses."""
    (alone,) = runner_probes({"src/app.py": f"x = 1\n{line}\n".encode()}, {"src/app.py": {1, 2, 3}})
    assert alone.severity == "low" and alone.check == "runner_probe"
    mixed = f"{line}\non = 'pytest' in sys.modules\n".encode()
    (both,) = runner_probes({"src/app.py": mixed}, {"src/app.py": {1, 2, 3}})
    assert both.severity == "high" and "line 2 names 'pytest'" in both.message


def test_one_finding_per_file_and_a_file_that_does_not_parse_is_left_to_syntax() -> None:
    assert len(probes("import pytest\nimport _pytest\n")) == 1
    assert probes("import pytest\ndef (:\n") == []
