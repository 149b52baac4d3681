"""A hook receipt says how long the tool ran as the agent reported it, or says nothing: never a made-up 0.00 s.

tether did not run the tool; Claude Code reports the time in a PostToolUse's ``duration_ms`` (2026). Before, every
hook receipt recorded ``duration_s`` 0.0 and ``tether show`` printed "ok in 0.00s" for a build that took a minute.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload

from tether.console import views
from tether.events.store import EventStore
from tether.hooks.session import reported_seconds, run_id_for
from tether.observe.timeline import timeline


def receipts(hook: Hook, **fields: Any) -> tuple[list[Any], list[str], list[views.Item]]:
    """A Bash call and its receipt carrying ``fields``: the receipts' durations, the timeline, the console's items."""
    assert hook.bash("ls", "d1")[0] == "allow"
    assert hook("PostToolUse", tool_input={"command": "ls"}, tool_use_id="d1", tool_response={}, **fields).exit == 0
    run = run_id_for("claude-code", str(payload("claude-code.PreToolUse", hook.workspace)["session_id"]))
    with EventStore.open(hook.workspace / ".tether" / "tether.db", readonly=True) as store:
        events = store.events(run)
    done = [e for e in events if e.kind == "action.completed"]
    return [e.payload["duration_s"] for e in done], timeline(events)[0], [views.item(e, 0) for e in done]


def test_the_reported_time_is_recorded_and_shown(tmp_path: Path) -> None:
    took, lines, items = receipts(Hook(tmp_path), duration_ms=4187)
    assert took == [4.187]
    assert any("ok[/] in 4.19s" in line for line in lines), lines
    assert ("duration", "4.19s") in items[0].facts


def test_no_reported_time_is_shown_as_none(tmp_path: Path) -> None:
    took, lines, items = receipts(Hook(tmp_path), duration_ms=None)
    assert took == [None]
    (ok,) = [line for line in lines if "ok[/]" in line]
    assert ok.split("ok[/]")[1].startswith(" — "), ok
    assert ("duration", "not reported") in items[0].facts


@pytest.mark.parametrize("ms", [True, False, -1, "5", None, math.inf, math.nan, 10**15, [5], {"ms": 5}])
def test_a_duration_that_is_none_is_not_recorded(ms: Any) -> None:
    assert reported_seconds(ms) is None


@pytest.mark.parametrize(("ms", "s"), [(0, 0.0), (41, 0.041), (2.5, 0.0025), (7 * 24 * 3600 * 1000, 604800.0)])
def test_a_duration_in_bounds_is_seconds(ms: float, s: float) -> None:
    assert reported_seconds(ms) == s
