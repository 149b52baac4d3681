"""A session's project is fixed at its first call, also when the agent does not name it.

docs/hooks.md: the project is ``$CLAUDE_PROJECT_DIR``, else the first hook call's ``cwd``, fixed when the session's run
starts: a later ``cd`` does not move the writable area. Without ``$CLAUDE_PROJECT_DIR`` (Codex, a wrapper, any agent
that does not set it) each call took its own ``cwd`` as the project: after a ``cd`` out of the workspace (allowed:
``cd`` only reads) the next call opened ``<cwd>/.tether/tether.db``, created a second run of the same session there
with the new directory as its workspace (and that directory's ``.tether/envelope.yaml`` as its envelope), and a
write the first workspace's gate denied (``path:write-outside``) was allowed. Now the first call's project is
pinned per session (``$XDG_STATE_HOME/tether/hook-sessions/``) and every later call uses it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hookkit import hook_process, payload

from tether.events.store import EventStore
from tether.hooks.session import run_id_for


def hook(env: dict[str, str], event: str, cwd: Path, **fields: object) -> subprocess.CompletedProcess[str]:
    return hook_process(env, payload(f"claude-code.{event}", cwd, **fields), cwd)


def decision(out: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    assert out.returncode == 0, out.stderr
    spec = json.loads(out.stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    ws, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    (ws / "src").mkdir(parents=True)
    (elsewhere / "sub").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_PROJECT_DIR", "TETHER_DB", "TETHER_ENVELOPE")}
    return ws, elsewhere, {**env, "TETHER_HOOK_DAEMON": "0"}


def test_a_cd_out_of_the_workspace_does_not_move_the_session(places: tuple[Path, Path, dict[str, str]]) -> None:
    ws, elsewhere, env = places
    assert hook(env, "SessionStart", ws).returncode == 0
    write = {"file_path": str(elsewhere / "x.py"), "content": "x"}
    assert decision(hook(env, "PreToolUse", ws, tool_name="Write", tool_input=write, tool_use_id="w1"))[0] == "deny"
    cd = {"command": f"cd {elsewhere}"}
    assert decision(hook(env, "PreToolUse", ws, tool_input=cd, tool_use_id="cd"))[0] == "allow"
    verdict, reason = decision(
        hook(env, "PreToolUse", elsewhere, tool_name="Write", tool_input=write, tool_use_id="w2")
    )
    assert verdict == "deny" and "outside the workspace" in reason and str(ws) in reason, reason
    verdict, reason = decision(
        hook(env, "PreToolUse", elsewhere / "sub", tool_input={"command": "rm -rf ../*"}, tool_use_id="rm")
    )
    assert verdict != "allow", reason
    assert not (elsewhere / ".tether").exists() and not (elsewhere / "sub" / ".tether").exists(), "no second store"
    sid = str(payload("claude-code.PreToolUse", ws)["session_id"])
    with EventStore.open(ws / ".tether" / "tether.db", readonly=True) as store:
        run = run_id_for("claude-code", sid)
        store.verify_run(run)
        calls = [e.payload["call_id"] for e in store.events(run) if e.kind == "action.decided"]
    assert calls == ["w1", "cd", "w2", "rm"], "every call of the session in its one run"


def test_a_planted_envelope_where_the_agent_goes_does_not_govern(places: tuple[Path, Path, dict[str, str]]) -> None:
    """A directory holding its own ``.tether/envelope.yaml`` (a cloned repository's) that the agent moves into."""
    ws, elsewhere, env = places
    (elsewhere / ".tether").mkdir()
    (elsewhere / ".tether" / "envelope.yaml").write_text("not: an envelope\n")
    assert hook(env, "SessionStart", ws).returncode == 0
    verdict, reason = decision(hook(env, "PreToolUse", elsewhere, tool_input={"command": "ls"}, tool_use_id="l"))
    assert verdict == "allow", reason


def test_the_session_begun_elsewhere_keeps_its_own_project_and_two_sessions_share_a_cwd(
    places: tuple[Path, Path, dict[str, str]],
) -> None:
    ws, elsewhere, env = places
    assert (
        decision(hook(env, "PreToolUse", elsewhere, tool_input={"command": "ls"}, session_id="other-session"))[0]
        == "allow"
    )
    assert hook(env, "SessionStart", ws).returncode == 0
    assert (elsewhere / ".tether" / "tether.db").exists() and (ws / ".tether" / "tether.db").exists()
    shared = {"tool_input": {"command": "ls"}, "session_id": "third", "tool_use_id": "s"}
    assert decision(hook(env, "PreToolUse", ws, **shared))[0] == "allow"
    with EventStore.open(ws / ".tether" / "tether.db", readonly=True) as store:
        for sid in (str(payload("claude-code.PreToolUse", ws)["session_id"]), "third"):
            store.verify_run(run_id_for("claude-code", sid))
