"""Links into places the agent may not write, and paths through another process's view (``/proc/self/cwd``).

A hard link is the file itself: ``ln .tether/envelope.yaml x`` (or ``cp -l``, ``cp -al .git g``) was allowed as a
build step in the workspace, and the next call's ``echo x > x``, a write to an ordinary file of the workspace, was
allowed too: it rewrote the envelope. A symbolic link sends a write in the same command to where it points before
the gate can see the link (``ln -s .tether t && echo x > t/envelope.yaml``). And ``/proc/self/cwd`` is the deciding
process's directory, not the agent's shell's: the gate read ``echo x > /proc/self/cwd/envelope.yaml`` in its own.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.hooks.calls import hook_envelope
from tether.policy.gate import Gate


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    for d in (".tether", ".git/hooks", "src", "docs"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / ".tether" / "envelope.yaml").write_text("version: 1\n")
    (tmp_path / ".git" / "config").write_text("[core]\n")
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    return tmp_path.resolve()


def verdict(ws: Path, command: str, cwd: Path | None = None) -> str:
    args = {"command": command} if cwd is None else {"command": command, "cwd": str(cwd)}
    d = Gate(hook_envelope(), ws).decide("bash", args)
    return f"{d.verdict.name} {d.deciding_rule}"


LINKS_INTO_PROTECTED = [
    "ln .tether/envelope.yaml hard",
    "ln -f .git/config c",
    "ln -t src .tether/envelope.yaml",
    "ln --target-directory=src .git/config",
    "ln src/app.py .tether/envelope.yaml docs",
    "cp -l .tether/envelope.yaml x",
    "cp --link .git/config x",
    "cp -al .git g",
    "cp -rl .tether t",
    "ln -s .tether t && echo x > t/envelope.yaml",
    "ln -sf .git g; echo x >> g/config",
    "ln -s .git/hooks h",
    "ln -rs .tether src/t",
    "cp -s .tether/envelope.yaml x",
    "cp --symbolic-link .git/config x",
    "ln -s ../.tether src/t",  # points from src/ to the workspace's .tether
    "cd src && ln -s ../.git g",
]


@pytest.mark.parametrize("command", LINKS_INTO_PROTECTED)
def test_a_link_to_a_place_the_agent_may_not_write_is_not_allowed(ws: Path, command: str) -> None:
    assert not verdict(ws, command).startswith("ALLOW"), command


@pytest.mark.parametrize(
    "command",
    ["ln -s app.py src/main.py", "ln src/app.py src/copy.py", "cp -l src/app.py docs/", "ln -s src lib", "cp -r src b"],
)
def test_links_within_the_writable_workspace_are_still_allowed(ws: Path, command: str) -> None:
    assert verdict(ws, command).startswith("ALLOW"), command


def test_a_hard_link_made_then_written_rewrites_the_file_it_links(ws: Path) -> None:
    """Why the link itself is judged: once it exists, the write through it looks like any write in the workspace."""
    subprocess.run(["ln", ".tether/envelope.yaml", "plain.yaml"], cwd=ws, check=True)
    assert verdict(ws, "echo x > plain.yaml").startswith("ALLOW"), "the gate cannot tell: a plain file in the workspace"
    subprocess.run(["bash", "-c", "echo rewritten > plain.yaml"], cwd=ws, check=True)
    assert (ws / ".tether" / "envelope.yaml").read_text() == "rewritten\n"


@pytest.mark.parametrize(
    "command",
    [
        "echo x > /proc/self/cwd/envelope.yaml",
        "echo x > /proc/thread-self/cwd/envelope.yaml",
        "echo x > /proc/PID/cwd/envelope.yaml",  # the deciding process's own pid, filled in below
        "echo x > /proc/self/task/1/cwd/envelope.yaml",
        "echo x > /dev/fd/3/envelope.yaml",
        "cp /dev/null /proc/self/root/proc/self/cwd/envelope.yaml",
    ],
)
def test_a_path_through_the_deciding_processs_own_view_is_unknown(
    ws: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's shell in ``.tether/``, the deciding process (the daemon, a hook) elsewhere: whose cwd is it?"""
    monkeypatch.chdir(ws)  # the deciding process in the workspace root, where envelope.yaml would be a new file
    command = command.replace("PID", str(os.getpid()))  # not in the parameter: xdist's workers must collect alike
    assert not verdict(ws, command, ws / ".tether").startswith("ALLOW"), command


def test_the_harmless_devices_and_the_proc_files_the_gate_knows_are_judged_as_before(ws: Path) -> None:
    assert verdict(ws, "echo x > /dev/null").startswith("ALLOW")
    assert verdict(ws, "cat /dev/fd/0").startswith("ALLOW")
    assert verdict(ws, "cat /proc/self/environ").startswith("DENY path:credential")
    assert verdict(ws, "cat /proc/cpuinfo").startswith("ALLOW")
