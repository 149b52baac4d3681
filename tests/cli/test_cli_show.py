"""`tether show`: compact by default (no per-step diagnostics, the final diff), --verbose for every event,
and nothing shortened without saying how to see it whole (--full)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tether.cli.demo_cmds import prepare
from tether.events.store import EventStore

ROOT = Path(__file__).resolve().parents[2]
LONG = "I will fix the median for lists of even length by averaging the two middle values " + "x" * 300 + " END"
EVEN = (
    "    if len(ordered) % 2:\n        return ordered[middle]\n    return (ordered[middle - 1] + ordered[middle]) / 2\n"
)
FIX = {"name": "edit_file", "args": {"path": "src/stats/core.py", "old": "    return ordered[middle]\n", "new": EVEN}}
FINISH = {"name": "finish", "args": {"summary": "fixed median"}}


def tether(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "100"}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    bugfix = prepare(ROOT / "examples" / "bugfix", tmp_path_factory.mktemp("show"))
    turns = [{"text": LONG, "tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}))
    db = bugfix / "t.db"
    proc = tether("run", "-e", str(bugfix / "envelope.yaml"), "--db", str(db), "--sandbox", "local", "--headless")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with EventStore.open(db, readonly=True) as store:
        return db, store.runs()[0].run_id


def test_compact_shows_the_final_diff_and_no_diagnostics(finished: tuple[Path, str]) -> None:
    db, run_id = finished
    out = tether("show", run_id, "--db", str(db)).stdout
    assert "changes (seq 1 → " in out and "1 file(s): src/stats/core.py" in out
    assert "+    if len(ordered) % 2:" in out and "-    return ordered[middle]" in out
    assert "diagnostics " not in out and "belief g" not in out
    assert "sensor tests (required): PASS" in out and "ALLOW by" in out and "COMPLETE" in out


def test_verbose_shows_every_event(finished: tuple[Path, str]) -> None:
    db, run_id = finished
    out = tether("show", run_id, "--db", str(db), "--verbose").stdout
    assert "diagnostics " in out and "belief g" in out and "budgets" in out


def test_a_shortened_text_says_how_to_see_it_whole(finished: tuple[Path, str]) -> None:
    db, run_id = finished
    compact = tether("show", run_id, "--db", str(db)).stdout
    assert "END" not in compact and "…" in compact
    assert f"`tether show {run_id} --full` prints them whole" in compact
    whole = tether("show", run_id, "--db", str(db), "--full").stdout
    assert LONG in whole.replace("\n", "") and "shortened" not in whole


def test_json_carries_the_diff(finished: tuple[Path, str]) -> None:
    db, run_id = finished
    data = json.loads(tether("show", run_id, "--db", str(db), "--json").stdout)
    assert data["diff"]["files"] == ["src/stats/core.py"] and data["diff"]["missing"] == ""
    assert "+    if len(ordered) % 2:" in data["diff"]["text"]


def test_markup_in_agent_text_is_printed_as_written(tmp_path: Path) -> None:
    bugfix = prepare(ROOT / "examples" / "bugfix", tmp_path)
    turns = [{"text": "[bold red]fake[/] [link=http://x]y[/link]", "tool_calls": [FINISH]}]
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}))
    db = tmp_path / "t.db"
    tether("run", "[red]task[/]", "-e", str(bugfix / "envelope.yaml"), "--db", str(db), "--sandbox", "local")
    with EventStore.open(db, readonly=True) as store:
        run_id = store.runs()[0].run_id
    out = tether("show", run_id, "--db", str(db), "--full").stdout
    assert "[bold red]fake[/]" in out and "[red]task[/]" in out


def test_log_show_says_what_it_shortened(finished: tuple[Path, str]) -> None:
    db, run_id = finished
    compact = tether("log", "show", run_id, "--db", str(db)).stdout
    assert "END" not in compact and "`--full` or `--json` prints them whole" in compact
    whole = tether("log", "show", run_id, "--db", str(db), "--full").stdout
    assert "END" in whole and "shortened" not in whole
