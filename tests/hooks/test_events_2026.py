"""The hook events tether does not install, and events it does not know, answered as Claude Code's reference wants.

A ``SubagentStop`` is recorded and answered with nothing: the stop that ends the session's work (``Stop``) is judged
on the evidence of everything the session did, its subagents' calls included, and a subagent's stop is not that
claim. Before, a SubagentStop was judged like a stop: the session's failing checks were sent to whatever subagent
stopped (an Explore that only read), and its refusals counted against the main stop's :data:`MAX_STOP_BLOCKS`, so
after three of them the main agent's first failing stop was let through without evidence.

An event tether does not know (the reference lists many it never installs: PostToolBatch, PermissionDenied,
TaskCreated, ConfigChange, WorktreeCreate, Elicitation, …) is refused with exit 2 naming it: what an empty answer
means there is that event's own (for some it lets a thing happen), so tether never gives one it did not choose.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook, in_process, payload
from test_session import events, payload_sid, sensing, status

from tether.hooks.session import MAX_STOP_BLOCKS

FAILING = "python -c 'import sys; sys.exit(3)'"


def test_a_subagents_stop_is_recorded_and_not_judged(tmp_path: Path) -> None:
    hook = sensing(tmp_path, FAILING)
    hook("SessionStart")
    out = hook("SubagentStop")
    assert (out.exit, out.stdout, out.stderr) == (0, "", ""), "a subagent's stop is not refused on the session's checks"
    log = events(hook, payload_sid())
    assert [e.kind for e in log].count("hook.stop") == 0 and [e.kind for e in log].count("sensor.result") == 0
    last = [e.payload for e in log if e.kind == "hook.received"][-1]
    assert (last["event"], last["detail"]["agent_id"], last["detail"]["agent_type"]) == (
        "SubagentStop",
        "a7e3c1d2",
        "general-purpose",
    )
    assert status(hook) == "RUNNING"


def test_subagents_stops_do_not_spend_the_main_stops_refusals(tmp_path: Path) -> None:
    hook = sensing(tmp_path, FAILING)
    hook("UserPromptSubmit")
    for _ in range(MAX_STOP_BLOCKS):
        hook("SubagentStop")
    out = hook("Stop")
    assert json.loads(out.stdout)["decision"] == "block", "the main agent's first failing stop is refused"
    assert status(hook) == "RUNNING"


UNKNOWN = ["PostToolBatch", "PermissionDenied", "TaskCreated", "ConfigChange", "WorktreeCreate", "Elicitation"]


@pytest.mark.parametrize("event", [*UNKNOWN, "PreToolUse2", "pretooluse"])
def test_an_event_tether_does_not_know_is_refused_naming_it(tmp_path: Path, event: str) -> None:
    data = payload("claude-code.PreToolUse", tmp_path, hook_event_name=event, tool_input={"command": "rm -rf /"})
    out = in_process("claude-code", tmp_path, json.dumps(data).encode())
    assert out.exit == 2 and out.stdout == "", out
    assert f"hook input field 'hook_event_name': {event!r}" in out.stderr, out.stderr


@pytest.mark.parametrize("event", ["SubagentStart", "Notification", "PreCompact", "PermissionRequest"])
def test_the_events_tether_records_are_still_answered_with_nothing(hook: Hook, event: str) -> None:
    out = hook(event)
    assert (out.exit, out.stdout, out.stderr) == (0, "", ""), out


def test_an_accepted_stop_names_the_background_tasks_still_running(hook: Hook) -> None:
    """Claude Code's Stop carries ``background_tasks`` (v2.1.145+): a stop with one in flight is judged as any stop,
    and its acceptance says that what the task does afterwards is not part of the evidence."""
    hook("UserPromptSubmit")
    assert hook("Stop").stdout == ""
    stopped = [e.payload for e in events(hook, payload_sid()) if e.kind == "hook.stop"]
    assert stopped[-1]["accepted"] and any(
        "1 background task(s) still running (shell: python -m http.server 8000)" in r for r in stopped[-1]["reasons"]
    ), stopped
    hook("UserPromptSubmit")
    assert hook("Stop", background_tasks=[]).stdout == ""
    stopped = [e.payload for e in events(hook, payload_sid()) if e.kind == "hook.stop"]
    assert not any("background" in r for r in stopped[-1]["reasons"]), stopped
