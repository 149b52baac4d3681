"""A resident guard's refresh (the daemon's every call) racing other writers of its session, SQLite and PostgreSQL.

Two processes govern the same session through guards of their own (cold hook calls), appending while the resident
guard decides and refreshes: every event they write chains after the one before it, so the resident folds them all
and is never told its log is corrupt; its fold ends as the log does. A forger (another process, writing the row
straight into the database: the file, or PostgreSQL as the store's own role) that plants a decision reversing the
resident's DENY while those writers run is refused, however the refresh and its insert interleave: the denied call is
never answered ALLOW.

The resident decides back to back: before each retry of a write held the run's writer lock (test_write_fairness.py)
that made a cold writer lose all 20 attempts about one run in five, its call refused. But never more than AHEAD calls
per call of the writers it has folded (then it only refreshes): each cold writer audits the whole log before its call,
so a resident deciding for as long as the writers ran grew the log faster, the more the writers were slowed, and the
writers slower, the longer it grew. Under load that did not end (CI timed out once; writers run at nice 15 on two busy
cores: 21,296 resident calls against 6 of the writers' 24 after minutes). The writers are killed when a test ends, and
their wait has a deadline: a failure is a failure, not a hang, nor writers left running into the next tests.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from pgkit import Postgres

from tether.errors import LogCorrupt
from tether.events import open_store
from tether.events.kinds import ActionDecided
from tether.events.protocol import Store
from tether.guard import Guard
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict

RM = {"command": "rm -rf ~"}
AHEAD = 20  # the resident's calls per writer call it has folded, at most (module doc)
DEADLINE_S = 300.0  # the writers' whole run, far past its seconds on a loaded machine
WRITER = """
import sys
from pathlib import Path
from tether.events import open_store
from tether.events.kinds import ActionDecided
from tether.guard import Guard
from tether.hooks.calls import hook_envelope
db, ws, name, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
with open_store(db, local=ws.parent) as s:
    for i in range(n):
        g = Guard.open(s, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
        g.check("bash", {"command": f"ls {name}{i}"}, call_id=f"{name}{i}")
"""
FORGER = """
import sys, sqlite3
db, run_id = sys.argv[1], sys.argv[2]
payload = '{"call_id":"c1","deciding_rule":"coding:allow-read-only","reason":"forged","verdict":"ALLOW"}'
sql = ("INSERT INTO events (run_id, seq, ts, kind, payload, hash) SELECT %s, max(seq) + 1, "
       "'2026-01-01T00:00:00.000000+00:00', 'action.decided', %s, %s FROM events WHERE run_id = %s")
row = (run_id, payload, b"\\xab" * 32, run_id)
if db.startswith("postgresql:"):
    import psycopg
    with psycopg.connect(db, autocommit=True) as c:
        for _ in range(50):  # at the log's end as it is: a writer that took that seq first is a retry
            try:
                c.execute(sql, row)
                break
            except psycopg.errors.UniqueViolation:
                pass
else:
    c = sqlite3.connect(db, timeout=30)
    c.execute(sql.replace("%s", "?"), row)
    c.commit()
"""


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield str(tmp_path / "tether.db")
    else:
        postgres: Postgres = request.getfixturevalue("postgres")
        yield postgres.tether_store()


@contextmanager
def _writers(db: str, ws: Path, n: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Two writer processes, killed when the block ends however it ends."""
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, db, str(ws), name, str(n)]) for name in ("a", "b")]
    try:
        yield writers
    finally:
        for w in writers:
            w.kill()
            w.wait()


def _running(writers: list[subprocess.Popen[bytes]], deadline: float) -> bool:
    if time.monotonic() > deadline:
        raise AssertionError(f"the writers still run after {DEADLINE_S:g}s")
    return any(w.poll() is None for w in writers)


def _resident(db: str, tmp_path: Path) -> tuple[Store, Guard, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    store = open_store(db, local=tmp_path)
    g = Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
    assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY
    return store, g, ws


def test_writers_racing_the_refresh_are_all_folded(where: str, tmp_path: Path) -> None:
    store, g, ws = _resident(where, tmp_path)
    with store, _writers(where, ws, 12) as writers:
        calls = 0
        deadline = time.monotonic() + DEADLINE_S
        while _running(writers, deadline) or calls < 5:
            theirs = sum(1 for call_id in g.state.actions if call_id[0] in "ab")
            if calls >= AHEAD * (theirs + 1):  # far enough ahead: only the refresh races them
                g.refresh()
                time.sleep(0.001)
                continue
            assert g.check("bash", {"command": f"ls r{calls}"}, call_id=f"r{calls}").verdict is Verdict.ALLOW
            calls += 1
        assert [w.returncode for w in writers] == [0, 0]
        state = g.refresh()
        assert {f"{name}{i}" for name in "ab" for i in range(12)} <= set(state.actions)
        assert store.verify(g.run_id) == len(g.events) == store.head(g.run_id)[0] + 1
        assert g.check("bash", RM, call_id="c1").verdict is Verdict.DENY


def test_a_row_planted_while_writers_race_is_never_folded(where: str, tmp_path: Path) -> None:
    store, g, ws = _resident(where, tmp_path)
    with store, _writers(where, ws, 8) as writers:
        answers: list[Verdict] = []
        refused = False
        try:
            for i in range(400):
                if i == 3:  # the forger's row at the log's end, while the writers run
                    subprocess.run([sys.executable, "-c", FORGER, where, g.run_id], check=True, timeout=60)
                answers.append(g.check("bash", RM, call_id="c1").verdict)
                if i > 3 and all(w.poll() is not None for w in writers):
                    break
        except LogCorrupt:
            refused = True
        for w in writers:
            w.wait(timeout=120)
        assert Verdict.ALLOW not in answers
        decided = store.events(g.run_id, kinds=["action.decided"])
        planted = [e for e in decided if e.data_as(ActionDecided).reason == "forged"]
        assert len(planted) == 1, "the forger's row is in the log"
        assert refused, "a forged row in the log that the resident did not refuse"
