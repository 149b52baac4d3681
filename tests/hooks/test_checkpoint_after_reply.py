"""The daemon answers first, then writes the fold checkpoint: the call that crosses the threshold gets its reply
while the writer is still held, and a daemon killed between its reply and the checkpoint's rename leaves a log
that verifies and either no checkpoint or the previous one, which a cold process still restores from.

Nothing here depends on how fast the writer runs: after each reply the test waits for that call's work after the
reply to end (``checkpoint_later`` returned) or for the writer to reach the point where it is held, whichever it
is, before the next call. (It used to wait half a second for the writer: a writer slower than that under load
held the session's lock while the test's next call waited on it, and the test failed.)"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hookkit import Hook, payload, wait_for

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.events.store import EventStore
from tether.guard import cachefile as code_stamps
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.hooks.client import ask
from tether.hooks.daemon import serve, stop_daemon
from tether.hooks.session import run_id_for

EVERY = 8  # a checkpoint is due every few calls (each PreToolUse is three events)


def cold() -> None:
    hook_session._CACHE.clear()
    control_fold.clear()


@pytest.fixture
def small_every(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(guard_log, "EVERY", EVERY)
    monkeypatch.setattr(guard_log, "RESIDENT_EVERY", EVERY)
    # nor once a session is quiet (test_daemon_quiet_checkpoint.py)
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)
    cold()
    yield
    cold()


def pre_tool_use(project: Path, session: str, i: int) -> bytes:
    data = payload("claude-code.PreToolUse", project, tool_input={"command": f"ls d{i}"}, tool_use_id=f"t{i}")
    return json.dumps({**data, "session_id": session}).encode()


def call(project: Path, session: str, i: int) -> str:
    request = {"agent": "claude-code", "db": str(project / ".tether" / "tether.db")}
    reply = ask(request, pre_tool_use(project, session, i))
    assert reply is not None and reply.exit == 0, reply
    return str(json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"])


def in_process(project: Path, command: str) -> str:
    """A call of session s1 decided in this process, as a cold process would (its caches dropped first)."""
    reply = Hook(project)("PreToolUse", tool_input={"command": command}, tool_use_id="t-after", session_id="s1")
    return str(json.loads(reply.stdout)["hookSpecificOutput"]["permissionDecision"])


def spy_on_restores(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each read of a checkpoint returns from now on (True: the guard was restored from it)."""
    restored: list[bool] = []
    real_load = ck.load

    def spy(guard: Any, folder: Path, audited: int, pending: Any = None) -> bool:
        restored.append(real_load(guard, folder, audited, pending))
        return restored[-1]

    monkeypatch.setattr(ck, "load", spy)
    return restored


def checkpoints(project: Path) -> list[Path]:
    return sorted((project / ".tether" / "tether.db.folds").glob("*.ckpt"))


def after_reply(monkeypatch: pytest.MonkeyPatch) -> queue.Queue[str]:
    """Gets "done" each time a call's work after the reply (``checkpoint_later``) has ended."""
    out: queue.Queue[str] = queue.Queue()
    real_later = hook_session.checkpoint_later

    def later(*args: Any) -> None:
        real_later(*args)
        out.put("done")

    monkeypatch.setattr(hook_session, "checkpoint_later", later)
    return out


@contextmanager
def daemon_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A daemon serving in this process, on a socket of the test's; yields an empty project directory."""
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    daemon = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": 60.0}, daemon=True)
    daemon.start()
    wait_for(sock)
    project = tmp_path / "p"
    project.mkdir()
    try:
        yield project
    finally:
        stop_daemon(str(sock))
        daemon.join(timeout=30)


def test_the_crossing_call_is_answered_before_its_checkpoint_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_every: None
) -> None:
    release = threading.Event()
    signals = after_reply(monkeypatch)  # per call: "done", or "held" when its writer is held
    real_save = ck.save

    def held_save(guard: Any, folder: Path) -> Any:
        signals.put("held")
        assert release.wait(60), "the test never released the writer"
        return real_save(guard, folder)

    monkeypatch.setattr(ck, "save", held_save)
    with daemon_thread(tmp_path, monkeypatch) as project:
        try:
            held = False
            for i in range(20):
                assert call(project, "s1", i) == "allow"  # answered, though a checkpoint may be due
                held = signals.get(timeout=60) == "held"  # the next call only once this one's writer is done
                if held:
                    break
            assert held, "no checkpoint came due"
            assert checkpoints(project) == [], "the reply came first: the writer is still held"
            assert call(project, "s2", 100) == "allow", "another session is answered meanwhile"
            release.set()
            deadline = time.monotonic() + 30
            while not checkpoints(project):
                assert time.monotonic() < deadline, "the checkpoint was never written"
                time.sleep(0.02)
        finally:
            release.set()
    cold()
    restored = spy_on_restores(monkeypatch)
    assert in_process(project, "ls again") == "allow"
    assert restored == [True], "a cold process restores from the checkpoint written after the reply"


#: A daemon whose checkpoint writer stops at a given point (and signals it through a flag file) so that the test
#: can kill it there: "save" before anything is written; "rename" with the new file written, before its rename.
#: Each call's work after the reply, when it ends, adds a byte to ``<flag>.done``. The modules as the test's process
#: found them are its own (``cachefile._SEEN``, as in test_fold_checkpoint's racers): a tree changing while the
#: suite runs would otherwise make the test ignore the daemon's checkpoint as another code's.
DAEMON = """
import json, os, sys, time
from tether.guard import cachefile
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.hooks import session as hs
from tether.hooks.daemon import serve

sock, stop_at, flag = sys.argv[1:4]
guard_log.EVERY = guard_log.RESIDENT_EVERY = int(sys.argv[4])
cachefile._SEEN.update((k, tuple(v)) for k, v in json.loads(sys.argv[5]).items())
real_save, real_replace, real_later, saves = ck.save, os.replace, hs.checkpoint_later, []


def later(*args):
    real_later(*args)
    with open(flag + ".done", "ab") as f:
        f.write(b".")


def hold(point):
    with open(flag, "w") as f:
        f.write(point)
    time.sleep(600)


def save(guard, folder):
    saves.append(1)
    if stop_at == "save":
        hold("save")
    return real_save(guard, folder)


def replace(src, dst, **at):  # at: the folder's descriptor (cachefile.write_own renames inside it)
    if str(dst).endswith(".ckpt") and stop_at == "rename" and len(saves) >= 2:
        hold("rename")
    return real_replace(src, dst, **at)


ck.save, os.replace, hs.checkpoint_later = save, replace, later
sys.exit(serve(sock, idle_s=120))
"""


@pytest.mark.slow
@pytest.mark.parametrize("stop_at", ["save", "rename"])
def test_a_daemon_killed_after_the_reply_leaves_a_valid_log_and_no_torn_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_every: None, stop_at: str
) -> None:
    sock, flag = tmp_path / "d" / "hookd.sock", tmp_path / "held"
    done = tmp_path / "held.done"  # one byte per call whose work after the reply has ended
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    seen = json.dumps({k: v for k, v in code_stamps._SEEN.items() if v is not None})
    cmd = [sys.executable, "-c", DAEMON, str(sock), stop_at, str(flag), str(EVERY), seen]
    daemon = subprocess.Popen(cmd, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    project = tmp_path / "p"
    project.mkdir()
    answered = 0
    try:
        wait_for(sock)
        while not flag.exists():
            assert answered < 60, "the writer never came to the point to stop at"
            assert call(project, "s1", answered) == "allow"
            answered += 1
            # the next call only once this one's writer ended or is held: a call sent while a writer holds the
            # session's lock would wait for it, however long the writer takes
            deadline = time.monotonic() + 120  # only against a hang: the daemon always comes to one of the two
            while not flag.exists() and (done.stat().st_size if done.exists() else 0) < answered:
                assert time.monotonic() < deadline, "the call's work after the reply neither ended nor was held"
                time.sleep(0.01)
        os.kill(daemon.pid, signal.SIGKILL)  # the crossing call has its reply; its checkpoint is not in place
        assert daemon.wait(timeout=30) == -signal.SIGKILL
    finally:
        if daemon.poll() is None:
            daemon.kill()
    run_id = run_id_for("claude-code", "s1")
    with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)
        decided = [e.payload["call_id"] for e in store.events(run_id) if e.kind == "action.decided"]
    assert decided == [f"t{i}" for i in range(answered)], "every answered call is in the log, in order"
    files = checkpoints(project)
    folds = project / ".tether" / "tether.db.folds"
    if stop_at == "save":
        assert files == [], "killed before anything was written: no checkpoint"
    else:
        assert len(files) == 1, "killed before the rename: the previous checkpoint, whole"
        assert list(folds.glob(".ckpt-*")), "the new one was written under a temporary name only"
    cold()
    restored = spy_on_restores(monkeypatch)
    sock.unlink(missing_ok=True)  # the dead daemon's socket: this process answers in-process
    assert in_process(project, "ls after the crash") == "allow"
    assert restored == ([True] if stop_at == "rename" else []), "the old checkpoint is still used; none is read"
    with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
        store.verify_run(run_id)


def test_the_daemons_checkpoints_name_the_code_it_started_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_every: None
) -> None:
    """The tree changes on disk while the daemon runs (a `git pull` of modules the protocol's stamp does not cover):
    its checkpoints still name the modules as it found them at its start (``cachefile.first_seen``), which a cold
    process of the new code ignores."""
    monkeypatch.setattr(code_stamps, "_STAMP", [])  # a process that has not stamped yet
    monkeypatch.setattr(code_stamps, "_SEEN", {})  # nor seen a module
    monkeypatch.setattr(code_stamps, "code_stamp_now", lambda: "the code the daemon started with")
    real_stat, pulled = code_stamps._stat, []

    def stat(path: str) -> tuple[int, int] | None:  # once pulled: every module of tether a byte larger on disk
        found = real_stat(path)
        return (found[0] + 1, found[1]) if pulled and found and path.endswith(".py") else found

    monkeypatch.setattr(code_stamps, "_stat", stat)
    done = after_reply(monkeypatch)
    with daemon_thread(tmp_path, monkeypatch) as project:
        assert call(project, "s1", 0) == "allow"  # served once the daemon's start is over
        done.get(timeout=60)
        pulled.append(True)
        for i in range(1, 20):
            assert call(project, "s1", i) == "allow"
            done.get(timeout=60)
            if checkpoints(project):
                break
    [path] = checkpoints(project)
    code = json.loads(path.read_bytes()[len(ck.MAGIC) :].partition(b"\n")[0])["code"]
    root = Path(ck.__file__).parents[1]
    assert "tether.guard.checkpoint" in code["modules"] and "tether.hooks.daemon" in code["modules"]
    assert all([size, mtime] == list(real_stat(str(root / rel)) or ()) for rel, size, mtime in code["modules"].values())
    monkeypatch.setattr(code_stamps, "_SEEN", {})  # a cold process of the code on disk now
    assert not code_stamps.runs_code(code)


def test_the_daemon_writes_at_its_own_interval_and_a_cold_call_at_the_cold_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, small_every: None
) -> None:
    """The daemon keeps the folded state: it writes a checkpoint every ``RESIDENT_EVERY`` events (each write holds the
    session's lock after a reply, which the session's next call waits for), a cold call every ``EVERY``."""
    monkeypatch.setattr(guard_log, "RESIDENT_EVERY", 10**6)
    signals = after_reply(monkeypatch)
    with daemon_thread(tmp_path, monkeypatch) as project:
        for i in range(6):  # ~18 events: past EVERY (8) twice, far from RESIDENT_EVERY
            assert call(project, "s1", i) == "allow"
            assert signals.get(timeout=30) == "done"
        assert checkpoints(project) == []
        cold()
        assert in_process(project, "ls after") == "allow"
        assert len(checkpoints(project)) == 1, "the cold call wrote the checkpoint due at EVERY"
