"""The store's write transaction is one object (``events/store._Transaction``), not two nested generator context
managers: these tests hold it to what those did at every way out — the rows written or none, the transaction
closed, the anchors dropped on a rollback, a full disk named, and both locks (the thread's and the writer lock
file's) released whatever happened, so the next writer is never blocked by a failed one."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from test_batch_advance import rows, staged

from tether.errors import DatabaseLocked, DiskFull, InputError
from tether.events.store import EventStore

STARTED = ("run.started", {"task": "t", "budgets": {"turns": 10}})


class Failing:
    """The store's connection, raising ``error`` when asked to run a statement starting with ``sql``."""

    def __init__(self, conn: sqlite3.Connection, sql: str, error: BaseException) -> None:
        self._conn, self._sql, self._error = conn, sql, error
        self.seen: list[str] = []

    def execute(self, sql: str, *args: Any) -> Any:
        self.seen.append(sql.split()[0].upper())
        if sql.lstrip().upper().startswith(self._sql):
            raise self._error
        return self._conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


def op_error(message: str, code: int) -> sqlite3.OperationalError:
    """An ``OperationalError`` as SQLite raises it (its error code set: the store reads it)."""
    e = sqlite3.OperationalError(message)
    e.sqlite_errorcode = code
    return e


def assert_released(store: EventStore) -> None:
    """No transaction open, the writer lock file free for another descriptor, the thread lock for another thread."""
    assert not store._conn.in_transaction
    fd = os.open(str(store.path) + ".lock", os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if still held
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
    took: list[bool] = []

    def other() -> None:
        got = store._thread_lock.acquire(blocking=False)
        took.append(got)
        if got:
            store._thread_lock.release()

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert took == [True]


@pytest.fixture
def store(tmp_path: Path) -> EventStore:
    return EventStore.open(tmp_path / "t.db")


def test_a_commit_writes_and_releases(store: EventStore) -> None:
    run = store.create_run("t", [STARTED])
    store.append_batch(staged(store, run, 1))
    assert rows(store.path) == 2
    assert_released(store)


@pytest.mark.parametrize(
    "error", [ValueError("body"), KeyboardInterrupt(), op_error("database is locked", sqlite3.SQLITE_BUSY)]
)
def test_a_body_that_raises_rolls_back_and_releases(store: EventStore, error: BaseException) -> None:
    run = store.create_run("t", [STARTED])
    store._pending_anchor.append(object())  # type: ignore[arg-type]
    with pytest.raises(type(error)) as raised, store._transaction() as conn:
        conn.execute("UPDATE runs SET head_seq=99 WHERE run_id=?", (run,))
        raise error
    assert raised.value is error
    assert store._pending_anchor == []
    assert store.head(run)[0] == 0 and rows(store.path) == 1
    assert_released(store)


def test_a_full_disk_in_the_body_is_named(store: EventStore) -> None:
    run = store.create_run("t", [STARTED])
    with pytest.raises(DiskFull, match="disk full") as raised, store._transaction() as conn:
        conn.execute("UPDATE runs SET head_seq=99 WHERE run_id=?", (run,))
        raise op_error("database or disk is full", sqlite3.SQLITE_FULL)
    assert isinstance(raised.value.__cause__, sqlite3.OperationalError)
    assert store.head(run)[0] == 0
    assert_released(store)


@pytest.mark.parametrize(
    ("sql", "error", "expected"),
    [
        ("COMMIT", op_error("database or disk is full", sqlite3.SQLITE_FULL), DiskFull),
        ("COMMIT", op_error("disk I/O error", sqlite3.SQLITE_IOERR), sqlite3.OperationalError),
        ("COMMIT", KeyboardInterrupt(), KeyboardInterrupt),
        ("BEGIN", op_error("database or disk is full", sqlite3.SQLITE_FULL), DiskFull),
        ("BEGIN", RuntimeError("begin"), RuntimeError),
        ("PRAGMA", op_error("database or disk is full", sqlite3.SQLITE_FULL), DiskFull),
    ],
)
def test_a_statement_of_the_transaction_that_fails(
    store: EventStore, sql: str, error: BaseException, expected: type[BaseException]
) -> None:
    """A failed COMMIT rolls back (nothing of the batch written); a failed BEGIN or synchronous switch leaves no
    transaction; each releases both locks, and the next append goes through."""
    run = store.create_run("t", [STARTED])
    real = store._conn
    store._sync_mode = None  # so that the switch runs
    store._conn = Failing(real, sql, error)  # type: ignore[assignment]
    with pytest.raises(expected):
        store.append_batch(staged(store, run, 1))
    if sql == "COMMIT":
        assert "ROLLBACK" in store._conn.seen  # type: ignore[attr-defined]
    store._conn = real
    assert_released(store)
    assert rows(store.path) == 1 and store.head(run)[0] == 0
    store.append_batch(staged(store, run, 1))
    assert rows(store.path) == 2


def test_a_read_only_store_refuses_before_any_lock(store: EventStore) -> None:
    store.create_run("t", [STARTED])
    store.close()
    ro = EventStore.open(store.path, readonly=True)
    with pytest.raises(InputError, match="read-only"), ro._transaction():
        pass
    assert ro._lock_fd is None
    assert ro._thread_lock.acquire(blocking=False)
    ro._thread_lock.release()


def test_a_writer_lock_held_elsewhere_times_out_and_releases_the_thread_lock(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db", lock_timeout_s=0.05)
    run = store.create_run("t", [STARTED])
    fd = os.open(str(store.path) + ".lock", os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        with pytest.raises(DatabaseLocked):
            store.append_batch(staged(store, run, 1))
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
    assert_released(store)
    store.append_batch(staged(store, run, 1))
    assert rows(store.path) == 2


def test_an_anchor_write_that_fails_after_the_commit_releases(store: EventStore) -> None:
    """The anchor file is written after the COMMIT, under the lock: its failure is raised, the rows stay."""
    run = store.create_run("t", [STARTED])

    def broken() -> None:
        raise OSError("anchor file")

    store._flush_anchor = broken  # type: ignore[method-assign]
    with pytest.raises(OSError, match="anchor file"):
        store.append_batch(staged(store, run, 1))
    assert rows(store.path) == 2
    assert_released(store)


def test_threads_appending_at_once_each_commit_whole(store: EventStore) -> None:
    runs = [store.create_run(f"t{i}", [STARTED]) for i in range(4)]
    errors: list[BaseException] = []

    def work(run: str) -> None:
        try:
            for _ in range(25):
                store.append_batch(staged(store, run, 1))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=work, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert rows(store.path) == 4 + 4 * 25
    assert all(store.head(r)[0] == 25 for r in runs)
    assert_released(store)
