"""``trap CODE SIGNAL`` runs CODE when the signal comes, an ``EXIT`` trap when the shell ends. The code was judged
only when it stood first: ``trap -- 'rm -rf ~' EXIT`` (``--`` ends the options) and ``trap "$x" EXIT`` with ``x``
read from a file were allowed as "trap only reads". Each is run by bash with ``touch ran`` for the code."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


def verdict(ws: Path, command: str) -> str:
    return Gate(hook_envelope(), ws).decide("bash", {"command": command}).verdict.name


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("trap -- '{}' EXIT", "DENY"),
        ("trap -- '{}' EXIT; ls", "DENY"),
        ('read -r x < code.txt; trap "$x" EXIT', "ASK"),
        ('read -r x < code.txt; trap -- "$x" EXIT', "ASK"),
    ],
)
def test_a_traps_code_is_judged(tmp_path: Path, template: str, expected: str) -> None:
    (tmp_path / "code.txt").write_text("rm -rf ~\n")
    assert verdict(tmp_path, template.format("rm -rf ~")) == expected
    (tmp_path / "code.txt").write_text("touch ran\n")
    subprocess.run(["bash", "-c", template.format("touch ran")], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "ran").exists(), template


@pytest.mark.parametrize("command", ["trap -p EXIT", "trap - EXIT", "trap -- - EXIT", "trap '' INT", "trap -l"])
def test_a_trap_that_runs_nothing_is_allowed(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command) == "ALLOW"
