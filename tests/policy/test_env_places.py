"""A variable's value can name where a program writes: ``PYTEST_ADDOPTS=--basetemp=.tether pytest`` deleted the
session's log folder (pytest empties its base temporary directory first), ``GIT_TRACE=.tether/tether.db git status``
appended git's trace to the log, ``COVERAGE_FILE`` and ``LESSHISTFILE`` write the file they name. All were allowed:
the value of a variable that loads no code was never read. A value that names a place ``PathPolicy.write`` protects
(``.tether``, ``.git``, a hook directory) is DENY, however the variable is set; the two premises are run for real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "tether.db").write_text("log\n")
    (tmp_path / "README.md").write_text("x\n")
    return tmp_path


def decided(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


SPELLINGS = [
    "PYTEST_ADDOPTS='--basetemp=.tether' pytest",
    "PYTEST_ADDOPTS='-q --basetemp .tether' pytest",
    "GIT_TRACE=.tether/tether.db git status",
    "GIT_TRACE=$PWD/.tether/tether.db git status",
    "COVERAGE_FILE=.tether/tether.db pytest",
    "LESSHISTFILE=.tether/tether.db less README.md",
    "env LESSHISTFILE=.tether/tether.db less README.md",
    "export LESSHISTFILE=.tether/tether.db; less README.md",
    "declare -x LESSHISTFILE=.tether/tether.db; less README.md",
    "TMPDIR=.tether sort README.md",
    "XDG_CACHE_HOME=src:.git/hooks ls",
    "MYPY_CACHE_DIR=.husky mypy src",
]


@pytest.mark.parametrize("command", SPELLINGS)
def test_a_variable_that_names_a_protected_place_is_refused(ws: Path, command: str) -> None:
    assert decided(ws, command) == ("DENY", "path:protected"), command


KEEPS = [
    ("PYTHONPATH=src pytest", "ALLOW"),
    ("FOO=bar ls", "ALLOW"),
    ("URL=https://example.com/a/b.git ls", "ALLOW"),  # a word that ends in .git is no .git folder
    ("X=.tetherx ls", "ALLOW"),
    ("GIT_DIR=.git git status", "ASK"),  # what moves git: asked as it was, not refused
]


@pytest.mark.parametrize(("command", "verdict"), KEEPS)
def test_other_values_are_judged_as_before(ws: Path, command: str, verdict: str) -> None:
    assert decided(ws, command)[0] == verdict, command


def test_pytest_empties_the_base_temporary_directory_a_variable_names(ws: Path) -> None:
    """The premise, run: pytest removes ``--basetemp`` before the run, given through ``PYTEST_ADDOPTS``."""
    (ws / "test_one.py").write_text("def test_one(tmp_path):\n    assert tmp_path.is_dir()\n")
    env = {**os.environ, "PYTEST_ADDOPTS": "--basetemp=.tether"}
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
    subprocess.run(run, cwd=ws, env=env, check=True, capture_output=True)
    assert not (ws / ".tether" / "tether.db").exists()


def test_git_appends_its_trace_to_the_file_a_variable_names(ws: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    env = {**os.environ, "GIT_TRACE": str(ws / ".tether" / "tether.db")}
    subprocess.run(["git", "status"], cwd=ws, env=env, check=True, capture_output=True)
    assert (ws / ".tether" / "tether.db").read_text() != "log\n"
