"""A fold checkpoint's body in two parts (guard/checkpoint.py, format 2): the gate's (the run state, the provenance
index, the turn count), then the control layer's fold. A plain PreToolUse reads, and tries, only the first; every other
process reads both. Each attack here is one an agent that can write the checkpoint's folder could make without a store
key (the digest recomputed): what a process does not read cannot harm it, and what it reads is held to the log."""

from __future__ import annotations

import copyreg
import io
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload

import tether.hooks.launch as launch
import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.events.store import Event
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.guard.log import Log
from tether.state import RunState

#: One PreToolUse decided in a plain process (tether/plain.py), as a cold hook call decides it: what it answered,
#: whether its guard was restored, whether it read the whole log or the checkpoint's fold, what it left on disk.
PLAIN = """
import json, sys
from tether import plain
from tether.hooks import entry
assert plain.choose()
request, data, marker = json.load(sys.stdin)
entry.import_deciding_code(gate=data["hook_event_name"] == "PreToolUse")  # as entry.main does
from tether.guard.log import Log
whole = []
real = Log._whole
Log._whole = lambda self: whole.append(1) or real(self)
from tether.hooks.answer import answer
import tether.hooks.session as hook_session
from tether.control import fold
from tether.plainrecord import Unsure
import os
try:
    out = answer(request, data)
except Unsure:  # a hook process decides again on the full path
    print(json.dumps({"unsure": True, "restored": False, "marker": os.path.exists(marker)}))
    sys.exit()
[guard] = [v for k, v in hook_session._CACHE.items() if k[0] == "guard"]
print(json.dumps({"answer": json.loads(out.stdout or '{"hookSpecificOutput": {"permissionDecision": ""}}')
                  ["hookSpecificOutput"]["permissionDecision"],
                  "restored": type(guard.events).__name__ == "Log", "whole": bool(whole),
                  "fold": guard.run_id in fold._FOLDS, "marker": os.path.exists(marker)}))
"""


def cold() -> None:
    hook_session._CACHE.clear()
    control_fold.clear()


@pytest.fixture
def hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hook]:
    monkeypatch.setattr(guard_log, "EVERY", 8)
    cold()
    (tmp_path / "p").mkdir()
    made = Hook(tmp_path / "p")
    for i in range(12):
        made.bash(f"grep -n needle{i} src/app.py", call_id=f"toolu_{i}")
    yield made
    cold()


def checkpoint_file(hook: Hook) -> Path:
    [found] = (hook.workspace / ".tether" / "tether.db.folds").glob("*.ckpt")
    return found


class Gate(bytes):
    """A checkpoint's gate part as :func:`split` read it: its JSON, then what is pickled beside it (``sizes``)."""

    sizes: list[int]


def split(path: Path) -> tuple[dict[str, Any], Gate, bytes]:
    """A checkpoint's header, its gate's part and its fold's part."""
    header, body = ck.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES) or ({}, b"")
    a, b = header["parts"]
    gate = Gate(body[: a + b])
    gate.sizes = [a, b]
    return header, gate, bytes(body[a + b :])


def gate_of(gate: Gate) -> dict[str, Any]:
    """The gate's part as a reader takes it: the run state, the provenance index, ``since``, the turn count."""
    a, b = gate.sizes
    got = ck._gate(gate[:a], gate[a : a + b])
    assert got is not None
    return got


def write(path: Path, header: dict[str, Any], gate: bytes, fold: bytes = b"") -> None:
    """``gate`` then ``fold`` under ``header``, its digest and parts recomputed: a forgery without a key passes every
    check but the trial's and the log's. A ``gate`` that is not a :func:`split`'s is the gate's part pickled whole."""
    sizes = gate.sizes if isinstance(gate, Gate) else [0, len(gate)]
    header = {**header, **ck.digests(gate + fold, False), "parts": sizes}
    path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + gate + fold)


def in_plain(hook: Hook, data: dict[str, Any], marker: Path, script: str = PLAIN) -> dict[str, Any]:
    """``script`` (:data:`PLAIN`) run in a process of its own, given the session's request, ``data`` and ``marker``."""
    env = {**os.environ, "PYTHONPATH": str(Path(launch.__file__).parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=json.dumps([hook.request, data, str(marker)]),
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return got


def plain_call(hook: Hook, marker: Path, i: int) -> dict[str, Any]:
    data = payload(
        "claude-code.PreToolUse", hook.workspace, tool_input={"command": "ls"}, tool_use_id=f"toolu_plain{i}"
    )
    return in_plain(hook, data, marker)


def plain_receipt(hook: Hook) -> dict[str, Any]:
    """A PostToolUse recorded in a plain process: it views the control layer, so it reads the fold too."""
    data = payload(
        "claude-code.PostToolUse",
        hook.workspace,
        tool_input={"command": "grep -n needle3 src/app.py"},
        tool_use_id="toolu_3",
        tool_response={"stdout": "", "stderr": "", "interrupted": False},
    )
    return in_plain(hook, data, hook.workspace / "none")


def full_call(hook: Hook, i: int) -> bool:
    """One cold call in this (full-path) process: whether it was restored from the checkpoint (both parts read)."""
    cold()
    assert hook.bash("ls", call_id=f"toolu_full{i}")[0] == "allow"
    [guard] = hook.resident().values()
    return isinstance(guard.events, Log)


class Evil:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_a_plain_call_reads_only_the_gates_part_and_never_the_whole_log(hook: Hook, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    got = plain_call(hook, marker, 0)
    assert got == {"answer": "allow", "restored": True, "whole": False, "fold": False, "marker": False}
    assert full_call(hook, 0), "the full path reads both parts of the same file"


def test_a_plain_receipt_reads_the_fold_and_never_the_whole_log(hook: Hook) -> None:
    got = plain_receipt(hook)
    assert got == {"answer": "", "restored": True, "whole": False, "fold": True, "marker": False}


def test_a_fold_part_naming_a_function_is_never_parsed_by_a_plain_call_and_refused_by_the_full_path(
    hook: Hook, tmp_path: Path
) -> None:
    marker = tmp_path / "ran"
    path = checkpoint_file(hook)
    header, gate, _ = split(path)
    write(path, header, gate, pickle.dumps({"fold": Evil(marker)}, protocol=5))
    assert plain_call(hook, marker, 0)["restored"]  # the fold's bytes never read: the gate's part is sound
    assert not full_call(hook, 0)  # the whole log folded
    assert not marker.exists()


def test_a_gate_part_naming_a_function_is_refused_by_both(hook: Hook, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    path = checkpoint_file(hook)
    header, _, fold = split(path)
    write(path, header, pickle.dumps({"state": Evil(marker)}, protocol=5), fold)
    assert plain_call(hook, marker, 0) == {"unsure": True, "restored": False, "marker": False}  # to the full path
    assert path.exists()
    assert not full_call(hook, 0)
    assert not marker.exists()
    assert not path.exists() or path.read_bytes()[-len(fold) :] != fold  # removed (or a new one written since)


def test_a_body_cut_after_the_gates_part_serves_a_plain_call_only(hook: Hook, tmp_path: Path) -> None:
    path = checkpoint_file(hook)
    header, gate, _ = split(path)
    write(path, header, gate)
    assert plain_call(hook, tmp_path / "ran", 0)["restored"]
    assert not full_call(hook, 0)


def test_parts_of_two_checkpoints_spliced_are_refused_where_read(hook: Hook, tmp_path: Path) -> None:
    """The fold of an earlier head beside the gate's part of the current one (and the other way round): each part is
    held to the verified log's head, so the full path refuses both; a plain call reads only the gate's part."""
    path = checkpoint_file(hook)
    old_header, old_gate, old_fold = split(path)
    for i in range(12, 16):
        hook.bash(f"grep -n needle{i} src/app.py", call_id=f"toolu_{i}")
    header, gate, fold = split(path)
    assert header["seq"] > old_header["seq"]
    write(path, header, gate, old_fold)
    assert plain_call(hook, tmp_path / "ran", 0)["restored"]
    write(path, header, gate, old_fold)
    assert not full_call(hook, 0)
    write(path, header, old_gate, fold)
    assert not plain_call(hook, tmp_path / "ran", 1)["restored"]
    write(path, header, old_gate, fold)
    assert not full_call(hook, 1)


def test_a_checkpoint_of_the_old_format_is_a_miss_and_stays(hook: Hook, tmp_path: Path) -> None:
    """Format 1 pickled the five folds in one dict: read as a miss (no trial, nothing removed) by either path, and the
    next checkpoint a full-path call writes replaces it."""
    path = checkpoint_file(hook)
    header, gate, fold = split(path)
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=5)
    pickler.dispatch_table = {**copyreg.dispatch_table, Event: ck._reduce_event}  # as format 1 was written
    pickler.dump({**gate_of(gate), **pickle.loads(fold)})
    write(path, {**header, "version": 1}, buf.getvalue())
    before = path.read_bytes()
    assert not plain_call(hook, tmp_path / "ran", 0)["restored"]
    assert path.read_bytes() == before
    assert not full_call(hook, 0)
    assert split(path)[0]["version"] == ck.VERSION == 9  # the whole log folded, and checkpointed anew


def test_the_body_is_parsed_and_checked_once_and_one_begin_did_not_check_is_checked_by_load(
    hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``begin`` checks the body against its header's digests and ``load`` reuses what it checked (the same bytes); a
    pending file that ``begin`` did not check (as a signed store's) is checked by ``load``, and refused when its
    body is another."""
    path = checkpoint_file(hook)
    size = sum(map(len, split(path)[1:]))
    checked: list[int] = []
    real = ck.intact
    monkeypatch.setattr(ck, "intact", lambda head, body, signed: checked.append(len(body)) or real(head, body, signed))
    assert full_call(hook, 0)
    assert checked.count(size) == 1
    [guard] = hook.resident().values()
    header = split(path)[0]
    raw = path.read_bytes()
    for edit, restored in ((b"", True), (b"\x00", False)):
        pending = ck.begin(path.parent, guard.run_id, signed=False)
        try:
            assert pending.checked is not None and pending.raw == raw
            pending.checked, pending.raw = None, raw + edit  # a byte more after the fold: another body
            assert ck.load(guard, path.parent, header["events"], pending) is restored
        finally:
            pending.close()


def restored_fold(hook: Hook) -> tuple[Any, Any]:
    """One cold call on the full path restored from the checkpoint, then its guard and its control layer's fold at
    the guard's head."""
    assert full_call(hook, 0)
    [guard] = hook.resident().values()
    return guard, control_fold.folded(guard.events)


def test_the_folds_part_holds_no_run_state_and_its_reader_gives_it_the_gates(hook: Hook) -> None:
    """Format 9: the fold's run state is the gate's, to the same head, so it is not pickled a second time (late in a
    session it was ~85 % of the fold's part). A reader gives the fold the gate's part decoded once more: a state of its
    own (not the guard's: each folds the events after the head itself), equal to the state a fold of the whole log
    makes, and the fold's view of the calls reads that state's calls."""
    _, _, fold_part = split(checkpoint_file(hook))
    assert b"RunState" not in fold_part and b"Action" not in fold_part
    guard, fold = restored_fold(hook)
    assert fold.n == len(guard.events) and fold.n > 8
    assert fold.state is not guard.state and fold.state == guard.state
    assert fold.lv.proposals is fold.state.actions
    fresh = control_fold.RunFold()
    fresh.extend(list(guard.events))
    assert fresh.state == fold.state
    assert fresh.awaiting_human == fold.awaiting_human and fresh.review_refusals == fold.review_refusals
    assert fresh.usage() == fold.usage() and fresh.progress() == fold.progress()


@pytest.mark.parametrize("own", ["run-state", "calls", "no-view"])
def test_a_fold_part_holding_a_run_state_or_calls_of_its_own_is_not_taken(hook: Hook, own: str) -> None:
    """A fold part that holds its own run state (as format 8 wrote it: one that could disagree with the gate's), its
    own view of the calls, or in place of its view a plain dict, its digest recomputed, is refused where the fold is
    read: the full path and a plain receipt fold the whole log instead, and a plain PreToolUse, which does not read it,
    is restored."""
    path = checkpoint_file(hook)
    header, gate, fold_part = split(path)
    state = gate_of(gate)["state"]
    fold = ck._fold(io.BytesIO(fold_part), header["events"], header["hash"], state)
    assert fold is not None and fold.state is state
    if own == "calls":
        fold.state, fold.lv.proposals = None, {}
    if own == "no-view":
        fold.state, fold.lv = None, {"proposals": None}
    write(path, header, gate, ck._pickled({"fold": fold}))
    assert plain_call(hook, hook.workspace / "none", 0)["restored"]
    assert plain_receipt(hook)["restored"] is False
    write(path, header, gate, ck._pickled({"fold": fold}))
    assert not full_call(hook, 0)


def test_a_fold_whose_run_state_is_not_at_the_logs_head_is_not_written(hook: Hook) -> None:
    """The writer leaves the fold's run state out because it is the gate's, to the same head: a fold whose state is
    behind the head (a state it did not fold itself) is not written in place of one, and the file stays as it was."""
    assert full_call(hook, 0)
    [guard] = hook.resident().values()
    hook_session.turn_of(guard)  # as hooks/session.py ``checkpoint`` does before it writes
    fold = control_fold.folded(guard.events)
    path = checkpoint_file(hook)
    before, folded = path.read_bytes(), fold.state
    fold.state = RunState()
    assert ck.save(guard, path.parent) is None and path.read_bytes() == before
    fold.state = folded  # the same fold with its own state at the head: written
    assert ck.save(guard, path.parent) is not None and path.read_bytes() != before
