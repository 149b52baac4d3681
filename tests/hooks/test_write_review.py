"""A write's review in a hook session: the failing tests a Stop found refuse an edit of their file (change the code,
not the test), whether the call is decided by the daemon's code, which holds the session, or by a cold process
restored from the session's fold checkpoint. The review reads them from the run state (state.py ``failing_tests``;
review/execution.py), which the checkpoint keeps with its other fields: no fold of the control layer is read."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook, payload
from test_checkpoint_cold_session import decided_cold
from test_fold_checkpoint import checkpoint_file, cold
from test_stop_integrity import FROZEN, SOURCE, TEST

from tether.guard import log as guard_log
from tether.hooks.answer import answer

#: The stop's tests sensor runs the suite (tests may not change, as in test_stop_integrity's sessions).
SENSED = (
    FROZEN + '  sensors: [{name: tests, required: true}]\n  test_command: "%s -m pytest -q -p no:cacheprovider tests"\n'
)


def edit(hook: Hook, rel: str, call_id: str) -> dict[str, object]:
    given = {"file_path": str(hook.workspace / rel), "old_string": "2.5", "new_string": "3"}
    return payload("claude-code.PreToolUse", hook.workspace, tool_name="Edit", tool_input=given, tool_use_id=call_id)


def answered(hook: Hook, data: dict[str, object]) -> tuple[str, str]:
    """The daemon's code's answer to ``data``: the decision and its reason."""
    spec = json.loads(answer(hook.request, data).stdout)["hookSpecificOutput"]
    return spec["permissionDecision"], spec["permissionDecisionReason"]


def test_the_failing_tests_a_stop_found_refuse_an_edit_of_their_file_warm_and_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(guard_log, "EVERY", 4)  # the session's calls leave a fold checkpoint for the cold ones
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST)
    (tmp_path / "calc.py").write_text(SOURCE)
    (tmp_path / ".tether").mkdir()
    (tmp_path / ".tether" / "envelope.yaml").write_text(SENSED % sys.executable)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    hook = Hook(tmp_path)
    hook("SessionStart")
    stopped = json.loads(hook("Stop").stdout)
    assert stopped["decision"] == "block" and "tests" in stopped["reason"], stopped
    with sqlite3.connect(tmp_path / ".tether" / "tether.db") as db:
        beliefs = [json.loads(p) for (p,) in db.execute("SELECT payload FROM events WHERE kind = 'belief.recorded'")]
    failing = [b["value"] for b in beliefs if b["key"] == "tests.failing"]
    assert failing and any("tests/test_calc.py" in str(t) for t in failing[-1]), beliefs

    decision, reason = answered(hook, edit(hook, "tests/test_calc.py", "toolu_t1"))
    assert decision != "allow" and "fix the code under test" in reason, (decision, reason)
    assert answered(hook, edit(hook, "calc.py", "toolu_c1"))[0] == "allow"
    for n, dodge in enumerate(("tests/./test_calc.py", "tests//test_calc.py", "calc/../tests/test_calc.py")):
        decision, reason = answered(hook, edit(hook, dodge, f"toolu_d{n}"))  # the same file, spelled otherwise
        assert decision != "allow" and "fix the code under test" in reason, (dodge, decision, reason)

    assert checkpoint_file(hook).is_file()
    cold()
    got = decided_cold(hook, edit(hook, "tests/test_calc.py", "toolu_t2"))
    assert got["decision"] != "allow" and got["started"] == [] and got["loop"] is False, got
    assert decided_cold(hook, edit(hook, "calc.py", "toolu_c2"))["decision"] == "allow"
