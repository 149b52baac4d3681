"""What an agent left uncommitted in one governed session is not the user's work in the next. A ``/clear`` (or a
new session started on the same checkout) begins a new session whose first call keeps the dirty files as the user's
(hooks/origin.py): a ``# ruff: noqa`` the agent wrote in the session before, refused at that session's stop, is
then part of the new baseline, and the new session's stop let it stand (reported by redteam7; closed by
hooks/earlier.py: s1 never had a stop accepted, so what differs from its start is its agent's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook
from test_stop_tools import LINTING

from tether.verify import sensors

RUFF = str(Path(sys.executable).parent / "ruff")
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def _write(hook: Hook, session: str, rel: str, content: str, call_id: str) -> None:
    tool_input = {"file_path": str(hook.workspace / rel), "content": content}
    hook("PreToolUse", session_id=session, tool_name="Write", tool_input=tool_input, tool_use_id=call_id)
    (hook.workspace / rel).write_text(content)
    hook(
        "PostToolUse",
        session_id=session,
        tool_name="Write",
        tool_input=tool_input,
        tool_response={},
        tool_use_id=call_id,
    )


def test_a_directive_the_agent_wrote_last_session_is_still_the_agents(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(LINTING)
    (tmp_path / "calc.py").write_text("def f():\n    return 1\n")
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "calc.py"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "start"], cwd=tmp_path, check=True)
    monkeypatch.setattr(sensors, "find_tool", lambda name, workspace, configured=None: RUFF)
    hook = Hook(tmp_path)
    hook("SessionStart", session_id="s1")
    _write(hook, "s1", "calc.py", "# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n", "w1")
    first = json.loads(hook("Stop", session_id="s1").stdout)
    assert first["decision"] == "block", first  # refused where it was written
    hook("SessionStart", session_id="s2", source="clear")
    _write(hook, "s2", "calc.py", "# ruff: noqa\nimport os\n\n\ndef f():\n    return 2\n", "w2")
    reply = hook("Stop", session_id="s2").stdout
    assert reply and json.loads(reply)["decision"] == "block", "the agent's directive became the user's"
