"""The inline approval prompt, driven through a real pipe on stdin of a real `tether run --interactive`."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tether.cli.demo_cmds import prepare
from tether.cli.prompt import ask_approval, parse_choice
from tether.kernel.approvals import ApprovalRequest

ROOT = Path(__file__).resolve().parents[2]
PUSH = {"name": "bash", "args": {"command": "git push origin main"}}  # the example's envelope asks for a push


def run_answering(tmp_path: Path, answers: str) -> tuple[subprocess.CompletedProcess[str], list[dict[str, object]]]:
    bugfix = prepare(ROOT / "examples" / "bugfix", tmp_path)
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": [{"tool_calls": [PUSH]}]}))
    db = tmp_path / "t.db"
    base = [sys.executable, "-m", "tether.cli.main"]
    args = ["run", "push", "-e", str(bugfix / "envelope.yaml"), "--db", str(db), "--sandbox", "local"]
    proc = subprocess.run([*base, *args, "--interactive"], input=answers, capture_output=True, text=True, timeout=120)
    run_id = json.loads(subprocess.run([*base, "runs", "--db", str(db), "--json"], capture_output=True).stdout)[0]
    log = subprocess.run([*base, "log", "show", run_id["run_id"], "--db", str(db), "--json"], capture_output=True)
    return proc, [json.loads(line) for line in log.stdout.splitlines()]


def kinds(events: list[dict[str, object]], prefix: str) -> list[dict[str, object]]:
    return [e for e in events if str(e["kind"]).startswith(prefix)]


def test_n_denies_with_the_reason_asked_next(tmp_path: Path) -> None:
    proc, events = run_answering(tmp_path, "maybe\nn\nnot on a Monday\n")
    assert "y = yes, once" in proc.stderr and "Enter = leave pending" in proc.stderr
    assert "not an answer: 'maybe'" in proc.stderr  # asked again, not taken as anything
    (denied,) = kinds(events, "approval.denied")
    assert denied["payload"]["reason"] == "not on a Monday"  # type: ignore[index]
    assert not kinds(events, "approval.granted")


def test_y_approves_once_and_a_for_the_run(tmp_path: Path) -> None:
    _, events = run_answering(tmp_path / "y", "y\n")
    (granted,) = kinds(events, "approval.granted")
    assert granted["payload"]["scope"] == "once"  # type: ignore[index]
    _, events = run_answering(tmp_path / "a", "A\n")
    (granted,) = kinds(events, "approval.granted")
    assert granted["payload"]["scope"] == "run"  # type: ignore[index]


@pytest.mark.parametrize("answers", ["\n", ""], ids=["enter", "closed-stdin"])
def test_enter_or_no_one_there_leaves_it_pending(tmp_path: Path, answers: str) -> None:
    proc, events = run_answering(tmp_path, answers)
    assert proc.returncode == 5, proc.stdout + proc.stderr  # WAITING_APPROVAL
    assert kinds(events, "approval.requested") and not kinds(events, "approval.granted")
    assert not kinds(events, "approval.denied")
    assert "left pending" in proc.stderr


def test_the_choices_table() -> None:
    assert [parse_choice(s) for s in ("y", " Y ", "yes", "a", "n", "NO", "", "o", "r", "d", "l")] == [
        "once",
        "once",
        "once",
        "run",
        "deny",
        "deny",
        "defer",
        None,
        None,
        None,
        None,
    ]


def test_an_empty_reason_is_recorded_as_none_given(capsys: pytest.CaptureFixture[str]) -> None:
    request = ApprovalRequest("ap1", "r", "c", "bash", {"command": "x"}, "$ x [bold]", "asked by [rule]")
    answer = ask_approval(request, io.StringIO("n\n\n"))
    assert answer.choice == "deny" and answer.reason == "denied at the prompt (no reason given)"
    err = capsys.readouterr().err
    assert "$ x [bold]" in err and "asked by [rule]" in err  # shown as written, never read as markup
