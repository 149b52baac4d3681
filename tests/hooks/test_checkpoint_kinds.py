"""A fold checkpoint naming a payload class whose module the event registry imports only when it meets the kind.

Found (2026-12-05): the control layer's fold keeps the beliefs it folded (``belief.recorded``, a class of
``tether.events.kinds_control``), and a hook session records one for most command receipts. A checkpoint's body is
read by an unpickler that finds only classes already imported, and a cold receipt (plain or full path) had not
imported that module: the body's trial failed, the file was removed as a forgery, the whole log folded, and the
provenance index built again from scratch to write the checkpoint anew, which the next cold receipt removed in turn.
In a session of 1,000 coding calls every cold PostToolUse took 3.4-3.7 s (the launcher, `--no-daemon`). Now the
reader imports the module of a payload class it meets when it is one of the registry's later modules (tether's own,
no other), and the checkpoint is used: the same receipt leaves the file as it was.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hookkit import Hook, payload
from test_fold_checkpoint import checkpoint_file, cold

import tether.hooks.launch as launch
from tether.guard import log as guard_log

#: A fresh process that imports what a cold receipt imports, then tries and loads the body as such a receipt does.
RECEIPT_PROCESS = """
import json, os, sys
from tether.hooks import entry
entry.import_deciding_code(gate=False)
from tether.guard import checkpoint as ck
before = "tether.events.kinds_control" in sys.modules
header, _ = ck.parts(open(sys.argv[1], "rb").read(), ck.MAGIC, ck.MAX_BYTES)
pending = ck.begin(os.path.dirname(sys.argv[1]), header["run_id"], False)
try:
    print(json.dumps({"before": before, "tried": pending.tried()}))
finally:
    pending.close()
"""


def read(hook: Hook, i: int) -> None:
    """A Read of a file in the project and its receipt, which gives a belief (the file exists)."""
    path = hook.workspace / f"m{i}.py"
    path.write_text(f"x = {i}\n")
    given = {"file_path": str(path)}
    out = json.loads(hook("PreToolUse", tool_name="Read", tool_input=given, tool_use_id=f"toolu_{i}").stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow", out
    hook(
        "PostToolUse",
        tool_name="Read",
        tool_input=given,
        tool_use_id=f"toolu_{i}",
        tool_response={"type": "text", "file": {"filePath": str(path), "content": f"x = {i}\n", "numLines": 1}},
    )


@pytest.fixture
def believing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    """A session of Reads whose checkpoint's fold holds the beliefs they gave."""
    monkeypatch.setattr(guard_log, "EVERY", 8)
    cold()
    hook = Hook(tmp_path)
    hook("SessionStart")
    for i in range(6):
        read(hook, i)
    cold()
    with sqlite3.connect(tmp_path / ".tether" / "tether.db") as db:
        (beliefs,) = db.execute("SELECT count(*) FROM events WHERE kind = 'belief.recorded'").fetchone()
    assert beliefs > 0
    assert b"tether.events.kinds_control" in checkpoint_file(hook).read_bytes()
    yield hook
    cold()


def env() -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(Path(launch.__file__).parents[2])}
    for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN"):
        out.pop(name, None)
    return out


def test_a_fresh_receipt_process_tries_the_body_well(believing: Hook) -> None:
    done = subprocess.run(
        [sys.executable, "-c", RECEIPT_PROCESS, str(checkpoint_file(believing))],
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got == {"before": False, "tried": True}


def test_a_cold_receipt_keeps_the_checkpoint_it_loaded(believing: Hook) -> None:
    """The launcher, without the daemon: a PreToolUse and its PostToolUse (the plain path, then whatever it hands to
    the full one) leave the checkpoint in place, the file it was (no removal, no rewrite: none is due)."""
    path = checkpoint_file(believing)
    before = os.stat(path)
    run = {**env(), "CLAUDE_PROJECT_DIR": str(believing.workspace), "TETHER_HOOK_DAEMON": "0"}
    last = believing.workspace / "last.py"
    last.write_text("x = 0\n")
    given = {"file_path": str(last)}
    pre = payload(
        "claude-code.PreToolUse", believing.workspace, tool_name="Read", tool_input=given, tool_use_id="toolu_z"
    )
    post = {
        **pre,
        "hook_event_name": "PostToolUse",
        "tool_response": {"type": "text", "file": {"filePath": str(last), "content": "x = 0\n", "numLines": 1}},
    }
    for data in (pre, post):
        done = subprocess.run(
            [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"],
            input=json.dumps(data).encode(),
            capture_output=True,
            env=run,
            cwd=believing.workspace,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-3000:]
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)
