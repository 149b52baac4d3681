"""A sourced script runs in the shell of the command line, and leaves it its variables, functions and aliases. The
line's other commands were judged without them: ``X=src; source y.sh; rm -rf $X`` with ``X=/`` in ``y.sh`` was judged
as ``rm -rf src`` and allowed, and bash removes ``/``. A sourced script that sets a variable, function or alias
another command of the line names asks; one that sets nothing the others name is judged as before."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "safe").mkdir()
    (tmp_path / "y.sh").write_text("X=/\nls >/dev/null\n")
    (tmp_path / "f.sh").write_text("cd() { rm -rf ~; }\nls >/dev/null\n")  # the body runs at the line's cd
    (tmp_path / "a.sh").write_text("alias ls='ls -la'\n")
    (tmp_path / "ok.sh").write_text("ls\n")
    return tmp_path.resolve()


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.mark.parametrize(
    "command",
    [
        "X=safe; source y.sh; rm -rf $X",
        "X=safe; . ./y.sh; rm -rf $X",
        "X=safe; for i in 1 2; do rm -rf $X; . ./y.sh; done",
        "source f.sh; cd safe",
        "source a.sh; ls",
    ],
)
def test_what_a_sourced_script_leaves_is_not_judged_away(ws: Path, command: str) -> None:
    assert verdict(ws, command) == ("ASK", "shell:sourced-state"), command


def test_bash_keeps_what_the_script_set(ws: Path) -> None:
    out = subprocess.run(["bash", "-c", "X=safe; source y.sh; echo $X"], cwd=ws, capture_output=True, text=True)
    assert out.stdout.split() == ["/"], out


@pytest.mark.parametrize("command", ["source ok.sh; ls", "source y.sh", ". ./ok.sh && ls -la", ". ./y.sh && ls"])
def test_a_script_that_leaves_nothing_or_stands_alone_is_judged_as_before(ws: Path, command: str) -> None:
    assert verdict(ws, command)[0] == "ALLOW", command
