"""A cold PreToolUse late in a session restores the run state's calls in part (guard/partial.py) and decides as one
that restores them whole: the same answer and the same events written, for every kind of call a session makes — a
new command, one made before (denied before, too), a call id proposed again, a write and an edit (whose undo image
reads the calls in flight), a read, an ask, a fetch. What the part cannot answer makes the state whole; a new
command never does."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, hook_process, payload
from test_checkpoint_gate import comparable
from test_checkpoint_parts import checkpoint_file, cold, in_plain
from test_plain_checkpoint import receipt, seeded
from test_plain_path import logged
from test_session import BUDGETED

from tether.guard import checkpoint as ck
from tether.guard import gatepart
from tether.guard import log as guard_log
from tether.guard.partial import Partial
from tether.state import RunState

#: One PreToolUse in a plain process as a cold hook call makes it, the calls restored in part or whole (the marker
#: argument): its reply, whether its guard was restored from the checkpoint, whether its state is still a part at the
#: end, and each doubt that made it whole.
PLAIN = """
import json, sys
from tether import plain
from tether.hooks import entry
assert plain.choose()
request, data, how = json.load(sys.stdin)
entry.import_deciding_code(gate=True)
from tether.guard import checkpoint, partial
from tether.guard.session import Guard
checkpoint.PART = how.endswith("part")
doubts = []
real = Guard._made_whole
def made_whole(self, doubt):
    doubts.append(str(doubt))
    real(self, doubt)
Guard._made_whole = made_whole
from tether.hooks.answer import answer
import tether.hooks.session as hook_session
out = answer(request, data)
[guard] = [v for k, v in hook_session._CACHE.items() if k[0] == "guard"]
print(json.dumps({"reply": [out.stdout, out.exit], "restored": type(guard.events).__name__ == "Log",
                  "part": isinstance(guard.state.actions, partial.Partial), "doubts": doubts}))
"""


@pytest.fixture
def session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hook]:
    """A session of every kind of call, a denied command, an ask left unanswered and 36 commands with their
    receipts, checkpointed every 8 events (the last a few events behind its head)."""
    monkeypatch.setattr(guard_log, "EVERY", 8)
    monkeypatch.setattr(gatepart, "RECENT", 4)  # the part holds the 4 latest calls: the first ones are left out
    cold()
    hook = seeded(tmp_path / "p", 12, rich=True)
    assert hook.bash("sudo rm -rf /", "toolu_deny")[0] == "deny"
    assert hook.bash("git push origin main", "toolu_ask")[0] == "ask"
    for i in range(12, 36):
        hook.bash(f"grep -n x{i} README.md", f"toolu_b{i}")
        done = {k: v for k, v in receipt(hook.workspace, i).items() if k != "cwd"}
        hook("PostToolUse", **{**done, "tool_use_id": f"toolu_b{i}"})
    hook.bash("ls", "toolu_last")
    [guard] = hook.resident().values()
    whole, _ = gatepart._rows(guard.state)
    assert whole is not None and gatepart._part(guard.state, whole) is not None, "most calls are done: a part named"
    # the part's rows are the whole's, taken as they are: what a part made of its own rows writes
    assert gatepart._part(guard.state, whole) == gatepart._part(guard.state, gatepart._Rows())
    checkpoint_file(hook)
    cold()
    yield hook
    cold()


def bash(command: str, call_id: str) -> tuple[str, dict[str, Any]]:
    return "Bash", {"command": command, "_id": call_id}


PROBES = {
    "a new command": (bash("ls -la src", "toolu_new"), False),
    "a command made before": (bash("grep -n x0 README.md", "toolu_again"), True),
    "a recent command made again": (bash("grep -n x34 README.md", "toolu_again2"), False),
    "a command denied before": (bash("sudo rm -rf /", "toolu_deny2"), True),
    "a call id proposed again": (bash("grep -n x1 README.md", "toolu_1"), True),
    "a call id again, another command": (bash("ls -l", "toolu_2"), True),
    "the ask's call again": (bash("git push origin main", "toolu_ask"), False),
    "a new ask": (bash("git push origin feature", "toolu_ask2"), False),
    "a write": (("Write", {"file_path": "PROJECT/new.txt", "content": "x\n", "_id": "toolu_w"}), None),
    "an edit": (
        ("Edit", {"file_path": "PROJECT/README.md", "old_string": "hello", "new_string": "hi", "_id": "ed"}),
        None,
    ),
    "a read": (("Read", {"file_path": "PROJECT/README.md", "_id": "toolu_r"}), False),
    "a fetch": (("WebFetch", {"url": "http://example.test/", "prompt": "x", "_id": "toolu_f"}), False),
}


def probe(hook: Hook, tool: str, given: dict[str, Any], how: str) -> dict[str, Any]:
    tool_input = {k: str(v).replace("PROJECT", str(hook.workspace)) for k, v in given.items() if k != "_id"}
    data = payload("claude-code.PreToolUse", hook.workspace, tool_name=tool, tool_input=tool_input)
    data["tool_use_id"] = given["_id"]
    return in_plain(hook, data, hook.workspace.parent / how, PLAIN)


def both_ways(hook: Hook, tool: str, given: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The call decided in a plain process on the session's calls in part, then on the same session (restored) whole:
    what :func:`probe` tells of each, and the events it wrote (a call id made anew named alike)."""
    project = hook.workspace
    kept = project.parent / "kept"
    shutil.copytree(project, kept, symlinks=True)
    before = logged(project)
    got = {}
    for how in ("part", "whole"):
        shutil.rmtree(project)
        shutil.copytree(kept, project, symlinks=True)
        got[how] = probe(hook, tool, given, how)
        got[how]["log"] = json.loads(re.sub(r"~[0-9a-f]{6}", "~ID", json.dumps(logged(project)[len(before) :])))
    shutil.rmtree(kept)
    return got["part"], got["whole"]


@pytest.mark.parametrize("name", list(PROBES))
def test_a_call_decided_on_the_part_is_decided_as_on_the_whole(session: Hook, name: str) -> None:
    """Each probe run twice on the same session (restored between): its calls in part, then whole. The reply and
    every event written are the same; the part was used (restored, no doubt) for what it can answer, and made whole
    for a call that reads a call it left out (``True``: it must; ``None``: it may)."""
    (tool, given), doubts = PROBES[name]
    part, whole = both_ways(session, tool, given)
    assert part["reply"] == whole["reply"] and part["log"] == whole["log"], name
    assert "hook.received" in [kind for kind, _ in part["log"]], "the call was recorded"
    assert part["restored"] and whole["restored"] and not whole["part"] and not whole["doubts"]
    if doubts is not None:
        assert bool(part["doubts"]) is doubts, part["doubts"]
        assert part["part"] is not doubts


def test_the_call_past_the_budget_ends_the_run_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The call that spends past the session's budget is denied naming it and ends the run (``BudgetExceeded``, the
    run finished, from ``next_step`` over the state): the same on the part (its buckets counted with what they left
    out) as on the whole."""
    monkeypatch.setattr(guard_log, "EVERY", 8)
    monkeypatch.setattr(gatepart, "RECENT", 2)
    cold()
    project = tmp_path / "p"
    (project / ".tether").mkdir(parents=True)
    (project / ".tether" / "envelope.yaml").write_text(BUDGETED.replace("tool_calls: 2", "tool_calls: 6") % ("0" * 64))
    hook = Hook(project)
    for i in range(6):
        assert hook.bash(f"echo {i}", f"toolu_{i}")[0] == "allow"
        hook("PostToolUse", tool_name="Bash", tool_input={"command": f"echo {i}"}, tool_use_id=f"toolu_{i}",
             tool_response={"stdout": "", "stderr": "", "interrupted": False})  # fmt: skip
    checkpoint_file(hook)
    cold()
    part, whole = both_ways(hook, "Bash", {"command": "pwd", "_id": "toolu_over"})
    assert part["reply"] == whole["reply"] and part["log"] == whole["log"]
    assert "budget:tool_calls" in part["reply"][0]
    assert [kind for kind, _ in part["log"]][-2:] == ["budget.exceeded", "run.finished"]
    assert part["restored"] and part["doubts"], "the run's end reads every call: the state made whole"


def test_a_call_another_process_writes_that_the_part_cannot_fold_makes_the_kept_state_whole(
    session: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A race: a guard restored in part (as a plain PreToolUse restores it) is kept; another process of the session
    decides a command identical to one the part left out (Claude Code runs tool calls in parallel); the guard's next
    call reads that proposal (its refresh), cannot fold it on the part (its key's earlier calls were left out), and
    folds it on the whole state made then: the same state as the whole log's fold, the call answered."""
    monkeypatch.setattr(ck, "wants_fold", lambda: False)  # the part restored, as a plain PreToolUse restores it
    assert session.bash("ls -la src", "toolu_r1")[0] == "allow"
    [guard] = session.resident().values()
    assert isinstance(guard.state.actions, Partial), "restored in part"
    again = payload(
        "claude-code.PreToolUse",
        session.workspace,
        tool_input={"command": "grep -n x12 README.md"},  # toolu_b12's, which the part left out
        tool_use_id="toolu_other",
    )
    done = hook_process({**os.environ, "TETHER_HOOK_DAEMON": "0"}, again, session.workspace)
    assert done.returncode == 0 and '"allow"' in done.stdout, done.stderr[-2000:]
    assert session.bash("ls -lb src", "toolu_r2")[0] == "allow"
    [guard] = session.resident().values()
    assert not isinstance(guard.state.actions, Partial), "made whole to fold the other process's call"
    whole = RunState.from_events(guard.store.events(guard.run_id))
    assert [a.call_id for a in guard.state.same_calls[("bash", whole.actions["toolu_other"].args_hash)]] == [
        "toolu_b12",
        "toolu_other",
    ]
    kept, folded = comparable(guard.state), comparable(whole)
    kept._active_since = folded._active_since = None  # the session's open time: the live guard's, not the log's
    assert kept == folded  # every field, the calls by value (a dict read back from JSON keeps another key order)
    for index in ("same_calls", "_live", "calls_by", "_filed"):
        assert getattr(kept, index) == getattr(folded, index), index
