"""The durable write of ``action.started`` itself failing (a full disk) while the step's command is held, on both
backends: the held child is up when the write fails, the command never runs, the error ends the run as it did
before holding, and the log verifies without the step's start."""

from __future__ import annotations

import secrets
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, write_script
from test_crash_resume import marker_lines
from test_held_commit import marking

from tether import EventStore, Harness
from tether.events.store import Batch
from tether.sandbox.doctor import survivors


@pytest.mark.parametrize("backend", ["local", pytest.param("bwrap", marks=pytest.mark.bwrap)])
def test_a_full_disk_on_the_held_write_stops_the_command_unrun(
    bugfix: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    token = "tether-held-" + secrets.token_hex(6)
    write_script(bugfix, [{"tool_calls": [marking(token)]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    held_when_failing: list[bool] = []
    real = EventStore.append_batch

    def full_disk(self: EventStore, batch: Batch) -> Any:
        if any(e.kind == "action.started" for e in batch.events):
            for _ in range(300):  # the held child is up (its command line holds the token) while this write runs
                if survivors(token, grace_s=0):
                    break
                time.sleep(0.01)
            held_when_failing.append(bool(survivors(token, grace_s=0)))
            raise sqlite3.OperationalError("database or disk is full")
        return real(self, batch)

    monkeypatch.setattr(EventStore, "append_batch", full_disk)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        Harness(bugfix / "envelope.yaml", db=db, sandbox=backend).run("fix the median")
    monkeypatch.setattr(EventStore, "append_batch", real)
    # held while the write failed; the batch stays staged, so the run's last flush fails again, the child gone
    assert held_when_failing[0] and not any(held_when_failing[1:])
    assert survivors(token, grace_s=5) == []
    assert marker_lines(bugfix) == 0
    with EventStore.open(db) as store:
        (info,) = store.runs()
        kinds = [e.kind for e in store.events(info.run_id)]
        assert store.verify(info.run_id) == len(kinds)
    assert "action.started" not in kinds
