"""A variable the shell reading knows keeps that value only until something else assigns it. Before, it kept it
through every assignment it did not read as one, and judged the command on a value it would not have: ``read X``,
``printf -v X``, ``getopts``, ``let``, ``wait -p``, ``unset``, ``${X:=…}``, ``declare -n`` (a second name), a
function's body (and its ``cd``), an assignment before ``eval``, a function or a shell (``X=/ eval 'rm -rf $X'``), one
before a special builtin (kept by POSIX shells), arithmetic (``((IFS=1))``), an array's element (``X[0]=/`` is
``$X``), a ``DEBUG`` trap, the shell itself (``read`` with no name sets REPLY); and a shell this one starts knew
every variable, exported or not (``X=safe; sh -c 'rm -rf $X/'`` is ``rm -rf /``). The same held for ``IFS``: assigned
so, it splits a known value apart (``s/s`` with ``IFS=s`` is ``/``). Each case below was allowed; each is checked
against what a real shell runs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate

#: Each command, and the shell that runs it as shown (sh: POSIX's special-builtin rule).
RESET = [
    ("X=safe; read X <<< /; rm -rf $X", "bash"),
    ("X=safe; printf -v X /; rm -rf $X", "bash"),
    ("X=safe; getopts a: X; rm -rf $X", None),  # X is '?' here: what matters is that it is assigned
    ("X=s/s; let IFS=s; rm -rf $X", None),  # let gives IFS a number; what matters is that it is assigned
    ("X=safe; declare -n X=HOME; rm -rf $X", None),
    ("X=safe; echo / | { read X; rm -rf $X; }", "bash"),
    ("X=safe; while read X; do rm -rf $X; done <<< /", "bash"),
    ("X=safe; unset X; rm -rf $X/", "bash"),
    ("X=; : ${X:=/}; rm -rf $X", "bash"),
    ("X=safe; f() { X=/; }; f; rm -rf $X", "bash"),
    ("f() { cd /; }; f; rm -rf etc", None),  # rm -rf /etc
    ("X=safe; X=/ eval 'rm -rf $X'", "bash"),
    ("X=safe; X=/ sh -c 'rm -rf $X'", "bash"),
    ("g() { rm -rf $X; }; X=safe; X=/ g", "bash"),
    ("X=safe; X=/ :; rm -rf $X", "sh"),
    ("X=s/s; printf -v IFS s; rm -rf $X", "bash"),
    ("X=s/s; read IFS <<< s; rm -rf $X", "bash"),
    ("X=s/s; IFS=s eval 'rm -rf $X'", "bash"),
    ("bash -c 'declare -n R=IFS; R=s; rm -rf $1' _ s/s", None),
    ("bash -c 'read IFS <<< s; rm -rf $1' _ s/s", "bash"),
    # arithmetic, an array's element and a trap assign too
    ("X=1/1; ((IFS=1)); rm -rf $X", "bash"),
    ("X=1/1; : $((IFS=1)); rm -rf $X", "bash"),
    ("X=1/1; for ((IFS=1; 0; )); do :; done; rm -rf $X", "bash"),
    ("X=safe; X[0]=/; rm -rf $X", "bash"),
    ("X=safe; trap 'X=/' DEBUG; rm -rf $X", "bash"),
    # variables the shell sets itself
    ("REPLY=safe; read <<< /; rm -rf $REPLY", "bash"),
    ("OPTARG=safe; getopts a: o -a /; rm -rf $OPTARG", "bash"),
    ("BASH_REMATCH=safe; [[ / =~ .* ]]; rm -rf $BASH_REMATCH", "bash"),
    # a shell this one starts has only what was exported to it
    ("X=safe; sh -c 'rm -rf $X/'", "bash"),  # X is not exported: empty there
    ("export X=safe; env -u X sh -c 'rm -rf $X/'", "bash"),
    ("export X=safe; env -i sh -c 'rm -rf $X/'", "bash"),
    ("X=safe; env X=/ sh -c 'rm -rf $X'", "bash"),
    ("X=safe; bash <<< 'rm -rf $X/'", "bash"),  # a here-string's script: a new shell too
]


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "safe").mkdir()
    (tmp_path / "build").mkdir()
    return tmp_path.resolve()


@pytest.mark.parametrize(("command", "shell"), RESET)
def test_a_value_assigned_since_is_not_the_known_one(ws: Path, command: str, shell: str | None) -> None:
    got, rule = verdict(ws, command)
    assert got != "ALLOW", (command, rule)


@pytest.mark.parametrize(("command", "shell"), [c for c in RESET if c[1]])
def test_what_a_shell_runs(tmp_path: Path, command: str, shell: str) -> None:
    """The same commands with ``echo`` for ``rm -rf``, run: each names ``/``."""
    shown = command.replace("rm -rf", "echo")
    out = subprocess.run([shell, "-c", shown], capture_output=True, text=True, cwd=tmp_path, timeout=10)
    assert out.stdout.split() and out.stdout.split()[-1].rstrip("/") == "", (command, out.stdout, out.stderr)


@pytest.mark.parametrize(
    "command",
    [
        "X=build; rm -rf $X",
        "X=build; X=/ true; rm -rf $X",  # an assignment before a plain command ends with it
        "f() { echo hi; }; X=build; f; rm -rf $X",  # a body that does not assign X leaves it known
        "X=build; unset Y; rm -rf $X",
        "X=build; read -r Y <<< hi; rm -rf $X",
        "export X=build; sh -c 'rm -rf $X'",  # exported: known there
        "X=build; export X; sh -c 'rm -rf $X'",
        "declare -x X=build; sh -c 'rm -rf $X'",
    ],
)
def test_a_value_nothing_assigned_since_is_still_known(ws: Path, command: str) -> None:
    assert verdict(ws, command)[0] == "ALLOW", command
