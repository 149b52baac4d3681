"""A shell that reads its commands from its input asks: under Codex nobody judges what is typed into it later.

Codex's ``exec_command`` may start a process on a terminal and ``write_stdin`` types into it, and a non-empty
``write_stdin`` reaches no PreToolUse hook (openai/codex#46372, open): what a shell started that way runs is never
judged. tether asks for a shell or interpreter started without a program (``coding:ask-interactive``), but a lone
``-`` (which ends a shell's options as ``--`` does) was read as the name of a script in the workspace: ``sh -``,
a shell waiting for commands, was allowed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hookkit import Hook


@pytest.mark.parametrize("command", ["sh -", "bash -", "zsh -", "dash -", "bash -e -", "sh -- "])
def test_a_shell_reading_its_commands_from_input_asks(tmp_path: Path, command: str) -> None:
    out = Hook(tmp_path, "codex")("PreToolUse", tool_input={"command": command}, tool_use_id="s1")
    assert out.exit == 2 and "coding:ask-interactive" in out.stderr, out


def test_a_script_named_after_the_lone_dash_is_the_program(tmp_path: Path) -> None:
    (tmp_path / "build.sh").write_text("echo hi\n")
    hook = Hook(tmp_path, "codex")
    assert hook("PreToolUse", tool_input={"command": "sh - build.sh"}, tool_use_id="s2").exit == 0
    out = hook("PreToolUse", tool_input={"command": "sh - /tmp/elsewhere.sh"}, tool_use_id="s3")
    assert out.exit == 2 and "ask-run-outside" in out.stderr, out


def test_a_shell_fed_a_here_document_is_judged_by_its_commands(tmp_path: Path) -> None:
    hook = Hook(tmp_path, "codex")
    assert hook("PreToolUse", tool_input={"command": "sh - <<'EOF'\nls\nEOF"}, tool_use_id="s4").exit == 0
    out = hook("PreToolUse", tool_input={"command": "sh - <<'EOF'\nrm -rf /\nEOF"}, tool_use_id="s5")
    assert out.exit == 2 and "ask-interactive" not in out.stderr, out
