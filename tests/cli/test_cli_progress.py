"""The progress line: on stderr only, on a terminal by default or when asked, never in --json's stdout."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import yaml

from tether.cli.demo_cmds import prepare
from tether.cli.progress import ProgressLine
from tether.events.store import Event

ROOT = Path(__file__).resolve().parents[2]
FINISH = {"name": "finish", "args": {"summary": "fixed median"}}
TESTS = {"name": "run_tests", "args": {}}
ELAPSED = r"\d+\.\ds"


@pytest.fixture
def envelope(tmp_path: Path) -> Path:
    bugfix = prepare(ROOT / "examples" / "bugfix", tmp_path)
    (bugfix / "trajectory.yaml").write_text(
        yaml.safe_dump({"turns": [{"tool_calls": [TESTS]}, {"tool_calls": [FINISH]}]})
    )
    return bugfix / "envelope.yaml"


def run(envelope: Path, *extra: str, **kw: object) -> subprocess.CompletedProcess[str]:
    args = ["run", "-e", str(envelope), "--db", str(envelope.parent / "t.db"), "--sandbox", "local", "--headless"]
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args, *extra],
        text=True,
        timeout=180,
        **kw,  # type: ignore[call-overload]
    )


def test_asked_for_off_a_terminal_each_phase_is_one_line_on_stderr(envelope: Path) -> None:
    proc = run(envelope, "--json", "--progress", capture_output=True, stdin=subprocess.DEVNULL)
    assert all(json.loads(line) for line in proc.stdout.splitlines())  # stdout stays JSON Lines
    assert re.search(rf"^snapshot and test baseline: {ELAPSED}$", proc.stderr, re.MULTILINE), proc.stderr
    assert re.search(rf"^running run_tests: {ELAPSED}$", proc.stderr, re.MULTILINE)
    assert re.search(rf"^verifying the claim: .*: {ELAPSED}$", proc.stderr, re.MULTILINE)


def test_off_a_terminal_it_is_off_by_default(envelope: Path) -> None:
    proc = run(envelope, capture_output=True, stdin=subprocess.DEVNULL)
    assert proc.stdout and "baseline:" not in proc.stderr and "⧗" not in proc.stderr + proc.stdout


def test_on_a_terminal_the_line_ticks_on_stderr(envelope: Path) -> None:
    """stderr is a real pseudo-terminal (read while the run runs): the live line appears there, never on stdout."""
    master, slave = pty.openpty()
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # the child closed its end
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain)
    reader.start()
    try:
        proc = run(envelope, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL)
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    text = b"".join(seen).decode("utf-8", "replace")
    assert proc.returncode == 5  # NEEDS_INPUT: the claim is refused (the example's bug is not fixed), no more turns
    assert re.search(rf"⧗ .* … {ELAPSED}", text), text[-2000:]
    assert "⧗" not in proc.stdout


def test_the_phases_follow_the_events() -> None:
    from rich.console import Console

    now = [0.0]
    out = Console(file=open(os.devnull, "w"), force_terminal=False)  # noqa: SIM115
    line = ProgressLine(out, clock=lambda: now[0])

    def ev(kind: str, **payload: object) -> Event:
        return Event("r", 0, "", kind, payload, "", "")

    line.on_event(ev("completion.claimed"))
    now[0] = 2.0
    line.on_event(ev("sensor.result", sensor="syntax", result="PASS"))  # the same phase: the clock keeps running
    assert line.what == "verifying the claim: syntax PASS, next sensor" and line.since == 0.0
    assert str(line.__rich__()) == "⧗ verifying the claim: syntax PASS, next sensor … 2.0s"
    line.on_event(ev("verify.completed"))
    assert line.what is None
    line.on_event(ev("belief.recorded"))  # not a phase boundary
    assert line.what is None
