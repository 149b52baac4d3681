"""`tether schedule …` and `tether scheduler --once --now` from the command line (in process): the whole
operator's path, JSON out, and schedules kept out of `tether runs`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tether.cli.main import main


def tether(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = 0
    try:
        main(list(args))
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, json.loads(out) if out.strip().startswith(("{", "[")) else out + err


def test_the_operator_s_path(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "t.db")
    code, added = tether(
        capsys, "schedule", "add", "tidy", "--cron", "*/5 * * * *", "-e", str(project), "-t", "write a",
        "--noop-if", "test -f out/a.txt", "--max-failures", "2", "--now", "2026-12-01T03:00:00Z", "--db", db, "--json",
    )  # fmt: skip
    assert code == 0 and added["state"] == "active" and added["cron"] == "*/5 * * * *"
    code, fired = tether(
        capsys, "scheduler", "--once", "--now", "2026-12-01T03:05:10Z", "--db", db, "--sandbox", "local", "--json"
    )
    assert code == 0 and [(o["schedule"], o["status"]) for o in fired] == [("tidy", "COMPLETE")]
    code, noop = tether(
        capsys, "scheduler", "--once", "--now", "2026-12-01T03:10:01Z", "--db", db, "--sandbox", "local", "--json"
    )
    assert noop[0]["status"] == "NO_OP" and noop[0]["run_id"] is None
    code, status = tether(capsys, "schedule", "status", "tidy", "--now", "2026-12-01T03:11:00Z", "--db", db, "--json")
    assert status["last_outcome"] == "NO_OP" and status["lag_s"] == 1.0 and status["firings"] == 2
    assert status["next_fire_at"] == "2026-12-01T03:15:00+00:00"
    code, runs = tether(capsys, "runs", "--db", db, "--json")
    assert [r["run_id"] for r in runs] == [fired[0]["run_id"]]  # the schedule's log is not a run
    assert (
        tether(capsys, "schedule", "pause", "tidy", "--reason", "freeze", "--db", db, "--json")[1]["state"] == "paused"
    )
    code, idle = tether(capsys, "scheduler", "--once", "--now", "2026-12-01T03:15:01Z", "--db", db, "--json")
    assert idle[0]["status"] == "idle"
    assert tether(capsys, "schedule", "resume", "tidy", "--db", db, "--json")[1]["state"] == "active"
    assert tether(capsys, "schedule", "remove", "tidy", "--db", db, "--json")[1]["state"] == "removed"
    assert tether(capsys, "schedule", "list", "--db", db, "--json")[1] == []
    code, _ = tether(capsys, "schedule", "pause", "tidy", "--db", db)
    assert code == 2  # removed: nothing to pause
    code, again = tether(
        capsys, "schedule", "add", "tidy", "--cron", "0 3 * * *", "-e", str(project), "-t", "x", "--db", db, "--json"
    )
    assert code == 0 and again["firings"] == 0 and again["state"] == "active"  # a new generation of the same log


def test_now_without_once_is_refused(tmp_path: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = tether(capsys, "scheduler", "--now", "2026-12-01T03:00:00Z", "--db", str(tmp_path / "t.db"))
    assert code == 2 and "--now needs --once" in " ".join(_.split())
