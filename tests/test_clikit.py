"""``tests/clikit.py``: a command forked from the test process's forkserver answers as ``tether`` started anew.

The run tests that use it (tests/kernel/runkit.py ``tether``, tests/kernel/test_providers.py) trust that a forked
command is the command: the same exit code, stdout and stderr, the environment it is given and nothing of the
process that forked it, no stdin, the working directory it is given, and a deadline that ends it."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import clikit
import pytest

from tether import EventStore


def scrubbed(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith("TETHER_")}, **extra}


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["runs", "--json"],  # the database named by TETHER_DB, in the environment given
        ["runs", "--no-such-option"],  # a usage error: its exit code and message
        ["show", "no-such-run", "--json"],  # a run that is not there
        ["hook", "claude-code", "--no-daemon"],  # reads its input from stdin: none, and refuses it
    ],
)
def test_a_forked_command_answers_as_the_command_started_anew(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = scrubbed(TETHER_DB=str(tmp_path / "given.db"))
    monkeypatch.setenv("TETHER_DB", str(tmp_path / "not-given.db"))  # the forking process's: never the command's
    monkeypatch.chdir(tmp_path)
    forked = clikit.run(argv, env)
    fresh = clikit.started(argv, env, cwd=str(tmp_path))
    assert (forked.returncode, forked.stdout, forked.stderr) == (fresh.returncode, fresh.stdout, fresh.stderr)
    assert not (tmp_path / "not-given.db").exists()


def test_a_forked_command_reads_relative_paths_from_the_directory_it_is_given(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    EventStore.open(tmp_path / "a" / "rel.db").close()
    proc = clikit.run(["runs", "--db", "rel.db", "--json"], scrubbed(), cwd=str(tmp_path / "a"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    missing = clikit.run(["runs", "--db", "rel.db", "--json"], scrubbed(), cwd=str(tmp_path))
    assert missing.returncode == 2 and "no tether database here" in missing.stdout


def test_a_command_past_its_deadline_is_killed(tmp_path: Path) -> None:
    """``tether daemon`` serves until stopped: the deadline ends it, as ``subprocess.run``'s does."""
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    began = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        clikit.run(["daemon", "--socket", str(sock)], scrubbed(), timeout=2)
    assert time.monotonic() - began < 60
