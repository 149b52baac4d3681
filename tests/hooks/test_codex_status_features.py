"""``tether hook status codex`` sees a ``[features]`` switch that turns Codex's hooks off.

Codex runs hooks by default; ``[features] hooks = false`` (``codex_hooks``, the older key, still works as an alias)
in a config.toml turns every hook off, tether's included, and ``requirements.toml`` may force that. Status read only
the hooks tables of those files, so it reported tether as governing while Codex ran none of its hooks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tether.hooks import status
from tether.hooks.install import main as install

pytestmark = pytest.mark.usefixtures("home")


@pytest.fixture
def same_tether(monkeypatch: pytest.MonkeyPatch) -> None:
    me = status.this_tether()
    monkeypatch.setattr(status, "probe", lambda python: (me["version"], me["package"]))


def run(tmp_path: Path, capsys: pytest.CaptureFixture[str], managed: Path) -> tuple[int, dict]:
    capsys.readouterr()
    code = status.main(["codex", "--dir", str(tmp_path), "--managed-dir", str(managed), "--json"])
    return code, json.loads(capsys.readouterr().out)


def off(out: dict) -> list[str]:
    return [p["file"] for p in out["problems"] if "Codex runs no hook" in p["problem"]]


@pytest.mark.parametrize("key", ["hooks", "codex_hooks"])
@pytest.mark.parametrize("where", ["project", "user", "system", "requirements"])
def test_hooks_turned_off_in_features_is_a_problem_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], same_tether: None, shared: Path, key: str, where: str
) -> None:
    assert install(["codex", "--dir", str(tmp_path)]) == 0
    assert run(tmp_path, capsys, shared)[0] == 0
    files = {
        "project": tmp_path / ".codex" / "config.toml",
        "user": Path.home() / ".codex" / "config.toml",
        "system": shared / "config.toml",
        "requirements": shared / "requirements.toml",
    }
    files[where].parent.mkdir(parents=True, exist_ok=True)
    files[where].write_text(f'model = "gpt-5-codex"\n[features]\n{key} = false\nunified_exec = true\n')
    code, out = run(tmp_path, capsys, shared)
    assert code == 1 and off(out) == [str(files[where])], out["problems"]


def test_a_more_specific_config_turning_hooks_back_on_wins_but_not_over_requirements(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], same_tether: None, shared: Path
) -> None:
    assert install(["codex", "--dir", str(tmp_path)]) == 0
    (shared / "config.toml").write_text("[features]\nhooks = false\n")
    (tmp_path / ".codex" / "config.toml").write_text("[features]\nhooks = true\n")
    assert run(tmp_path, capsys, shared)[0] == 0
    (shared / "requirements.toml").write_text("[features]\ncodex_hooks = false\n")
    code, out = run(tmp_path, capsys, shared)
    assert code == 1 and off(out) == [str(shared / "requirements.toml")]


def test_features_that_leave_hooks_alone_are_no_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], same_tether: None, shared: Path
) -> None:
    assert install(["codex", "--dir", str(tmp_path)]) == 0
    (tmp_path / ".codex" / "config.toml").write_text('[features]\nunified_exec = false\nhooks = "yes"\n')
    (shared / "config.toml").write_text("features = 3\n")
    assert run(tmp_path, capsys, shared)[0] == 0


@pytest.mark.parametrize("agent", ["codex", "claude-code"])
def test_a_tether_entry_marked_async_governs_nothing_and_a_reinstall_makes_it_blocking(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], same_tether: None, shared: Path, agent: str
) -> None:
    """Both agents run an ``async: true`` command hook in the background (Codex: the handler's ``async`` flag, its
    output never joins the tool call's outcome): tether's answer to that event then blocks nothing."""
    assert install([agent, "--dir", str(tmp_path)]) == 0
    path = tmp_path / (".codex/hooks.json" if agent == "codex" else ".claude/settings.json")
    settings = json.loads(path.read_text())
    for group in settings["hooks"]["PreToolUse"]:
        for entry in group["hooks"]:
            entry["async"] = True
    path.write_text(json.dumps(settings))
    capsys.readouterr()
    code = status.main([agent, "--dir", str(tmp_path), "--managed-dir", str(shared), "--json"])
    out = json.loads(capsys.readouterr().out)
    text = " ".join(p["problem"] for p in out["problems"])
    assert code == 1 and "missing on PreToolUse" in text and "async" in text, out["problems"]
    assert install([agent, "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert status.main([agent, "--dir", str(tmp_path), "--managed-dir", str(shared), "--json"]) == 0
    assert "async" not in path.read_text()
