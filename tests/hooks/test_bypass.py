"""A call tether refused that the agent reports having run is recorded as a bypass, and ``tether show`` flags it."""

from __future__ import annotations

from pathlib import Path

from hookkit import Hook, payload

from tether.events.store import EventStore
from tether.hooks.session import run_id_for
from tether.observe.timeline import timeline


def events(hook: Hook) -> list[tuple[str, dict]]:
    run_id = run_id_for(hook.agent, str(payload(f"{hook.agent}.PreToolUse", hook.workspace)["session_id"]))
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)
        found = store.events(run_id)
    assert all(line for line in timeline(found)[0])
    return [(e.kind, e.payload) for e in found]


def test_a_denied_call_that_ran_anyway_is_a_bypass_and_shown(tmp_path: Path) -> None:
    hook = Hook(tmp_path)
    rm = {"command": "timeout 5 rm -rf /"}
    assert hook.bash("timeout 5 rm -rf /", "d1")[0] == "deny"
    assert hook("PostToolUse", tool_input=rm, tool_use_id="d1").exit == 0
    assert hook("PostToolUse", tool_input=rm, tool_use_id="d1").exit == 0, "reported twice: flagged once"
    push = {"command": "git push origin main"}
    assert hook.bash("git push origin main", "a1")[0] == "ask"
    assert hook("PostToolUse", tool_input=push, tool_use_id="a1").exit == 0, "Claude Code's user approved it"
    assert hook.bash("ls", "l1")[0] == "allow"
    assert hook("PostToolUseFailure", tool_input={"command": "ls"}, tool_use_id="l1", error="x").exit == 0
    bypasses = [p for kind, p in events(hook) if kind == "hook.bypassed"]
    assert bypasses == [
        {
            "call_id": "d1",
            "tool": "bash",
            "verdict": "DENY",
            "rule": "coding:deny-rm-root",
            "reason": bypasses[0]["reason"],
            "event": "PostToolUse",
        }
    ]
    with EventStore.open(tmp_path / ".tether" / "tether.db", readonly=True) as store:
        run_id = run_id_for("claude-code", str(payload("claude-code.PreToolUse", tmp_path)["session_id"]))
        shown = "\n".join(timeline(store.events(run_id))[0])
    assert "BYPASSED[/] d1 (bash) ran after tether answered DENY (coding:deny-rm-root)" in shown


def test_a_codex_call_refused_pending_approval_that_ran_is_a_bypass(tmp_path: Path) -> None:
    hook = Hook(tmp_path, "codex")
    push = {"command": "git push origin main"}
    assert hook("PreToolUse", tool_input=push, tool_use_id="c1").exit == 2, "Codex is refused an ASK"
    assert hook("PostToolUse", tool_input=push, tool_use_id="c1").exit == 0
    assert [(p["call_id"], p["verdict"]) for kind, p in events(hook) if kind == "hook.bypassed"] == [("c1", "ASK")]


def test_a_denied_call_reported_run_with_another_input_is_still_a_bypass(tmp_path: Path) -> None:
    """Claude Code never runs a call a hook denied; a receipt of one says it ran anyway, whatever input it
    reports. Before, a receipt whose input differed was filed as an input change only (``ls``: ALLOW, noted), and
    nothing said the denied call had run."""
    hook = Hook(tmp_path)
    assert hook.bash("timeout 5 rm -rf /", "d1")[0] == "deny"
    ls = {"command": "ls"}
    assert hook("PostToolUse", tool_input=ls, tool_use_id="d1").exit == 0
    assert hook("PostToolUse", tool_input=ls, tool_use_id="d1").exit == 0, "reported twice: flagged once"
    found = events(hook)
    assert [(p["call_id"], p["verdict"]) for kind, p in found if kind == "hook.bypassed"] == [("d1", "DENY")]
    assert [p["verdict"] for kind, p in found if kind == "hook.input_changed"] == ["ALLOW"]
