"""A write of a guard that lost its optimistic attempt holds the SQLite writer lock for its next one.

A guard's write reads the log, builds its events from the fold and appends them on the head it read; when another
writer moved the head first it reads again and builds again (``WRITE_ATTEMPTS`` times). A resident guard deciding back
to back (~1 ms a call) moved the head more often than a cold guard (another process of the session) could read,
build and append, so the cold one could lose every attempt and its call was refused (RuntimeFailure: "writers raced
this one"), about one run in five of tests/guard/test_refresh_races.py with 20 attempts. Now every attempt after the
first holds the store's writer lock (``Store.exclusive``: the lock every SQLite writer takes) from its read to its
append, so it cannot lose again. Shown with the cold guards allowed two attempts: on the code before, they lose.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.events import EventStore
from tether.guard import Guard
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict

COLD = """
import sys
from pathlib import Path
from tether.events import EventStore
from tether.guard import Guard, session
from tether.hooks.calls import hook_envelope
session.WRITE_ATTEMPTS = 2
db, ws, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
with EventStore.open(db) as s:
    for i in range(15):
        g = Guard.open(s, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
        g.check("bash", {"command": f"ls {name}{i}"}, call_id=f"{name}{i}")
"""


def test_cold_writers_are_not_starved_by_a_resident_deciding_back_to_back(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    db = tmp_path / "tether.db"
    with EventStore.open(db) as store:
        g = Guard.open(store, hook_envelope(), "s1", framework="test", workspace=ws, strict=False)
        cold = [
            subprocess.Popen([sys.executable, "-c", COLD, str(db), str(ws), name], stderr=subprocess.PIPE, text=True)
            for name in ("a", "b")
        ]
        calls = 0
        while any(c.poll() is None for c in cold):
            assert g.check("bash", {"command": f"ls r{calls}"}, call_id=f"r{calls}").verdict is Verdict.ALLOW
            calls += 1
        errors = [c.communicate()[1] for c in cold]
        assert [c.returncode for c in cold] == [0, 0], errors
        state = g.refresh()
        assert {f"{name}{i}" for name in "ab" for i in range(15)} <= set(state.actions)
        assert store.verify(g.run_id) == len(g.events)
