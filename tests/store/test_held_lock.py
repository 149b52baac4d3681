"""A writer paused while it holds a run's lock (SIGSTOP, a debugger, a hung hook) bounds every other writer's wait,
on both stores: the other writer fails with :class:`DatabaseLocked` once the store's ``lock_timeout_s`` has passed,
having written nothing, and the paused one, resumed, still writes.

SQLite's writers wait on the file's writer lock (``<db>.lock``, polled up to ``lock_timeout_s``); PostgreSQL's on
the run's advisory lock, which had no bound: a paused holder blocked every other writer of its run until it was
killed. The holder is a real process that stops itself while holding the lock: inside ``exclusive()``, or inside
an append's transaction with its event inserted and not committed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from pgkit import Postgres

from tether.errors import DatabaseLocked
from tether.events import Store, open_store

BOUND_S = 0.5
HANG_S = 60.0  # far past the bound: a wait this long is the hang, not a slow machine
STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})
HOLDER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from tether.events import open_store
    db, run, mode, local = sys.argv[1], sys.argv[2], sys.argv[3], Path(sys.argv[4])

    def stop() -> None:
        print("held", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)

    with open_store(db, create=False, local=local) as store:
        if mode == "exclusive":
            with store.exclusive(run):
                stop()
                store.append(run, "model.requested", {"turn": 1, "model": "x"})
        else:  # stopped inside an append's transaction: its event inserted, not committed
            append_locked = store._append_locked

            def stopping(*args, **kwargs):
                events = append_locked(*args, **kwargs)
                stop()
                return events

            store._append_locked = stopping
            store.append(run, "model.requested", {"turn": 1, "model": "x"})
    print("appended", flush=True)
    """
)

Opener = Callable[[float], Store]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Opener]:
    """The store's location and how to open it with a lock timeout."""
    if request.param == "sqlite":
        where = str(tmp_path / "tether.db")
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        where = postgres.tether_store()
    return where, lambda bound: open_store(where, local=tmp_path, lock_timeout_s=bound)


def _stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0] == "T"


def _bounded(attempt: Callable[[], object]) -> tuple[BaseException | None, float]:
    """What ``attempt`` raised and how long it took, run in a thread: a wait past HANG_S fails the test (no hang)."""
    raised: list[BaseException | None] = [None]

    def run() -> None:
        try:
            attempt()
        except BaseException as e:  # handed to the test
            raised[0] = e

    thread = threading.Thread(target=run, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(HANG_S)
    assert not thread.is_alive(), f"still waiting for the paused holder's lock after {HANG_S:g}s"
    return raised[0], time.monotonic() - start


def _exclusive(store: Store, run: str) -> None:
    with store.exclusive(run):
        pass


@pytest.mark.parametrize("mode", ["exclusive", "transaction"])
def test_a_paused_lock_holder_bounds_the_other_writers_wait(
    opener: tuple[str, Opener], mode: str, tmp_path: Path
) -> None:
    where, open_with = opener
    store = open_with(BOUND_S)
    run = store.create_run("t", [STARTED])
    head = store.head(run)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, where, run, mode, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        while not _stopped(holder.pid):
            time.sleep(0.01)
        other = open_with(BOUND_S)
        for attempt in (
            lambda: other.append(run, "model.requested", {"turn": 1, "model": "y"}),
            lambda: _exclusive(other, run),
            lambda: other.create_run("t2", [STARTED], run_id=run),  # the run's id: its lock, then RunExists
            lambda: other.acquire(run),
        ):
            raised, took = _bounded(attempt)
            assert isinstance(raised, DatabaseLocked), raised
            assert "another tether process has held" in str(raised)
            assert took >= BOUND_S * 0.8  # it waited for the holder, and then gave up
        assert store.head(run) == head  # nothing of the refused writes, nor of the holder's open transaction
        assert store.verify(run) == 1
        os.kill(holder.pid, signal.SIGCONT)
        out, _ = holder.communicate(timeout=HANG_S)
        assert holder.returncode == 0 and out.strip() == "appended"
    finally:
        holder.kill()
        holder.wait()
    assert store.verify(run) == 2  # the paused writer, resumed, wrote its event
    last = store.events(run)[-1]
    assert (last.kind, last.payload["model"]) == ("model.requested", "x")
    other.append(run, "model.requested", {"turn": 2, "model": "y"})  # and the lock is free again
    assert store.verify(run) == 3
    other.close()
    store.close()


def test_the_bound_of_an_open_store_can_be_changed(opener: tuple[str, Opener], tmp_path: Path) -> None:
    """``lock_timeout_s`` set on an open store (``tether scheduler --lock-timeout``) bounds its next wait, on both
    stores: a PostgreSQL store ignored it, and its writes waited for as long as the holder held."""
    where, open_with = opener
    store = open_with(60.0)
    run = store.create_run("t", [STARTED])
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, where, run, "exclusive", str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        store.lock_timeout_s = BOUND_S
        assert store.lock_timeout_s == BOUND_S
        raised, took = _bounded(lambda: store.append(run, "model.requested", {"turn": 1, "model": "y"}))
        assert isinstance(raised, DatabaseLocked) and f"{BOUND_S:g}s" in str(raised), raised
        assert took < HANG_S / 2  # the new bound, not the 60 s the store was opened with
    finally:
        holder.kill()
        holder.wait()
    store.close()
