"""A session gone quiet gets its checkpoint while the daemon runs: ``QUIET_S`` without a call of it, with
``guard.log.EVERY`` events or more folded since its last checkpoint, the daemon writes one at its head between calls
(``hooks/session.py`` ``checkpoint_quiet``), so a cold call while it runs (one it declined, the first after it was
killed) folds none of the log, where it folded up to ``RESIDENT_EVERY`` events. A session under ``EVERY`` gets none, a
session with a call in flight is passed over without waiting for it, its next call waits for a write under way, another
session's call does not (the writes run in a thread of their own), one another process wrote to since is left as it
is, and the daemon still idles out. In this process on a test's socket, and as a ``tether daemon`` process at the real
interval."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_checkpoint_after_reply import EVERY, call, checkpoints, cold, in_process, spy_on_restores
from test_daemon_exit_checkpoint import (
    answered,
    checkpoint_seq,
    daemon,
    daemon_process,
    head_of,
    project_in,
    spy_on_tails,
)

import tether.hooks.session as hook_session
from tether.events.store import EventStore
from tether.guard import log as guard_log
from tether.hooks.session import run_id_for

QUIET = 0.3


@pytest.fixture
def quiet(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A checkpoint due every ``EVERY`` events, written by the daemon only once a session is ``QUIET`` seconds
    without a call."""
    monkeypatch.setattr(guard_log, "EVERY", EVERY)
    monkeypatch.setattr(guard_log, "RESIDENT_EVERY", 10**6)
    monkeypatch.setattr(hook_session, "QUIET_S", QUIET)
    cold()
    yield
    cold()


def written_within(project: Path, seconds: float) -> list[Path]:
    deadline = time.monotonic() + seconds
    while not (found := checkpoints(project)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_a_quiet_session_gets_its_checkpoint_at_its_head_while_the_daemon_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    """Past ``EVERY`` events and quiet: the daemon, still running, writes the session's checkpoint at its head; a cold
    call restores from it and folds nothing but its own event; and the daemon, asked nothing more, idles out."""
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch, idle_s=4.0) as thread:
        answered(project, "s1", 6, monkeypatch)  # ~18 events: past EVERY twice
        [written] = written_within(project, 30)
        assert thread.is_alive(), "written while the daemon runs, not at its end"
        assert checkpoint_seq(written) == head_of(project, "s1")
        kept = dict(hook_session._CACHE)
        cold()  # another process's call, cold, while the daemon runs
        restored, tails = spy_on_restores(monkeypatch), spy_on_tails(monkeypatch)
        assert in_process(project, "ls cold") == "allow"
        assert restored == [True]
        assert tails == [1], "the log read from the checkpoint's head on is that one event: nothing to fold"
        hook_session._CACHE.update(kept)
        thread.join(timeout=60)
        assert not thread.is_alive(), "idle, it ended itself"


def test_a_session_under_every_gets_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None) -> None:
    """One call (three events): nothing for a cold call to fold that a checkpoint would spare it; none waits."""
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 1, monkeypatch)
        time.sleep(QUIET * 5)
        assert checkpoints(project) == []
        assert hook_session._QUIET == {} and hook_session.quiet_due() is None


def test_a_session_with_a_call_in_flight_is_passed_over_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    """The session's lock is held (a call of it in flight): the quiet pass does not wait for it and writes nothing;
    the session waits for its next call's own filing."""
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)  # the daemon's own pass never comes: this test asks itself
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        [lock] = hook_session._QUIET
        with lock:
            asked = threading.Thread(target=hook_session.checkpoint_quiet, args=(0.0,), daemon=True)
            asked.start()
            asked.join(timeout=10)
            assert not asked.is_alive(), "it waited for the call in flight"
        assert checkpoints(project) == []
        answered(project, "s1", 1, monkeypatch)  # the next call files it again
        hook_session.checkpoint_quiet(0.0)
        [written] = checkpoints(project)
        assert checkpoint_seq(written) == head_of(project, "s1")


def test_a_call_that_comes_during_the_quiet_write_waits_for_it_and_is_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    """The session's next call arrives while the quiet pass writes its checkpoint (under the session's lock): it waits
    for the write, then is answered as ever, its events after the checkpoint's head, the log's chain intact."""
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)  # this test runs the pass itself, held mid-write
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        writing, go = threading.Event(), threading.Event()
        real_checkpoint = hook_session.checkpoint

        def held(*args: Any, **kwargs: Any) -> None:
            writing.set()
            go.wait(30)
            real_checkpoint(*args, **kwargs)

        monkeypatch.setattr(hook_session, "checkpoint", held)
        writer = threading.Thread(target=hook_session.checkpoint_quiet, args=(0.0,), daemon=True)
        writer.start()
        assert writing.wait(30)
        got: list[str] = []
        caller = threading.Thread(target=lambda: got.append(call(project, "s1", 99)), daemon=True)
        caller.start()
        caller.join(timeout=QUIET * 3)
        assert caller.is_alive() and got == [], "it waits for the write that holds the session"
        go.set()
        writer.join(timeout=30)
        caller.join(timeout=60)
        assert got == ["allow"]
        [written] = checkpoints(project)
        assert checkpoint_seq(written) < head_of(project, "s1"), "the call's events came after the checkpoint's head"
        with EventStore.open(project / ".tether" / "tether.db", readonly=True) as store:
            audit = store.verify_run(run_id_for("claude-code", "s1"))  # raises LogCorrupt on a broken chain
        assert audit.events == head_of(project, "s1") + 1


def test_another_sessions_call_is_answered_while_the_daemon_writes_a_quiet_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    """The daemon writes quiet sessions' checkpoints in a thread of their own: while it writes one (held mid-write
    here), a call of another session is accepted and answered, not queued behind the write in the accept loop; and
    a stop waits for the write, as for a call."""
    first, second = project_in(tmp_path, "first"), project_in(tmp_path, "second")
    writing, go = threading.Event(), threading.Event()
    real_checkpoint = hook_session.checkpoint

    def held(settings: Any, data: dict[str, Any], guard: Any, every: int | None = None) -> None:
        if every is None and data.get("session_id") == "s1":  # the quiet pass's write of the first session
            writing.set()
            go.wait(30)
        real_checkpoint(settings, data, guard, every)

    monkeypatch.setattr(hook_session, "checkpoint", held)
    with daemon(tmp_path, monkeypatch):
        answered(first, "s1", 6, monkeypatch)
        assert writing.wait(30), "the first session, quiet, is being written"
        got: list[str] = []
        caller = threading.Thread(target=lambda: got.append(call(second, "s2", 0)), daemon=True)
        caller.start()
        caller.join(timeout=30)
        assert got == ["allow"], "answered while the quiet write goes on"
        go.set()
    [written] = checkpoints(first)
    assert checkpoint_seq(written) == head_of(first, "s1")


def test_a_session_another_process_wrote_to_since_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None
) -> None:
    """A cold call (one the daemon declined) wrote the session's checkpoint at its head: the daemon's state is behind
    the log, and its checkpoint would replace the newer one. The quiet pass leaves it."""
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        kept = dict(hook_session._CACHE)
        cold()
        assert in_process(project, "ls from another process") == "allow"
        [newer] = checkpoints(project)
        stamp = newer.stat().st_mtime_ns
        hook_session._CACHE.update(kept)
        hook_session.checkpoint_quiet(0.0)
        assert checkpoints(project) == [newer] and newer.stat().st_mtime_ns == stamp, "not written again"
        assert checkpoint_seq(newer) == head_of(project, "s1")


def test_the_next_session_due_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quiet: None) -> None:
    """A session not yet quiet is left for later, and quiet_due says how long until it is (none or less: now)."""
    monkeypatch.setattr(hook_session, "QUIET_S", 10**6)
    project = project_in(tmp_path)
    with daemon(tmp_path, monkeypatch):
        answered(project, "s1", 6, monkeypatch)
        hook_session.checkpoint_quiet(30.0)
        assert checkpoints(project) == [], "not quiet for 30 s yet"
        due = hook_session.quiet_due(30.0)
        assert due is not None and 25.0 < due <= 30.0
        assert hook_session.quiet_due(0.0) is not None and hook_session.quiet_due(0.0) <= 0


def test_a_tether_daemon_process_writes_it_once_the_session_is_quiet(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``tether daemon`` at the real interval (``QUIET_S``): 25 calls back to back write nothing; quiet, the session's
    checkpoint is at its head while the daemon runs on."""
    with daemon_process(tmp_path, monkeypatch, "600") as process:
        [written] = written_within(tmp_path / "p", 60)
        assert process.poll() is None, "the daemon runs on"
        assert checkpoint_seq(written) == head_of(tmp_path / "p", "s1") >= guard_log.EVERY
