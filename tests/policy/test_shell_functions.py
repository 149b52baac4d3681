"""Which runs, a shell function or the program of its name. Bash looks a name up as a function before any builtin or
program, but ``command``, ``env``, ``exec``, ``timeout``, ``xargs``, ``find -exec`` and a new shell run the program,
whatever function bears its name; a function defined in a subshell, on one path only or removed with ``unset -f`` is
not there. The shell reading had one table of functions for the whole string, consulted after the builtins: so
``rm() { :; }; command rm -rf ~`` was judged as the harmless body and allowed, and so was ``cd() { rm -rf ~; }; cd
src``, which runs the body. Each case is run by bash with ``touch ran`` for the dangerous command."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate

#: {p} is the program, {a} its arguments: the gate sees ``rm -rf ~``, bash runs ``touch ran``.
PROGRAM_RUNS = [
    "{p}() {{ :; }}; command {p} {a}",
    "{p}() {{ :; }}; env {p} {a}",
    "{p}() {{ :; }}; exec {p} {a}",
    "{p}() {{ :; }}; timeout 5 {p} {a}",
    "{p}() {{ :; }}; nice {p} {a}",
    "{p}() {{ :; }}; xargs {p} {a} < /dev/null",
    "{p}() {{ :; }}; find . -maxdepth 0 -exec {p} {a} \\;",
    "{p}() {{ :; }}; bash -c '{p} {a}'",
    "{p}() {{ :; }}; unset -f {p}; {p} {a}",
    "({p}() {{ :; }}); {p} {a}",
    "{p}() {{ :; }} | cat; {p} {a}",
    "if false; then {p}() {{ :; }}; fi; {p} {a}",
    "false && {p}() {{ :; }}; {p} {a}",
    "{p}() {{ :; }}; for i in 1 2; do {p} {a}; unset -f {p}; done",  # the second round runs the program
]
FUNCTION_RUNS = [
    "cd() {{ {p} {a}; }}; cd /",
    "eval() {{ {p} {a}; }}; eval ls",
    "echo() {{ {p} {a}; }}; echo hi",
    "eval '{p}x() {{ {p} {a}; }}'; {p}x",
    "command_not_found_handle() {{ {p} {a}; }}; nosuchprogram_xyz",  # bash runs it for a command it does not find
]


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.mark.parametrize("template", PROGRAM_RUNS + FUNCTION_RUNS)
def test_what_runs_is_judged(tmp_path: Path, template: str) -> None:
    command = template.format(p="rm", a="-rf ~")
    assert verdict(tmp_path, command)[0] == "DENY", command


@pytest.mark.parametrize("template", PROGRAM_RUNS + FUNCTION_RUNS)
def test_bash_runs_it(tmp_path: Path, template: str) -> None:
    """The premise: with ``touch`` for the program and ``ran`` for its argument, the file appears."""
    command = template.format(p="touch", a="ran")
    subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "ran").exists(), command


@pytest.mark.parametrize(
    "command",
    [
        "rm() { :; }; rm -rf ~",  # the function runs, not rm
        "rm() { :; }; \\rm -rf ~",  # a quoted name dodges an alias, never a function
        "rm() { :; }; time rm -rf ~",
        "f() { ls; }; if true; then f; fi",
        "f() { g() { ls; }; }; f; g",
    ],
)
def test_a_function_that_runs_is_judged_by_its_body(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command)[0] == "ALLOW", command


def test_a_function_one_path_defines_differently_asks(tmp_path: Path) -> None:
    command = "f() { ls; }; if false; then f() { echo; }; fi; f"
    assert verdict(tmp_path, command)[0] == "ASK"
