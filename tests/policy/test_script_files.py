"""A deny rule reaches into the shell scripts a command runs (a skill's script, or one the agent wrote)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, Permissions, PlanRef, ToolContract
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.policy.scripts import MAX_SCRIPT_BYTES

ENV = Envelope(
    plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
    environment=Environment(filesystem=Filesystem(read=["**"], write=["**"])),
    tools=[ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])],
    permissions=Permissions.model_validate(
        {"deny": [{"id": "no-push", "rule": "bash(git push:*)", "reason": "never push"}]}
    ),
)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    skill = ws / ".claude" / "skills" / "release" / "scripts"
    skill.mkdir(parents=True)
    (skill / "release.sh").write_text("#!/bin/sh\nset -e\necho releasing\ngit push origin main\n")
    (skill / "ok.sh").write_text("#!/usr/bin/env bash\necho fine\nls\n")
    (skill / "outer.sh").write_text("#!/bin/sh\nsh .claude/skills/release/scripts/release.sh\n")
    (skill / "loop.sh").write_text("#!/bin/sh\nsh .claude/skills/release/scripts/loop.sh\n")
    (skill / "huge.sh").write_text("echo x\n" * (MAX_SCRIPT_BYTES // 7 + 1))
    (skill / "bin.sh").write_bytes(b"\x7fELF\x00\x00git push")
    (skill / "notes.txt").write_text("git push origin main\n")  # no #!: the calling shell runs it
    (skill / "tool.py").write_text("#!/usr/bin/env python3\nprint('git push origin main')\n")
    for f in skill.iterdir():
        f.chmod(0o755)
    os.symlink(skill / "release.sh", ws / "innocent.sh")
    return ws


@pytest.mark.parametrize(
    "command",
    [
        "sh .claude/skills/release/scripts/release.sh",
        "bash -e .claude/skills/release/scripts/release.sh",
        "./.claude/skills/release/scripts/release.sh",
        "cd .claude/skills/release && sh scripts/release.sh",
        "source .claude/skills/release/scripts/release.sh",
        ". ./innocent.sh",
        "env FOO=1 sh .claude/skills/release/scripts/release.sh",
        "sh .claude/skills/release/scripts/outer.sh",  # a script that runs the script
        "./.claude/skills/release/scripts/notes.txt",
    ],
)
def test_a_denied_command_inside_a_script_is_denied(ws: Path, command: str) -> None:
    d = Gate(ENV, ws).decide("bash", {"command": command})
    assert (d.verdict, d.deciding_rule) == (Verdict.DENY, "no-push"), d
    assert "in the script .claude/skills/release/scripts/" in d.reason


def test_a_harmless_script_still_runs_and_unjudgeable_ones_ask(ws: Path) -> None:
    gate = Gate(ENV, ws)
    assert gate.decide("bash", {"command": "sh .claude/skills/release/scripts/ok.sh"}).verdict is Verdict.ALLOW
    assert gate.decide("bash", {"command": "./.claude/skills/release/scripts/tool.py"}).verdict is Verdict.ALLOW
    for name, why in (("huge", "too large"), ("bin", "not text"), ("loop", "deep")):
        d = gate.decide("bash", {"command": f"sh .claude/skills/release/scripts/{name}.sh"})
        assert (d.verdict, d.deciding_rule) == (Verdict.ASK, "shell:script-unchecked") and why in d.reason, d
