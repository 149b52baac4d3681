"""The fold checkpoint holds what the folds decide from, not what the tools read or wrote (state.py ``KEPT_KEYS``,
``kept_args``).

Every receipt's output (a Read's file, an Edit's whole original, a command's stdout: up to 64 KiB each) was held in
the run state for the whole session, twice in a hook session's checkpoint (the gate's run state and the control
layer's): ~90 % of its bytes in a session of Reads, Edits and commands, and every cold call late in the session
read, tried and loaded them all; and so was the text of every Write and Edit. Both stay in the log, where a reader of
a past call's output or text reads them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hookkit import Hook

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.errors import LogCorrupt
from tether.guard import log as guard_log
from tether.guard.log import Log
from tether.state import Action, completed_output, proposed_args

CALLS = 24


def cold() -> None:
    hook_session._CACHE.clear()
    control_fold.clear()


def call(tool: str, path: str, size: int) -> tuple[dict[str, object], dict[str, object]]:
    """A call's input and what Claude Code's tool sends back: a Read's file, a Write's content (in both)."""
    if tool == "Read":
        return {"file_path": path}, {"type": "text", "file": {"filePath": path, "content": "x" * size, "numLines": 1}}
    given = {"file_path": path, "content": "x" * size}
    return given, {"type": "create", "filePath": path, "content": given["content"], "structuredPatch": []}


def session(workspace: Path, size: int, calls: int = CALLS, tool: str = "Read", same: bool = False) -> Hook:
    """``calls`` calls of ``tool`` carrying ``size`` characters (``same``: all on one file, with the same result); the
    session's checkpoint is written on the way."""
    workspace.mkdir()
    hook = Hook(workspace)
    for i in range(calls):
        given, response = call(tool, str(workspace / f"m{0 if same else i}.py"), size)
        assert hook("PreToolUse", tool_name=tool, tool_input=given, tool_use_id=f"toolu_{i}").exit == 0
        done = hook("PostToolUse", tool_name=tool, tool_input=given, tool_use_id=f"toolu_{i}", tool_response=response)
        assert done.exit == 0
    return hook


def checkpoint_size(hook: Hook) -> int:
    (path,) = (hook.workspace / ".tether" / "tether.db.folds").glob("*.ckpt")
    return path.stat().st_size


@pytest.fixture(autouse=True)
def often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(guard_log, "EVERY", 16)
    cold()
    yield
    cold()


@pytest.mark.parametrize("tool", ["Read", "Write"])
def test_the_checkpoint_does_not_grow_with_what_past_calls_read_or_wrote(tmp_path: Path, tool: str) -> None:
    """24 more calls, each reading or writing 40,000 characters, add under 2 kB a call (~80 kB a call before). What
    the control layer keeps of the latest few receipts (its window) is bounded whatever the session's length."""
    shorter = checkpoint_size(session(tmp_path / "shorter", 40_000, tool=tool))
    longer = checkpoint_size(session(tmp_path / "longer", 40_000, calls=2 * CALLS, tool=tool))
    assert 0 < longer - shorter < CALLS * 2_000, (shorter, longer)


def test_an_agent_reading_one_file_over_and_over_does_not_grow_the_checkpoint_with_each_read(tmp_path: Path) -> None:
    """The control layer's fold keeps the trailing run of identical actions (its stuck detection) as their event ids,
    not their records, each of which held its event, output and all: 160 Reads of one 20 kB file made a 3.0 MB
    checkpoint."""
    shorter = checkpoint_size(session(tmp_path / "shorter", 40_000, same=True))
    longer = checkpoint_size(session(tmp_path / "longer", 40_000, calls=2 * CALLS, same=True))
    assert 0 < longer - shorter < CALLS * 2_000, (shorter, longer)


def test_a_restored_session_reads_a_past_calls_output_from_the_log(tmp_path: Path) -> None:
    hook = session(tmp_path / "s", 40_000)
    cold()
    assert hook("PreToolUse", tool_name="Read", tool_input={"file_path": "a.py"}, tool_use_id="toolu_probe").exit == 0
    (guard,) = [g for g in hook.resident().values()]
    assert isinstance(guard.events, Log) and guard.events._base > 0  # restored from the checkpoint
    for call_id in ("toolu_0", f"toolu_{CALLS - 1}"):  # before the checkpoint's head (read from the store), and after
        action = guard.state.actions[call_id]
        assert action.result == {}
        assert json.loads(guard.output(action))["file"]["content"] == "x" * 40_000
    assert guard.output(guard.state.actions["toolu_probe"]) == ""  # no receipt yet


def test_a_completed_writes_text_and_output_are_read_from_the_log_and_no_other_event_passes_for_them(
    tmp_path: Path,
) -> None:
    hook = session(tmp_path / "s", 100, calls=2, tool="Write")
    (guard,) = hook.resident().values()
    a = guard.state.actions["toolu_1"]
    assert a.args == {"path": str(tmp_path / "s" / "m1.py")}  # the fold's: no text
    assert proposed_args(guard.events, a)["content"] == "x" * 100
    for seq in (a.completed_seq, guard.state.actions["toolu_0"].seq):  # its receipt, another call's proposal
        with pytest.raises(LogCorrupt, match="is not that proposal"):
            proposed_args(guard.events, Action(a.call_id, a.tool, a.args, a.args_hash, a.turn, seq))
    assert json.loads(completed_output(guard.events, a))["content"] == "x" * 100
    for seq in (a.seq, guard.state.actions["toolu_0"].completed_seq):  # its proposal, another call's receipt
        posing = Action(a.call_id, a.tool, a.args, a.args_hash, a.turn, a.seq, completed_seq=seq)
        with pytest.raises(LogCorrupt, match="is not that completion"):
            completed_output(guard.events, posing)
