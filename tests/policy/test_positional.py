"""A shell's ``-c`` code is given the words after it as ``$0``, ``$1``, …: ``sh -c 'rm -rf $0' /`` is the ``rm -rf /``
it runs. Before, every ``$N`` in such code was a value known only at run time, so the gate asked where the command
spelled its target plainly (and allowed nothing it could have: ``sh -c 'echo $1' _ hi`` asked too). Code that may
give ``$N`` other values — ``shift``, ``set --``, ``getopts``, a function's own arguments, a sourced file — binds
none, so nothing is judged on a value it would not have; each case is checked against what a real bash runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "build").mkdir()
    return tmp_path.resolve()


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.mark.parametrize(
    ("command", "expected", "rule"),
    [
        ("sh -c 'rm -rf $0' /", "DENY", "coding:deny-rm-root"),
        ("bash -c 'rm -rf \"$1\"' _ /", "DENY", "coding:deny-rm-root"),
        ("sudo sh -c 'rm -rf $0' /", "DENY", "coding:deny-rm-root"),
        ("bash -c 'rm -rf $2' _ build /", "DENY", "coding:deny-rm-root"),
        ("sh -c 'cat $0' /etc/shadow", "DENY", "path:credential"),
        ("sh -c 'rm -rf $1' _ ~", "DENY", "coding:deny-rm-home"),
        ("sh -c 'sh -c \"rm -rf \\$0\" /' x", "DENY", "coding:deny-rm-root"),  # the inner code's own $0
        ("sh -c 'echo $1' _ hello", "ALLOW", ""),
    ],
)
def test_words_after_the_code_are_its_positional_parameters(ws: Path, command: str, expected: str, rule: str) -> None:
    got, rule_id = verdict(ws, command)
    assert got == expected, (command, rule_id)
    assert not rule or rule_id == rule, (command, rule_id)


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'shift; rm -rf $1' a x /",  # after shift $1 is /: bound to x it would have been allowed
        "sh -c 'f(){ rm -rf $1; }; f /' x safe",  # a function's $1 is its own argument
        "sh -c 'f () { rm -rf $1; }; f /' x safe",
        "bash -c 'function f { rm -rf $1; }; f /' x safe",
        "sh -c 'set -- /; rm -rf $1' x safe",
        "sh -c 'while getopts a: o; do :; done; rm -rf $1' x safe",
        "sh -c '. ./lib.sh; rm -rf $1' x safe",
        "sh -c 'rm -rf $1' x",  # no word for $1
        "sh -c 'rm -rf $1' x \"$(pwd)\"",  # a computed word
        "sh -c 'sh -c \"rm -rf \\$1\"' x /",  # the inner shell is given no $1: the outer one's is not its
    ],
)
def test_code_that_may_rebind_them_or_words_not_known_bind_nothing(ws: Path, command: str) -> None:
    got, rule_id = verdict(ws, command)
    assert got != "ALLOW", (command, rule_id)


@pytest.mark.parametrize(
    ("command", "target"),
    [
        ("sh -c 'shift; echo $1' a x /", "/"),
        ("sh -c 'f(){ echo $1; }; f /' x safe", "/"),
        ("sh -c 'echo $0 $1' a b", "a b"),
        ("bash -c 'echo \"$2\"' _ build /", "/"),
    ],
)
def test_what_bash_binds(tmp_path: Path, command: str, target: str) -> None:
    """The cases above against a real bash: what ``$N`` holds where it is used."""
    out = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert out.stdout.strip() == target


#: Code that rebinds ``$1`` with the builtin's name quoted or escaped: the shell reads ``shift`` all the same.
SPELLED = [
    "bash -c 's\\hift; rm -rf $1' x safe /",
    "bash -c 'sh\"\"ift; rm -rf $1' x safe /",
    "bash -c 's\"e\"t -- /; rm -rf $1' x safe",
    "bash -c 'builtin sh\\ift; rm -rf $1' x safe /",
    "bash -c \"sh\\$'i'ft; rm -rf \\$1\" x safe /",
    "bash -c 'shi\\\nft; rm -rf $1' x safe /",
]


@pytest.mark.parametrize("command", SPELLED)
def test_a_rebinding_builtin_however_spelled_binds_nothing(ws: Path, command: str) -> None:
    """Before, the check read the code's text as written, and each of these bound ``$1`` to ``safe``: allowed."""
    got, rule_id = verdict(ws, command)
    assert got != "ALLOW", (command, rule_id)


@pytest.mark.parametrize("command", SPELLED)
def test_what_bash_runs_for_those_spellings(tmp_path: Path, command: str) -> None:
    out = subprocess.run(
        ["bash", "-c", command.replace("rm -rf", "echo")], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert out.stdout.strip() == "/"


@pytest.mark.parametrize(
    "command",
    [
        "sh -c 'rm -rf $2' _ $X safe",  # X='a /': $1 is a, $2 is /
        "sh -c 'rm -rf $2' _ $(cat words) safe",
        "sh -c 'rm -rf $2' _ * safe",  # a glob is as many words as it matches
    ],
)
def test_after_a_word_that_may_be_several_no_place_is_known(ws: Path, command: str) -> None:
    """Before, a computed word was skipped and the words after it kept their places: ``$2`` was ``safe``, allowed."""
    got, rule_id = verdict(ws, command)
    assert got != "ALLOW", (command, rule_id)


def test_what_bash_binds_after_a_split_word(tmp_path: Path) -> None:
    out = subprocess.run(
        ["bash", "-c", "X='a /'; sh -c 'echo $2' _ $X safe"], capture_output=True, text=True, cwd=tmp_path, check=True
    )
    assert out.stdout.strip() == "/"
