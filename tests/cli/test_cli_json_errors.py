"""`--json` errors are one JSON object on stdout with the same exit code as the text form; `--version`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tether


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_version() -> None:
    proc = cli("--version")
    assert proc.returncode == 0
    assert proc.stdout == f"tether {tether.__version__}\n"


def test_a_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    text, as_json = cli("validate", str(missing)), cli("validate", str(missing), "--json")
    assert text.returncode == as_json.returncode == 2
    error = json.loads(as_json.stdout)
    assert error == {
        "error": f"{missing}: file not found",
        "type": "FileError",
        "path": str(missing),
        "field": None,
        "exit": 2,
    }
    assert as_json.stderr == ""


def test_an_invalid_envelope_names_file_and_field(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("goal: x\nsuccess: {}\nbogus_key: 1\n")
    proc = cli("compile", str(plan), "-o", str(tmp_path / "envelope.yaml"), "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    assert error["type"] == "EnvelopeInvalid"
    assert error["path"] == str(plan)
    assert error["field"] == error["problems"][0]["path"]
    assert any(p["path"] == "$.bogus_key" for p in error["problems"])


def test_a_parse_error_and_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "e.yaml"
    bad.write_text("a: [1,\n")
    error = json.loads(cli("validate", str(bad), "--json").stdout)
    assert error["type"] == "ParseError" and error["path"] == str(bad) and "line" in error["error"]
    usage = cli("runs", "--json", "--no-such-option")
    assert usage.returncode == 2
    assert json.loads(usage.stdout)["exit"] == 2
    assert "--no-such-option" in json.loads(usage.stdout)["error"]


def test_a_corrupt_log_carries_run_and_seq(tmp_path: Path) -> None:
    import sqlite3

    from tether.events.store import EventStore

    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run_id = store.create_run("t")
        store.append(run_id, "run.started", {"task": "t", "budgets": {"turns": 1}})
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute('UPDATE events SET payload = \'{"task": "u"}\' WHERE seq = 0')
    conn.commit()
    conn.close()
    proc = cli("show", run_id, "--db", str(db), "--json")
    assert proc.returncode == 1
    error = json.loads(proc.stdout)
    assert error["type"] == "LogCorrupt" and error["run_id"] == run_id and error["seq"] == 0


def test_json_after_the_double_dash_is_an_argument_not_the_flag(tmp_path: Path) -> None:
    proc = cli("policy", "check", "-e", str(tmp_path / "missing.yaml"), "--", "echo", "--json")
    assert proc.returncode == 2
    assert proc.stdout == "" and "file not found" in proc.stderr
