"""Through Claude Code's hook, a command that reaches the session's own log by naming a place that holds it (a
``find`` filter over the project, a glob that names ``.tether`` where dotglob is set), behind a redirection or on a
heredoc's line, or with the untracked files git takes away, is never allowed: each was
(tests/policy/test_protected_reach.py, test_redirect_words.py, test_heredoc_line.py and test_untracked_log.py have
the gate's side)."""

from __future__ import annotations

from pathlib import Path

from hookkit import Hook


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
    ]
    for i, command in enumerate(spellings, 1):
        decision, reason = hook.bash(command, f"t{i}")
        assert decision in ("ask", "deny"), (command, reason)
        assert "(path:protected)" in reason, reason
