"""The scheduler as real processes: two racing for one firing, one SIGKILLed in the middle of a firing and
restarted, one that cannot get the store's writer lock, and the CLI's answers to malformed input."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tether.errors import EnvelopeInvalid
from tether.events.kinds_schedule import is_schedule_log, schedule_log
from tether.events.store import EventStore
from tether.kernel import scheduler

T0 = datetime(2026, 12, 1, 3, 0, tzinfo=UTC)
LOG = schedule_log("nightly")
ENV = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}


def cli(*args: str) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-m", "tether.cli.main", *args]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def add(db: Path, envelope: Path) -> None:
    with EventStore.open(db) as store:
        added = scheduler.define(
            "nightly", cron="0 * * * *", envelope=envelope, task="write a", now=T0 - timedelta(hours=1)
        )
        scheduler.add(store, added)


def firing_runs(db: Path) -> list[str]:
    with EventStore.open(db) as store:
        return [i.run_id for i in store.runs() if not is_schedule_log(i.run_id)]


def kinds(db: Path) -> list[str]:
    with EventStore.open(db) as store:
        assert store.verify(LOG) > 0
        return [e.kind for e in store.events(LOG)]


@pytest.mark.slow
def test_two_schedulers_racing_for_one_firing_start_one_run(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project)
    now = (T0 + timedelta(seconds=3)).isoformat()
    procs = [
        cli("scheduler", "--once", "--now", now, "--db", str(db), "--sandbox", "local", "--json") for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    statuses = sorted(o["status"] for out, _ in outs for o in json.loads(out))
    assert statuses.count("COMPLETE") == 1 and set(statuses) <= {"COMPLETE", "busy", "idle"}, statuses
    assert kinds(db) == ["schedule.added", "trigger.fired", "firing.finished"]
    assert len(firing_runs(db)) == 1


KILLER = """
import os, signal, sys
from datetime import datetime
from tether.events.store import EventStore
from tether.kernel import scheduler

db, now = sys.argv[1:3]

def hook(event):
    if event.kind == "action.completed":  # the firing's run has done its work, and not finished
        os.kill(os.getpid(), signal.SIGKILL)

with EventStore.open(db) as store:
    scheduler.tick(store, datetime.fromisoformat(now), scheduler.Options(sandbox="local", on_event=hook))
"""


@pytest.mark.slow
def test_a_scheduler_killed_during_a_firing_is_finished_by_the_next_without_a_second_run(
    tmp_path: Path, project: Path
) -> None:
    db = tmp_path / "t.db"
    add(db, project)
    now = T0 + timedelta(seconds=3)
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(db), now.isoformat()], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr  # it really died, mid-firing
    assert kinds(db) == ["schedule.added", "trigger.fired"]  # the receipt, and no end
    (run_id,) = firing_runs(db)
    with EventStore.open(db) as store:  # restarted, much later: the open firing is finished before anything else
        (out,) = scheduler.tick(store, now + timedelta(minutes=30), scheduler.Options(sandbox="local"))
        resumed = [e.kind for e in store.events(run_id) if e.kind in ("run.started", "run.continued", "run.finished")]
    assert (out.status, out.run_id) == ("COMPLETE", run_id)
    assert resumed == ["run.started", "run.continued", "run.finished"]  # the same run went on
    assert firing_runs(db) == [run_id] and kinds(db) == ["schedule.added", "trigger.fired", "firing.finished"]
    assert (project.parent / "out" / "a.txt").read_text() == "hi\n"


def test_a_store_locked_past_the_timeout_stops_the_scheduler_naming_why(
    tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tether.cli.main import main

    db = tmp_path / "t.db"
    add(db, project)
    before = kinds(db)
    fd = os.open(str(db) + ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another writer holds the lock and does not let go (flock is per open file)
        now = (T0 + timedelta(seconds=3)).isoformat()
        with pytest.raises(SystemExit) as exited:
            main(["scheduler", "--once", "--now", now, "--db", str(db), "--lock-timeout", "0.3"])
    finally:
        os.close(fd)
    err = " ".join(capsys.readouterr().err.split())
    assert exited.value.code == 3 and "schedule nightly" in err and "writer lock for 0.3s" in err, err
    assert kinds(db) == before and firing_runs(db) == []  # nothing fired, nothing half-written


def test_a_schedule_log_that_does_not_verify_is_never_fired_on(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    add(db, project)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload=replace(payload, 'write a', 'rm -rf out') WHERE run_id=?", (LOG,))
    conn.commit()
    conn.close()
    with EventStore.open(db) as store, pytest.raises(scheduler.SchedulerError, match="does not verify"):
        scheduler.tick(store, T0 + timedelta(seconds=3))
    assert firing_runs(db) == []


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--cron", "61 * * * *"], "--cron '61 * * * *': Bad minute"),
        (["--cron", "0 3 * *"], "expected five fields"),
        (["--missed", "later"], "--missed 'later': expected skip or once"),
        (["--budget", "usd"], "--budget 'usd': expected NAME=VALUE"),
        (["--max-failures", "0"], "--max-failures: expected at least 1"),
    ],
)
def test_malformed_input_is_named(
    tmp_path: Path, project: Path, args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from tether.cli.main import main

    base = [
        "schedule",
        "add",
        "nightly",
        "--cron",
        "0 3 * * *",
        "-e",
        str(project),
        "-t",
        "x",
        "--db",
        str(tmp_path / "t.db"),
    ]
    with pytest.raises(SystemExit) as exited:
        main([*base, *args])
    output = " ".join(capsys.readouterr().err.split())
    assert exited.value.code == 2 and says in output, output
    assert not (tmp_path / "t.db").exists()  # nothing written


def test_a_malformed_envelope_is_named_with_its_field(tmp_path: Path, project: Path) -> None:
    project.write_text(project.read_text().replace("max_turns: 30", "max_turns: many"))
    with pytest.raises(EnvelopeInvalid, match=r"envelope.yaml.*max_turns"):
        scheduler.define("nightly", cron="0 3 * * *", envelope=project, task="x", now=T0)


@pytest.mark.slow
def test_a_running_scheduler_fires_on_the_real_clock_and_stops_cleanly(tmp_path: Path, project: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:  # every minute, added two minutes ago: the latest minute is due at once
        now = datetime.now(UTC)
        added = scheduler.define(
            "nightly", cron="* * * * *", envelope=project, task="write a", now=now - timedelta(minutes=2), missed="once"
        )
        scheduler.add(store, added)
    proc = cli("scheduler", "--interval", "0.5", "--db", str(db), "--sandbox", "local")
    try:
        deadline = time.monotonic() + 90
        while "firing.finished" not in kinds(db) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.3)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    log = kinds(db)
    assert "nightly: COMPLETE" in out and log.index("trigger.fired") < log.index("firing.finished")
