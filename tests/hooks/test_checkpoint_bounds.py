"""A fold checkpoint no store key vouches for (guard/checkpoint.py) is a pickle anyone who can write the folder
beside the database can forge, digest and all. What its unpickling may cost is bounded: a file larger than the cap
is not read (its size is checked before), and a body is first loaded in a forked child with a memory limit and a
deadline, so a hostile body (a memory bomb, nested lists, a tuple nested deep enough that hashing it overflows the
C stack, a tuple graph whose hash takes forever) is a miss, and the call folds the whole log: never a hang or a
crash of the hook process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest
from hookkit import Hook

from tether.guard import checkpoint as ck
from tether.guard.log import Log

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"

# Hand-written pickle bodies (protocol 5 opcodes). Each is a dict holding one hostile value, as a forger would
# write it; each loads in a few seconds at most, or never, or crashes the interpreter.
PROTO = b"\x80\x05"


def deep_tuple_key(depth: int) -> bytes:
    """``{(((…),),): 1}``: building the dict hashes the key, and a tuple's hash recurses in C with no depth check:
    deep enough, the interpreter dies of a stack overflow (SIGSEGV)."""
    return PROTO + b"}" + b")" + b"\x85" * depth + b"K\x01s."


def tuple_graph_key(levels: int) -> bytes:
    """``{t: 1}`` where ``t = (u, u)``, ``u = (v, v)``, …: a few bytes per level through the memo, but hashing it
    visits 2**levels tuples (a tuple does not cache its hash): it never ends."""
    body = PROTO + b"}" + b")"
    for i in range(levels):
        body += b"\x94" + b"h" + bytes([i]) + b"\x86"  # MEMOIZE as i, BINGET i, TUPLE2
    return body + b"K\x01s."


def nested_lists(count: int) -> bytes:
    """``{"state": [[[…]]]}`` nested ``count`` deep: one byte of body per list, ~70 bytes of memory each."""
    return PROTO + b"}\x8c\x05state" + b"]" * count + b"a" * (count - 1) + b"s."


def forge(hook: Hook, body: bytes) -> Path:
    """The session's checkpoint with ``body`` under a header that names it (no key: nothing else vouches)."""
    (path,) = (hook.workspace / ".tether" / "tether.db.folds").glob("*.ckpt")
    raw = path.read_bytes()
    header = json.loads(raw[len(ck.MAGIC) :].partition(b"\n")[0])
    header.update(ck.digests(body, False), parts=[0, len(body)])  # the gate's part pickled whole
    path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + body)
    return path


def session(tmp_path: Path) -> Hook:
    from test_fold_checkpoint import calls

    tmp_path.mkdir(exist_ok=True)
    hook = Hook(tmp_path)
    calls(hook, 12)
    return hook


def cold_call_folds_in_full(hook: Hook) -> None:
    """A cold process's next call decides as ever, having folded the whole log (the checkpoint was a miss)."""
    from test_fold_checkpoint import calls, cold, guard_of

    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert not isinstance(guard_of(hook).events, Log)


def peak_of_a_cold_call(hook: Hook) -> int:
    """The most this process allocated during :func:`cold_call_folds_in_full`, in bytes."""
    tracemalloc.start()
    try:
        cold_call_folds_in_full(hook)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    from test_fold_checkpoint import cold

    from tether.guard import log as guard_log

    monkeypatch.setattr(guard_log, "EVERY", 8)
    monkeypatch.setattr(ck, "TRIAL_S", 3.0)
    cold()


def test_a_valid_checkpoint_passes_its_trial_and_is_used(tmp_path: Path) -> None:
    from test_fold_checkpoint import calls, cold, guard_of

    hook = session(tmp_path)
    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert isinstance(guard_of(hook).events, Log), "restored from the checkpoint"


@pytest.mark.parametrize("cut", [10, len(ck.MAGIC) + 5, -1], ids=["in-magic", "in-header", "last-byte"])
def test_a_truncated_file_is_a_miss(tmp_path: Path, cut: int) -> None:
    hook = session(tmp_path)
    (path,) = (tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt")
    path.write_bytes(path.read_bytes()[:cut])
    cold_call_folds_in_full(hook)


def test_a_file_over_the_cap_is_not_read(tmp_path: Path) -> None:
    """A sparse file of a GiB: its size is checked before a byte of it is read (memory stays flat)."""
    hook = session(tmp_path)
    path = forge(hook, b"")
    with open(path, "r+b") as f:
        f.truncate(1 << 30)
    assert peak_of_a_cold_call(hook) < ck.MAX_BYTES // 2


def test_a_memory_bomb_of_nested_lists_is_a_miss(tmp_path: Path) -> None:
    """~33 M nested lists in a body just under the cap: ~70 bytes of memory per byte of body, ~2.3 GB."""
    hook = session(tmp_path)
    count = (ck.MAX_BYTES - 4096) // 2
    forge(hook, nested_lists(count))
    assert peak_of_a_cold_call(hook) < 4 * ck.MAX_BYTES  # the body is read; what it would build is never built here


def test_a_tuple_graph_whose_hash_never_ends_is_a_miss(tmp_path: Path) -> None:
    hook = session(tmp_path)
    forge(hook, tuple_graph_key(80))
    cold_call_folds_in_full(hook)


CRASH = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], str(Path(sys.argv[1]).parent)]  # the hooks' kits, and the tests'
from test_checkpoint_bounds import cold_call_folds_in_full, deep_tuple_key, forge, session
from tether.guard import log
log.EVERY = 8
hook = session(Path(sys.argv[2]))
forge(hook, deep_tuple_key(2_000_000))
cold_call_folds_in_full(hook)
print("survived")
"""


def in_a_process_of_its_own(script: str, tmp_path: Path) -> str:
    """What ``script`` (given this folder and ``tmp_path``) prints, asserting it exits 0: a crash it survives only
    with the trial (else SIGSEGV, -11) does not take the test runner with it."""
    done = subprocess.run(
        [sys.executable, "-c", script, str(HERE), str(tmp_path)],
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.strip()


def test_a_tuple_nested_deep_enough_to_crash_the_interpreter_is_a_miss(tmp_path: Path) -> None:
    """In a process of its own: without the trial, this one kills the interpreter (SIGSEGV)."""
    assert in_a_process_of_its_own(CRASH, tmp_path) == "survived"


def test_a_checkpoint_signed_with_the_stores_key_is_not_tried_and_one_over_the_cap_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The trial is for a body nothing vouches for: under an anchor key the signature does (no fork); and a file
    over the cap is a miss before any trial."""
    from test_fold_checkpoint import calls, cold, guard_of

    from tether.events.anchor import AnchorKey

    AnchorKey.generate(tmp_path / "keys" / "anchor.key")
    monkeypatch.setenv("TETHER_KEY", str(tmp_path / "keys" / "anchor.key"))
    hook = Hook(tmp_path / "p")
    (tmp_path / "p").mkdir()
    calls(hook, 12)
    trials: list[int] = []
    monkeypatch.setattr(ck, "tried", lambda body: trials.append(len(body)) or True)
    cold()
    calls(hook, 1, start=12)
    assert isinstance(guard_of(hook).events, Log) and trials == []
    monkeypatch.delenv("TETHER_KEY")
    unsigned = session(tmp_path / "q")
    (path,) = (tmp_path / "q" / ".tether" / "tether.db.folds").glob("*.ckpt")
    with open(path, "r+b") as f:
        f.truncate(ck.MAX_BYTES + 1)
    cold_call_folds_in_full(unsigned)
    assert trials == []
