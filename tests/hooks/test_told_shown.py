"""``tether show`` says what the agent was told where that is not the gate's verdict, and says it as the hook sent it.

The log keeps the gate's verdict. Claude Code hears an ASK as ``deny`` in a permission mode that does not prompt,
and no decision for an ALLOW in plan mode; Codex hears every ASK as a refusal. A reader of the timeline saw only
the verdict: "ASK" for a call the agent was refused, "ALLOW" for one Claude Code's own flow decided. Each case is
checked against the answer the hook actually sent for it, so the line shown cannot drift from the reply.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload
from typer.testing import CliRunner

from tether.cli.main import app
from tether.hooks.answer import answer
from tether.hooks.session import run_id_for
from tether.hooks.wire import Reply

ASKED = {"command": "git push origin main"}  # the built-in envelope asks for a push
ALLOWED = {"command": "ls"}
DENIED = {"command": "rm -rf /"}
CALLS = {"ASK": ASKED, "ALLOW": ALLOWED, "DENY": DENIED}
MODES = ["default", "plan", "acceptEdits", "auto", "bypassPermissions", "dontAsk", None]


def sent(agent: str, reply: Reply) -> str:
    """The answer the agent got: allow / ask / deny, or ``no decision`` (Claude Code's own flow decides)."""
    if agent == "codex":  # ALLOW is no output; a refusal exits 2 (hooks/wire.py)
        return "deny" if reply.exit == 2 else "allow" if reply.exit == 0 and not reply.stdout else "?"
    if not reply.stdout:
        return "no decision"
    return str(json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"])


def session(tmp_path: Path, agent: str, mode: str | None) -> tuple[list[str], list[str]]:
    """Each verdict's call in one session of ``agent`` in ``mode``: the answers sent, and ``tether show``'s lines."""
    hook = Hook(tmp_path, agent)
    answers = []
    for i, (_verdict, tool_input) in enumerate(CALLS.items()):
        data = payload(f"{agent}.PreToolUse", tmp_path, tool_name="Bash", tool_input=tool_input, tool_use_id=f"c{i}")
        if mode is None:
            data.pop("permission_mode", None)
        else:
            data["permission_mode"] = mode
        answers.append(sent(agent, answer(hook.request, data)))
    db = str(tmp_path / ".tether" / "tether.db")
    run = run_id_for(agent, str(data["session_id"]))
    shown = CliRunner().invoke(app, ["show", run, "--db", db, "--full"])
    assert shown.exit_code == 0, shown.output
    return answers, shown.output.splitlines()


def told_lines(lines: list[str], agent: str) -> dict[str, str]:
    """Verdict -> the ``told`` line under its decision."""
    out: dict[str, str] = {}
    for before, line in itertools.pairwise(lines):
        if line.strip().startswith(f"told {agent}:"):
            verdict = next(v for v in CALLS if f" {v} by " in before)
            out[verdict] = line.strip()
    return out


@pytest.mark.parametrize("mode", MODES)
def test_claude_code_is_shown_told_what_it_was_sent(tmp_path: Path, mode: str | None) -> None:
    answers, lines = session(tmp_path, "claude-code", mode)
    told = told_lines(lines, "claude-code")
    for verdict, got in zip(CALLS, answers, strict=True):
        if got == verdict.lower():
            assert verdict not in told, (mode, verdict, lines)
        else:
            assert told[verdict].startswith(f"told claude-code: {got} — "), (mode, verdict, got, lines)
    expected = {"ASK": "deny"} if mode in ("auto", "bypassPermissions", "dontAsk") else {}
    expected |= {"ALLOW": "no decision"} if mode == "plan" else {}
    assert {v: line.split(": ", 1)[1].split(" — ")[0] for v, line in told.items()} == expected, lines
    if mode == "auto":
        assert "in permission mode 'auto'" in told["ASK"], told


def test_codex_is_shown_refused_what_tether_asked(tmp_path: Path) -> None:
    answers, lines = session(tmp_path, "codex", None)
    assert answers == ["deny", "allow", "deny"], answers
    told = told_lines(lines, "codex")
    assert list(told) == ["ASK"] and told["ASK"].startswith("told codex: deny — Codex has no ask"), lines


def test_a_decision_made_at_a_receipt_is_not_shown_as_told(tmp_path: Path) -> None:
    """A receipt whose input is not the one judged (another hook's ``updatedInput``) is judged when it comes, after
    the call ran: nothing was told of that verdict, whatever the mode."""
    hook = Hook(tmp_path)
    assert hook.bash("ls", "x1")[0] == "allow"
    assert hook("PostToolUse", tool_input=ASKED, tool_use_id="x1", tool_response={}, permission_mode="auto").exit == 0
    db = str(tmp_path / ".tether" / "tether.db")
    run = run_id_for("claude-code", str(payload("claude-code.PreToolUse", tmp_path)["session_id"]))
    shown = CliRunner().invoke(app, ["show", run, "--db", db])
    assert shown.exit_code == 0, shown.output
    assert " ASK by " in shown.output and "told claude-code" not in shown.output, shown.output


def test_a_hostile_mode_is_shown_escaped_and_short(tmp_path: Path) -> None:
    mode: Any = "[red]auto[/red]" + "x" * 5000
    hook = Hook(tmp_path)
    data = payload("claude-code.PreToolUse", tmp_path, tool_name="Bash", tool_input=ASKED, permission_mode=mode)
    assert sent("claude-code", answer(hook.request, data)) == "deny"
    db = str(tmp_path / ".tether" / "tether.db")
    shown = CliRunner().invoke(app, ["show", run_id_for("claude-code", str(data["session_id"])), "--db", db])
    line = next(line for line in shown.output.splitlines() if "told claude-code" in line)
    assert "[red]auto[/red]" in line and len(line) < 300, line
