"""Fold checkpoints (guard/checkpoint.py): a cold call in a long session folds only the events after a valid
checkpoint, decides exactly as the full fold does, and ignores every checkpoint it cannot vouch for.

A "cold process" here is the in-process hook call with every cache of the previous ones dropped (the guards,
the stores, the control layer's folds); the race is between real processes.
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.control.loop import control_state
from tether.guard import cachefile as code_stamps
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.guard.log import Log
from tether.guard.session import Guard


def cold() -> None:
    """Forget what a process keeps between calls: the next call opens the session as a new process would."""
    hook_session._CACHE.clear()
    control_fold.clear()


def guard_of(hook: Hook) -> Guard:
    guards = list(hook.resident().values())
    assert len(guards) == 1, guards
    return guards[0]


def calls(hook: Hook, n: int, start: int = 0) -> list[str]:
    out = []
    for i in range(start, start + n):
        command = f"grep -n needle{i} src/app.py" if i % 3 else "git push origin main"
        out.append(hook.bash(command, call_id=f"toolu_{i}")[0])
        if i % 4 == 1:
            hook("PostToolUse", tool_name="Bash", tool_input={"command": command}, tool_use_id=f"toolu_{i}")
    return out


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    monkeypatch.setattr(guard_log, "EVERY", 8)
    cold()
    yield Hook(tmp_path)
    cold()


def folder(hook: Hook) -> Path:
    return hook.workspace / ".tether" / "tether.db.folds"


def checkpoint_file(hook: Hook) -> Path:
    files = list(folder(hook).glob("*.ckpt"))
    assert len(files) == 1, files
    return files[0]


def snapshot(g: Guard) -> tuple[Any, ...]:
    """What the guard decides from: the run state, the control state, the provenance index, the turn count."""
    s = g.state
    actions = {k: (a.status, a.deciding_rule, a.verdict, a.seq) for k, a in s.actions.items()}
    prov = g.indexed()
    return actions, s.last_seq, s.head_hash, s.status, control_state(g.events), prov.known, prov.user, g.turns


def test_a_cold_call_restored_from_a_checkpoint_decides_and_folds_as_the_full_fold(hook: Hook) -> None:
    calls(hook, 12)
    assert checkpoint_file(hook).exists()
    cold()
    restored = calls(hook, 6, start=12)
    g = guard_of(hook)
    assert isinstance(g.events, Log)  # it was restored, not refolded
    got = snapshot(g)
    cold()
    ck_path = checkpoint_file(hook)
    ck_path.unlink()  # the same log folded in full
    hook.bash("ls", call_id="toolu_probe")  # opens the session with no checkpoint: the whole log folded
    g_full = guard_of(hook)
    assert not isinstance(g_full.events, Log)
    full = snapshot(g_full)
    # the probe call is one more in the full fold: compare what was there before it
    assert restored == ["ask" if i % 3 == 0 else "allow" for i in range(12, 18)]
    assert {k: v for k, v in full[0].items() if k != "toolu_probe"} == got[0]
    assert got[3] == full[3] and got[5] == full[5] and got[6] == full[6]
    # the restored log reads as the whole log when something asks for an early event (a stop's checks)
    assert [e.seq for e in g.events] == list(range(len(g.events)))


def test_the_restored_decision_equals_the_refolded_one_call_by_call(hook: Hook, tmp_path: Path) -> None:
    """The same calls in two sessions' worth of processes: one cold process per call with checkpoints, and the
    whole fold every time: every answer is the same."""
    other = Hook(tmp_path / "other")
    (tmp_path / "other").mkdir()
    with_ck, without = [], []
    for i in range(30):
        cold()
        with_ck += calls(hook, 1, start=i)
        cold()
        for f in folder(other).glob("*.ckpt") if folder(other).exists() else ():
            f.unlink()
        without += calls(other, 1, start=i)
    assert with_ck == without


def moved(code: dict[str, Any], field: int) -> dict[str, Any]:
    """A header's ``code`` with the checkpoint module's row changed: its size (``field`` 1: edited since it wrote),
    or its file (0: another module's, as that file is, so only the reader's own import of it can tell)."""
    modules = dict(code["modules"])
    rel, size, mtime = modules["tether.guard.checkpoint"]
    modules["tether.guard.checkpoint"] = [rel, size + 1, mtime] if field else list(modules["tether.guard.log"])
    return {**code, "modules": modules}


def tamper(path: Path, edit: Any) -> None:
    raw = path.read_bytes()
    line, _, body = raw[len(ck.MAGIC) :].partition(b"\n")
    header = json.loads(line)
    header, body = edit(header, body)
    path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + body)


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda h, b: (h, b[:-1] + bytes([b[-1] ^ 1])), id="body-byte-flipped"),
        pytest.param(lambda h, b: (h, b[: len(b) // 2]), id="torn-body"),
        pytest.param(lambda h, b: ({**h, "seq": h["seq"] - 1, "events": h["events"] - 1}, b), id="other-seq"),
        pytest.param(lambda h, b: ({**h, "hash": "0" * 64}, b), id="other-head-hash"),
        pytest.param(lambda h, b: ({**h, "version": 99}, b), id="other-version"),
        pytest.param(lambda h, b: ({**h, "code": "x"}, b), id="other-code"),
        pytest.param(lambda h, b: ({**h, "code": moved(h["code"], 1)}, b), id="a-module-edited-since"),
        pytest.param(lambda h, b: ({**h, "code": moved(h["code"], 0)}, b), id="a-module-from-another-file"),
        pytest.param(lambda h, b: ({**h, "contract": "sha256:" + "1" * 64}, b), id="other-envelope"),
        pytest.param(lambda h, b: ({**h, "genesis": "2" * 64}, b), id="other-database"),
        pytest.param(lambda h, b: ({**h, "seq": "7"}, b), id="malformed-seq"),
    ],
)
def test_a_checkpoint_it_cannot_vouch_for_is_ignored_and_the_whole_log_is_folded(hook: Hook, edit: Any) -> None:
    calls(hook, 12)
    tamper(checkpoint_file(hook), edit)
    cold()
    assert calls(hook, 3, start=12) == ["ask", "allow", "allow"]
    assert not isinstance(guard_of(hook).events, Log)


def test_a_header_nested_past_jsons_depth_is_ignored_not_a_refusal(hook: Hook) -> None:
    """Its ``RecursionError`` (not a ``ValueError``) escaped the early read and refused every call of the session
    (exit 2) until the file was removed; it is a checkpoint like any other that cannot be vouched for: ignored."""
    calls(hook, 12)
    path = checkpoint_file(hook)
    body = path.read_bytes()[len(ck.MAGIC) :].partition(b"\n")[2]
    path.write_bytes(ck.MAGIC + b'{"deep": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n" + body)
    cold()
    assert calls(hook, 3, start=12) == ["ask", "allow", "allow"]
    assert not isinstance(guard_of(hook).events, Log)


def test_a_body_naming_a_function_is_refused_without_calling_it(hook: Hook, tmp_path: Path) -> None:
    calls(hook, 12)
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    body = pickle.dumps({"state": Evil()}, protocol=5)

    tamper(checkpoint_file(hook), lambda h, b: ({**h, **ck.digests(body, False), "parts": [0, len(body)]}, body))
    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert not marker.exists()
    assert not isinstance(guard_of(hook).events, Log)


def test_a_checkpoint_of_another_session_is_ignored(hook: Hook) -> None:
    calls(hook, 12)
    mine = checkpoint_file(hook)
    hook("PreToolUse", session_id="another-session", tool_input={"command": "ls"}, tool_use_id="t-other")
    theirs = Path(ck.path_for(folder(hook), guard_of_session(hook, "another-session").run_id))
    theirs.write_bytes(mine.read_bytes())  # session A's checkpoint where session B's belongs
    cold()
    hook("PreToolUse", session_id="another-session", tool_input={"command": "ls"}, tool_use_id="t-other2")
    assert not isinstance(guard_of_session(hook, "another-session").events, Log)


def guard_of_session(hook: Hook, session: str) -> Guard:
    run_id = hook_session.run_id_for("claude-code", session)
    guards = [v for k, v in hook.resident().items() if k[3] == run_id]
    assert guards
    return guards[0]


def test_a_log_behind_the_checkpoint_is_folded_in_full(hook: Hook) -> None:
    """The database restored from an older copy: its head is behind the checkpoint's."""
    db = hook.workspace / ".tether" / "tether.db"
    calls(hook, 4)
    cold()
    older = hook.workspace / "older.db"
    with sqlite3.connect(db) as src, sqlite3.connect(older) as dst:
        src.backup(dst)
    calls(hook, 12, start=4)
    assert checkpoint_file(hook).exists()
    cold()
    with sqlite3.connect(older) as src, sqlite3.connect(db) as dst:
        src.backup(dst)
    assert calls(hook, 2, start=4) == ["allow", "allow"]
    assert not isinstance(guard_of(hook).events, Log)


def test_a_crash_while_writing_leaves_no_checkpoint_or_the_old_one(hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    calls(hook, 12)
    before = checkpoint_file(hook).read_bytes()

    def crash(src: str, dst: str, **at: int) -> None:  # at: the folder's descriptor (cachefile.write_own)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    calls(hook, 10, start=12)  # a checkpoint is due and its rename fails
    assert checkpoint_file(hook).read_bytes() == before  # the old one, whole; no temporary file left
    assert not list(folder(hook).glob(".ckpt-*"))
    monkeypatch.undo()
    cold()
    assert calls(hook, 1, start=22) == ["allow"]
    assert isinstance(guard_of(hook).events, Log)  # the old checkpoint, then the events after it


def test_a_writer_killed_mid_write_leaves_a_temporary_file_the_next_write_removes(hook: Hook) -> None:
    calls(hook, 12)
    dead = folder(hook) / f"{ck.TMP_PREFIX}dead"  # what a SIGKILL between mkstemp and rename leaves
    live = folder(hook) / f"{ck.TMP_PREFIX}live"  # another writer's, mid-write
    dead.write_bytes(b"torn")
    live.write_bytes(b"half")
    old = os.stat(dead).st_mtime - ck.STALE_S - 1
    os.utime(dead, (old, old))
    other = folder(hook) / "notes.txt"  # not a temporary file of ours: kept whatever its age
    other.write_bytes(b"x")
    os.utime(other, (old, old))
    calls(hook, 10, start=12)  # a checkpoint is due: its write sweeps
    assert not dead.exists() and live.exists() and other.exists()
    assert checkpoint_file(hook).read_bytes().startswith(ck.MAGIC)


#: The modules as the test's process found them, pinned (``cachefile._SEEN``): the racers run this tree's code, as the
#: test does, but a tree that changes while the suite runs (a rebase, a commit landing in the checkout under test)
#: would have them name other files than the test's, and the test's process rightly ignores their checkpoints as
#: another code's. What is tested here is the race, not the code (``other-code`` above tests that).
RACER = """
import json, sys
sys.path.insert(0, {tests!r})
import tether.guard.log as guard_log
from tether.guard import cachefile
cachefile._SEEN.update((k, tuple(v)) for k, v in json.loads({seen!r}).items())
guard_log.EVERY = 1
from hookkit import Hook
from pathlib import Path
import tether.hooks.session as hs
import tether.control.fold as cf
hook = Hook(Path({ws!r}))
for i in range(6):
    hs._CACHE.clear(); cf.clear()
    hook.bash(f"grep -n x{{i}} f", call_id=f"{name}-{{i}}")
"""


def test_two_cold_processes_racing_leave_a_valid_checkpoint(hook: Hook) -> None:
    calls(hook, 10)
    tests = str(Path(__file__).parent)
    src = str(Path(ck.__file__).resolve().parents[2])  # this tree's tether, whatever else is installed
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, *sys.path])}
    seen = json.dumps({k: v for k, v in code_stamps._SEEN.items() if v is not None})
    racer = [RACER.format(tests=tests, ws=str(hook.workspace), name=n, seen=seen) for n in ("a", "b")]
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env) for code in racer]
    assert [p.wait(timeout=600) for p in procs] == [0, 0]
    assert not list(folder(hook).glob(".ckpt-*"))
    cold()
    assert calls(hook, 1, start=10) == ["allow"]
    g = guard_of(hook)
    assert isinstance(g.events, Log)
    assert {f"{n}-{i}" for n in "ab" for i in range(6)} <= set(g.state.actions)


def test_under_an_anchor_key_only_a_checkpoint_signed_with_it_is_used(
    hook: Hook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a signing key the log's anchors resist a rewrite; a checkpoint must resist a forgery as well."""
    from tether.events.anchor import AnchorKey

    key = tmp_path / "keys" / "anchor.key"
    AnchorKey.generate(key)
    monkeypatch.setenv("TETHER_KEY", str(key))
    calls(hook, 12)
    path = checkpoint_file(hook)
    header = json.loads(path.read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0])
    assert header["sig"] and header["key_id"].startswith("ed25519:") and header["body_sha256"]
    cold()
    calls(hook, 1, start=12)
    assert isinstance(guard_of(hook).events, Log)  # signed by the key: used
    signed = path.read_bytes()

    tamper(path, lambda h, b: ({k: v for k, v in h.items() if k != "sig"}, b))
    cold()
    calls(hook, 1, start=13)
    assert not isinstance(guard_of(hook).events, Log)  # unsigned: ignored

    path.write_bytes(signed)  # another body under the signed header, its CRC-32 made right: the SHA-256 it signs is not
    tamper(path, lambda h, b: ({**h, **ck.digests(b[:-2] + b"N.", False)}, b[:-2] + b"N."))
    cold()
    calls(hook, 1, start=14)
    assert not isinstance(guard_of(hook).events, Log)

    other = AnchorKey.generate(tmp_path / "other" / "anchor.key")
    path.write_bytes(signed)

    def forged(h: dict[str, Any], b: bytes) -> tuple[dict[str, Any], bytes]:
        unsigned = {k: v for k, v in h.items() if k != "sig"}
        assert other.private is not None
        sig = other.private.sign(json.dumps(unsigned, sort_keys=True).encode())
        return {**h, "sig": base64.b64encode(sig).decode()}, b

    tamper(path, forged)  # another key's signature under this key's id
    cold()
    calls(hook, 1, start=15)
    assert not isinstance(guard_of(hook).events, Log)


def test_without_sources_to_stamp_no_checkpoint_is_written_or_read(hook: Hook, monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint pickles tether's classes: code that cannot tell which version it is neither writes nor reads."""
    calls(hook, 12)
    assert checkpoint_file(hook).exists()
    monkeypatch.setattr(code_stamps, "_package", lambda: None)
    cold()
    calls(hook, 12, start=12)
    assert not isinstance(guard_of(hook).events, Log)
    header = json.loads(checkpoint_file(hook).read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0])
    assert header["seq"] < len(guard_of(hook).events) - 12  # the old one: none written since
