"""Attacks on the trial of a fold checkpoint nothing vouches for (guard/checkpoint.py, :func:`tried`): a body whose
load ends well but whose first hash in this process would kill it or never end, a child the deadline kills, the
file rewritten while the child tries it, locks other threads hold at the fork, the parent's garbage and limits."""

from __future__ import annotations

import gc
import json
import logging
import os
import resource
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hookkit import Hook
from machinekit import unavailable

from tether.guard import cachefile
from tether.guard import checkpoint as ck

HERE = Path(__file__).resolve().parent
SRC = HERE.parents[1] / "src"
PROTO = b"\x80\x05"


def deep_tuple_value(depth: int) -> bytes:
    """``{"state": ((…),)}``: the load builds it without hashing it (a value, not a key)."""
    return PROTO + b"}\x8c\x05state" + b")" + b"\x85" * depth + b"s."


def tuple_graph_value(levels: int) -> bytes:
    """``{"state": t}``, ``t = (u, u)``, ``u = (v, v)``…: a few bytes a level; a hash of it visits 2**levels."""
    body = PROTO + b"}\x8c\x05state" + b")"
    for i in range(levels):
        body += b"\x94" + b"h" + bytes([i]) + b"\x86"
    return body + b"s."


def many_lists(count: int) -> bytes:
    """``{"state": [[], [], …]}``: enough allocations to run the collector during the load."""
    return PROTO + b"}\x8c\x05state" + b"](" + b"]" * count + b"es."


PARENT_HASH = """
import io, sys
from tether.guard import cachefile
from tether.guard import checkpoint as ck
body = bytes.fromhex(sys.stdin.read())
obj = ck._load(io.BytesIO(body))
hash(obj["state"])
"""


def test_a_deep_tuple_the_load_never_hashes_fails_the_trial() -> None:
    """Loaded, it ends well; hashed in the parent, it kills the interpreter: so the trial must refuse it."""
    body = deep_tuple_value(300_000)
    died = subprocess.run(
        [sys.executable, "-c", PARENT_HASH],
        input=body.hex(),
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert died.returncode < 0, "the attack is real: the parent's first hash of it is fatal"
    assert not ck.tried(body)


def test_a_shared_tuple_graph_the_load_never_hashes_fails_the_trial() -> None:
    assert not ck.tried(tuple_graph_value(80))


def test_a_plain_body_passes_and_a_cycle_is_walked_once() -> None:
    assert ck.tried(PROTO + b"}\x8c\x05state]\x94h\x00as.")  # {"state": l} where l = [l]
    assert ck.tried(many_lists(10_000))


def test_what_the_walk_meets_is_linear_in_the_graph() -> None:
    shared = [("x",) * 3] * 1000
    assert ck._walkable({"a": shared, "b": shared}, ck.TRIAL_DEPTH, 10_000)
    assert not ck._walkable({"a": shared, "b": shared}, ck.TRIAL_DEPTH, 5_000)  # shared: met once per holder
    nested: object = ()
    for _ in range(ck.TRIAL_DEPTH + 1):
        nested = (nested,)
    assert not ck._walkable(nested, ck.TRIAL_DEPTH, 1 << 30)


def children() -> set[int]:
    """This process's children, whichever of its threads forked them (zombies too)."""
    return set(
        int(pid) for task in Path("/proc/self/task").iterdir() for pid in (task / "children").read_text().split()
    )


def test_a_child_past_its_deadline_is_killed_and_reaped(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A load that never ends (a hashed tuple graph as a key): the child is killed at the deadline, reaped (no
    zombie left), and leaves no file; the parent's own limits are untouched."""
    kids = children()
    monkeypatch.setattr(ck, "TRIAL_S", 0.3)
    monkeypatch.chdir(tmp_path)
    before = resource.getrlimit(resource.RLIMIT_AS)
    body = PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s."
    assert not ck.tried(body)
    assert children() <= kids, "a trial's child left behind"
    assert resource.getrlimit(resource.RLIMIT_AS) == before
    assert list(tmp_path.iterdir()) == []


def test_locks_other_threads_hold_at_the_fork_do_not_stall_the_child(tmp_path: Path) -> None:
    """The daemon forks from a thread while others hold a logging handler's lock and a database's write lock: the
    child touches neither, so a good body still passes, while they are still held. (Not logging's module lock:
    CPython takes that one itself before a fork, so the fork waits for its holder; this test once held it, passed
    after the holder's 30 s wait ran out, and so proved nothing.)"""
    db = sqlite3.connect(tmp_path / "x.db", check_same_thread=False)
    db.execute("create table t(x)")
    handler = logging.StreamHandler()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with handler.lock:  # type: ignore[union-attr]
            db.execute("begin immediate")
            db.execute("insert into t values (1)")
            held.set()
            release.wait(60)
            db.rollback()

    t = threading.Thread(target=hold)
    t.start()
    try:
        assert held.wait(30)
        assert ck.tried(many_lists(1000))
        assert t.is_alive() and not release.is_set(), "the trial waited for a lock's holder"
    finally:
        release.set()
        t.join()
        db.close()


class Finalised:
    """Cyclic garbage whose finaliser leaves a mark: a stand-in for a temporary directory the parent drops."""

    def __init__(self, mark: Path) -> None:
        self.mark = mark
        self.me = self

    def __del__(self) -> None:
        with open(self.mark, "a") as f:
            f.write(f"{os.getpid()}\n")


def test_the_parents_garbage_is_not_finalised_in_the_child(tmp_path: Path) -> None:
    mark = tmp_path / "mark"
    body = many_lists(50_000)  # enough allocations for the child's collector to run, were it on
    gc.collect()  # the next collection is hundreds of allocations away: after the fork
    Finalised(mark)  # garbage at once, collectable only by the collector
    assert ck.tried(body)
    gc.collect()
    assert mark.read_text().split() == [str(os.getpid())]


def test_the_parent_loads_the_bytes_the_child_tried(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file swapped for a fatal body while the child tries the good one (read, and its trial started, before the
    log's audit; swapped when the verdict is asked for): the parent loads what it read, once."""
    from test_checkpoint_bounds import session
    from test_fold_checkpoint import calls, cold, guard_of

    from tether.guard import log as guard_log
    from tether.guard.log import Log

    monkeypatch.setattr(guard_log, "EVERY", 8)
    hook: Hook = session(tmp_path)
    (path,) = (tmp_path / ".tether" / "tether.db.folds").glob("*.ckpt")
    real = cachefile.Trial.verdict
    swapped = []

    def swap(trial: cachefile.Trial) -> bool:  # the file read and its trial started before the audit: swap it now
        raw = path.read_bytes()
        header = json.loads(raw[len(ck.MAGIC) :].partition(b"\n")[0])
        bad = deep_tuple_value(300_000)
        header.update(ck.digests(bad, False), parts=[0, len(bad)])  # the gate's part pickled whole
        path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + bad)
        swapped.append(True)
        return real(trial)

    monkeypatch.setattr(cachefile.Trial, "verdict", swap)
    cold()
    assert calls(hook, 1, start=12) == ["ask"]
    assert swapped and isinstance(guard_of(hook).events, Log), "restored from the bytes the child tried"


def test_a_process_with_over_a_thousand_descriptors_still_tries(tmp_path: Path) -> None:
    """A daemon holding many stores' files: the child's pidfd is numbered past 1,023, which ``select`` refused
    (the trial raised, and its child was left running or a zombie)."""
    kids = children()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        unavailable("cannot open 1,100 descriptors here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100) if hard == resource.RLIM_INFINITY else hard, hard))
    fds = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert ck.tried(many_lists(10))
        assert not ck.tried(tuple_graph_value(80))
        assert children() <= kids, "a trial's child left behind"
    finally:
        for fd in fds:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_wait_cut_short_kills_and_reaps_the_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interrupt while the process waits for the child: the child does not outlive the trial."""
    kids = children()

    def interrupted(pid: int, timeout: float) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr(cachefile, "_ended", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ck.tried(PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s.")
    assert children() <= kids, "a trial's child left behind"


def test_trials_from_several_threads_at_once_each_judge_their_own_child(monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon opening several sessions cold at once: each thread's trial waits for its own child (a fast good
    one, a hanging bad one killed at the deadline), and none is left behind."""
    kids = children()
    monkeypatch.setattr(ck, "TRIAL_S", 0.5)
    good, bad = many_lists(1000), tuple_graph_value(80)
    hanging = PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s."
    results: dict[int, bool] = {}

    def one(i: int) -> None:
        results[i] = ck.tried((good, bad, hanging)[i % 3])

    threads = [threading.Thread(target=one, args=(i,)) for i in range(9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == {i: i % 3 == 0 for i in range(9)}
    assert children() <= kids, "a trial's child left behind"


def test_containers_of_leaves_are_counted_exactly_at_the_bound() -> None:
    """Dicts and tuples holding only leaves of types met before are counted without a frame of their own
    (``_walkable``): the same count as with one, so the bound falls on the same node — met once per holder, for
    a shared one too — and a container holding anything else is still walked into."""
    row = {"a": "x", "b": 1, "c": None}  # 1 + 2 * 3 = 7
    pair = ("x", 2.0)  # 1 + 2 = 3
    graph = {"rows": [row] * 50 + [dict(row) for _ in range(50)], "pairs": [pair] * 40, "first": ("y",)}
    meets = (1 + 3) + (1 + 100 * 7) + (1 + 40 * 3) + (1 + 1)  # the root and its keys, the lists, the first tuple
    assert ck._walkable(graph, ck.TRIAL_DEPTH, meets)
    assert not ck._walkable(graph, ck.TRIAL_DEPTH, meets - 1)
    deep: object = ("leaf",)
    for _ in range(ck.TRIAL_DEPTH):
        deep = {"k": deep}  # a dict of a dict: never leaves only
    assert not ck._walkable({"str": "s", "v": deep}, ck.TRIAL_DEPTH, 1 << 30)


@pytest.mark.parametrize("matches", [False, True], ids=["another digest", "the header's digest"])
def test_a_body_whose_digest_is_not_the_headers_leaves_no_child(tmp_path: Path, matches: bool) -> None:
    """A body whose digest is not the header's is not used, and no trial of it is left running when ``begin``
    returns (here one whose load would never end). With the header's digest, the child runs until its verdict or
    ``close``."""
    kids = children()
    folder = tmp_path / "folds"
    folder.mkdir(mode=0o700)
    body = PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s."
    digests = ck.digests(body if matches else b"another body", False)
    header = {
        "version": ck.VERSION,
        "run_id": "run-x",
        "code": cachefile.code_made(),
        **digests,
        "parts": [0, len(body)],
    }
    path = Path(ck.path_for(folder, "run-x"))
    path.write_bytes(ck.MAGIC + json.dumps(header).encode() + b"\n" + body)
    path.chmod(0o600)
    pending = ck.begin(folder, "run-x", signed=False)
    try:
        assert pending.raw is not None
        if matches:
            assert pending.trial is not None and children() - kids, "tried in a child of its own"
        else:
            assert (pending.trial, pending.checked, pending.mark("run-x", None)) == (None, None, None)
            assert children() <= kids, "the child of a body no one will use is left behind"
    finally:
        pending.close()
    assert children() <= kids


ORPHAN = """
import os, sys
from tether.guard import cachefile
from tether.guard import checkpoint as ck
body = bytes.fromhex(sys.stdin.read())
trial = cachefile.Trial(lambda: ck._trial(body), float(sys.argv[1]), ck.trial_allowance(body))
print(trial.pid, flush=True)
os._exit(0)  # killed before it asks for the verdict or closes the trial: the child is nobody's to kill now
"""


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie, or a process gone, does not)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


def test_a_trials_child_outlives_its_parent_only_as_long_as_its_cpu_limit(tmp_path: Path) -> None:
    """A hook process killed while its trial's child loads a body whose hash never ends: the child, orphaned, is
    stopped by its own CPU limit (a little past the deadline), not left to spin for good; and it leaves no core."""
    body = PROTO + b"}" + b")" + b"".join(b"\x94h" + bytes([i]) + b"\x86" for i in range(80)) + b"K\x01s."
    done = subprocess.run(
        [sys.executable, "-c", ORPHAN, "0.5"],
        input=body.hex(),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    pid = int(done.stdout.split()[0])
    try:
        for _ in range(600):  # at most a minute; its limit is 2 s of CPU
            if not running(pid):
                break
            threading.Event().wait(0.1)
        assert not running(pid), "the orphaned child still spins"
    finally:
        if running(pid):
            os.kill(pid, 9)
    assert list(tmp_path.iterdir()) == [], "no core file"
