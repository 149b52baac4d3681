"""docs/cli.md's tables of the JSON outputs are what the CLI prints: field for field, both ways."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tether.cli.demo_cmds import prepare

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "cli.md").read_text()
FINISH = {"name": "finish", "args": {"summary": "nothing to do"}}


def documented(heading: str) -> set[str]:
    """The first column of the table under ``### heading``."""
    section = DOC.split(f"### {heading}\n", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE))


def tether(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def test_run_and_log_show_print_the_documented_lines(tmp_path: Path) -> None:
    bugfix = prepare(ROOT / "examples" / "bugfix", tmp_path)
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": [{"tool_calls": [FINISH]}]}))
    db = str(tmp_path / "t.db")
    run = tether("run", "-e", str(bugfix / "envelope.yaml"), "--db", db, "--sandbox", "local", "--json")
    lines = [json.loads(line) for line in run.stdout.splitlines()]  # every line is one JSON object
    *events, contract = lines
    assert events and all(set(e) == documented("Event line") for e in events)
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert set(contract) == documented("Output contract line") and contract["kind"] == "output_contract"
    log = [
        json.loads(line) for line in tether("log", "show", contract["run_id"], "--db", db, "--json").stdout.splitlines()
    ]
    assert log == events  # the same events, read back from the log
    assert all(set(e) == documented("Event line") for e in log)


def test_errors_are_the_documented_object_on_stdout(tmp_path: Path) -> None:
    proc = tether("show", "nope", "--db", str(tmp_path / "missing.db"), "--json")
    error = json.loads(proc.stdout)
    assert set(error) == documented("Error object")
    assert error["exit"] == proc.returncode == 2 and proc.stderr == ""
    assert "kind" not in error  # a JSON Lines reader tells an error line from events and contracts this way
