"""Through Claude Code's hook, a command that reaches the session's own log by naming a place that holds it (a
``find`` filter over the project, a glob that names ``.tether`` where dotglob is set), behind a redirection or on a
heredoc's line, or with the untracked files git takes away, is never allowed: each was
(tests/policy/test_protected_reach.py, test_redirect_words.py, test_heredoc_line.py and test_untracked_log.py have
the gate's side)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hookkit import Hook

from tether.events.store import EventStore


def test_the_sessions_log_is_never_deleted_through_a_place_that_holds_it(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    assert hook.bash("ls", "t0")[0] == "allow"
    assert (tmp_path / ".tether" / "tether.db").is_file()
    spellings = [
        "find . -name '*.db' -delete",
        "rm -f ?tether/tether.db",
        "find . -delete",
        "rm -rf */",
        "rm 2>/dev/null .tether/tether.db",  # the words after a redirection (tests/policy/test_redirect_words.py)
        "cat <<'EOF' > .tether/tether.db\nx\nEOF",  # a heredoc's line (tests/policy/test_heredoc_line.py)
        "git stash -u",  # untracked files taken away (tests/policy/test_untracked_log.py)
        "PYTEST_ADDOPTS='--basetemp=.tether' pytest",  # a variable's value (tests/policy/test_env_places.py)
    ]
    for i, command in enumerate(spellings, 1):
        decision, reason = hook.bash(command, f"t{i}")
        assert decision in ("ask", "deny"), (command, reason)
        assert "(path:protected)" in reason, reason


def test_a_log_committed_to_git_is_not_put_back_over_the_session(tmp_path: Path) -> None:
    """``git add -A`` and ``git commit`` (allowed, and run here as Claude Code would) put the session's log in a
    commit; ``git stash`` and ``git checkout -f HEAD`` would then write that copy back over it, every event since
    gone (tests/policy/test_tracked_log.py has the gate's side): denied, and the log keeps its events."""
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    hook = Hook(tmp_path)
    for i, command in enumerate(["git add -A", "git commit -qm wip", "echo after"]):
        assert hook.bash(command, f"t{i}")[0] == "allow"
        subprocess.run(["bash", "-c", command], cwd=tmp_path, check=True, capture_output=True)
    for i, command in enumerate(["git stash", "git checkout -f HEAD"], 3):
        decision, reason = hook.bash(command, f"t{i}")
        assert decision == "deny" and "(path:protected)" in reason, reason
    with EventStore.open(tmp_path / ".tether" / "tether.db") as store:
        (run,) = store.runs()
        assert [e.kind for e in store.events(run.run_id)].count("action.decided") == 5
