"""`tether hook install`: merges into the settings file, idempotently; never overwrites a malformed one."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tether.hooks.install import EVENTS, main, ours


def settings(tmp_path: Path, agent: str = "claude-code") -> dict:
    name = ".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json"
    return json.loads((tmp_path / name).read_text())


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_install_is_idempotent_and_keeps_what_is_there(tmp_path: Path, agent: str) -> None:
    name = ".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json"
    (tmp_path / name).parent.mkdir()
    mine = {"type": "command", "command": "my-formatter"}
    (tmp_path / name).write_text(
        json.dumps({"model": "x", "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine]}]}})
    )
    assert main([agent, "--dir", str(tmp_path)]) == 0
    once = settings(tmp_path, agent)
    assert main([agent, "--dir", str(tmp_path)]) == 0
    assert settings(tmp_path, agent) == once, "a second install changes nothing"
    assert once["model"] == "x" and once["hooks"]["PreToolUse"][0]["hooks"] == [mine]
    for event in EVENTS[agent]:
        commands = [h["command"] for g in once["hooks"][event] for h in g["hooks"]]
        assert sum(ours({"command": c}, agent) for c in commands) == 1, event
        assert all(c.endswith("|| exit 2") for c in commands if "tether" in c)


@pytest.mark.parametrize("text", ["{not json", "[]", '{"hooks": []}', '{"hooks": {"Stop": {"hooks": []}}}'])
def test_a_malformed_settings_file_is_an_error_and_left_untouched(tmp_path: Path, text: str, capsys) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text(text)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert path.read_text() == text
    assert str(path) in capsys.readouterr().err


def test_the_envelope_is_named_absolutely_and_must_exist(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["claude-code", "--envelope", "nope.yaml"]) == 2
    (tmp_path / "env.yaml").write_text("x: 1\n")
    assert main(["claude-code", "--envelope", "env.yaml"]) == 0
    command = settings(tmp_path)["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert f"--envelope {tmp_path / 'env.yaml'}" in command


def test_the_command_runs_the_bash_client_and_replaces_an_earlier_tether_entry(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    old = {"type": "command", "command": "/opt/venv/bin/tether hook claude-code || exit 2"}
    other = {"type": "command", "command": "lint-hook codex"}  # another agent's word order: not ours
    path.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [old, other]}]}}))
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    entries = settings(tmp_path)["hooks"]["PreToolUse"][0]["hooks"]
    assert len(entries) == 2 and entries[1] == other, "the old tether entry is replaced in place"
    words = shlex.split(entries[0]["command"].removesuffix(" || exit 2"))
    assert words[0] == shutil.which("bash") and words[1] == "-p" and words[2].endswith("tether/hooks/hook.sh")
    assert Path(words[2]).is_file() and words[3:] == [sys.executable, "claude-code"]
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert settings(tmp_path)["hooks"]["PreToolUse"][0]["hooks"] == entries, "the bash client's entry is ours too"


def test_without_bash_the_launcher_is_written_and_each_form_replaces_the_other(tmp_path: Path, monkeypatch) -> None:
    with_bash = settings_after_install(tmp_path)
    monkeypatch.setattr(shutil, "which", lambda name, **_: None)
    without = settings_after_install(tmp_path)
    words = shlex.split(without["hooks"]["Stop"][0]["hooks"][0]["command"].removesuffix(" || exit 2"))
    assert words[:3] == [sys.executable, "-I", "-S"] and words[3].endswith("tether/hooks/launch.py")
    assert Path(words[3]).is_file() and words[4] == "claude-code"
    monkeypatch.undo()
    assert settings_after_install(tmp_path) == with_bash, "one entry per event, whichever form was there"
    assert not ours({"command": "bash /x/tether/hooks/hook.sh /usr/bin/python3 codex"}, "claude-code")
    assert ours({"command": "bash /x/tether/hooks/hook.sh /usr/bin/python3 codex --envelope e"}, "codex")


def settings_after_install(tmp_path: Path) -> dict:
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    written = settings(tmp_path)
    for event in EVENTS["claude-code"]:
        assert len([h for g in written["hooks"][event] for h in g["hooks"]]) == 1, event
    return written
