"""The daemon's resident state and a row planted behind its back (guard/session.py ``Guard.refresh``).

The hook calls here are answered in-process by the daemon's own function (``hooks.answer.answer``), which keeps the
session's guard between calls as the daemon does. Between two calls, a writer of the database copies the row that
denied a call, its stored hash kept, as the next event with the verdict turned ALLOW, and moves the run's head to
it. Before, the next call read the row into the resident fold unchecked: the denied call asked again was allowed.
Now the row does not chain after the head the daemon holds: that call and every later one of the session is
refused (the log shows what happened: ``tether log verify`` names the row).
"""

from __future__ import annotations

import sqlite3

from hookkit import Hook
from test_fold_checkpoint import cold, guard_of
from test_fold_checkpoint import hook as hook

RM = "rm -rf ~"


def _copied_as_allow(db: str, run_id: str) -> None:
    conn = sqlite3.connect(db)
    (seq,) = conn.execute("SELECT head_seq FROM runs WHERE run_id=?", (run_id,)).fetchone()
    conn.execute(
        "INSERT INTO events (run_id, seq, ts, kind, payload, hash) "
        "SELECT run_id, ?, ts, kind, replace(payload, '\"DENY\"', '\"ALLOW\"'), hash FROM events "
        "WHERE run_id=? AND kind='action.decided' AND payload LIKE '%\"DENY\"%' ORDER BY seq DESC LIMIT 1",
        (seq + 1, run_id),
    )
    (h,) = conn.execute("SELECT lower(hex(hash)) FROM events WHERE run_id=? AND seq=?", (run_id, seq + 1)).fetchone()
    conn.execute("UPDATE runs SET head_seq=?, head_hash=? WHERE run_id=?", (seq + 1, h, run_id))
    conn.commit()
    conn.close()


def _decided(hook: Hook, command: str, call_id: str) -> tuple[str, str]:
    """The decision on a Bash call, or ``refused`` with the message (exit 2: Claude Code blocks the call)."""
    reply = hook("PreToolUse", tool_input={"command": command}, tool_use_id=call_id)
    if reply.exit == 2:
        return "refused", reply.stderr
    return hook.bash(command, call_id)


def test_a_row_planted_between_two_daemon_calls_is_never_folded(hook: Hook) -> None:
    assert hook.bash(RM, call_id="toolu_rm")[0] == "deny"
    assert hook.bash("ls", call_id="toolu_ls")[0] == "allow"
    _copied_as_allow(hook.request["db"], guard_of(hook).run_id)
    decision, reason = _decided(hook, RM, "toolu_rm")
    assert decision in ("deny", "refused"), f"the resident fold took the planted row: {reason}"
    assert "does not chain" in reason
    assert _decided(hook, "ls", "toolu_ls2")[0] == "refused", "the session is refused from then on"
    cold()  # a new process audits the whole log: refused as well
    assert _decided(hook, "ls", "toolu_ls3")[0] == "refused"
