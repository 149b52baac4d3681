"""SIGKILL at several points of a run, then `tether resume`: nothing runs twice, the log stays valid."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from runkit import FINISH, FIX, tether, write_script

from tether import EventStore

KILLER = """
import os, pathlib, signal, sys, threading, time
from tether import Harness
from tether.events.store import EventStore

envelope, db, kind, tool, when = (sys.argv[1:] + ["written"])[:5]
write = EventStore.append_batch
marker = pathlib.Path(envelope).parent / "project" / "src" / "marker.txt"

def kill_once_marked():
    while not marker.exists():
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGKILL)  # the command has acted and is still running

def append_batch(self, batch):  # the runtime writes every event through here: a step's batch at a time
    hit = any(e.kind == kind and e.payload.get("tool", tool) == tool for e in batch.events)
    if hit and when == "unwritten":
        os.kill(os.getpid(), signal.SIGKILL)  # staged, not written: the crash loses the whole batch
    write(self, batch)
    if hit and when == "written":
        os.kill(os.getpid(), signal.SIGKILL)  # no cleanup, no flush: a real crash, right after the commit
    if hit and when == "running":
        threading.Thread(target=kill_once_marked, daemon=True).start()

EventStore.append_batch = append_batch
Harness(envelope, db=db, sandbox="local").run("fix the median")
"""

MARK = {"name": "bash", "args": {"command": "echo ran >> src/marker.txt"}}


def crash(
    bugfix: Path, kind: str, tool: str = "-", first: tuple[dict[str, Any], ...] = (MARK,), when: str = "written"
) -> tuple[Path, str]:
    """Run the script and SIGKILL it right after the batch holding ``kind`` (of ``tool``) is written; with
    ``when="unwritten"``, right before; with ``"running"``, once the command it started wrote the marker."""
    write_script(
        bugfix,
        [
            {"tool_calls": list(first)},
            {"tool_calls": [FIX, {"name": "run_tests", "args": {}}]},
            {"tool_calls": [FINISH]},
        ],
    )
    db = bugfix / "t.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(bugfix / "envelope.yaml"), str(db), kind, tool, when],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr  # it really died by SIGKILL
    with EventStore.open(db) as store:
        (info,) = store.runs()
        assert store.verify(info.run_id) > 0  # the log survived the crash intact
        written = {e.kind for e in store.events(info.run_id)}
        assert (kind in written) is (when != "unwritten")  # it died right after (before) that was written
    return db, info.run_id


def resume(db: Path, run_id: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    proc = tether("resume", run_id, "--db", str(db), "--sandbox", "local", "--headless", "--json")
    assert tether("log", "verify", run_id, "--db", str(db)).returncode == 0
    return proc.returncode, json.loads(proc.stdout.splitlines()[-1])


def marker_lines(bugfix: Path) -> int:
    marker = bugfix / "project" / "src" / "marker.txt"
    return len(marker.read_text().splitlines()) if marker.exists() else 0


def test_crash_inside_a_non_idempotent_action_is_never_rerun(bugfix: Path) -> None:
    db, run_id = crash(bugfix, "action.started", "bash")
    code, contract = resume(db, run_id)
    assert code == 5 and contract["status"] == "NEEDS_INPUT"
    assert "bash" in contract["result"] and "not idempotent" in contract["result"]
    assert marker_lines(bugfix) == 0  # the crash came before the command; resume did not run it blind


@pytest.mark.slow
@pytest.mark.parametrize(
    ("kind", "when"),
    [
        ("action.started", "running"),  # killed while the command runs, after it acted
        ("action.completed", "unwritten"),  # killed after the command, before its result is written
    ],
)
def test_a_crash_after_a_command_acted_leaves_it_in_doubt_never_rerun(bugfix: Path, kind: str, when: str) -> None:
    first = {"name": "bash", "args": {"command": "echo ran >> src/marker.txt && sleep 1"}}
    db, run_id = crash(bugfix, kind, "bash", first=(first,), when=when)
    with EventStore.open(db) as store:
        kinds = [e.kind for e in store.events(run_id)]
    assert kinds[-1] == "action.started" and "action.completed" not in kinds  # the durable write, then nothing
    code, contract = resume(db, run_id)
    assert code == 5 and contract["status"] == "NEEDS_INPUT"
    assert "not idempotent" in contract["result"]
    assert marker_lines(bugfix) == 1  # it acted once; resume did not run it again


def test_crash_after_a_completed_action_continues_without_repeating_it(bugfix: Path) -> None:
    db, run_id = crash(bugfix, "action.completed", "bash")
    code, contract = resume(db, run_id)
    assert code == 0 and contract["status"] == "COMPLETE"
    assert marker_lines(bugfix) == 1


def test_crash_inside_an_idempotent_action_reruns_it(bugfix: Path) -> None:
    db, run_id = crash(bugfix, "action.started", "run_tests")
    code, contract = resume(db, run_id)
    assert code == 0 and contract["status"] == "COMPLETE"
    with EventStore.open(db) as store:
        starts = [
            e.payload for e in store.events(run_id) if e.kind == "action.started" and e.payload["tool"] == "run_tests"
        ]
    assert [s["attempt"] for s in starts] == [1, 2]
    assert marker_lines(bugfix) == 1


def test_crash_inside_read_file_reruns_it(bugfix: Path) -> None:
    """The example's read_file states no idempotency: a read-only tool is idempotent by default."""
    read = {"name": "read_file", "args": {"path": "src/stats/core.py"}}
    db, run_id = crash(bugfix, "action.started", "read_file", first=(read, MARK))
    code, contract = resume(db, run_id)
    assert code == 0 and contract["status"] == "COMPLETE", contract
    with EventStore.open(db) as store:
        starts = [e.payload for e in store.events(run_id) if e.kind == "action.started"]
    assert [(s["tool"], s["attempt"], s["idempotent"]) for s in starts[:2]] == [
        ("read_file", 1, True),
        ("read_file", 2, True),
    ]
    assert marker_lines(bugfix) == 1


@pytest.mark.parametrize(
    ("kind", "when"),
    [
        # a model turn is written with its decision and the durable action.started: lost whole, asked again
        ("model.responded", "unwritten"),
        ("action.decided", "unwritten"),
        ("completion.claimed", "written"),  # written before the sensors run
        ("verify.completed", "unwritten"),  # written with the finish: lost whole, verified again
    ],
)
def test_crash_between_steps_resumes_to_complete(bugfix: Path, kind: str, when: str) -> None:
    db, run_id = crash(bugfix, kind, when=when)
    code, contract = resume(db, run_id)
    assert code == 0 and contract["status"] == "COMPLETE", contract
    assert marker_lines(bugfix) == 1
    source = (bugfix / "project" / "src" / "stats" / "core.py").read_text()
    assert source.count("if len(ordered) % 2:") == 1  # the edit was applied exactly once
