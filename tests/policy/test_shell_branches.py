"""A script's variables and directory as bash leaves them, whichever way it went. The shell reading walked every
statement one after another and kept the last value it saw: ``if true; then X=/; else X=src; fi; rm -rf $X`` was
judged as ``rm -rf src`` (the ``else`` came last), ``X=/; true || X=src; rm -rf $X`` too (the right side of ``||``
may not run), and ``X=/; (X=src); rm -rf $X`` (a subshell's assignment ends with it) — each allowed, each removes
``/``. Now a subshell, a pipeline's part, a substitution and a background job end with the state they began with;
each path of an ``if``, a ``case``, ``&&``/``||`` and a loop begins with the same state, and a value two paths leave
differently is unknown after them. Each case is run by bash with ``echo`` for ``rm -rf``: it names ``/``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate

PATHS = [
    # one of several paths
    "if true; then X=/; else X=safe; fi; rm -rf $X",
    "if false; then X=safe; elif true; then X=/; else X=safe; fi; rm -rf $X",
    "X=/; if false; then X=safe; fi; rm -rf $X",
    "X=/; if false; then X=safe; elif false; then X=safe; fi; rm -rf $X",
    "X=/; if true; then X=safe; else rm -rf $X; fi; X=/; if false; then X=safe; else rm -rf $X; fi",
    "[ -d / ] && X=/ || X=safe; rm -rf $X",
    "X=/; false && X=safe; rm -rf $X",
    "X=/; true || X=safe; rm -rf $X",
    "case a in a) X=/;; *) X=safe;; esac; rm -rf $X",
    "X=/; case a in b) X=safe;; esac; rm -rf $X",
    "X=/; case a in b) X=safe;& a) rm -rf $X;; esac",
    # a loop's body, any number of times
    "X=safe; for i in 1 2; do rm -rf $X; X=/; done",
    "X=safe; n=0; while [ $n -lt 2 ]; do rm -rf $X; X=/; n=$((n+1)); done",
    "X=safe; n=0; until [ $n -ge 2 ]; do rm -rf $X; X=/; n=$((n+1)); done",
    "X=/; for i in; do X=safe; done; rm -rf $X",
    "X=safe; for ((i=0; i<2; i++)); do rm -rf $X; X=/; done",
    # a subshell's assignments end with it
    "X=/; (X=safe); rm -rf $X",
    "X=/; X=safe | cat; rm -rf $X",
    "X=/; { X=safe; } | cat; rm -rf $X",
    "X=/; echo $(X=safe) >/dev/null; rm -rf $X",
    "X=/; X=safe & wait; rm -rf $X",
    "X=/; export X=safe | cat; rm -rf $X",
]


def verdict(ws: Path, command: str) -> tuple[str, str]:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return d.verdict.name, d.deciding_rule


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "safe").mkdir()
    return tmp_path.resolve()


@pytest.mark.parametrize("command", PATHS)
def test_a_value_one_path_may_leave_is_never_judged_as_another(ws: Path, command: str) -> None:
    got, rule = verdict(ws, command)
    assert got != "ALLOW", (command, rule)


@pytest.mark.parametrize("command", PATHS)
def test_what_bash_runs(tmp_path: Path, command: str) -> None:
    """The same commands with ``echo`` for ``rm -rf``, run: one of the words they print is ``/``."""
    out = subprocess.run(["bash", "-c", command.replace("rm -rf", "echo")], capture_output=True, text=True, timeout=10)
    assert "/" in out.stdout.split(), (command, out.stdout, out.stderr)


@pytest.mark.parametrize(
    "command",
    [
        "X=build; if true; then X=build; else X=build; fi; rm -rf $X",  # every path leaves it the same
        "if true; then Y=1; fi; X=build; rm -rf $X",
        "X=build; (Y=/); rm -rf $X",
        "X=build; for i in 1 2; do echo $i; done; rm -rf $X",  # a loop that assigns nothing else
        "X=build; case a in a) echo a;; esac; rm -rf $X",
        "X=build; true && echo ok; rm -rf $X",
        "cd build && rm -rf out",
    ],
)
def test_a_value_every_path_leaves_alike_is_still_known(ws: Path, command: str) -> None:
    (ws / "build").mkdir()
    assert verdict(ws, command)[0] == "ALLOW", command
