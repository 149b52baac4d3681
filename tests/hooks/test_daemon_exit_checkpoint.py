"""The daemon's last checkpoints: when it ends (idle, told to stop, or on SIGTERM) still running the code on disk, each
session it answered with ``guard.log.EVERY`` events or more folded since its last checkpoint gets one at its head, so
the cold call after it (the first after it idled out) folds none of the log; a session under that gets none, a daemon
giving way to other code writes none, a session another process wrote to since is left as it is, and a session whose
checkpoint cannot be written keeps no other from its own. In this process on a test's socket, and as ``tether daemon``
processes at the real intervals."""

from __future__ import annotations

import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hookkit import TETHER, wait_for
from test_checkpoint_after_reply import EVERY, after_reply, call, checkpoints, cold, in_process, spy_on_restores

import tether.hooks.daemon as daemon_module
import tether.hooks.session as hook_session
from tether.events.store import EventStore
from tether.guard import cachefile
from tether.guard import checkpoint as ck
from tether.guard import log as guard_log
from tether.hooks.daemon import serve, stop_daemon
from tether.hooks.session import run_id_for


@pytest.fixture
def resident(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A checkpoint due every ``EVERY`` events for a cold call, never while the daemon runs."""
    monkeypatch.setattr(guard_log, "EVERY", EVERY)
    monkeypatch.setattr(guard_log, "RESIDENT_EVERY", 10**6)
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)  # nor once a session is quiet: test_daemon_quiet_checkpoint
    cold()
    yield
    cold()


@contextmanager
def daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle_s: float = 60.0) -> Iterator[threading.Thread]:
    """A daemon serving in this process on a socket of the test's; stopped at the end if it has not ended itself."""
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    thread = threading.Thread(target=serve, args=(str(sock),), kwargs={"idle_s": idle_s}, daemon=True)
    thread.start()
    wait_for(sock)
    try:
        yield thread
    finally:
        if thread.is_alive():
            stop_daemon(str(sock))
        thread.join(timeout=60)
        assert not thread.is_alive(), "the daemon did not end"


def answered(project: Path, session: str, calls: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``calls`` PreToolUses of ``session`` through the daemon, each call's work after its reply waited for."""
    done = after_reply(monkeypatch)
    for i in range(calls):
        assert call(project, session, i) == "allow"
        assert done.get(timeout=60) == "done"


def head_of(project: Path, session: str) -> int:
    with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
        return store.events(run_id_for("claude-code", session))[-1].seq


def checkpoint_seq(path: Path) -> int:
    found = cachefile.parts(path.read_bytes(), ck.MAGIC, ck.MAX_BYTES)
    assert found is not None
    return int(found[0]["seq"])


def spy_on_tails(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many events of the log each restore from a checkpoint read from its head on (-1: it restored nothing)."""
    tails: list[int] = []
    real_restore = ck._restore

    def restore(*args: Any) -> Any:
        got = real_restore(*args)
        tails.append(len(got[-1]) if got is not None else -1)
        return got

    monkeypatch.setattr(ck, "_restore", restore)
    return tails


def project_in(tmp_path: Path, name: str = "p") -> Path:
    project = tmp_path / name
    project.mkdir()
    return project


def test_a_daemon_that_idles_out_leaves_each_session_a_checkpoint_at_its_head(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """Idle, the daemon ends: the session it answered (past ``EVERY`` events, none written while it answered) gets
    its checkpoint at its head, and a cold call restores from it with no event of the log to fold but its own."""
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch, idle_s=3.0) as thread:
        answered(project, "s1", 6, monkeypatch)  # ~18 events: past EVERY twice
        assert checkpoints(project) == [], "the daemon writes none at its own interval (RESIDENT_EVERY)"
        thread.join(timeout=60)  # idle: it ends itself
    [written] = checkpoints(project)
    assert checkpoint_seq(written) == head_of(project, "s1")
    cold()
    restored, tails = spy_on_restores(monkeypatch), spy_on_tails(monkeypatch)
    assert in_process(project, "ls after") == "allow"
    assert restored == [True]
    assert tails == [1], "the log read from the checkpoint's head on is that one event: nothing to fold"


def test_a_daemon_told_to_stop_writes_them_too_and_not_for_a_session_under_every(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """Told to stop: the session past ``EVERY`` events gets one, the one under it (a single call) none."""
    long, short = project_in(tmp_path, "long"), project_in(tmp_path, "short")
    with daemon(tmp_path, monkeypatch):
        answered(long, "s1", 6, monkeypatch)
        answered(short, "s2", 1, monkeypatch)
    [written] = checkpoints(long)
    assert checkpoint_seq(written) == head_of(long, "s1")
    assert checkpoints(short) == []


def test_a_daemon_giving_way_to_other_code_writes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """The code on disk is no longer the daemon's (an upgrade, an edit): what it would write, the code on disk would
    not read (``cachefile.runs_code``), so it writes nothing at its end."""
    project = project_in(tmp_path)
    moved = threading.Event()
    real_current = daemon_module.Code.current

    def current(self: daemon_module.Code, stamp: str | None = None) -> bool:
        return not moved.is_set() and real_current(self, stamp)

    monkeypatch.setattr(daemon_module.Code, "current", current)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        moved.set()
    assert checkpoints(project) == []


def test_a_session_whose_checkpoint_cannot_be_written_keeps_no_other_from_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """One session's folder of checkpoints is a file now (nothing can be written there): the other session still gets
    its checkpoint, and the daemon ends as ever."""
    broken, fine = project_in(tmp_path, "broken"), project_in(tmp_path, "fine")
    with daemon(tmp_path, monkeypatch):
        answered(broken, "s1", 6, monkeypatch)
        answered(fine, "s2", 6, monkeypatch)
        folds = broken / ".tether" / "tether.db.folds"
        for child in folds.iterdir():
            child.unlink()
        folds.rmdir()
        folds.write_text("not a folder")
    assert checkpoints(broken) == []
    [written] = checkpoints(fine)
    assert checkpoint_seq(written) == head_of(fine, "s2")


def test_a_session_another_process_wrote_to_since_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """Once the daemon's socket is gone the next call is cold, in a process of its own, and may write the session's
    checkpoint at its head before the daemon's end reaches it: the daemon's state is behind the log then, and its
    checkpoint would replace the newer one. It leaves the session as it is."""
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        kept = dict(hook_session._CACHE)
        cold()  # what follows is another process's: a guard opened from the log, its checkpoint written at its head
        assert in_process(project, "ls from another process") == "allow"
        [newer] = checkpoints(project)
        assert checkpoint_seq(newer) == head_of(project, "s1")
        hook_session._CACHE.update(kept)  # the daemon's own, as it held them
    [written] = checkpoints(project)
    assert checkpoint_seq(written) == head_of(project, "s1"), "the daemon's older state did not replace it"


def test_no_guard_is_held_for_the_end_that_the_cache_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resident: None
) -> None:
    """The sessions kept for the end hold their guards, and of each latest call only where it came from: cleared with
    the cache (full, or released), so a daemon of many projects holds no guard twice over, nor any call's input."""
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 1, monkeypatch)
        [(_, where, _)] = hook_session._ANSWERED.values()
        assert set(where) == {"session_id", "cwd"}, "where the session is, not the call's input (a Write's: 8 MiB)"
        for i in range(hook_session._CACHE_MAX):
            hook_session.cached(("test-filler", i), object)
        assert hook_session._ANSWERED == {}, "cleared with the full cache"
        answered(project, "s1", 1, monkeypatch)
        assert len(hook_session._ANSWERED) == 1
        hook_session.release()
        assert hook_session._ANSWERED == {}, "cleared with the released cache"


@contextmanager
def daemon_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, idle: str) -> Iterator[subprocess.Popen[bytes]]:
    """``tether daemon`` as a process of its own (the real intervals), on a socket of the test's, after 25 calls of
    session s1 in project ``p``: past 64 events (every call three or four), under 256, so none written while it
    answers. Killed at the end if it has not ended."""
    sock = tmp_path / "d" / "hookd.sock"
    sock.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(sock))
    project = project_in(tmp_path)
    cold()
    daemon = subprocess.Popen([*TETHER, "daemon", "--socket", str(sock), "--idle", idle])
    try:
        wait_for(sock)
        for i in range(25):
            assert call(project, "s1", i) == "allow"
        assert checkpoints(project) == [], "under RESIDENT_EVERY: none while it answers"
        yield daemon
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()


def test_a_tether_daemon_process_that_idles_out_leaves_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Idle for three seconds (far longer than a pause between two of its calls), ``tether daemon`` exits 0 and the
    session's checkpoint is at the log's head."""
    with daemon_process(tmp_path, monkeypatch, "3") as daemon:
        assert daemon.wait(timeout=60) == 0
    [written] = checkpoints(tmp_path / "p")
    assert checkpoint_seq(written) == head_of(tmp_path / "p", "s1") >= guard_log.EVERY


def test_sigterm_ends_a_tether_daemon_as_a_stop_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGTERM (a logout, a service manager) is a stop: the daemon exits 0 and leaves the checkpoint, where the
    signal's default killed it with both undone."""
    with daemon_process(tmp_path, monkeypatch, "600") as daemon:
        daemon.send_signal(signal.SIGTERM)
        assert daemon.wait(timeout=60) == 0
    [written] = checkpoints(tmp_path / "p")
    assert checkpoint_seq(written) == head_of(tmp_path / "p", "s1")
    assert not (tmp_path / "d" / "hookd.sock").exists(), "its socket removed, as at any end"


def test_waking_the_accept_loop_never_waits_on_a_full_backlog(tmp_path: Path) -> None:
    """SIGTERM's handler wakes the accept loop by connecting to the daemon's socket, on the loop's own thread: with the
    socket's backlog full, a blocking connect would wait for that loop to accept, for good. It returns at once."""
    path = str(tmp_path / "s.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    held = []
    try:
        while True:  # fill the backlog: connections nobody accepts
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            held.append(c)
            c.connect(path)
    except BlockingIOError:
        pass
    try:
        woke = threading.Thread(target=daemon_module._wake, args=(path,), daemon=True)
        woke.start()
        woke.join(timeout=10)
        assert not woke.is_alive(), "the wake waited on the full backlog"
    finally:
        for c in held:
            c.close()
        server.close()
