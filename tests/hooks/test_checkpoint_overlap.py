"""The trial of an unsigned fold checkpoint runs while the log is audited (guard/checkpoint.py ``begin``,
hooks/session.py ``begun``): the file is read and its body's child forked before ``Guard.open`` verifies the log,
and its verdict is asked for only after. Attacks: a body whose trial never ends (killed at its deadline, counted
from the fork, the call decided by the full fold), a log that fails its audit while the child runs (the call
refused, the child killed and reaped at once), and a large legitimate body (its deadline grows with it: a fixed
2 s failed bodies of ~20 MB, and the session then folded its whole log at every cold call)."""

from __future__ import annotations

import copyreg
import io
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hookkit import Hook
from test_checkpoint_bounds import session
from test_checkpoint_trial import PROTO, children
from test_fold_checkpoint import calls, checkpoint_file, cold, guard_of

from tether.events.store import Event, EventStore
from tether.guard import cachefile, gatepart
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.guard.log import Log

#: ``{t: 1}``, ``t = (u, u)``, ``u = (v, v)``…, 80 levels: the load hashes the key, which never ends.
HANGING = PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s."


def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    """A session of 12 calls, its checkpoints written every 8 events, and this process's caches dropped."""
    monkeypatch.setattr(guard_log, "EVERY", 8)
    cold()
    return session(tmp_path)


def forge(path: Path, body: bytes) -> None:
    """``body`` as the checkpoint, under its own header with the digest made right (what a forger can do)."""
    raw = path.read_bytes()
    header = json.loads(raw[len(ck.MAGIC) :].partition(b"\n")[0])
    header.update(ck.digests(body, False), parts=[0, len(body)])  # the gate's part pickled whole
    path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + body)


def order(seen: list[tuple[str, int]]) -> list[str]:
    """The checkpoint's trial (its fork and verdict) and the audit, in order: the kept envelope's own trial left out."""
    ours = {n for s, n in seen if s == "fork"}
    return [s for s, n in seen if s == "audit" or n in ours]


def watch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """The order of the trials' forks, the log's audit and the verdicts, with the process's children at the audit."""
    seen: list[tuple[str, int]] = []
    real_init, real_verdict, real_verify = cachefile.Trial.__init__, cachefile.Trial.verdict, EventStore.verify_run

    def init(self: cachefile.Trial, *a: object, **k: object) -> None:
        real_init(self, *a, **k)  # type: ignore[arg-type]
        if getattr(a[0], "__module__", "") == ck.__name__:  # the checkpoint's (the kept envelope's is forked first)
            seen.append(("fork", self.pid or 0))

    def verify(self: EventStore, *a: object, **k: object) -> object:
        seen.append(("audit", len(children())))
        return real_verify(self, *a, **k)  # type: ignore[arg-type]

    def verdict(self: cachefile.Trial) -> bool:
        seen.append(("verdict", self.pid or 0))
        return real_verdict(self)

    monkeypatch.setattr(cachefile.Trial, "__init__", init)
    monkeypatch.setattr(cachefile.Trial, "verdict", verdict)
    monkeypatch.setattr(EventStore, "verify_run", verify)
    return seen


def hanging(
    hook: Hook, monkeypatch: pytest.MonkeyPatch, seconds: float, then: Callable[[], None] = lambda: None
) -> tuple[set[int], list[tuple[str, int]], float]:
    """The session's checkpoint made one whose body never loads, its trial given ``seconds``, ``then`` done: the
    process's children before, what :func:`watch` will see, and when the cold call starts."""
    forge(checkpoint_file(hook), HANGING)
    monkeypatch.setattr(ck, "TRIAL_S", seconds)
    then()
    kids = children()
    seen = watch(monkeypatch)
    cold()
    return kids, seen, time.monotonic()


def test_the_trial_runs_while_the_log_is_audited_and_the_checkpoint_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = made(tmp_path, monkeypatch)
    kids = children()
    seen = watch(monkeypatch)
    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert isinstance(guard_of(hook).events, Log), "restored from the checkpoint"
    assert order(seen) == ["fork", "audit", "verdict"], seen
    assert next(n for s, n in seen if s == "audit") >= len(kids) + 1, "the child was running during the audit"
    assert children() <= kids, "a trial's child left behind"


def test_the_gates_json_is_read_before_the_verdict_on_the_fold_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JSON needs no trial: a process that reads the fold too (here, the full path) reads the gate's part while
    the fold's trial runs, not after its verdict (a late receipt waited ~4 ms longer for the child before), and so it
    reads the fold's run state, which the fold's part does not hold (format 9): the gate's JSON decoded once more."""
    hook = made(tmp_path, monkeypatch)
    seen = watch(monkeypatch)
    real = gatepart.decode
    monkeypatch.setattr(gatepart, "decode", lambda text, part=False: seen.append(("json", 0)) or real(text, part))
    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert isinstance(guard_of(hook).events, Log), "restored from the checkpoint"
    ours = {n for s, n in seen if s == "fork"}
    assert [s for s, n in seen if s == "json" or (s == "verdict" and n in ours)] == ["json", "json", "verdict"], seen


def test_a_trial_that_never_ends_is_killed_at_its_deadline_and_the_log_folded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hook = made(tmp_path, monkeypatch)
    kids, seen, start = hanging(hook, monkeypatch, 0.5)
    assert calls(hook, 1, start=12) == ["ask"]
    assert time.monotonic() - start < 30
    # audited from the checkpoint's head, then in full: the checkpoint that stood for the log before it is not used
    assert order(seen) == ["fork", "audit", "verdict", "audit"], seen
    assert not isinstance(guard_of(hook).events, Log), "the whole log folded"
    assert children() <= kids, "a trial's child left behind"


def test_a_log_that_fails_its_audit_while_the_child_runs_is_refused_and_the_child_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row after the checkpoint's head rewritten: the audit from the head fails, and so the call, at once."""
    hook = made(tmp_path, monkeypatch)
    head = json.loads(checkpoint_file(hook).read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0])["seq"]
    calls(hook, 1, start=12)  # events after the checkpoint's head (the call writes no checkpoint: too few)

    def edit() -> None:
        with sqlite3.connect(hook.workspace / ".tether" / "tether.db") as con:
            con.execute("DROP TRIGGER events_no_update")
            (last,) = con.execute("SELECT max(seq) FROM events").fetchone()
            assert last > head, (last, head)
            con.execute("UPDATE events SET ts = '2000-01-01T00:00:00Z' WHERE seq = ?", (last,))

    kids, seen, start = hanging(hook, monkeypatch, 600.0, edit)  # were the child waited for, the test would hang
    out = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="after-edit")
    assert out.exit == 2 and "allow" not in out.stdout
    assert time.monotonic() - start < 60
    assert order(seen) == ["fork", "audit"], seen  # no verdict asked: killed, not waited for
    assert children() <= kids, "a trial's child left behind"


def test_a_log_rewritten_before_the_head_of_a_checkpoint_that_fails_its_trial_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row before the head rewritten, under a checkpoint whose body never loads: the audit from the head passes,
    the trial fails at its deadline, the checkpoint is not used, and so the whole log is audited: refused."""
    hook = made(tmp_path, monkeypatch)

    def edit() -> None:
        with sqlite3.connect(hook.workspace / ".tether" / "tether.db") as con:
            con.execute("DROP TRIGGER events_no_update")
            con.execute("UPDATE events SET ts = '2000-01-01T00:00:00Z' WHERE seq = 3")

    kids, seen, start = hanging(hook, monkeypatch, 0.5, edit)
    out = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="after-edit")
    assert out.exit == 2 and "allow" not in out.stdout and "event seq 3" in out.stderr, out
    assert time.monotonic() - start < 30
    assert order(seen) == ["fork", "audit", "verdict", "audit"], seen
    assert children() <= kids, "a trial's child left behind"


def test_a_large_legitimate_body_passes_its_trial(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real session's folded state, over and over in one body of 21 MB (the size of a session of ~37,000 tool
    calls' checkpoint, at 571 KB a 1,000): loaded and walked in the child within its deadline and allowance."""
    hook = made(tmp_path, monkeypatch)
    header, body = ck.parts(checkpoint_file(hook).read_bytes(), ck.MAGIC, ck.MAX_BYTES) or ({}, b"")
    text, left, _ = ck._split(header, body) or (b"", b"", b"")
    from tether.policy.provenance import Provenance  # noqa: F401 — the body pickles it

    def copies(n: int) -> bytes:
        buf = io.BytesIO()
        p = pickle.Pickler(buf, protocol=5)
        p.dispatch_table = {**copyreg.dispatch_table, Event: ck._reduce_event}  # as the writer does
        p.dump({"state": [ck._gate(text, left) for _ in range(n)]})  # the gate's part, pickled whole n times
        return buf.getvalue()

    each = len(copies(2)) - len(copies(1))  # a class's name is written once a body
    big = copies(21_000_000 // each + 1)
    assert len(big) > 20_000_000
    assert ck.trial_seconds(big) >= ck.TRIAL_S + 10  # the fixed 2 s was what failed it
    assert ck.tried(big)
    assert not ck.tried(HANGING)


def test_a_cold_pre_tool_use_restores_the_checkpoint_and_keeps_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In a process of its own: a PreToolUse decides without the control layer, whose fold classes a checkpoint
    pickles. Forked before they were imported, the trial's child could not find them: every checkpoint failed its
    trial, was removed as a forgery, and each cold call folded the whole log."""
    from test_cold_path import RESTORED, payload

    made(tmp_path, monkeypatch)
    (ckpt,) = (tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt")
    env = {**os.environ, "TETHER_HOOK_DAEMON": "0", "CLAUDE_PROJECT_DIR": str(tmp_path)}
    for name in ("TETHER_DB", "TETHER_ENVELOPE"):
        env.pop(name, None)
    for i in range(2):
        data = payload("claude-code.PreToolUse", tmp_path, tool_input={"command": f"ls d{i}"}, tool_use_id=f"cold{i}")
        argv = [sys.executable, "-c", RESTORED]
        out = subprocess.check_output(argv, input=json.dumps(data), text=True, env=env, timeout=120)
        probe = json.loads(out.rstrip("\n").rpartition("\n")[2])
        assert probe["exit"] == 0 and probe["loaded"] == [True], probe["exit"]
        assert "tether.policy.gate" in probe["modules"] and ckpt.exists()


@pytest.mark.parametrize("signed", [False, True])
def test_a_folds_part_read_late_is_tried_while_its_run_state_is_decoded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, signed: bool
) -> None:
    """A plain PreToolUse reads the fold's part only when a write's review asks for it (``checkpoint._later_fold``):
    the child that tries it is forked first, and the fold's run state (the gate's JSON, decoded once more) is read
    while it runs; under a store key nothing is forked."""
    hook = made(tmp_path, monkeypatch)
    header, body = ck.parts(checkpoint_file(hook).read_bytes(), ck.MAGIC, ck.MAX_BYTES) or ({}, memoryview(b""))
    text, left, rest = ck._split(header, body) or (b"", b"", b"")
    kids = children()
    seen = watch(monkeypatch)
    real = gatepart.decode
    monkeypatch.setattr(gatepart, "decode", lambda text, part=False: seen.append(("json", 0)) or real(text, part))
    fold = ck._later_fold(text, left, rest, header["seq"], header["hash"], signed)
    assert fold is not None and fold.n == header["events"] and fold.state.last_seq == header["seq"]
    ours = {n for s, n in seen if s == "fork"}
    assert [s for s, n in seen if s == "json" or n in ours] == (["json"] if signed else ["fork", "json", "verdict"])
    assert children() <= kids, "a trial's child left behind"


def test_a_folds_part_read_late_that_never_loads_is_killed_at_its_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same late read of a forged fold part whose load never ends: its child killed at the deadline and reaped,
    the fold not given (the control layer folds the log instead)."""
    hook = made(tmp_path, monkeypatch)
    header, body = ck.parts(checkpoint_file(hook).read_bytes(), ck.MAGIC, ck.MAX_BYTES) or ({}, memoryview(b""))
    text, left, _ = ck._split(header, body) or (b"", b"", b"")
    monkeypatch.setattr(ck, "TRIAL_S", 0.5)
    kids = children()
    start = time.monotonic()
    assert ck._later_fold(text, left, memoryview(HANGING), header["seq"], header["hash"], False) is None
    assert time.monotonic() - start < 30
    assert children() <= kids, "a trial's child left behind"
