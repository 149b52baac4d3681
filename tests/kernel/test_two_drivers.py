"""Two drivers of one run, as real processes: one acts, the other stops at once naming the holder.

And a driver verifies before it acts: resume, approve and deny refuse a log that does not verify.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from runkit import FINISH, FIX, tether, write_script
from test_crash_resume import KILLER, MARK, marker_lines

from tether import EventStore
from tether.kernel.approvals import pending

# The marker command, then it waits for the test's go-ahead: the winner is still driving when the loser tries.
WAITING_MARK = {
    "name": "bash",
    "args": {"command": "echo ran >> src/marker.txt && while [ ! -e src/go ]; do sleep 0.05; done"},
}


def crashed_before_the_marker(bugfix: Path) -> tuple[Path, str]:
    """A run killed after deciding to run the (non-idempotent) marker command, before running it."""
    write_script(
        bugfix,
        [{"tool_calls": [WAITING_MARK]}, {"tool_calls": [FIX]}],  # then the script ends: the run stops, unverified
    )
    db = bugfix / "t.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(bugfix / "envelope.yaml"), str(db), "action.decided", "-", "unwritten"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr
    with EventStore.open(db) as store:
        (info,) = store.runs()
    return db, info.run_id


RACERS, ROUNDS = 4, 4
"""Each round, RACERS drivers resume one run at the same instant: 16 drivers, 12 of which must be refused."""

# A driver: the real CLI entry point in its own process. It imports tether first, says it is ready, and waits
# at the barrier (a pipe the test closes): all the drivers of a round then reach the lease at the same moment,
# instead of a few milliseconds apart as their imports happen to end.
RACER = """
import os, sys
import tether.cli.main, tether.cli.run_cmds, tether.kernel.session

barrier, argv = int(sys.argv[1]), sys.argv[2:]
print("ready", flush=True)
os.read(barrier, 1)  # end of file: the test closed its end, every racer goes at once
tether.cli.main.main(argv)
"""


def racers(db: Path, run_id: str, n: int) -> list[subprocess.Popen[str]]:
    """``n`` ``tether resume`` processes, started once all of them are ready, at the same instant."""
    gate_r, gate_w = os.pipe()
    args = ["resume", run_id, "--db", str(db), "--sandbox", "local", "--json"]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(gate_r), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            pass_fds=(gate_r,),
        )
        for _ in range(n)
    ]
    os.close(gate_r)
    for p in procs:
        assert p.stdout is not None and p.stdout.readline() == "ready\n", p.communicate()
    os.close(gate_w)
    return procs


def test_drivers_racing_for_one_run_act_exactly_once(bugfix: Path) -> None:
    db, run_id = crashed_before_the_marker(bugfix)
    pristine = bugfix.parent / "pristine"
    shutil.copytree(bugfix, pristine, symlinks=True)  # the crashed run and its workspace, restored each round
    for round_ in range(ROUNDS):
        shutil.rmtree(bugfix)
        shutil.copytree(pristine, bugfix, symlinks=True)
        procs = racers(db, run_id, RACERS)
        deadline = time.monotonic() + 120
        while sum(p.poll() is None for p in procs) > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        # Two drivers that both acted would both wait in the marker command for the go-ahead: none would stop.
        assert sum(p.poll() is None for p in procs) <= 1, f"round {round_}: more than one driver is driving"
        (bugfix / "project" / "src" / "go").touch()  # now let the winner finish
        outs = [(p.wait(timeout=180), *p.communicate()) for p in procs]
        codes = sorted(code for code, _, _ in outs)
        assert codes == [3] * (RACERS - 1) + [5], f"round {round_}: {outs}"  # the winner stops at the script's end
        for code, out, _ in outs:
            if code == 3:
                loser = json.loads(out.splitlines()[-1])  # --json: on stdout
                assert loser["type"] == "RunLeased" and loser["exit"] == 3, loser
                assert f"run {run_id} is being driven by pid" in loser["error"] and "since" in loser["error"], loser
        assert marker_lines(bugfix) == 1, f"round {round_}: the non-idempotent command ran more than once"
        source = (bugfix / "project" / "src" / "stats" / "core.py").read_text()
        assert source.count("if len(ordered) % 2:") == 1
        with EventStore.open(db, readonly=True) as store:
            events = store.events(run_id)
            assert store.verify(run_id) == len(events)
            assert store.lease(run_id) is None  # the winner gave it back
        assert [e.kind for e in events].count("run.finished") == 1
        assert [e.kind for e in events].count("run.continued") == 1


def rewrite_payload(db: Path, run_id: str, seq: int) -> None:
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute(
        "UPDATE events SET payload=json_set(payload, '$.note', 'edited') WHERE run_id=? AND seq=?", (run_id, seq)
    )
    conn.commit()
    conn.close()


def test_resume_refuses_a_log_that_does_not_verify_and_runs_nothing(bugfix: Path) -> None:
    write_script(bugfix, [{"tool_calls": [MARK]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    db = bugfix / "t.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(bugfix / "envelope.yaml"), str(db), "action.decided", "-", "unwritten"],
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -9
    with EventStore.open(db) as store:
        (info,) = store.runs()
    rewrite_payload(db, info.run_id, 1)  # the baseline checkpoint
    resumed = tether("resume", info.run_id, "--db", str(db), "--sandbox", "local", "--headless")
    assert resumed.returncode == 1, resumed.stderr
    assert f"run {info.run_id}: event seq 1" in resumed.stderr
    assert marker_lines(bugfix) == 0
    with EventStore.open(db, readonly=True) as store:
        assert store.lease(info.run_id) is None  # refused before acting, and let go


def test_approve_and_deny_refuse_a_log_that_does_not_verify(bugfix: Path) -> None:
    write_script(bugfix, [{"tool_calls": [{"name": "bash", "args": {"command": "git push origin main"}}]}])
    db = bugfix / "t.db"
    env = str(bugfix / "envelope.yaml")
    run = tether("run", "t", "-e", env, "--db", str(db), "--sandbox", "local", "--headless", "--json")
    assert run.returncode == 5, run.stderr
    contract = json.loads(run.stdout.splitlines()[-1])
    run_id = contract["run_id"]
    with EventStore.open(db, readonly=True) as store:  # the head is in the output contract and in show --json
        head = store.head(run_id)
    assert (contract["head"]["seq"], contract["head"]["hash"]) == head
    shown = json.loads(tether("show", run_id, "--db", str(db), "--json").stdout)
    assert (shown["head"]["seq"], shown["head"]["hash"]) == head
    (pending,) = json.loads(tether("approvals", "--db", str(db), "--json").stdout)
    rewrite_payload(db, run_id, 0)
    for args in (("approve", pending["approval_id"]), ("deny", pending["approval_id"], "--reason", "no")):
        proc = tether(*args, "--db", str(db))
        assert proc.returncode == 1 and f"run {run_id}: event seq 0" in proc.stderr, proc.stderr
    with EventStore.open(db, readonly=True) as store:
        assert not any(e.kind.startswith("approval.") and e.kind != "approval.requested" for e in store.events(run_id))


def test_the_python_api_answers_approvals_and_signs_the_head_with_a_configured_key(bugfix: Path) -> None:
    from tether import Harness
    from tether.events.anchor import AnchorKey, key_path

    key = AnchorKey.generate(key_path())  # under the test's private XDG_CONFIG_HOME
    write_script(bugfix, [{"tool_calls": [{"name": "bash", "args": {"command": "git push origin main"}}]}])
    harness = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local")
    waiting = harness.run("push it")
    assert waiting.status == "WAITING_APPROVAL" and waiting.head is not None
    with harness.store() as store:
        (request,) = [r for r in pending(store) if r.run_id == waiting.run_id]
    assert harness.deny(request.approval_id, "not today", by="alice").run_id == waiting.run_id
    done = harness.resume(waiting.run_id)
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        audit = store.verify_run(done.run_id, key, key.path.parent / "anchors.jsonl")
    assert done.head is not None and audit.head == (done.head.seq, done.head.hash)
    assert audit.anchor.last_signed_seq == done.head.seq  # signed at run end, in the database and the anchor file
    assert len((key.path.parent / "anchors.jsonl").read_text().splitlines()) == len(store_checkpoints(bugfix))


def store_checkpoints(bugfix: Path) -> list[object]:
    with EventStore.open(bugfix / "t.db", readonly=True) as store:
        return list(store.checkpoints(store.runs()[0].run_id))
