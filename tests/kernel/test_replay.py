"""`tether replay`: a recorded run re-executed from its log alone reproduces, and a divergence shows both sides."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

from runkit import FINISH, FIX, FinishedDemo, recompile, tether, write_script

from tether import EventStore
from tether.kernel.replay import Fact, first_divergence

TOUCH = {"name": "bash", "args": {"command": "touch src/approved.txt"}}
CLOCK = {"name": "bash", "args": {"command": "date +%N"}}


def run(bugfix: Path, turns: list[dict[str, Any]]) -> tuple[Path, dict[str, Any]]:
    write_script(bugfix, turns)
    db = bugfix / "t.db"
    env = str(bugfix / "envelope.yaml")
    proc = tether("run", "fix it", "-e", env, "--db", str(db), "--sandbox", "local", "--headless", "--json")
    return db, json.loads(proc.stdout.splitlines()[-1])


def replay(db: Path, run_id: str, *options: str) -> tuple[int, dict[str, Any]]:
    proc = tether("replay", run_id, "--db", str(db), "--json", *options)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout.splitlines()[-1])


def test_the_demo_reproduces_on_another_machine_with_its_workspace_gone(
    finished_demo: FinishedDemo, tmp_path: Path
) -> None:
    """The bugfix demo (a DENY, an approval a human declined, a wrong edit, the fix) replays to the same facts."""
    db = finished_demo.copy_db(tmp_path)  # only the log is left: replay must not need the original directory
    with EventStore.open(db) as store:
        (info,) = store.runs()
        before = store.verify(info.run_id), store.head(info.run_id)
    code, report = replay(db, info.run_id)
    assert code == 0 and report["reproduced"] and report["divergence"] is None, report
    assert report["original_status"] == report["replay_status"] == "COMPLETE"
    assert report["compared"] >= 15  # decisions, receipts, verdicts and the status
    with EventStore.open(db) as store:
        assert [r.run_id for r in store.runs()] == [info.run_id]  # the replay ran in its own store
        assert (store.verify(info.run_id), store.head(info.run_id)) == before  # the original log is untouched
    human = tether("replay", info.run_id, "--db", str(db))
    assert human.returncode == 0 and "reproduced" in human.stdout


def test_an_exported_run_replays_on_another_machine(finished_demo: FinishedDemo, tmp_path: Path) -> None:
    """Hand it to a colleague: export, import into another directory's store with the original gone, replay."""
    here, there = tmp_path / "here", tmp_path / "there"
    finished_demo.copy_db(here)
    with EventStore.open(here / "tether.db") as store:
        (info,) = store.runs()
    package = tmp_path / "run.tar.gz"
    tether("export", info.run_id, "-o", str(package), "--db", str(here / "tether.db"), check=True)
    shutil.rmtree(here)  # nothing of the first machine is left but the package
    there.mkdir()
    tether("import", str(package), "--db", str(there / "tether.db"), check=True)
    code, report = replay(there / "tether.db", info.run_id, "--trust-imported")  # see tests/kernel/test_imported_runs
    assert code == 0 and report["reproduced"] and report["replay_status"] == "COMPLETE", report


def test_a_run_with_an_approval_replays_with_the_recorded_answer(bugfix: Path, tmp_path: Path) -> None:
    env = bugfix / "envelope.yaml"
    env.write_text(
        env.read_text().replace(
            "  ask: []", '  ask:\n    - {id: ask-touch, rule: "bash(touch:*)", reason: a person says}'
        )
    )
    recompile(env)
    db, first = run(bugfix, [{"tool_calls": [TOUCH]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    assert first["status"] == "WAITING_APPROVAL"
    pending = json.loads(tether("approvals", "--db", str(db), "--json", check=True).stdout)
    tether("approve", pending[0]["approval_id"], "--by", "ana", "--db", str(db), check=True)
    done = tether("resume", first["run_id"], "--db", str(db), "--sandbox", "local", "--headless", "--json")
    assert json.loads(done.stdout.splitlines()[-1])["status"] == "COMPLETE"
    code, report = replay(db, first["run_id"], "--keep", str(tmp_path / "kept"))
    assert code == 0 and report["reproduced"], report
    with EventStore.open(tmp_path / "kept" / "replay.db") as store:
        events = store.events(report["replay_run"])
    assert events[0].payload["replay_of"] == first["run_id"]
    granted = [e.payload for e in events if e.kind == "approval.granted"]
    assert [g["by"] for g in granted] == ["ana"]  # answered as the human answered, not by the replay
    assert (tmp_path / "kept" / "workspace" / "src" / "approved.txt").exists()  # the approved call ran again


def test_tampered_starting_files_are_the_first_divergence_with_both_digests(bugfix: Path) -> None:
    db, first = run(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    assert first["status"] == "COMPLETE"
    with EventStore.open(db) as store:
        start = next(e for e in store.events(first["run_id"]) if e.kind == "run.checkpoint")
        manifest = json.loads(store.get_blob(start.payload["snapshot"]))
    core = next(row for row in manifest["entries"] if row[0] == "src/stats/core.py")
    with sqlite3.connect(db) as conn:  # a writer past tether's triggers rewrites the starting bytes of one file
        conn.execute("DROP TRIGGER blobs_no_update")
        conn.execute("UPDATE blobs SET data = ? WHERE hash = ?", (b"def median(xs):\n    return 0\n", core[2]))
    code, report = replay(db, first["run_id"])
    assert code == 1 and not report["reproduced"]
    d = report["divergence"]
    assert (d["what"], d["subject"], d["field"]) == ("start snapshot", "src/stats/core.py", "content")
    assert d["original"] == core[2] and d["replay"].startswith("sha256:") and d["replay"] != core[2]
    human = tether("replay", first["run_id"], "--db", str(db))
    assert human.returncode == 1 and "src/stats/core.py" in human.stdout and core[2] in human.stdout


def test_output_that_differs_is_reported_at_its_call_with_both_hashes(bugfix: Path) -> None:
    db, first = run(bugfix, [{"tool_calls": [{"name": "list_dir", "args": {"path": "."}}]}, {"tool_calls": [CLOCK]}])
    code, report = replay(db, first["run_id"])
    assert code == 1
    d = report["divergence"]
    assert d["what"] == "receipt" and d["field"] == "output" and d["subject"].startswith("call_1")
    assert d["original"] != d["replay"] and d["original_seq"] < d["replay_seq"] + 50
    code, report = replay(db, first["run_id"], "--to", str(d["original_seq"] - 1))  # up to just before it
    assert code == 0 and report["reproduced"] and report["to_seq"] == d["original_seq"] - 1, report


def test_the_first_differing_fact_is_the_divergence() -> None:
    a = [Fact(1, "decision", "c1", {"verdict": "ALLOW", "rule": "r"}), Fact(2, "receipt", "c1", {"exit_code": 0})]
    same = [Fact(7, "decision", "c1", {"verdict": "ALLOW", "rule": "r"}), Fact(9, "receipt", "c1", {"exit_code": 0})]
    assert first_divergence(a, same) is None
    assert first_divergence(a, [*same, Fact(10, "status", "run", {"status": "COMPLETE"})]) is None
    asked = [Fact(7, "decision", "c1", {"verdict": "ASK", "rule": "r"})]
    d = first_divergence(a, asked)
    assert d is not None and (d.field, d.original, d.replay, d.original_seq, d.replay_seq) == (
        "verdict",
        "ALLOW",
        "ASK",
        1,
        7,
    )
    d = first_divergence(a, same[:1])
    assert d is not None and (d.what, d.field, d.replay) == ("receipt", "presence", None)
    exit1 = [same[0], Fact(9, "receipt", "c1", {"exit_code": 1})]
    d = first_divergence(a, exit1)
    assert d is not None and "exit_code was 0 (original seq 2), replay has 1 (replay seq 9)" in d.describe()


WRONG = {
    "name": "edit_file",
    "args": {"path": "src/stats/core.py", "old": "    return ordered[middle]\n", "new": "    return ordered[0]\n"},
}


def test_replay_with_another_model_is_a_counterfactual_run_forked_before_the_first_call(
    bugfix: Path, tmp_path: Path
) -> None:
    """`--model M` re-asks another model from the first call: a new run beside the original, which stays as it was."""
    db, original = run(bugfix, [{"tool_calls": [WRONG]}, {"tool_calls": [FINISH]}])
    assert original["status"] != "COMPLETE"
    before = [e.hash for e in EventStore.open(db).events(original["run_id"])]
    (bugfix / "better.yaml").write_text(json.dumps({"turns": [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]}))
    ws = tmp_path / "counterfactual"
    proc = tether(
        "replay",
        original["run_id"],
        "--model",
        "scripted:better.yaml",
        "-w",
        str(ws),
        "--db",
        str(db),
        "--json",
        "--sandbox",
        "local",
    )
    other = json.loads(proc.stdout.splitlines()[-1])
    assert proc.returncode == 0 and other["status"] == "COMPLETE", proc.stdout + proc.stderr
    assert "ordered[middle - 1] + ordered[middle]" in (ws / "src/stats/core.py").read_text()
    with EventStore.open(db) as store:
        log = store.events(other["run_id"])
        forked = next(e for e in log if e.kind == "run.forked")
        first_call = next(e.seq for e in store.events(original["run_id"]) if e.kind == "model.requested")
        assert forked.payload["parent_run"] == original["run_id"] and forked.payload["at_seq"] == first_call - 1
        assert forked.payload["model"] == "scripted:better.yaml"
        assert [e.hash for e in store.events(original["run_id"])] == before  # the original is untouched
    assert tether("log", "verify", other["run_id"], "--db", str(db)).returncode == 0


def test_a_counterfactual_refuses_keep_and_a_seq_it_cannot_fork_at(bugfix: Path) -> None:
    db, original = run(bugfix, [{"tool_calls": [FINISH]}])
    proc = tether("replay", original["run_id"], "--model", "scripted:x.yaml", "--keep", "k", "--db", str(db))
    assert proc.returncode == 2 and "--keep" in proc.stdout + proc.stderr
    end = len(EventStore.open(db).events(original["run_id"])) - 1
    proc = tether("replay", original["run_id"], "--model", "scripted:x.yaml", "--to", str(end), "--db", str(db))
    assert proc.returncode != 0 and "had finished" in proc.stdout + proc.stderr
