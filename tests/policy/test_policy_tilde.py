"""``~-``, ``~+`` and ``~N`` are the shell's OLDPWD, PWD and directory stack, not a home directory.

Found: ``cd .git && cd .. && cd ~- && echo x >> config`` was ALLOWed (the walker took ``~-`` for a directory named
``~-`` under the workspace, where bash goes back to ``.git``: it appends to ``.git/config``), and so was ``pushd .git
&& pushd .. && cd ~1 && echo x >> config``; ``cd -``, the same move spelled otherwise, was DENY.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "src").mkdir()
    return tmp_path.resolve()


def verdict(ws: Path, command: str) -> str:
    return Gate(hook_envelope(), ws).decide("bash", {"command": command}).verdict.name


@pytest.mark.parametrize(
    "command",
    [
        "cd .git && cd .. && cd ~- && echo x >> config",
        "cd .git; cd ..; cd ~- && echo x >> config",
        "pushd .git && pushd .. && cd ~1 && echo x >> config",
        "pushd .git && pushd .. && cd ~+1 && echo x >> config",
        "cd .git && cd .. && echo x >> ~-/config",
        "cd .git && cd .. && cp /dev/null ~-/config",
        "cd ~- && echo x > config",  # OLDPWD of the agent's shell: unknown
    ],
)
def test_the_shells_own_directories_are_where_the_shell_says(ws: Path, command: str) -> None:
    assert verdict(ws, command) in ("DENY", "ASK"), command


def test_bash_goes_where_the_gate_now_looks(ws: Path) -> None:
    """The spelling really writes .git/config (bash, in the workspace)."""
    subprocess.run(["bash", "-c", "cd .git && cd .. && cd ~- && echo '# x' >> config"], cwd=ws, check=True)
    assert (ws / ".git" / "config").read_text() == "[core]\n# x\n"


@pytest.mark.parametrize("command", ["cd ~+ && ls", "cd src && cd .. && cd ~- && ls", "echo ~-", "ls ~"])
def test_reading_and_moving_about_is_still_allowed(ws: Path, command: str) -> None:
    assert verdict(ws, command) == "ALLOW", command


@pytest.mark.parametrize(
    "command",
    [
        "eval 'cd .git' && echo x >> config",
        "eval cd .git; echo x >> config",
        "eval 'cd .git; cd hooks' && echo x > pre-commit",
    ],
)
def test_a_cd_inside_eval_moves_the_shell_that_runs_it(ws: Path, command: str) -> None:
    """Found: eval's code was walked as if in a subshell, so ``eval 'cd .git' && echo x >> config`` was ALLOWed."""
    assert verdict(ws, command) in ("DENY", "ASK"), command


def test_eval_in_a_pipeline_or_subshell_moves_nothing_after_it(ws: Path) -> None:
    assert verdict(ws, "eval 'cd .git' | cat; echo x >> config") == "ALLOW"
    subprocess.run(["bash", "-c", "eval 'cd .git' && echo '# e' >> config"], cwd=ws, check=True)
    assert (ws / ".git" / "config").read_text().endswith("# e\n"), "bash: eval's cd stays"


@pytest.mark.parametrize(
    "command",
    ["shopt -s cdable_vars; g=.git; cd g && echo x >> config", "shopt -s $OPT; g=.git; cd g && echo x >> config"],
)
def test_cd_to_a_variables_name_under_cdable_vars_is_unknown(ws: Path, command: str) -> None:
    """Found: with ``cdable_vars`` on, ``cd g`` goes to ``$g`` (.git) when ``g`` is no directory: it was ALLOWed."""
    assert verdict(ws, command) in ("DENY", "ASK"), command


def test_bash_follows_cdable_vars(ws: Path) -> None:
    subprocess.run(["bash", "-c", "shopt -s cdable_vars; g=.git; cd g && echo '# v' >> config"], cwd=ws, check=True)
    assert (ws / ".git" / "config").read_text().endswith("# v\n")
    assert verdict(ws, "shopt -s nullglob; cd src && echo x > y") == "ALLOW"


@pytest.mark.parametrize("command", [". ./s.sh && echo x >> config", "source s.sh; echo x >> config"])
def test_a_sourced_script_that_moves_the_shell_asks(ws: Path, command: str) -> None:
    """Found: a script an earlier call wrote (``cd .git``), sourced, moves the shell that runs the rest of the line:
    ``. ./s.sh && echo x >> config`` was ALLOWed and appends to .git/config."""
    (ws / "s.sh").write_text("cd .git\n")
    (ws / "ok.sh").write_text("export A=1\n")
    assert verdict(ws, command) == "ASK", command
    assert verdict(ws, "bash s.sh && echo x >> config") == "ALLOW", "run by a shell of its own, it moves nothing"
    assert verdict(ws, ". ./ok.sh && echo x > y") == "ALLOW"
    subprocess.run(["bash", "-c", ". ./s.sh && echo '# s' >> config"], cwd=ws, check=True)
    assert (ws / ".git" / "config").read_text().endswith("# s\n")
