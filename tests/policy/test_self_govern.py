"""The agent does not govern itself through tether's own CLI.

A project that installs tether in its virtualenv has ``.venv/bin/tether``, a program of the workspace, which the
coding profile allows to run: so ``.venv/bin/tether approve ap-…`` answered the agent's own pending call, and
``.venv/bin/tether hook uninstall claude-code`` removed the hooks that judge it (the settings file it rewrites is
a dotfile the gate protects, but the gate saw only a workspace program). On the path, ``tether approve`` merely
asked, putting the agent's self-approval in front of the human as a question.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


def verdict(ws: Path, command: str) -> str:
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    return f"{d.verdict.name} {d.deciding_rule}"


GOVERNING = [
    "tether approve ap-1",
    "tether deny ap-1",
    ".venv/bin/tether approve ap-1",
    "./.venv/bin/tether approve --run r1 ap-1",
    "tether --db .tether/tether.db approve ap-1",
    "tether hook uninstall claude-code",
    ".venv/bin/tether hook install claude-code --user",
    "tether daemon --stop",
    "cd src && ../.venv/bin/tether daemon --stop",
    "env TETHER_DB=x tether approve ap-1",
    "command tether approve ap-1",
    "nohup tether approve ap-1",
    "t=tether; $t approve ap-1",
    "bash -c 'tether approve ap-1'",
    "xargs tether approve < ids",
    "echo ap-1 | xargs -I{} .venv/bin/tether approve {}",
    "python -m tether.cli.main approve ap-1",
    "python3 -mtether.cli.main deny ap-1",
    ".venv/bin/python -m tether.cli.main hook uninstall claude-code",
    "pytest -q && tether approve ap-1",
]


@pytest.mark.parametrize("command", GOVERNING)
def test_tethers_governing_commands_are_denied_however_tether_is_named(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command) == "DENY coding:deny-self-govern", command


@pytest.mark.parametrize("command", ["tether $CMD ap-1", ".venv/bin/tether $(echo approve) ap-1", "tether ap-$N"])
def test_a_tether_command_the_gate_cannot_read_asks_and_is_never_allowed(tmp_path: Path, command: str) -> None:
    assert verdict(tmp_path, command).startswith("ASK "), command


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (".venv/bin/tether show run1", "ALLOW coding:allow-run-workspace"),
        ("tether --version", "ALLOW coding:allow-version"),
        ("tether show run1", "ASK default:unknown-command"),
        ("python -m tether.cli.main runs", "ASK coding:ask-python-module"),
        ("ls approve", "ALLOW coding:allow-read-only"),  # the word alone, not tether's, decides nothing
    ],
)
def test_tethers_other_commands_are_judged_as_before(tmp_path: Path, command: str, expected: str) -> None:
    assert verdict(tmp_path, command) == expected
