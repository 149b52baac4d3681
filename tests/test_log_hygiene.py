"""Input hygiene around the log: run ids, read-only commands, damaged rows, a full disk."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tether.cli.demo_cmds import prepare
from tether.errors import InputError, LogCorrupt
from tether.events.store import EventStore

REPO = Path(__file__).resolve().parents[1]
READERS = [("runs",), ("show", "RUN"), ("log", "show", "RUN"), ("log", "verify", "RUN"), ("approvals",)]


def tether(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args], capture_output=True, text=True, timeout=120, cwd=cwd
    )


def test_run_ids_match_exactly_or_by_a_literal_unique_prefix(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    for run_id in ("r-1_x", "r-1ax", "r-2%y"):
        store.create_run("t", [("run.started", {"task": "t"})], run_id=run_id)
    assert store.run("r-1_").run_id == "r-1_x"  # `_` is not a one-character wildcard
    assert store.run("r-2%").run_id == "r-2%y"
    with pytest.raises(InputError, match="no run '%'"):
        store.run("%")  # `%` is not "anything"
    with pytest.raises(InputError, match=r"ambiguous; it matches r-1_x, r-1ax"):
        store.run("r-1")
    with pytest.raises(InputError, match="empty run id"):
        store.run("")
    assert store.run("r-1ax").run_id == "r-1ax"  # an exact id wins even when it is also a prefix


@pytest.mark.parametrize("args", READERS)
def test_read_only_commands_never_create_a_database(tmp_path: Path, args: tuple[str, ...]) -> None:
    argv = [a.replace("RUN", "20260101") for a in args]
    missing = tmp_path / "nowhere" / "t.db"
    proc = tether(*argv, "--db", str(missing))
    assert proc.returncode == 2 and "no tether database" in proc.stderr
    assert not missing.parent.exists()
    proc = tether(*argv, cwd=tmp_path)  # the default path under the current directory
    assert proc.returncode == 2 and not (tmp_path / ".tether").exists()
    empty = tmp_path / "empty.db"
    empty.touch()
    proc = tether(*argv, "--db", str(empty))
    assert proc.returncode == 2 and "not a tether database" in proc.stderr
    assert empty.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["empty.db"]


@pytest.mark.parametrize(
    ("assignment", "reason"),
    [
        ("payload='not json'", "payload is not JSON"),
        ("payload=x'00ff'", "payload is bytes, not text"),
        ("ts=x'01'", "ts is bytes, not text"),
        ("payload=42", "payload is not a JSON object"),  # stored as the text "42": JSON, but not an event payload
    ],
)
def test_a_damaged_row_is_reported_as_that_row(tmp_path: Path, assignment: str, reason: str) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [("run.started", {"task": "t"})])
        for i in range(4):
            store.append(run, "model.requested", {"turn": i, "model": "x"})
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute(f"UPDATE events SET {assignment} WHERE seq=2")
    conn.commit()
    conn.close()
    with pytest.raises(LogCorrupt) as info:
        EventStore.open(db, readonly=True).verify(run)
    assert info.value.seq == 2 and reason in info.value.reason
    proc = tether("log", "verify", run, "--db", str(db), "--json")
    assert proc.returncode == 1 and json.loads(proc.stdout)[0]["seq"] == 2
    for args in (("show", run), ("resume", run)):  # a fold of a damaged log is refused, naming the row
        proc = tether(*args, "--db", str(db))
        assert proc.returncode == 1 and "event seq 2" in proc.stderr, (args, proc.stderr)
    raw = tether("log", "show", run, "--db", str(db))  # the raw rows: shown, or refused naming the row
    assert raw.returncode in (0, 1) and "internal error" not in raw.stderr
    listed = json.loads(tether("runs", "--db", str(db), "--json").stdout)
    assert listed[0]["status"] == "CORRUPT at seq 2"


def test_a_full_disk_is_reported_and_the_run_resumes_once_space_is_back(tmp_path: Path) -> None:
    """A real ENOSPC: the database lives on a 2 MiB tmpfs (in a private mount namespace) that is filled up."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", "-rm", "true"]).returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail("unshare -rm (user and mount namespaces) is needed for the disk-full test")
        pytest.skip("no user namespaces here")
    bugfix = prepare(REPO / "examples" / "bugfix", tmp_path)
    push = {"name": "bash", "args": {"command": "git push origin main"}}
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": [{"tool_calls": [push]}]}))
    mnt = tmp_path / "small"
    mnt.mkdir()
    db = mnt / "t.db"
    tether_cmd = f"{sys.executable} -m tether.cli.main"
    script = f"""
set -u
mount -t tmpfs -o size=2m tmpfs {mnt}
T="{tether_cmd}"
$T run t -e {bugfix}/envelope.yaml --db {db} --sandbox local --headless --json >/dev/null; echo "run=$?"
RUN=$($T runs --db {db} --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["run_id"])')
AP=$($T approvals --db {db} --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["approval_id"])')
$T approve $AP --db {db} >/dev/null; echo "approve=$?"
dd if=/dev/zero of={mnt}/filler bs=4k 2>/dev/null
$T resume $RUN --db {db} --sandbox local --json >{tmp_path}/full.err; echo "full=$?"
rm {mnt}/filler
$T log verify $RUN --db {db} >/dev/null; echo "verify_full=$?"
$T resume $RUN --db {db} --sandbox local --json >{tmp_path}/resumed.out; echo "resumed=$?"
$T log show $RUN --db {db} --json >{tmp_path}/log.jsonl
$T log verify $RUN --db {db} >/dev/null; echo "verify=$?"
"""
    proc = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=300)
    codes = dict(line.split("=") for line in proc.stdout.split())
    assert codes["run"] == "5" and codes["approve"] == "0", proc.stdout + proc.stderr
    assert codes["full"] == "3", proc.stdout
    full = (tmp_path / "full.err").read_text()
    error = json.loads(full.splitlines()[-1])  # with --json the error is the last object on stdout
    assert error["error"].startswith(f"disk full: {db}") and error["type"] == "DiskFull" and error["exit"] == 3
    assert codes["verify_full"] == "0"  # nothing half-written by the failed resume
    assert codes["resumed"] == "5" and codes["verify"] == "0", proc.stdout
    contract = json.loads((tmp_path / "resumed.out").read_text().splitlines()[-1])
    assert contract["status"] == "NEEDS_INPUT"  # the script has no more turns: it ran, and stopped cleanly
    kinds = [json.loads(line)["kind"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert kinds.count("action.started") == 1 and kinds.count("run.continued") == 1
