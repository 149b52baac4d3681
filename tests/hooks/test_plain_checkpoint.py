"""Fold checkpoints and the plain path (tether/plain.py): a plain receipt writes the session's checkpoint, and a plain
process never removes one.

Found (2026-12-05): only the full path wrote checkpoints, and once receipts and prompts were decided on the plain path
too, a session without a daemon got a checkpoint only at its SessionStart and its Stops. Every cold call of a long
turn folded every event since: a PreToolUse's p50 went from 57 to 93 ms over 300 tool calls (growing without end).
Now a plain process that has the control layer's fold (a receipt or a prompt: ``guard.log.wants_fold``) writes the
checkpoint when one is due, unless the body would hold a plain record (``checkpoint._plain_records``). Here: what it
writes is, loaded, what the full path writes from the same log; a cold session keeps one; a plain record is not
written; an Unsure while writing leaves the call's answer as it was.

Found (redteam5): a checkpoint's trial runs in a forked child of the deciding process (guard/checkpoint.py); in a plain
process that child loads plain records, and whatever a plain record is unsure of there (an Unsure, a
BaseException: the child left with code 3), or fails where pydantic does not, fails the trial — and the parent
removed the file as a forgery (65e53d5), a file the full path might load and keep. Here: a body holding a set of an
envelope rule whose pickled state lacks its list fields passes its trial under pydantic (which hashes such a state)
and fails it in a plain process; a plain process that would remove the file is now Unsure instead (the call goes
to the full path, which tries the body itself).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import datetime
import enum
import io
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import test_checkpoint_parts as checkpoint_parts
from hookkit import Hook, payload
from test_plain_path import call
from test_plain_path import session as plain_session
from test_plain_records import in_plain

import tether.hooks.launch as launch
from tether.envelope.schema import Rule
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.guard.log import Log

PLAIN = """
import base64, json, os, sys
from tether import plain
assert plain.choose()
import tether.envelope.schema
from tether.guard import checkpoint as ck
from tether.plainrecord import Unsure
job = json.load(sys.stdin)
body = base64.b64decode(job["body"])
out = {"tried": ck.tried(body)}
st = os.stat(job["path"])
pending = ck.Pending(b"", None, (st.st_ino, st.st_size, st.st_mtime_ns))
try:
    pending.discard(job["path"])
    out["discard"] = "done"
except Unsure:
    out["discard"] = "unsure"
out["kept"] = os.path.exists(job["path"])
out["pydantic"] = sorted(m for m in sys.modules if m.startswith("pydantic"))
print(json.dumps(out))
"""


def lacking_body() -> bytes:
    state = Rule(id="r", rule="allow", reason="x").__getstate__()
    state["__dict__"] = {k: v for k, v in state["__dict__"].items() if k in ("id", "rule", "reason")}
    lacking = Rule.__new__(Rule)
    lacking.__setstate__(state)
    return pickle.dumps({"beside": frozenset({lacking})}, protocol=5)


def test_a_plain_process_leaves_a_checkpoint_it_doubts_to_the_full_path(tmp_path: Path) -> None:
    body = lacking_body()
    assert ck.tried(body), "pydantic loads and walks it"
    path = tmp_path / "session.ckpt"
    path.write_bytes(ck.MAGIC + b"{}\n" + body)
    got = in_plain({"body": base64.b64encode(body).decode(), "path": str(path)}, PLAIN)
    assert got["tried"] is False, "a plain record doubts its hash: the plain trial fails where pydantic's passes"
    assert got == {"tried": False, "discard": "unsure", "kept": True, "pydantic": []}
    assert path.exists()


# ---- a plain receipt writes the session's checkpoint ------------------------------------------------------------

#: The body a process would write for the session now (``checkpoint._body``), in a plain process or on the full path,
#: with a receipt's imports (the control layer's view, not the gate); ``extra``: a model (a plain record in a plain
#: process) put among the run state's unknowns first.
BODY = """
import base64, json, sys
from tether import plain
request, data, use_plain, extra = json.load(sys.stdin)
if use_plain:
    assert plain.choose()
from tether.hooks import entry
entry.import_deciding_code(gate=False)
from tether.guard import checkpoint as ck
from tether.hooks.answer import settings_from
from tether.hooks.session import open_guard, turn_of
guard = open_guard(settings_from(request), data)
turn_of(guard)
if extra:
    from tether.envelope.schema import Rule
    guard.state.unknowns.append(Rule(id="r", rule="allow", reason="x"))
made = ck._body(guard)
print(json.dumps({"body": None if made is None else base64.b64encode(made[1]).decode(),
                  "parts": None if made is None else made[0],
                  "restored": type(guard.events).__name__ == "Log",
                  "pydantic": sorted(m for m in sys.modules if m.startswith("pydantic"))}))
"""

#: A receipt answered in a plain process whose checkpoint writer meets an Unsure (what only the full path vouches for).
UNSURE = """
import json, sys
from tether import plain
assert plain.choose()
request, data = json.load(sys.stdin)
from tether.hooks import entry
entry.import_deciding_code(gate=False)
from tether.guard import checkpoint as ck
def unsure(guard):
    plain.unsure("the test's: only the full path vouches for this body")
ck._body = unsure
from tether.hooks.answer import answer
out = answer(request, data)
print(json.dumps({"stdout": out.stdout, "exit": out.exit, "wrote": plain.wrote,
                  "pydantic": sorted(m for m in sys.modules if m.startswith("pydantic"))}))
"""


def run_script(script: str, job: list[Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(launch.__file__).parents[2])}
    for name in ("TETHER_DB", "TETHER_ENVELOPE", "TETHER_HOOK_PLAIN"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(job), capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return got


def folds(project: Path) -> list[Path]:
    return sorted((project / ".tether" / "tether.db.folds").glob("*.ckpt"))


def events_in(project: Path) -> int:
    with sqlite3.connect(project / ".tether" / "tether.db") as db:
        (n,) = db.execute("SELECT count(*) FROM events").fetchone()
    return int(n)


#: What a receipt's PreToolUse shares with it.
PRE_FIELDS = ("session_id", "tool_input", "tool_use_id")


def receipt(project: Path, i: int) -> dict[str, Any]:
    return payload(
        "claude-code.PostToolUse",
        project,
        tool_input={"command": f"grep -n x{i} README.md"},
        tool_use_id=f"toolu_{i}",
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
    )


def seeded(project: Path, calls: int, *, rich: bool = False) -> Hook:
    """A session played in this process (the daemon's code, the full path): with ``rich``, test_plain_path's session
    of every kind of call but its stop first; then ``calls`` Bash calls, each with its receipt."""
    project.mkdir()
    (project / "README.md").write_text("hello\n")
    hook = Hook(project)
    hook("SessionStart")
    for event, fields in plain_session()[1:] if rich else []:
        if event != "Stop":
            hook(event, **{k: v for k, v in fields.items() if k != "session_id"})
    for i in range(calls):
        hook.bash(f"grep -n x{i} README.md", f"toolu_{i}")
        hook("PostToolUse", **{k: v for k, v in receipt(project, i).items() if k != "cwd"})
    return hook


def shape(root: Any) -> Any:
    """``root`` as nested values to compare: a container or object met again is named by where it was first met (the
    folds rely on which objects are one: a call in ``actions`` is the one in ``same_calls``); a string, a number, a
    tuple or another immutable value is compared by value, whichever objects hold it."""
    seen: dict[int, str] = {}
    kept: list[Any] = []  # what was met stays alive: a freed temporary's id, reused, is not taken for it

    def walk(obj: Any, at: str) -> Any:
        if obj is None or isinstance(obj, str | bytes | int | float | enum.Enum | datetime.datetime):
            return (type(obj).__qualname__, repr(obj))
        if type(obj) in (tuple, frozenset):
            items = [walk(v, f"{at}({i})") for i, v in enumerate(obj)]
            return (type(obj).__name__, tuple(items) if type(obj) is tuple else tuple(sorted(map(repr, items))))
        if id(obj) in seen:
            return ("same as", seen[id(obj)])
        seen[id(obj)] = at
        kept.append(obj)
        if type(obj) is dict:
            return (
                "dict",
                tuple((walk(k, f"{at}.key{i}"), walk(v, f"{at}[{i}]")) for i, (k, v) in enumerate(obj.items())),
            )
        if type(obj) in (list, collections.deque):
            return (type(obj).__name__, tuple(walk(v, f"{at}[{i}]") for i, v in enumerate(obj)))
        if type(obj) is set:
            return ("set", tuple(sorted(repr(walk(v, f"{at}{{}}")) for v in obj)))
        fields = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
        for c in type(obj).__mro__:  # a slot as it is: an empty one is not filled (an event's data is parsed on use)
            for name, slot in vars(c).items():
                if isinstance(slot, types.MemberDescriptorType) and name not in fields:
                    with contextlib.suppress(AttributeError):
                        fields[name] = slot.__get__(obj, type(obj))
        return (type(obj).__module__, type(obj).__qualname__, walk(dict(sorted(fields.items())), f"{at}."))

    return walk(root, "")


def loaded(got: dict[str, Any]) -> Any:
    """A body's gate part and fold, read as the checkpoint's reader reads them in this (full-path) process."""
    ck._classes_imported(True)
    body = base64.b64decode(got["body"])
    text, left, fold = ck._split({"parts": got["parts"]}, body) or (b"", b"", b"")
    return [ck._gate(text, left), ck._load(io.BytesIO(fold))]


@pytest.mark.parametrize("restored", [False, True], ids=["folded whole", "restored from the full path's"])
def test_a_plain_receipts_checkpoint_loads_as_the_full_paths(tmp_path: Path, restored: bool) -> None:
    """The body a plain receipt would write, loaded, is the one the full path would write from the same log: the same
    values, and the same objects shared. Both from the whole log, and both from the full path's checkpoint and what
    came after it."""
    project = tmp_path / "p"
    hook = seeded(project, 70, rich=True)
    assert folds(project), "the full path wrote one on the way (over guard.log.EVERY events)"
    hook("UserPromptSubmit", prompt="after the checkpoint")
    if not restored:
        for path in folds(project):
            path.unlink()
    data = receipt(project, 0)
    full = run_script(BODY, [hook.request, data, False, False])
    plain = run_script(BODY, [hook.request, data, True, False])
    assert plain["pydantic"] == [] and full["pydantic"], "one plain process, one on the full path"
    assert plain["restored"] is full["restored"] is restored
    assert plain["body"] and full["body"]
    assert shape(loaded(plain)) == shape(loaded(full))


def test_a_plain_record_in_the_body_is_left_to_the_full_path(tmp_path: Path) -> None:
    """A body holding a model is written on the full path only: in a plain process it would hold a plain record,
    whose state only pydantic vouches for."""
    project = tmp_path / "p"
    hook = seeded(project, 3)
    data = receipt(project, 0)
    assert run_script(BODY, [hook.request, data, True, True])["body"] is None
    assert run_script(BODY, [hook.request, data, True, False])["body"], "without it, the plain process writes"
    assert run_script(BODY, [hook.request, data, False, True])["body"], "the full path writes the model"


@pytest.mark.parametrize("signed", [False, True], ids=["no key", "an anchor key"])
def test_a_cold_session_without_a_daemon_keeps_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signed: bool
) -> None:
    """Hook processes without a daemon, each call on the plain path: once guard.log.EVERY events came since the last
    checkpoint, the next receipt writes one (signed under an anchor key); the next PreToolUse restores from it and
    folds only what came after; the full path restores from it too. On the code before, no cold call but a
    SessionStart or a Stop wrote one."""
    if signed:
        from tether.events.anchor import AnchorKey

        AnchorKey.generate(tmp_path / "keys" / "anchor.key")
        monkeypatch.setenv("TETHER_KEY", str(tmp_path / "keys" / "anchor.key"))
    checkpoint_parts.cold()
    project = tmp_path / "p"
    hook = seeded(project, 8)
    assert not folds(project) and events_in(project) < guard_log.EVERY
    for i in range(8, 120):  # through the launcher, each a process of its own (test_plain_path.call)
        fields = {k: v for k, v in receipt(project, i).items() if k != "cwd"}
        out, code, pydantic = call(project, "PreToolUse", **{k: fields[k] for k in PRE_FIELDS})
        assert (code, pydantic, json.loads(out)["hookSpecificOutput"]["permissionDecision"]) == (0, False, "allow")
        out, code, pydantic = call(project, "PostToolUse", **fields)
        assert (code, pydantic) == (0, False), "each receipt on the plain path"
        if folds(project):
            break
    else:
        raise AssertionError(f"no checkpoint after {events_in(project)} events of plain calls")
    assert events_in(project) >= guard_log.EVERY
    [path] = folds(project)
    header = json.loads(path.read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0])
    assert header["events"] == events_in(project), "taken at the log's head, by the receipt just made"
    assert ("sig" in header) is signed

    after = payload("claude-code.PreToolUse", project, tool_input={"command": "ls"}, tool_use_id="toolu_after")
    got = checkpoint_parts.in_plain(hook, after, project / "none")
    assert (got["answer"], got["restored"], got["whole"]) == ("allow", True, False)
    checkpoint_parts.cold()
    try:
        assert hook.bash("ls -la", "toolu_full")[0] == "allow"
        [guard] = hook.resident().values()
        assert isinstance(guard.events, Log), "the full path restored the plain receipt's checkpoint"
    finally:
        checkpoint_parts.cold()


def test_an_unsure_while_writing_the_checkpoint_leaves_the_receipt_as_it_was(tmp_path: Path) -> None:
    """A plain receipt's checkpoint is a cache: an Unsure while writing it (after the receipt's events are written, when
    an Unsure would refuse the call) writes none, and the receipt is answered as without it."""
    project = tmp_path / "p"
    hook = seeded(project, 70)
    for path in folds(project):
        path.unlink()
    before = events_in(project)
    got = run_script(UNSURE, [hook.request, receipt(project, 0)])
    assert (got["exit"], got["wrote"], got["pydantic"]) == (0, True, [])
    assert "refus" not in got["stdout"].lower()
    assert events_in(project) > before and not folds(project)


#: A plain PreToolUse's process (the gate's imports, not the control layer's) whose session has a checkpoint due.
DUE = """
import json, sys
from tether import plain
assert plain.choose()
from tether.hooks import entry
entry.import_deciding_code()
import tether.hooks.session as hook_session
from tether.hooks.answer import settings_from
request, data = json.load(sys.stdin)
class Due:  # a guard with a checkpoint due: EVERY events folded since the last
    events, checkpointed = [None] * 300, 0
hook_session.checkpoint(settings_from(request), data, Due)
print(json.dumps({"writer": "tether.guard.checkpoint" in sys.modules,
                  "pydantic": sorted(m for m in sys.modules if m.startswith("pydantic"))}))
"""


def test_a_plain_pretooluse_with_a_checkpoint_due_does_not_import_the_writer(tmp_path: Path) -> None:
    """It writes none (it has no control fold), and learns so from guard/log.py without importing the writer
    (~1.3 ms a call, in a session whose hooks send no receipt to write one)."""
    project = tmp_path / "p"
    project.mkdir()
    data = payload("claude-code.PreToolUse", project)
    request = {"agent": "claude-code", "db": str(project / ".tether" / "tether.db")}
    assert run_script(DUE, [request, data]) == {"writer": False, "pydantic": []}
