"""``tether exec`` end to end: gate, then sandbox."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from tether.cli import exec_cmds


def invoke(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict[str, object]]:
    monkeypatch.chdir(cwd)
    app = typer.Typer()
    exec_cmds.register(app)
    app.command("noop")(lambda: None)
    result = CliRunner().invoke(app, ["exec", "--json", *args])
    return result.exit_code, json.loads(result.output)


def test_allowed_command_runs_and_prints_the_receipt(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "a.txt").write_text("hello\n")
    code, out = invoke(["--sandbox", "local", "--", "cat a.txt"], workspace, monkeypatch)
    assert code == 0 and out["status"] == "RAN"
    receipt = out["receipt"]
    assert isinstance(receipt, dict) and receipt["stdout"] == "hello\n" and receipt["backend"] == "local"


def test_denied_command_does_not_run(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = invoke(["--sandbox", "local", "--", "rm -rf / && touch ran.txt"], workspace, monkeypatch)
    assert code == 1 and out["status"] == "DENIED" and "receipt" not in out
    assert not (workspace / "ran.txt").exists()


def test_ask_is_not_answered_and_does_not_run(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = invoke(["--sandbox", "local", "--", "git push origin main"], workspace, monkeypatch)
    assert code == 5 and out["status"] == "WAITING_APPROVAL"


@pytest.mark.bwrap
def test_timeout_and_bounded_output_under_bwrap(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out = invoke(["--timeout", "0.5", "--", "ls; sleep 30"], workspace, monkeypatch)
    receipt = out["receipt"]
    assert code == 1 and isinstance(receipt, dict)
    assert receipt["timed_out"] is True and receipt["exit_code"] == 124 and receipt["backend"] == "bwrap"


def test_required_sandbox_unavailable_is_blocked(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    code, out = invoke(["--", "ls"], workspace, monkeypatch)
    assert code == 4 and out["status"] == "BLOCKED_DEPENDENCY" and out["fix"]
