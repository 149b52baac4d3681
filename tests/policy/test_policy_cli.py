"""``tether policy check`` and ``tether policy test`` through the real CLI app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli.main import app
from tether.errors import InputError, ParseError

runner = CliRunner()


def test_check_exit_codes(tmp_path: Path) -> None:
    ws = ["--workspace", str(tmp_path)]
    assert runner.invoke(app, ["policy", "check", *ws, "--", "ls -la"]).exit_code == 0
    assert runner.invoke(app, ["policy", "check", *ws, "--", "git push"]).exit_code == 5
    result = runner.invoke(app, ["policy", "check", *ws, "--", "rm -rf ~"])
    assert result.exit_code == 1
    assert "coding:deny-rm-home" in result.output


def test_check_json_and_tool_args(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        [
            "policy",
            "check",
            "--workspace",
            str(tmp_path),
            "--json",
            "--tool",
            "write_file",
            "--args",
            '{"path": ".git/config"}',
        ],
    )
    assert result.exit_code == 1
    data = json.loads(result.output)
    assert data["verdict"] == "DENY" and data["deciding_rule"] == "path:protected"
    assert data["rules"] and data["tool"] == "write_file"


def test_check_with_envelope(tmp_path: Path) -> None:
    envelope = tmp_path / "envelope.yaml"
    envelope.write_text(
        yaml.safe_dump(
            {
                "plan": {"path": "plan.yaml", "hash": "sha256:" + "0" * 64},
                "tools": [{"name": "sh", "purpose": "shell", "effects": ["exec"]}],
                "permissions": {"deny": [{"id": "no-make", "rule": "sh(make:*)", "reason": "no builds"}]},
                "environment": {"filesystem": {"read": ["**"], "write": ["**"]}},
            }
        )
    )
    result = runner.invoke(
        app, ["policy", "check", "-e", str(envelope), "-w", str(tmp_path), "--json", "--", "make", "all"]
    )
    assert result.exit_code == 1
    assert json.loads(result.output)["deciding_rule"] == "no-make"


def test_policy_test_reports_mismatches(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(
        yaml.safe_dump(
            [
                {"command": "ls", "expect": "ALLOW"},
                {"command": "curl x | sh", "expect": "DENY"},
                {"tool": "write_file", "args": {"path": "src/x.py"}, "expect": "ALLOW"},
            ]
        )
    )
    assert runner.invoke(app, ["policy", "test", str(cases), "-w", str(tmp_path)]).exit_code == 0
    cases.write_text(yaml.safe_dump([{"command": "git push", "expect": "ALLOW"}]))
    result = runner.invoke(app, ["policy", "test", str(cases), "-w", str(tmp_path), "--json"])
    assert result.exit_code == 1
    mismatch = json.loads(result.output)["mismatches"][0]
    assert (mismatch["expected"], mismatch["verdict"]) == ("ALLOW", "ASK")


def test_policy_test_bad_file(tmp_path: Path) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(yaml.safe_dump([{"command": "ls", "expect": "MAYBE"}]))
    result = runner.invoke(app, ["policy", "test", str(cases)])
    assert result.exit_code != 0


def test_check_uses_the_envelope_here_and_says_so(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: without -e the built-in envelope answered ALLOW where ./envelope.yaml says DENY."""
    monkeypatch.chdir(example)
    here = runner.invoke(app, ["policy", "check", "--json", "--", "rm -rf build"])
    assert here.exit_code == 1, here.output
    data = json.loads(here.output)
    assert data["verdict"] == "DENY" and data["envelope"] == str((example / "envelope.yaml").resolve())
    builtin = runner.invoke(app, ["policy", "check", "--builtin", "--", "rm -rf build"])
    assert builtin.exit_code == 0 and "envelope: (built-in)" in builtin.output
    text = runner.invoke(app, ["policy", "check", "--", "rm -rf build"])
    assert f"envelope: {(example / 'envelope.yaml').resolve()}" in text.output
    both = runner.invoke(app, ["policy", "check", "--builtin", "-e", "envelope.yaml", "--", "ls"])
    assert isinstance(both.exception, InputError)


def test_a_broken_envelope_here_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "envelope.yaml").write_text("tools: [")
    result = runner.invoke(app, ["policy", "check", "--", "ls"])
    assert result.exit_code != 0 and isinstance(result.exception, ParseError)
