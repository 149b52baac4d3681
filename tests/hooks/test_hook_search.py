"""Claude Code's Grep reads the contents of every file under its path: the deny list holds for it as for grep -r.

Found: under an envelope whose ``filesystem.deny`` hides ``secrets/**``, ``Read secrets/key.pem`` and ``grep -r
BEGIN .`` were denied, yet ``Grep {pattern: BEGIN, path: <workspace>}`` (or ``path: secrets``) was allowed as a read
of a directory (``default:read``): the tool returns the matching lines of the hidden files.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook

ENVELOPE = """\
version: 1
plan: {path: plan.yaml, hash: "sha256:%s"}
environment:
  filesystem: {read: ["**"], write: ["src/**"], deny: ["secrets/**"]}
tools:
  - {name: bash, purpose: Run a command., effects: [exec]}
  - {name: read_file, purpose: Read a file., effects: [read]}
  - {name: search, purpose: Find files or lines., effects: [read]}
""" % ("0" * 64)


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    for d in ("src", "secrets", "docs", ".tether"):
        (tmp_path / d).mkdir()
    (tmp_path / "secrets" / "key").write_text("BEGIN KEY\n")
    (tmp_path / "src" / "app.py").write_text("x = 1\n")
    (tmp_path / ".tether" / "envelope.yaml").write_text(ENVELOPE)
    return Hook(tmp_path)


def decided(hook: Hook, tool: str, tool_input: dict, call_id: str) -> tuple[str, str]:
    out = json.loads(hook("PreToolUse", tool_name=tool, tool_input=tool_input, tool_use_id=call_id).stdout)
    return out["hookSpecificOutput"]["permissionDecision"], out["hookSpecificOutput"]["permissionDecisionReason"]


@pytest.mark.parametrize("where", [".", "secrets", "docs/..", None])
def test_a_grep_whose_files_the_deny_list_may_match_is_denied_like_grep_r(hook: Hook, where: str | None) -> None:
    ti = {"pattern": "BEGIN"} if where is None else {"pattern": "BEGIN", "path": str(hook.workspace / where)}
    verdict, reason = decided(hook, "Grep", ti, "g1")
    assert verdict == "deny" and "(path:denied)" in reason, reason
    assert decided(hook, "Bash", {"command": f"grep -r BEGIN {where or '.'}"}, "b1")[0] == "deny"


def test_a_grep_the_deny_list_cannot_reach_and_a_glob_of_names_are_allowed(hook: Hook) -> None:
    assert decided(hook, "Grep", {"pattern": "x", "path": str(hook.workspace / "src")}, "g1")[0] == "allow"
    assert decided(hook, "Glob", {"pattern": "**/*"}, "g2")[0] == "allow", "names only, as ls"
    assert decided(hook, "Glob", {"pattern": "*", "path": str(hook.workspace / "secrets")}, "g3")[0] == "allow"
