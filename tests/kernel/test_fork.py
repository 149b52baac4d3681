"""tether fork end to end: a fork shares its parent's log, rebuilds the workspace as it was at SEQ in a new
directory, and goes on live — with another model, or with another answer to an approval."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import yaml
from runkit import FINISH, FIX, tether, write_script

from tether.events.store import EventStore

DB = "t.db"
NOTE = {"name": "write_file", "args": {"path": "src/notes.txt", "content": "first step\n"}}
WRONG = {
    "name": "edit_file",
    "args": {"path": "src/stats/core.py", "old": "    return ordered[middle]\n", "new": "    return ordered[0]\n"},
}
PUSH = {"name": "bash", "args": {"command": "git push origin main"}}


def run(bugfix: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    proc = tether(*args, "--db", str(bugfix / DB), "--sandbox", "local", "--headless", "--json")
    lines = proc.stdout.splitlines()
    contract = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return proc.returncode, contract, proc.stdout + proc.stderr


def start(bugfix: Path, turns: list[dict[str, Any]]) -> tuple[int, dict[str, Any], str]:
    write_script(bugfix, turns)
    return run(bugfix, "run", "fix it", "--envelope", str(bugfix / "envelope.yaml"))


def events(bugfix: Path, run_id: str) -> list[Any]:
    with EventStore.open(bugfix / DB) as store:
        return store.events(run_id)


def before_turn(log: list[Any], turn: int) -> int:
    """The seq just before the model is asked for ``turn``."""
    return next(e.seq for e in log if e.kind == "model.requested" and e.payload["turn"] == turn) - 1


def test_fork_at_seq_rebuilds_the_workspace_there_and_goes_on_with_another_model(bugfix: Path, tmp_path: Path) -> None:
    code, parent, out = start(bugfix, [{"tool_calls": [NOTE]}, {"tool_calls": [WRONG]}, {"tool_calls": [FINISH]}])
    assert parent["status"] != "COMPLETE", out  # the wrong fix does not pass the tests
    ws = bugfix / "project"
    assert "ordered[0]" in (ws / "src/stats/core.py").read_text()
    at = before_turn(events(bugfix, parent["run_id"]), 1)  # after the note, before the wrong edit

    (bugfix / "better.yaml").write_text(
        yaml.safe_dump({"turns": [{"text": "(played)"}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]})
    )
    fork_ws = tmp_path / "fork-ws"
    code, fork, out = run(
        bugfix,
        "fork",
        parent["run_id"],
        "--at",
        str(at),
        "--model",
        "scripted:better.yaml",
        "--workspace",
        str(fork_ws),
    )
    assert code == 0 and fork["status"] == "COMPLETE", out
    assert (fork_ws / "src/notes.txt").read_text() == "first step\n"  # the prefix's change is there
    assert "ordered[middle - 1] + ordered[middle]" in (fork_ws / "src/stats/core.py").read_text()
    assert "ordered[0]" in (ws / "src/stats/core.py").read_text()  # the parent's workspace is untouched

    log = events(bugfix, fork["run_id"])
    first = log[at + 1]
    assert first.kind == "run.forked" and first.run_id == fork["run_id"]
    assert first.payload["parent_run"] == parent["run_id"] and first.payload["at_seq"] == at
    assert first.payload["parent_hash"] == log[at].hash == events(bugfix, parent["run_id"])[at].hash
    assert all(e.run_id == parent["run_id"] for e in log[: at + 1])  # shared, not copied
    verify = tether("log", "verify", fork["run_id"], "--db", str(bugfix / DB))
    assert verify.returncode == 0, verify.stdout + verify.stderr

    listing = tether("runs", "--db", str(bugfix / DB)).stdout
    lines = [line for line in listing.splitlines() if parent["run_id"] in line or fork["run_id"] in line]
    assert parent["run_id"] in lines[0] and "└─ " + fork["run_id"] in lines[1]

    pkg = tmp_path / "fork.tar.gz"  # a fork's package carries the parent's prefix: it verifies elsewhere
    tether("export", fork["run_id"], "-o", str(pkg), "--db", str(bugfix / DB), check=True)
    tether("import", str(pkg), "--db", str(tmp_path / "other.db"), check=True)
    tether("log", "verify", fork["run_id"], "--db", str(tmp_path / "other.db"), check=True)
    with EventStore.open(tmp_path / "other.db") as other:
        assert [e.hash for e in other.events(fork["run_id"])] == [e.hash for e in log]


def test_fork_verify_catches_a_tampered_parent_prefix(bugfix: Path, tmp_path: Path) -> None:
    _, parent, _ = start(bugfix, [{"tool_calls": [NOTE]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    at = before_turn(events(bugfix, parent["run_id"]), 1)
    code, fork, out = run(bugfix, "fork", parent["run_id"], "--at", str(at), "--workspace", str(tmp_path / "f"))
    assert code == 0, out
    conn = sqlite3.connect(bugfix / DB)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute(
        "UPDATE events SET payload = replace(payload, 'first step', 'first stop') "
        "WHERE run_id=? AND kind='action.proposed'",
        (parent["run_id"],),
    )
    conn.commit()
    conn.close()
    verify = tether("log", "verify", fork["run_id"], "--db", str(bugfix / DB), "--json")
    assert verify.returncode == 1
    (result,) = json.loads(verify.stdout)
    assert result["seq"] <= at and f"an event of parent run {parent['run_id']}" in result["reason"], result


def test_fork_at_an_approval_and_answer_it_differently(bugfix: Path, tmp_path: Path) -> None:
    code, parent, out = start(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [PUSH]}, {"tool_calls": [FINISH]}])
    assert code == 5 and parent["status"] == "WAITING_APPROVAL", out
    asked = next(e for e in events(bugfix, parent["run_id"]) if e.kind == "approval.requested")
    approval = asked.payload["approval_id"]
    code, early, out = run(bugfix, "fork", parent["run_id"], "--at", str(asked.seq), "--workspace", str(tmp_path / "e"))
    assert code == 5 and early["status"] == "WAITING_APPROVAL", out  # parent and fork both wait on it now
    both = tether("approve", approval, "--db", str(bugfix / DB))
    assert both.returncode == 2 and "--run" in both.stderr and early["run_id"] in both.stderr, both.stderr
    tether("approve", approval, "--by", "alice", "--run", parent["run_id"], "--db", str(bugfix / DB), check=True)
    code, done, out = run(bugfix, "resume", parent["run_id"])
    assert done["status"] == "COMPLETE", out
    parent_log = events(bugfix, parent["run_id"])
    assert any(e.kind == "action.started" and e.payload["call_id"] == asked.payload["call_id"] for e in parent_log)

    code, fork, out = run(bugfix, "fork", parent["run_id"], "--at", str(asked.seq), "--workspace", str(tmp_path / "f"))
    assert code == 5 and fork["status"] == "WAITING_APPROVAL", out
    deny = ("deny", approval, "--reason", "not from a fork", "--by", "bob", "--run", fork["run_id"])
    tether(*deny, "--db", str(bugfix / DB), check=True)
    code, done, out = run(bugfix, "resume", fork["run_id"])
    assert done["status"] == "COMPLETE", out
    fork_log = events(bugfix, fork["run_id"])[asked.seq + 1 :]
    denied = [e.payload for e in fork_log if e.kind == "approval.denied"]
    assert denied == [{"approval_id": approval, "by": "bob", "reason": "not from a fork"}]
    assert not any(e.kind == "action.started" and e.payload["call_id"] == asked.payload["call_id"] for e in fork_log)
    assert [e.hash for e in events(bugfix, parent["run_id"])] == [e.hash for e in parent_log]  # parent untouched


def test_fork_refuses_a_point_it_cannot_continue_from(bugfix: Path, tmp_path: Path) -> None:
    _, parent, _ = start(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    log = events(bugfix, parent["run_id"])
    started = next(e.seq for e in log if e.kind == "action.started")
    cases = [
        (log[-1].seq, "had finished (COMPLETE)"),
        (started, "had started and not completed"),
        (len(log) + 5, "is not one of them"),
    ]
    for at, message in cases:
        ws = tmp_path / f"ws-{at}"
        code, _, out = run(bugfix, "fork", parent["run_id"], "--at", str(at), "--workspace", str(ws))
        assert code == 2 and message in out, out
        assert not ws.exists()
    with EventStore.open(bugfix / DB) as store:
        assert [r.run_id for r in store.runs()] == [parent["run_id"]]


def test_the_python_api_forks_too(bugfix: Path, tmp_path: Path) -> None:
    from tether import Harness

    write_script(bugfix, [{"tool_calls": [NOTE]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    harness = Harness(bugfix / "envelope.yaml", db=bugfix / DB, sandbox="local")
    parent = harness.run("fix it")
    assert parent.status == "COMPLETE"
    at = before_turn(events(bugfix, parent.run_id), 1)
    fork = harness.fork(parent.run_id, at, tmp_path / "api-fork")
    assert fork.status == "COMPLETE" and fork.run_id != parent.run_id
    assert (tmp_path / "api-fork" / "src" / "notes.txt").read_text() == "first step\n"
    assert events(bugfix, fork.run_id)[at + 1].payload["parent_run"] == parent.run_id
