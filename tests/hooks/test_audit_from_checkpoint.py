"""A cold hook call audits the log from its fold checkpoint's head; a stop audits all of it.

The checkpoint's head stands for the log before it (its writer's guard folded only audited or chained events:
guard/checkpoint.py ``Pending.mark``). What a cold PreToolUse no longer recomputes, the Stop does, in the daemon as in
a cold process, and ``tether log verify`` too. Each test attacks the log or the checkpoint where the shorter audit
could be fooled, and shows that the call or the stop fails closed.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook
from test_fold_checkpoint import cold, guard_of

from tether.errors import LogCorrupt
from tether.events.store import EventStore
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.guard.log import Log


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Hook:
    monkeypatch.setattr(guard_log, "EVERY", 8)
    cold()
    yield Hook(tmp_path)
    cold()


@pytest.fixture
def audits(monkeypatch: pytest.MonkeyPatch) -> list[int | str]:
    """Every ``verify_run`` the hooks run: its ``base`` (0: the whole log), or ``"corrupt"`` when it raised."""
    seen: list[int | str] = []
    real = EventStore.verify_run

    def spy(self: EventStore, *args: Any, **kwargs: Any) -> Any:
        try:
            audit = real(self, *args, **kwargs)
        except LogCorrupt:
            seen.append("corrupt")
            raise
        seen.append(audit.base)
        return audit

    monkeypatch.setattr(EventStore, "verify_run", spy)
    return seen


def calls(hook: Hook, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        command = f"grep -n needle{i} src/app.py" if i % 3 else "git push origin main"
        hook.bash(command, call_id=f"toolu_{i}")


def db(hook: Hook) -> Path:
    return hook.workspace / ".tether" / "tether.db"


def checkpoint(hook: Hook) -> tuple[dict[str, Any], Path]:
    (path,) = (hook.workspace / ".tether" / "tether.db.folds").glob("*.ckpt")
    return json.loads(path.read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0]), path


def rewrite(hook: Hook, where: str, edit: Any) -> int:
    """Edit the payload of the first row ``where`` selects in place, its stored hash kept (what someone who can write
    the file, and drops the trigger that refuses updates, can do); its seq."""
    with sqlite3.connect(db(hook)) as con:
        con.execute("DROP TRIGGER IF EXISTS events_no_update")
        seq, payload = con.execute(f"SELECT seq, payload FROM events WHERE {where} ORDER BY seq LIMIT 1").fetchone()
        con.execute("UPDATE events SET payload = ? WHERE seq = ?", (edit(payload), seq))
    return int(seq)


def asked_to_allowed(payload: str) -> str:
    assert '"ASK"' in payload
    return payload.replace('"ASK"', '"ALLOW"')


def test_a_cold_call_audits_from_the_checkpoints_head(hook: Hook, audits: list[int | str]) -> None:
    calls(hook, 12)
    header, _ = checkpoint(hook)
    cold()
    audits.clear()
    assert hook.bash("grep -n x src/app.py", call_id="late")[0] == "allow"
    assert audits == [header["seq"]]  # the chain recomputed from the checkpoint's head only
    assert isinstance(guard_of(hook).events, Log)  # and the checkpoint restored at that head


def test_a_rewrite_before_the_head_passes_a_tool_call_but_not_the_stop(hook: Hook) -> None:
    """The shorter audit's known limit, and where it is caught: an early decision edited in place (ASK made ALLOW)."""
    calls(hook, 12)
    header, _ = checkpoint(hook)
    seq = rewrite(hook, "kind = 'action.decided'", asked_to_allowed)
    assert seq < header["seq"]
    cold()
    assert (
        hook.bash("ls", call_id="after-rewrite")[0] == "allow"
    )  # the fold is the checkpoint's: the rewrite decides nothing
    out = hook("Stop")
    assert out.exit == 2 and f"event seq {seq}" in out.stderr, out
    for _ in range(2):  # the daemon's stop too: its guard is resident, the audit is the stop's own
        out = hook("Stop")
        assert out.exit == 2 and f"event seq {seq}" in out.stderr, out


def test_a_rewrite_after_the_head_fails_the_tool_call(hook: Hook) -> None:
    calls(hook, 12)
    header, _ = checkpoint(hook)
    seq = rewrite(hook, f"seq > {header['seq']}", lambda payload: payload + " ")  # one space: another hash
    cold()
    out = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="after-rewrite")
    assert out.exit == 2 and "allow" not in out.stdout and f"event seq {seq}" in out.stderr, out


def test_the_heads_own_hash_rewritten_is_audited_in_full(hook: Hook, audits: list[int | str]) -> None:
    """The log rewritten up to the head and its hashes with it (a consistent prefix): the head's stored hash is not the
    checkpoint's, so the whole log is audited, and the break after the head found."""
    calls(hook, 12)
    header, _ = checkpoint(hook)
    with sqlite3.connect(db(hook)) as con:
        con.execute("DROP TRIGGER IF EXISTS events_no_update")
        con.execute("UPDATE events SET hash = zeroblob(32) WHERE seq = ?", (header["seq"],))
    cold()
    audits.clear()
    out = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="after-rewrite")
    assert out.exit == 2 and "allow" not in out.stdout
    assert audits == ["corrupt"]  # not begun at the head (its hash is not the checkpoint's): the whole log, found bad


def test_the_first_event_and_its_hash_rewritten_fail_the_call(hook: Hook) -> None:
    """run.started holds the envelope that governs; rewritten with its stored hash (so its contents hash to it), the
    checkpoint's genesis no longer matches, the checkpoint is not used, and the whole log's audit finds the break."""
    from tether.events.chain import event_hash

    calls(hook, 12)
    with sqlite3.connect(db(hook)) as con:
        con.execute("DROP TRIGGER IF EXISTS events_no_update")
        run_id, ts, kind, payload = con.execute("SELECT run_id, ts, kind, payload FROM events WHERE seq = 0").fetchone()
        forged = payload.replace('"task":"', '"task":"forged ', 1)
        assert forged != payload
        h = event_hash("0" * 64, run_id, 0, ts, kind, forged)
        con.execute("UPDATE events SET payload = ?, hash = ? WHERE seq = 0", (forged, bytes.fromhex(h)))
    cold()
    out = hook("PreToolUse", tool_input={"command": "ls"}, tool_use_id="after-rewrite")
    assert out.exit == 2 and "allow" not in out.stdout and "event seq 1" in out.stderr, out


@pytest.mark.parametrize(
    "edit",
    [
        pytest.param(lambda h: {**h, "seq": h["seq"] + 2, "events": h["events"] + 2}, id="head-moved-on"),
        pytest.param(lambda h: {**h, "hash": "0" * 64}, id="other-hash"),
        pytest.param(lambda h: {**h, "seq": -1, "events": 0}, id="negative-seq"),
        pytest.param(lambda h: {**h, "seq": True, "events": 2}, id="bool-seq"),
        pytest.param(lambda h: {**h, "hash": 7}, id="hash-not-text"),
        pytest.param(lambda h: {**h, "run_id": "other"}, id="other-run"),
        pytest.param(lambda h: {**h, "code": "other"}, id="other-code"),
    ],
)
def test_a_checkpoint_header_that_does_not_hold_means_the_whole_log(
    hook: Hook, audits: list[int | str], edit: Any
) -> None:
    """A header edited (its digest still its body's: the body is not touched) never shortens the audit wrongly: the
    audit starts at its head only when the row there has its hash, and the checkpoint is used only at that head;
    anything else audits the whole log, and the call decides as without a checkpoint."""
    calls(hook, 12)
    header, path = checkpoint(hook)
    raw = path.read_bytes()
    line, _, body = raw[len(ck.MAGIC) :].partition(b"\n")
    path.write_bytes(ck.MAGIC + json.dumps(edit(json.loads(line))).encode() + b"\n" + body)
    cold()
    audits.clear()
    assert hook.bash("grep -n x src/app.py", call_id="late")[0] == "allow"
    assert audits[-1] == 0, audits
    assert guard_of(hook).checkpointed != header["seq"] + 1 or not isinstance(guard_of(hook).events, Log)


def test_under_an_anchor_key_an_unsigned_header_means_the_whole_log(
    hook: Hook, audits: list[int | str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tether.events.anchor import AnchorKey

    key = tmp_path / "keys" / "anchor.key"
    AnchorKey.generate(key)
    monkeypatch.setenv("TETHER_KEY", str(key))
    calls(hook, 12)
    header, path = checkpoint(hook)
    cold()
    audits.clear()
    calls(hook, 1, start=12)
    assert audits == [header["seq"]]  # signed with the key: its head stands
    raw = path.read_bytes()
    line, _, body = raw[len(ck.MAGIC) :].partition(b"\n")
    unsigned = {k: v for k, v in json.loads(line).items() if k != "sig"}
    path.write_bytes(ck.MAGIC + json.dumps(unsigned).encode() + b"\n" + body)
    cold()
    audits.clear()
    calls(hook, 1, start=13)
    assert audits[-1] == 0, audits


def test_a_resident_guards_stop_audits_the_log_it_did_not_open(hook: Hook) -> None:
    """The daemon holds the session's guard between calls and audits nothing on a tool call; a row rewritten behind
    it is found at the stop."""
    calls(hook, 3)
    seq = rewrite(hook, "kind = 'action.decided'", asked_to_allowed)
    assert hook.bash("ls", call_id="resident")[0] == "allow"  # the guard kept in this process: no audit
    out = hook("Stop")
    assert out.exit == 2 and f"event seq {seq}" in out.stderr, out


def test_log_verify_sees_the_whole_log(hook: Hook) -> None:
    """``verify_run`` without a head audits every event: it names the rewritten seq."""
    calls(hook, 12)
    seq = rewrite(hook, "kind = 'action.decided'", asked_to_allowed)
    with EventStore.open(db(hook)) as store:
        (run,) = [r.run_id for r in store.runs()]
        with pytest.raises(LogCorrupt, match=f"event seq {seq}"):
            store.verify_run(run)
    cli = subprocess.run(
        [str(Path(sys.executable).parent / "tether"), "log", "verify", run, "--db", str(db(hook))],
        capture_output=True,
        text=True,
    )
    assert cli.returncode != 0 and f"seq {seq}" in cli.stdout + cli.stderr, cli
