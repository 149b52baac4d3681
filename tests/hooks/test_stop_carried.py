"""A change the agent of an earlier session left, in a session whose stop was let through unverified (or that never had
a stop accepted), is not the next session's "user's work in progress": it is judged against the text that earlier
session began with, and the stop names the session it comes from. Before (tether.hooks.earlier), the next session
kept it as the user's and its stop accepted it: an agent gamed the evidence in two sessions."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hookkit import Hook
from test_stop_integrity import FROZEN

from tether.events.kinds_baseline import SuiteBaseline
from tether.events.store import EventStore
from tether.hooks import earlier
from tether.hooks.session import MAX_STOP_BLOCKS, run_id_for
from tether.verify import sensors

RUFF = str(Path(sys.executable).parent / "ruff")
GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
TEST = "from calc import f\n\n\ndef test_f():\n    assert f() == 1\n"
WEAK = "from calc import f\n\n\ndef test_f():\n    pass\n"
SOURCE = "def f():\n    return 1\n"
ENVELOPE = FROZEN + "  sensors: [{name: lint, required: true}]\n"  # tests may not change, and it lints


def git(ws: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True)


def repo(ws: Path) -> Path:
    """``calc.py`` and ``tests/test_calc.py`` committed; the envelope says the tests may not change, and lints."""
    (ws / ".tether").mkdir(parents=True)
    (ws / ".tether" / "envelope.yaml").write_text(ENVELOPE)
    (ws / ".gitignore").write_text(".tether/\n")
    (ws / "tests").mkdir()
    (ws / "tests" / "test_calc.py").write_text(TEST)
    (ws / "calc.py").write_text(SOURCE)
    git(ws, "init", "-q")
    git(ws, "add", ".")
    git(ws, "commit", "-qm", "start")
    return ws


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    monkeypatch.setattr(sensors, "find_tool", lambda name, workspace, configured=None: RUFF)
    return Hook(repo(tmp_path / "ws"))


class Session:
    """One Claude Code session of the hook's workspace (its own session id)."""

    def __init__(self, hook: Hook, sid: str) -> None:
        self.hook, self.sid = hook, sid
        self.run_id = run_id_for(hook.agent, sid)

    def __call__(self, event: str, **fields: object) -> dict[str, object]:
        out = self.hook(event, session_id=self.sid, **fields).stdout
        return json.loads(out) if out else {}

    def write(self, rel: str, content: str, call_id: str) -> None:
        tool_input = {"file_path": str(self.hook.workspace / rel), "content": content}
        self("PreToolUse", tool_name="Write", tool_input=tool_input, tool_use_id=call_id)
        (self.hook.workspace / rel).write_text(content)
        self("PostToolUse", tool_name="Write", tool_input=tool_input, tool_response={}, tool_use_id=call_id)

    def stop_unverified(self) -> None:
        """Stops until the refusals run out and the stop is let through without evidence."""
        for _ in range(MAX_STOP_BLOCKS):
            assert self("Stop").get("decision") == "block"
        assert self("Stop").get("decision") is None

    def baseline(self) -> SuiteBaseline:
        with EventStore.open(self.hook.request["db"]) as store:
            found = store.events(self.run_id, kinds={SuiteBaseline.KIND})
        return found[0].data_as(SuiteBaseline)


def cheated(hook: Hook, sid: str = "s1") -> Session:
    """Session ``sid`` weakens the test (by a Write) and stops unverified."""
    s1 = Session(hook, sid)
    s1("SessionStart")
    s1.write("tests/test_calc.py", WEAK, "w1")
    s1.stop_unverified()
    return s1


def test_a_weakened_test_left_unverified_is_still_the_agents(hook: Hook) -> None:
    s1 = cheated(hook)
    s2 = Session(hook, "s2")
    s2("SessionStart")
    reply = s2("Stop")
    assert reply.get("decision") == "block", "the next session took the earlier agent's weakened test as the user's"
    assert "test surface modified: tests/test_calc.py" in str(reply["reason"])
    assert f"left by session {s1.run_id}, which ended unverified" in str(reply["reason"])
    assert s2.baseline().carried == ["tests/test_calc.py"]


def test_a_noqa_left_unverified_is_still_the_agents_though_this_session_never_touched_it(hook: Hook) -> None:
    s1 = Session(hook, "s1")
    s1("SessionStart")
    s1.write("calc.py", "# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n", "w1")
    s1.stop_unverified()
    s2 = Session(hook, "s2")
    s2("SessionStart")
    reply = s2("Stop")
    assert reply.get("decision") == "block" and "ruff is turned off inside calc.py" in str(reply["reason"]), reply
    assert f"left by session {s1.run_id}" in str(reply["reason"])


def test_a_session_that_ended_verified_leaves_the_users_baseline(hook: Hook) -> None:
    s1 = Session(hook, "s1")
    s1("SessionStart")
    s1.write("calc.py", "def f():\n    return 1\n\n\ndef g():\n    return 2\n", "w1")
    assert s1("Stop").get("decision") is None
    s2 = Session(hook, "s2")
    s2("SessionStart")
    base = s2.baseline()
    assert base.carried == [] and set(base.dirty) == {"calc.py"}, "its accepted work is the user's now"
    assert s2("Stop").get("decision") is None


def test_a_session_killed_after_a_refusal_leaves_nothing_the_user_owns(hook: Hook) -> None:
    """No stop accepted, no list of its changes: every file that differs from its start is the agent's (a Bash edit
    the stop never listed too)."""
    s1 = Session(hook, "s1")
    s1("SessionStart")
    (hook.workspace / "tests" / "test_calc.py").write_text(WEAK)  # its Bash
    assert s1("Stop").get("decision") == "block"
    s1("SessionEnd", reason="other")
    s2 = Session(hook, "s2")
    s2("SessionStart")
    reply = s2("Stop")
    assert reply.get("decision") == "block" and "which ended abandoned" in str(reply["reason"]), reply


def test_two_earlier_sessions_the_cheat_is_carried_along(hook: Hook) -> None:
    cheated(hook)
    s2 = Session(hook, "s2")
    s2("SessionStart")
    s2.stop_unverified()  # the carried cheat refuses it: let through unverified again
    s3 = Session(hook, "s3")
    s3("SessionStart")
    reply = s3("Stop")
    assert reply.get("decision") == "block" and f"left by session {s2.run_id}" in str(reply["reason"]), reply
    assert s3.baseline().surface["tests/test_calc.py"] == Session(hook, "s1").baseline().surface["tests/test_calc.py"]


def test_another_workspace_in_the_same_store_is_not_this_ones(hook: Hook, tmp_path: Path) -> None:
    cheated(hook)
    other = repo(tmp_path / "other")
    (other / "tests" / "test_calc.py").write_text(WEAK)  # the user's own change there, before its session
    there = Hook(other)
    there.request["db"] = hook.request["db"]
    s = Session(there, "o1")
    s("SessionStart")
    assert s.baseline().carried == []
    assert s("Stop").get("decision") is None, "the other workspace's user's work in progress is the user's"


def test_the_users_edit_since_does_not_make_it_the_users_but_a_commit_does(hook: Hook) -> None:
    """Touching the file does not take the agent's lines out (fail closed); committing it makes it the text the next
    session begins on, whoever committed: a commit is how the user takes work as theirs."""
    cheated(hook)
    with (hook.workspace / "tests" / "test_calc.py").open("a") as f:
        f.write("\n\ndef test_g():\n    assert True\n")
    s2 = Session(hook, "s2")
    s2("SessionStart")
    assert s2("Stop").get("decision") == "block"
    git(hook.workspace, "commit", "-qam", "the user takes it")
    s3 = Session(hook, "s3")
    s3("SessionStart")
    assert s3.baseline().carried == []
    assert s3("Stop").get("decision") is None


def test_the_agent_committing_its_cheat_in_the_session_is_held_as_committed(hook: Hook) -> None:
    """The commit the next session begins on holds the cheat: tether cannot tell the agent's commit from the user's,
    so it is the user's (docs/hooks.md). The session that made it was refused for it (its baseline is its start)."""
    s1 = Session(hook, "s1")
    s1("SessionStart")
    s1.write("tests/test_calc.py", WEAK, "w1")
    git(hook.workspace, "commit", "-qam", "the agent's")
    assert s1("Stop").get("decision") == "block", "the committing session's own stop is refused"
    for _ in range(MAX_STOP_BLOCKS):
        s1("Stop")
    s2 = Session(hook, "s2")
    s2("SessionStart")
    assert s2.baseline().carried == []


def test_a_deleted_test_stays_deleted_and_a_renamed_one_both(hook: Hook) -> None:
    s1 = Session(hook, "s1")
    s1("SessionStart")
    (hook.workspace / "tests" / "test_calc.py").rename(hook.workspace / "tests" / "test_other.py")  # its Bash mv
    (hook.workspace / "tests" / "test_other.py").write_text(WEAK)
    s1.stop_unverified()
    s2 = Session(hook, "s2")
    s2("SessionStart")
    reason = str(s2("Stop").get("reason"))
    assert "test surface deleted: tests/test_calc.py" in reason and "test surface added: tests/test_other.py" in reason
    (hook.workspace / "tests" / "test_other.py").unlink()
    git(hook.workspace, "rm", "-q", "tests/test_calc.py")
    git(hook.workspace, "commit", "-qm", "the user deletes it")
    s3 = Session(hook, "s3")
    s3("SessionStart")
    assert s3.baseline().carried == [], "the deletion committed: the user's"


def test_a_corrupt_earlier_run_takes_none_of_the_work_in_progress_as_the_users(hook: Hook) -> None:
    s1 = cheated(hook)
    (hook.workspace / "calc.py").write_text("# ruff: noqa\nimport os\n\n\ndef f():\n    return 1\n")  # anyone's
    with EventStore.open(hook.request["db"]) as store:
        store._conn.execute("DROP TRIGGER events_no_update")  # what someone rewriting the file can do
        store._conn.execute("UPDATE events SET payload = '{' WHERE run_id = ? AND seq = 2", (s1.run_id,))
        store._conn.commit()
    s2 = Session(hook, "s2")
    s2("SessionStart")
    base = s2.baseline()
    assert base.carried == ["calc.py", "tests/test_calc.py"] and base.dirty == {}
    assert base.carried_from == s1.run_id and "could not be read" in base.carried_why
    reply = s2("Stop")
    assert reply.get("decision") == "block" and "whose log could not be read" in str(reply["reason"]), reply


def test_a_huge_earlier_run_is_not_read(hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    cheated(hook)
    monkeypatch.setattr(earlier, "MAX_EVENTS", 5)
    s2 = Session(hook, "s2")
    s2("SessionStart")
    assert "more than the 5 read at a start" in s2.baseline().carried_why


def test_two_sessions_starting_at_once_both_carry_it(hook: Hook) -> None:
    cheated(hook)
    sessions = [Session(hook, f"p{i}") for i in range(2)]
    threads = [threading.Thread(target=s, args=("SessionStart",)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in sessions:
        assert s.baseline().carried == ["tests/test_calc.py"]
        assert s("Stop").get("decision") == "block"


def test_a_session_verified_under_a_laxer_envelope_vouches_for_nothing(hook: Hook, tmp_path: Path) -> None:
    """The agent of s1 starts a session of its own in the same store under an envelope that lets tests change and
    runs no sensor (``TETHER_ENVELOPE`` for a nested ``claude -p``): its stop accepts the carried cheat. Before, that
    verified session made the cheat the user's in s2."""
    cheated(hook)
    lax = tmp_path / "lax.yaml"
    lax.write_text(FROZEN.replace("tests_may_change: false", "tests_may_change: true"))
    nested = Hook(hook.workspace, envelope=lax)
    n1 = Session(nested, "n1")
    n1("SessionStart")
    assert n1.baseline().carried == ["tests/test_calc.py"]
    assert n1("Stop").get("decision") is None, "accepted under the lax envelope"
    s2 = Session(hook, "s2")
    s2("SessionStart")
    reply = s2("Stop")
    assert reply.get("decision") == "block", "a lax session's verification made the cheat the user's"
    assert f"left by session {n1.run_id}, which ended verified under another envelope" in str(reply["reason"])
