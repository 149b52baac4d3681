"""Bash evaluates arithmetic: a name in it stands for its value, evaluated in turn, and an array subscript there runs
the command substitution it holds. ``x='a[$(rm -rf ~)]'; echo $((x))`` removes the home directory; it was allowed as
"echo only reads", and so was each spelling below: ``((…))``, ``let``, ``[[ … -eq … ]]``, a subscript, an offset,
``declare -i``, ``for ((…))``, ``${!x}`` (a name read from a value), ``[[ -v $x ]]``, ``declare -n`` (a name
reference), ``${x@P}`` (a value expanded as a prompt), a
quoted array assignment given to ``declare``, a command's output or a value read at run time. Now each asks
(``shell:dynamic-code``) unless every name holds a value known here with no expansion in it, a plain literal, a
number an arithmetic expansion gave it, or the environment's. Each spelling is run by bash: it runs the code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate

CODE = [
    "x='a[$({})]'; echo $((x))",
    "x='a[$({})]'; echo $(( x + 1 ))",
    "x='a[$({})]'; echo $(($x))",
    "x='a[$({})]'; echo $[x]",
    "x='a[$({})]'; y=x; echo $((y))",
    "x='a[$({})]'; ((x))",
    "x='a[$({})]'; let x",
    "x='a[$({})]'; [[ $x -eq 0 ]]",
    "x='a[$({})]'; [[ x -lt 1 ]]",
    "x='a[$({})]'; for ((i=x; i<1; i++)); do :; done",
    "x='a[$({})]'; echo ${{b[x]}}",
    "x='a[$({})]'; echo ${{b[$x]}}",
    "x='a[$({})]'; a[x]=1",
    "x='a[$({})]'; s=abc; echo ${{s:x}}",
    "x='a[$({})]'; declare -i y=x",
    "declare -i n; n='a[$({})]'",
    "x='a[$({})]'; echo ${{!x}}",
    "x='$({})'; echo ${{x@P}}",
    "declare -a 'x=([$({})]=1)'",
    "x='$({})'; declare -a \"y=($x)\"",
    "echo $(( $(echo 'a[$({})]') ))",
    "[[ $(echo 'a[$({})]') -eq 0 ]]",
    "[[ 'a[$({})]' -eq 0 ]]",
    "read x <<< 'a[$({})]'; echo $((x))",
    "if true; then x='a[$({})]'; else x=1; fi; echo $((x))",
    "for i in 'a[$({})]' 1; do echo $((i)); done",
    "x='a[$({})]'; [[ -v $x ]]; ls",  # -v reads a name, and evaluates its subscript
    "x='a[$({})]'; : ${{!x:=1}}",
    "declare -n r='a[$({})]'; echo $r; ls",  # a name reference: every $r evaluates its subscript
]


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.mark.parametrize("template", CODE)
def test_arithmetic_that_may_run_code_is_asked(tmp_path: Path, template: str) -> None:
    command = template.format("rm -rf ~")
    assert verdict(tmp_path, command) == ("ASK", "shell:dynamic-code"), command


@pytest.mark.parametrize("template", CODE)
def test_bash_runs_the_code(tmp_path: Path, template: str) -> None:
    """The premise: the same spelling with ``touch ran`` for the code makes the file."""
    subprocess.run(["bash", "-c", template.format("touch ran")], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "ran").exists(), template


@pytest.mark.parametrize(
    "command",
    [
        "i=0; i=$((i+1)); echo $i",
        "for i in 1 2 3; do echo $((i*2)); done",  # plain literals
        "count=0; for f in *.py; do count=$((count+1)); done; echo $count",  # numbers arithmetic gave it
        "i=0; while (( i < 3 )); do let i++; done; ls",
        "echo $((RANDOM % 5)) $((16#ff + 0x1f)) $((COLUMNS - 1))",  # the shell's and the environment's
        "x=1; [ $x -gt 0 ] && ls",  # the test builtin reads an integer; it evaluates nothing
        "s=hello; echo ${s:1:2} ${s:-x}",
        "arr=(a b c); echo ${arr[1]} ${arr[@]} ${#arr[@]}",
        "declare -A m; k=$(cat f); echo ${m[$k]}",  # a table's key is not arithmetic
        "declare -a 'x=(1 2)'",
        "x=HOME; echo ${!x}",
        "x=HOME; [[ -v $x ]] && ls",
        "declare -n r=HOME; echo $r",
    ],
)
def test_arithmetic_over_known_values_is_judged_as_before(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command)[0] == "ALLOW", command
