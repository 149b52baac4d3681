"""``${!X}`` is the value of the variable X names (bash's indirect expansion), ``${#X}`` the length of X's value,
``${!X*}`` the names that begin with X: none of them is X's value. The shell reading took each for ``$X`` (the
parser gives them one variable name, their ``!`` / ``#`` / ``*`` as bare tokens), so ``X=HOME; rm -rf ${!X}`` — an
``rm -rf $HOME`` — was judged as ``rm -rf HOME`` inside the workspace and allowed, as was ``bash -c 'rm -rf ${!1}'
_ HOME``. Such a word is now known only at run time, as any other expansion whose value is not read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws.resolve()).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.mark.parametrize(
    "command",
    [
        "X=HOME; rm -rf ${!X}",
        "bash -c 'rm -rf ${!1}' _ HOME",
        "bash -c 'rm -rf ${!0}' HOME",
        "X=HOME; rm -rf ${!X*}",
    ],
)
def test_an_indirect_expansion_is_not_the_value_it_names(tmp_path: Path, command: str) -> None:
    got, rule = verdict(tmp_path, command)
    assert got != "ALLOW", (command, rule)


def test_a_plain_expansion_is_still_its_value(tmp_path: Path) -> None:
    assert verdict(tmp_path, "X=build; rm -rf ${X}")[0] == "ALLOW"
    assert verdict(tmp_path, "X=/; rm -rf ${X}") == ("DENY", "coding:deny-rm-root")


@pytest.mark.parametrize(
    ("command", "value"),
    [("X=HOME; echo ${!X}", "HOME_VALUE"), ("bash -c 'echo ${!1}' _ HOME", "HOME_VALUE"), ("X=HOME; echo ${#X}", "4")],
)
def test_what_bash_expands(tmp_path: Path, command: str, value: str) -> None:
    """What a real bash makes of them: the named variable's value, a length — never X's own value."""
    env = {"HOME": "/nowhere/home", "PATH": "/usr/bin:/bin"}
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, env=env, check=True)
    assert out.stdout.strip() == value.replace("HOME_VALUE", env["HOME"])
