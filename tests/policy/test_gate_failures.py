"""The gate never crashes: hostile input and internal failures become ASK with a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.policy import profile
from tether.policy.decision import Verdict
from tether.policy.defaults import default_envelope
from tether.policy.gate import Gate

HOSTILE = [
    "$(" * 400 + "ls" + ")" * 400,
    "(" * 2000 + "ls" + ")" * 2000,
    "{ " * 600 + "ls;" + " }" * 600,
    'echo "${a:-' * 300 + "x" + '}"' * 300,
    "bash -c " + "'" * 301,
    "eval " * 3000 + "ls",
    "cat /proc/1/root/etc/shadow",
    "echo x > /proc/1/root/tmp/x",
    "echo \x00 hi",
    "ls " * 100_000,
    "a=$(" * 100 + ")" * 100,
    "f() { f | f & }; " * 50 + "f",
]


ODD = ["cat " + "a/" * 5000 + "b", "echo \udcff", "ls " + "x" * 70000, "cat $'\\x00'", "cd /proc/1/root && cat x"]


@pytest.mark.parametrize("command", ODD, ids=range(len(ODD)))
def test_odd_input_gets_a_decision(command: str, tmp_path: Path) -> None:
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.deciding_rule and d.reason


@pytest.mark.parametrize("command", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_input_is_never_allowed_and_never_raises(command: str, tmp_path: Path) -> None:
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": command})
    assert d.verdict is not Verdict.ALLOW, d.to_dict()
    assert d.reason


def test_unreadable_paths_are_not_a_crash(tmp_path: Path) -> None:
    gate = Gate(default_envelope(), tmp_path)
    assert gate.decide("bash", {"command": "ls /proc/1/root/"}).verdict is Verdict.ALLOW  # names only, no resolution
    d = gate.decide("bash", {"command": "cat /proc/1/root/etc/hostname"})
    assert (d.verdict, d.deciding_rule) == (Verdict.ASK, "path:unknown")
    assert "cannot be resolved" in d.reason


def test_deep_nesting_names_the_limit(tmp_path: Path) -> None:
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": "(" * 300 + "ls" + ")" * 300})
    assert "shell:too-deep" in {m.id for m in d.matches}


def test_an_internal_failure_is_an_ask_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kw: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(profile, "findings_for", broken)
    d = Gate(default_envelope(), tmp_path).decide("bash", {"command": "ls"})
    assert (d.verdict, d.deciding_rule) == (Verdict.ASK, "gate:error")
    assert "RecursionError" in d.reason
