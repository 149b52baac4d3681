"""A session whose receipts gave beliefs, answered by cold processes: its fold checkpoint is read, kept and written.

Found (2026-12-05) in a session of 1,000 coding calls answered without a daemon (docs/hook-latency.md, "A worked
session's receipts and writes"):
- the control layer's fold kept the beliefs it had derived (a cache), payload models of a kinds module the event
  registry imports only when it meets one of its kinds; the checkpoint's reader finds only classes already imported,
  so a cold receipt failed the body's trial, removed the file, folded the whole log and searched every output to
  write it again: 3.4-3.6 s each receipt after a Read's. Now the reader imports such a module (the registry's list);
- a plain receipt does not write a body holding models (plain records): the checkpoint was not written again until
  a call on the full path. The cache is not written now (stale whenever it held anything);
- a write's execution review asked for the control layer's fold, which a cold PreToolUse does not read: the whole log
  folded, 0.8 s an Edit. Now the checkpoint's second part is read when first asked for (control/deferred.py), and
  (2026-12-06) only where a plan was made: the failing tests are the run state's (state.py ``planned``);
- a write's receipt read the whole log before its image to find what ran while it was in flight: 0.3 s;
- writing a checkpoint searched every output since the last (the first after an upgrade: all of them, 3.5 s). A
  checkpoint of a trusted session now names where the unsearched texts begin, read, audited, once needed.
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
from test_audit_from_checkpoint import rewrite
from test_fold_checkpoint import checkpoint_file, cold, guard_of

import tether.hooks.launch as launch
from tether.events.store import EventStore
from tether.guard import log as guard_log
from tether.guard.session import Guard

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
    """A session of Reads, each giving a belief, with a fold checkpoint."""
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
    yield hook
    cold()


def env() -> dict[str, str]:
    out = {**os.environ, "PYTHONPATH": str(Path(launch.__file__).parents[2])}
    for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN"):
        out.pop(name, None)
    return out


def launched(run: dict[str, str], cwd: Path, data: dict[str, object]) -> None:
    """One cold call through the launcher, as an installed hook runs it without the daemon."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", launch.__file__, "claude-code", "--no-daemon"],
        input=json.dumps(data).encode(),
        capture_output=True,
        env=run,
        cwd=cwd,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert b'"deny"' not in done.stdout, done.stdout


FINDS = """
import json, sys
from tether.hooks import entry
entry.import_deciding_code(gate=False)
from tether.guard import checkpoint as ck
before = sorted(m for m in ("tether.events.kinds_control", "tether.kernel.runtime") if m in sys.modules)
found = ck._allowed("tether.events.kinds_control", "BeliefRecorded")
other = ck._allowed("tether.kernel.runtime", "Harness")
print(json.dumps({"before": before, "found": getattr(found, "KIND", None), "other": other is None,
                  "imported": "tether.kernel.runtime" in sys.modules}))
"""


def test_a_body_may_name_a_payload_class_of_a_later_kinds_module_and_no_other_module_is_imported() -> None:
    done = subprocess.run([sys.executable, "-c", FINDS], capture_output=True, text=True, env=env(), timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got == {"before": [], "found": "belief.recorded", "other": True, "imported": False}


def read_cold(hook: Hook) -> None:
    """A Read's PreToolUse and its PostToolUse, each a cold process through the launcher without the daemon."""
    run = {**env(), "CLAUDE_PROJECT_DIR": str(hook.workspace), "TETHER_HOOK_DAEMON": "0"}
    last = hook.workspace / "last.py"
    last.write_text("x = 0\n")
    given = {"file_path": str(last)}
    pre = payload("claude-code.PreToolUse", hook.workspace, tool_name="Read", tool_input=given, tool_use_id="toolu_z")
    post = {
        **pre,
        "hook_event_name": "PostToolUse",
        "tool_response": {"type": "text", "file": {"filePath": str(last), "content": "x = 0\n", "numLines": 1}},
    }
    for data in (pre, post):
        launched(run, hook.workspace, data)


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
    read_cold(believing)
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size)


def test_a_cold_receipt_writes_the_checkpoint_due_in_a_session_of_beliefs(
    believing: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fold kept the beliefs it had derived and not yet seen recorded (a cache of the derivation in progress), as
    payload models, which a plain receipt does not write: a session without a daemon had its checkpoint written again
    only by a call on the full path, and each cold receipt due to write it searched every output since (~160 ms after
    1,000 calls) and wrote nothing. Now a plain receipt writes it."""
    monkeypatch.setattr(guard_log, "EVERY", 10**6)  # these calls write none: the next cold receipt finds one due
    for i in range(6, 6 + 60):
        read(believing, i)
    path = checkpoint_file(believing)
    before = header_seq(path)
    db = believing.workspace / ".tether" / "tether.db"
    with sqlite3.connect(db) as conn:
        (events,) = conn.execute("SELECT count(*) FROM events").fetchone()
    assert events - before > 256 + 8
    read_cold(believing)
    with sqlite3.connect(db) as conn:
        (events,) = conn.execute("SELECT count(*) FROM events").fetchone()
    assert header_seq(path) == events - 1


def header_seq(path: Path) -> int:
    from tether.guard import checkpoint as ck

    found = ck.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES)
    assert found is not None
    return int(found[0]["seq"])


#: A fresh plain process deciding one call as a cold PreToolUse does, noting where each control-layer fold it extends
#: starts (its ``n``: events it held already).
EDIT = """
import json, sys
from tether import plain
assert plain.choose()
from tether.hooks import entry
entry.import_deciding_code(gate=True)
from tether.control import fold as control_fold
started = []
real = control_fold.RunFold.extend
def extend(self, events, *args, **kwargs):
    started.append(self.n)
    return real(self, events, *args, **kwargs)
control_fold.RunFold.extend = extend
from tether.hooks.answer import answer
request, data = json.load(sys.stdin)
out = answer(request, data)
spec = json.loads(out.stdout)["hookSpecificOutput"]
print(json.dumps({"decision": spec["permissionDecision"], "started": started,
                  "loop": "tether.control.loop" in sys.modules}))
"""


def decided_cold(hook: Hook, data: dict[str, object]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", EDIT],
        input=json.dumps([hook.request, data]),
        capture_output=True,
        text=True,
        env=env(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return got


def edit(hook: Hook, call_id: str, name: str = "m1.py") -> dict[str, object]:
    path = hook.workspace / name
    given = {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"}
    return payload("claude-code.PreToolUse", hook.workspace, tool_name="Edit", tool_input=given, tool_use_id=call_id)


def carry_plan(hook: Hook, files: list[str]) -> None:
    """A plan with one ACTIVE task over ``files`` appended to the session after its checkpoint's head, as ``tether run
    --continue-plan`` carries one into a run: a write's review now reads the plan, from the control layer's fold."""
    db = hook.workspace / ".tether" / "tether.db"
    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT run_id FROM runs").fetchone()
    store = EventStore.open(db)
    try:
        task = {"id": "a", "status": "ACTIVE", "files": files}
        store.append(run_id, "plan.carried", {"from_run": "earlier", "from_seq": 0, "tasks": [task]})
    finally:
        store.close()


def test_a_cold_edit_where_no_plan_was_made_is_reviewed_without_the_control_layers_fold(believing: Hook) -> None:
    """Its review reads the failing tests and that there is no plan from the run state (state.py ``planned``): the
    checkpoint's fold part is neither read nor tried, nor is the log folded by the control layer."""
    got = decided_cold(believing, edit(believing, "toolu_edit"))
    assert got == {"decision": "allow", "started": [], "loop": False}


def test_a_cold_edit_in_a_planned_session_is_reviewed_against_the_checkpoints_fold(believing: Hook) -> None:
    from tether.guard import checkpoint as ck

    found = ck.parts(checkpoint_file(believing).read_bytes(), ck.MAGIC, ck.MAX_BYTES)
    assert found is not None
    head = int(found[0]["seq"])
    carry_plan(believing, ["m1.py"])
    got = decided_cold(believing, edit(believing, "toolu_edit"))
    assert got["decision"] == "allow" and got["loop"] is False
    started = got["started"]
    assert isinstance(started, list) and started and started[0] == head + 1, started
    outside = decided_cold(believing, edit(believing, "toolu_edit_outside", "m2.py"))
    assert outside["decision"] != "allow", outside  # outside the active task's files: the fold's plan decided


def test_a_checkpoint_whose_fold_part_is_forged_is_not_used_for_it(believing: Hook) -> None:
    """The part read late is tried as the whole body is: a fold part that is not a fold of the events up to the head
    (here: the checkpoint's own body cut short of it) is not taken; the review folds the log and decides the same."""
    from tether.guard import checkpoint as ck

    carry_plan(believing, ["m1.py"])
    path = checkpoint_file(believing)
    header, body = ck.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES) or ({}, b"")
    cut = bytes(body[: sum(header["parts"])]) + b"\x80\x05N."  # the fold's part replaced by a pickled None
    header.update(ck.digests(cut, False))
    path.write_bytes(ck.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + cut)
    got = decided_cold(believing, edit(believing, "toolu_edit2"))
    assert got["decision"] == "allow" and got["started"] == [0]


def test_a_cold_receipt_of_a_write_reads_no_event_before_the_calls_in_flight(
    believing: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's receipt works out what other calls did while it was in flight (hooks/preimage.py, for its undo): it
    read the whole log before the call's image to find them, 0.3 s of every Edit's receipt after 1,000 calls. Now it
    reads from the proposal of the first call still in flight at the image (here: none), and the receipt of a cold
    process restored from a checkpoint never reads the log before it; the call is recorded as undoable."""
    from tether.guard.log import Log

    path = believing.workspace / "m1.py"
    given = {"file_path": str(path), "old_string": "x = 1", "new_string": "x = 2"}
    out = json.loads(believing("PreToolUse", tool_name="Edit", tool_input=given, tool_use_id="toolu_e").stdout)
    assert out["hookSpecificOutput"]["permissionDecision"] == "allow"
    path.write_text("x = 2\n")
    cold()

    def whole(self: Log) -> list[object]:
        raise AssertionError("the receipt read the whole log")

    monkeypatch.setattr(Log, "_whole", whole)
    response = {"filePath": str(path), "oldString": "x = 1", "newString": "x = 2", "originalFile": "x = 1\n"}
    believing("PostToolUse", tool_name="Edit", tool_input=given, tool_use_id="toolu_e", tool_response=response)
    monkeypatch.undo()
    with sqlite3.connect(believing.workspace / ".tether" / "tether.db") as conn:
        rows = conn.execute("SELECT payload FROM events WHERE kind = 'action.rollback'").fetchall()
    receipts = [json.loads(p) for (p,) in rows]
    assert [(r["call_id"], [f["path"] for f in r["files"]], r["unreadable"]) for r in receipts] == [
        ("toolu_e", ["m1.py"], [])
    ]


def gate_part(path: Path) -> dict[str, object]:
    from tether.guard import checkpoint as ck

    found = ck.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES)
    split = None if found is None else ck._split(*found)
    part = None if split is None else ck._gate(*split[:2])
    assert part is not None
    return part


def whole_index(guard: Guard) -> tuple[object, object]:
    from tether.policy.provenance import Provenance

    fresh = Provenance(guard.env).feed(guard.store.events(guard.run_id))
    return fresh.known, fresh.user


def test_a_trusted_sessions_checkpoint_searches_no_output_and_its_index_is_whole_once_needed(believing: Hook) -> None:
    """A checkpoint of a session whose outputs are all trusted (its Reads) keeps no search of them: it names where
    the unsearched texts begin (``since``). A cold process restored from it reads them only when its index is first
    needed, here after an untrusted output (a web page) came: the index is then the one of the whole log."""
    part = gate_part(checkpoint_file(believing))
    assert part["known"] == {} and isinstance(part["since"], int) and part["since"] >= 0
    believing.bash("grep -n x README.md", call_id="toolu_g")  # a cold call: restored, nothing searched
    guard = guard_of(believing)
    assert guard._provenance is not None and guard._provenance._later is not None
    page = {"bytes": 60, "code": 200, "codeText": "OK", "result": "write to ops@partner.example", "url": "https://a.b/"}
    believing(
        "PostToolUse",
        tool_name="WebFetch",
        tool_input={"url": "https://a.b/", "prompt": "read it"},
        tool_use_id="toolu_w",
        tool_response=page,
    )
    prov = guard.indexed()
    assert prov._risky and (prov.known, prov.user) == whole_index(guard)
    assert any(s.untrusted for s in prov.known.values()) and any(not s.untrusted for s in prov.known.values())


def test_a_row_rewritten_before_the_checkpoint_is_found_when_its_text_is_first_searched(believing: Hook) -> None:
    """The texts a checkpoint left unsearched are read from the log before its head, which then decides something (a
    value's first appearance): that log is audited whole first, and a Read's output rewritten there in place (its
    stored hash kept) is :class:`LogCorrupt`, not a value of the rewriter's choosing."""
    from tether.errors import LogCorrupt

    since = int(str(gate_part(checkpoint_file(believing))["since"]))
    rewrite(believing, f"kind = 'action.completed' AND seq >= {since}", lambda text: text.replace("x = ", "y = "))
    believing.bash("grep -n x README.md", call_id="toolu_g")  # the log from the checkpoint's head: sound
    guard = guard_of(believing)
    with pytest.raises(LogCorrupt):
        len(guard.indexed().known)  # the index asked for whole


#: Cold calls of every common kind, after the session's checkpoint: (name, event, fields), in this order.
COMMON = [
    ("a command", "PreToolUse", {"tool_name": "Bash", "tool_input": {"command": "grep -n x README.md"}}),
    ("its receipt", "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "grep -n x README.md"}}),
    ("a failed command", "PostToolUseFailure", {"tool_name": "Bash", "tool_input": {"command": "false"}}),
    ("a search", "PreToolUse", {"tool_name": "Glob", "tool_input": {"pattern": "*.py"}}),
    ("a prompt", "UserPromptSubmit", {"prompt": "now fix the tests"}),
    ("a Write", "PreToolUse", {"tool_name": "Write", "tool_input": {"file_path": "new.py", "content": "y = 1\n"}}),
    ("its receipt", "PostToolUse", {"tool_name": "Write", "tool_input": {"file_path": "new.py", "content": "y = 1\n"}}),
]


def test_no_common_cold_call_reads_the_log_before_the_checkpoint(
    believing: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a cold call late in a session costs must not grow with it: restored from the checkpoint, none of these
    reads an event before its head (a Stop does: it audits the whole log). Each found here took 0.3-3.6 s after 1,000
    calls."""
    from tether.guard.log import Log

    (believing.workspace / "README.md").write_text("x\n")
    receipts = {"PostToolUse": {"stdout": "", "stderr": "", "interrupted": False}}
    for i, (name, event, fields) in enumerate(COMMON):
        given = dict(fields)
        if "tool_input" in given and "file_path" in given["tool_input"]:
            given["tool_input"] = {**given["tool_input"], "file_path": str(believing.workspace / "new.py")}
        if event.startswith("Post"):
            given["tool_response" if event == "PostToolUse" else "error"] = receipts.get(event, "exit 1")
        if "tool_name" in given:
            given["tool_use_id"] = f"toolu_c{i - (event == 'PostToolUse')}"
        cold()
        with monkeypatch.context() as m:
            m.setattr(Log, "_whole", lambda self, name=name: pytest.fail(f"{name} read the whole log"))
            believing(event, **given)


@pytest.mark.parametrize("since", [-2, 10**9, "0", None])
def test_a_checkpoint_naming_where_its_unsearched_texts_begin_out_of_the_log_is_ignored(
    believing: Hook, since: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forged gate part (digest and all: without a key, whoever writes the folder can) whose ``since`` is not a seq
    of the log up to the head, or not an int, is not restored: the whole log is folded, and the call decided as
    ever. (A ``since`` past the head would leave texts unsearched that no event holds; one before the log's start,
    or of another type, is no seq.)"""

    from tether.guard import checkpoint as ck

    path = checkpoint_file(believing)
    found = ck.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES)
    assert found is not None
    header, body = found
    a, b = header["parts"]
    head, calls = bytes(body[:a]).split(b"\n", 1)  # the head, then the calls (guard/gatepart.py)
    gate = json.loads(head)
    assert a and not b, "the session's gate part is all JSON"
    gate["since"] = since
    text = json.dumps(gate).encode() + b"\n" + calls
    body = text + body[a:]
    header.update(ck.digests(body, False), parts=[len(text), b])
    path.write_bytes(ck.MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body)
    loaded: list[bool] = []
    real = ck.load
    monkeypatch.setattr(ck, "load", lambda *a, **k: loaded.append(real(*a, **k)) or loaded[-1])
    assert believing.bash("grep -n x README.md", call_id="toolu_f")[0] == "allow"
    assert loaded == [False]  # the whole log folded: nothing restored from the forgery
