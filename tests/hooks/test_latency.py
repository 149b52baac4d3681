"""What makes a hook call fast must not change what it decides or records.

The daemon keeps each session's guard between calls, with the log folded (state, provenance index) and the turn
count: what it keeps must equal a fresh fold of the stored log, also when another process wrote in between.
"""

from __future__ import annotations

from pathlib import Path

from hookkit import Hook, payload

from tether.events.store import EventStore
from tether.hooks.session import Settings, Turns, cached, open_guard, run_id_for
from tether.policy.provenance import Provenance
from tether.state import RunState


def test_the_fold_a_resident_process_keeps_equals_a_fresh_fold_of_the_log(tmp_path: Path) -> None:
    from tether.kernel.approvals import ApprovalAnswer, record_answer

    hook = Hook(tmp_path, "codex")
    db = tmp_path / ".tether" / "tether.db"
    settings = Settings("codex", db=db)

    def check() -> None:
        guard = open_guard(settings, payload("codex.PreToolUse", tmp_path))
        assert guard is open_guard(settings, payload("codex.PreToolUse", tmp_path)), "kept between calls"
        guard.refresh()
        with EventStore.open(db, readonly=True) as store:
            stored = store.events(guard.run_id)
        assert [e.seq for e in guard.events] == [e.seq for e in stored]
        assert guard.state == RunState.from_events(stored)
        turns = cached(("turns", guard), Turns).of(guard.events)
        assert turns == sum(1 for e in stored if e.payload.get("event") == "UserPromptSubmit")
        kept, fresh = guard.indexed(), Provenance(guard.env).feed(stored)
        assert (kept.known, kept.user) == (fresh.known, fresh.user)

    assert hook("UserPromptSubmit", prompt="deploy the fix with token tok-3d9a0c").exit == 0
    push = {"command": "git push origin main"}
    first = hook("PreToolUse", tool_input=push, tool_use_id="c1")
    assert first.exit == 2 and "tether approve ap-" in first.stderr
    check()
    approval = first.stderr.split("tether approve ")[1].split("`")[0]
    with EventStore.open(db) as store:  # another writer (the CLI) appends between two calls of the session
        record_answer(store, approval, ApprovalAnswer("once", "alice"))
    assert hook("PreToolUse", tool_input=push, tool_use_id="c2").exit == 0, "the other writer's answer is seen"
    assert hook("PostToolUse", tool_input=push, tool_use_id="c2").exit == 0
    assert hook("UserPromptSubmit", prompt="now tidy up").exit == 0
    assert hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="c3").exit == 0
    check()
    with EventStore.open(db, readonly=True) as store:
        store.verify_run(run_id_for("codex", payload("codex.PreToolUse", tmp_path)["session_id"]))
