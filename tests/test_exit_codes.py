"""The README's exit-code table, row by row, through the real CLI (one test per row).

If a row of the README changes, the test of that row must change with it: the table below is
copied from the README and checked against it, so the two cannot drift apart silently.
"""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tether import EventStore
from tether.cli.demo_cmds import prepare
from tether.models.testing import PROXY_ENV_VARS, OpenAIWireServer, openai_chat, openai_error

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "bugfix"

ROWS = {
    0: "ok",
    1: "stopped",
    2: "usage or input error",
    3: "runtime failure",
    4: "blocked dependency",
    5: "waiting",
}


def tether(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        k: v for k, v in os.environ.items() if k not in PROXY_ENV_VARS and not k.startswith(("OPENAI_", "ANTHROPIC_"))
    }
    env["NO_PROXY"] = "127.0.0.1"
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        env=env,
    )


@pytest.fixture
def bugfix(tmp_path: Path) -> Path:
    example = prepare(EXAMPLE, tmp_path)
    compile_with(example, "backoff_s: 0.5", "backoff_s: 0.01")
    return example


def compile_with(example: Path, old: str, new: str) -> Path:
    envelope = example / "envelope.yaml"
    text = envelope.read_text()
    assert old in text, old
    envelope.write_text(text.replace(old, new))
    assert tether("compile", str(example / "plan.yaml"), "-o", str(envelope)).returncode == 0
    return envelope


def run(example: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["run", "fix the median", "--envelope", str(example / "envelope.yaml"), "--db", str(example / "t.db")]
    return tether(*args, "--sandbox", "local", "--headless", *extra)


def test_the_table_is_the_readmes() -> None:
    readme = (ROOT / "README.md").read_text()
    table = dict(re.findall(r"^\| `(\d)` \| ([^|]+?) \|", readme, flags=re.MULTILINE))
    assert sorted(int(k) for k in table) == sorted(ROWS)
    for code, words in ROWS.items():
        assert table[str(code)].lower().startswith(words), (code, table[str(code)])


def test_row_0_a_completed_run(bugfix: Path) -> None:
    fix = {
        "path": "src/stats/core.py",
        "old": "    return ordered[middle]\n",
        "new": "    if len(ordered) % 2:\n        return ordered[middle]\n"
        "    return (ordered[middle - 1] + ordered[middle]) / 2\n",
    }
    replies = [
        openai_chat(tool_calls=[("c1", "edit_file", fix)]),
        openai_chat(tool_calls=[("c2", "finish", {"summary": "fixed"})]),
    ]
    with OpenAIWireServer(replies) as server:
        proc = run(bugfix, "--model", "openai:gpt-4.1", "--base-url", server.base_url)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "COMPLETE" in proc.stdout


def test_row_1_a_run_stopped_by_a_budget(bugfix: Path) -> None:
    compile_with(bugfix, "\n  turns: 30\n", "\n  turns: 1\n")
    proc = run(bugfix)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "BUDGET_STOP" in proc.stdout


def test_row_2_an_input_error(tmp_path: Path) -> None:
    proc = tether("run", "x", "--envelope", str(tmp_path / "missing.yaml"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "missing.yaml" in proc.stderr


def test_row_3_a_locked_database(bugfix: Path) -> None:
    db = bugfix / "t.db"
    EventStore.open(db).close()
    with open(str(db) + ".lock", "w") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another writer holds the database
        proc = run(bugfix)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "lock" in proc.stderr


def test_row_4_the_model_provider_failed_beyond_retries(bugfix: Path) -> None:
    with OpenAIWireServer([openai_error(503)] * 3) as server:
        proc = run(bugfix, "--model", "openai:gpt-4.1", "--base-url", server.base_url)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "BLOCKED_DEPENDENCY" in proc.stdout and len(server.requests) == 3


def test_row_5_needs_input_when_the_context_window_is_full(bugfix: Path) -> None:
    compile_with(bugfix, "  request_timeout_s: 120", "  context_window: 1000\n  request_timeout_s: 120")
    with OpenAIWireServer() as server:
        proc = run(bugfix, "--model", "openai:gpt-4.1", "--base-url", server.base_url)
    assert proc.returncode == 5, proc.stdout + proc.stderr
    assert "NEEDS_INPUT" in proc.stdout and "agent.context_window" in proc.stdout
    assert server.requests == []  # reported before calling
