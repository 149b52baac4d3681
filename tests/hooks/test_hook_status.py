"""`tether hook status`: every layer, every problem named with its file and fix, exit 0 / 1 / 2; real files under
tmp_path, HOME a tmp dir, the managed directory given (never the real /etc or ~)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest

from tether.hooks import status
from tether.hooks.command import hook_command
from tether.hooks.install import EVENTS
from tether.hooks.install import main as install

pytestmark = pytest.mark.usefixtures("home")  # HOME and the agents' config dirs of every test: tmp_path's (conftest.py)


@pytest.fixture(autouse=True)
def managed(shared: Path) -> Path:
    """The managed directory of every test: under /tmp itself, which every user may enter (tmp_path is under a
    0700 directory, which status rightly reports as a managed layer other users cannot read)."""
    return shared


@pytest.fixture
def same_tether(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter in the command imports this very tether (in this dev tree the venv's interpreter imports
    the main checkout's, which is other code: the probe's real answer is tested on its own below)."""
    me = status.this_tether()
    monkeypatch.setattr(status, "probe", lambda python: (me["version"], me["package"]))


def run(tmp_path: Path, capsys, managed: Path, *extra: str, agent: str = "claude-code") -> tuple[int, dict]:
    capsys.readouterr()  # what an install printed
    code = status.main([agent, "--dir", str(tmp_path), "--managed-dir", str(managed), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


def problems(out: dict) -> str:
    return "\n".join(f"{p['file']}: {p['problem']} | {p['fix']}" for p in out["problems"])


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_a_good_install_is_exit_0_and_every_layer_is_reported(
    tmp_path: Path, capsys, same_tether, agent: str, managed: Path
) -> None:
    assert install([agent, "--dir", str(tmp_path)]) == 0
    capsys.readouterr()
    code, out = run(tmp_path, capsys, managed, agent=agent)
    assert code == 0, problems(out)
    layers = out["agents"][agent]["layers"]
    expected = {"managed", "project", "user"} | ({"local"} if agent == "claude-code" else set())
    assert {layer["layer"] for layer in layers} == expected
    (project,) = [layer for layer in layers if layer["layer"] == "project"]
    assert project["events"] == list(EVENTS[agent])
    (cmd,) = project["commands"]
    assert cmd["runnable"] and cmd["same_code"] and cmd["interpreter"] == sys.executable
    assert out["agents"][agent]["missing_events"] == [] and out["daemon"]["running"] is False
    assert status.main([agent, "--dir", str(tmp_path), "--managed-dir", str(managed)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("ok")


def test_nothing_installed_is_a_problem_with_the_command_to_fix_it(tmp_path: Path, capsys, managed: Path) -> None:
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and "not installed for claude-code in any layer" in problems(out)
    assert "tether hook install claude-code" in problems(out)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("{not json", "cannot read it"),
        ('{"hooks": "tether hook claude-code"}', "field 'hooks' must be an object"),
        ('{"hooks": {"Stop": ["a string entry"]}}', "hooks.Stop' must be a list of objects"),
        ("[1]", "expected a JSON object"),
    ],
)
def test_a_malformed_settings_file_is_named(
    tmp_path: Path, capsys, same_tether, text: str, says: str, managed: Path
) -> None:
    assert install(["claude-code", "--user"]) == 0
    local = tmp_path / ".claude" / "settings.local.json"
    local.parent.mkdir()
    local.write_text(text)
    code, out = run(tmp_path, capsys, managed)
    assert code == 1
    (problem,) = out["problems"]
    assert problem["file"] == str(local) and says in problem["problem"]


def test_a_missing_event_and_a_deleted_venv_are_problems(tmp_path: Path, capsys, monkeypatch, managed: Path) -> None:
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(venv / "python"))
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    path = tmp_path / ".claude" / "settings.json"
    settings = json.loads(path.read_text())
    del settings["hooks"]["Stop"]
    path.write_text(json.dumps(settings))
    shutil.rmtree(tmp_path / "venv")
    code, out = run(tmp_path, capsys, managed)
    assert code == 1
    text = problems(out)
    assert "missing on Stop" in text and f"tether hook install claude-code --dir {tmp_path}" in text
    assert f"{venv / 'python'} in tether's command does not exist (a moved or deleted venv?)" in text
    assert out["agents"]["claude-code"]["missing_events"] == ["Stop"]
    assert out["agents"]["claude-code"]["layers"][-2]["commands"][0]["runnable"] is False


def test_the_real_probe_names_an_interpreter_without_tether(
    tmp_path: Path, capsys, shared_python: str, managed: Path
) -> None:
    # sys.executable is the system's python3: shared by every user, tether not installed in it
    assert install(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    code, out = run(tmp_path, capsys, managed)
    assert code == 1
    assert "/usr/bin/python3 cannot import tether (ModuleNotFoundError: No module named 'tether')" in problems(out)
    assert "/nonexistent/python does not run" in str(status.probe("/nonexistent/python"))


def test_the_probe_reports_the_tether_an_interpreter_imports() -> None:
    found = status.probe(sys.executable)
    assert isinstance(found, tuple) and found[0] == status.this_tether()["version"]
    assert Path(found[1], "hooks", "install.py").is_file()


def test_lock_without_a_managed_install_says_tethers_hooks_do_not_run(
    tmp_path: Path, capsys, same_tether, managed: Path
) -> None:
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    drop_ins = managed / "managed-settings.d"
    drop_ins.mkdir(parents=True)
    (drop_ins / "00-security.json").write_text('{"allowManagedHooksOnly": true}')
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and "only managed hooks run, and tether's are in no managed layer" in problems(out)
    assert out["agents"]["claude-code"]["managed_only"] == str(drop_ins / "00-security.json")
    (drop_ins / "zz-later.json").write_text('{"allowManagedHooksOnly": false}')  # a later drop-in wins
    code, out = run(tmp_path, capsys, managed)
    assert code == 0, problems(out)
    (managed / "managed-settings.json").write_text('{"disableAllHooks": true}')
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and "disableAllHooks: no hook runs" in problems(out)


def test_two_different_tether_commands_are_a_problem(tmp_path: Path, capsys, same_tether, managed: Path) -> None:
    (tmp_path / "e.yaml").write_text("x: 1\n")
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    assert install(["claude-code", "--user", "--envelope", str(tmp_path / "e.yaml")]) == 0
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and "2 different tether commands run on each call" in problems(out)


def test_codex_managed_only_is_read_from_requirements_toml(tmp_path: Path, capsys, same_tether, managed: Path) -> None:
    assert install(["codex", "--dir", str(tmp_path)]) == 0

    (managed / "requirements.toml").write_text("allow_managed_hooks_only = true\n")
    code, out = run(tmp_path, capsys, managed, agent="codex")
    assert code == 1 and "only managed hooks run" in problems(out)
    (managed / "requirements.toml").write_text("allow_managed_hooks_only = [\n")
    code, out = run(tmp_path, capsys, managed, agent="codex")
    (problem,) = out["problems"]
    assert (
        code == 1 and problem["file"] == str(managed / "requirements.toml") and "cannot read it" in problem["problem"]
    )


def test_a_daemon_listening_on_the_socket_is_seen(tmp_path: Path, capsys, monkeypatch, managed: Path) -> None:
    path = tmp_path / "s" / "hookd.sock"
    path.parent.mkdir(mode=0o700)
    monkeypatch.setenv("TETHER_HOOK_SOCKET", str(path))
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        assert status.daemon() == {"socket": str(path), "running": True}
    _, out = run(tmp_path, capsys, managed)
    assert out["daemon"]["running"] is False


@pytest.mark.parametrize("argv", [["--bogus"], ["--dir"], ["--managed-dir", "/x"]])
def test_usage_is_exit_2(argv: list[str], capsys) -> None:
    assert status.main(argv) == 2
    assert "usage: tether hook status" in capsys.readouterr().err


def test_status_runs_no_program_from_the_project_it_checks(tmp_path: Path, capsys, monkeypatch, managed: Path) -> None:
    """A project's settings can name any file of the project as tether's interpreter: status reads, never runs
    it (the code check is then static: the version and digest of the package the client sits in)."""
    trap = tmp_path / ".venv" / "bin" / "python"
    trap.parent.mkdir(parents=True)
    trap.write_text(f"#!/bin/sh\ntouch {tmp_path / 'ran'}\n")
    trap.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(trap))
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    code, out = run(tmp_path, capsys, managed)
    assert not (tmp_path / "ran").exists(), "the project's program was run"
    (project,) = [layer for layer in out["agents"]["claude-code"]["layers"] if layer["layer"] == "project"]
    (cmd,) = project["commands"]
    assert "is inside the project: not run" in cmd["notes"][0] and cmd["runnable"] is False
    assert cmd["same_code"] is True and code == 0, problems(out)
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(managed)])
    assert "[not run: " in capsys.readouterr().out


def test_a_managed_file_other_users_cannot_read_is_a_problem(
    tmp_path: Path, capsys, same_tether, managed: Path
) -> None:
    drop_in = managed / "managed-settings.d" / "tether.json"
    drop_in.parent.mkdir()
    drop_in.write_text("{}")
    drop_in.chmod(0o600)
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and f"{drop_in}: other users' claude-code cannot read it" in problems(out)


def test_a_settings_link_is_read_through_and_reported(
    tmp_path: Path, capsys, same_tether, home: Path, managed: Path
) -> None:
    assert install(["claude-code", "--user"]) == 0
    real = home / ".claude" / "settings.json"
    moved = tmp_path / "dotfiles.json"
    real.rename(moved)
    real.symlink_to(moved)
    code, out = run(tmp_path, capsys, managed)
    (user,) = [layer for layer in out["agents"]["claude-code"]["layers"] if layer["layer"] == "user"]
    assert code == 0 and user["link"] == str(moved) and user["events"] == list(EVENTS["claude-code"])


def test_a_managed_command_whose_package_other_users_cannot_reach_is_a_problem(
    tmp_path: Path, capsys, same_tether, managed: Path, system_python: str
) -> None:
    """The check is on the package the command's client sits in (here a copy under a 0700 directory), not on
    the tether answering."""
    client = tmp_path / "site" / "tether" / "hooks" / "hook.sh"
    client.parent.mkdir(parents=True)
    shutil.copy(Path(status.__file__).with_name("hook.sh"), client)
    command = f"{shutil.which('bash')} {client} /usr/bin/python3 claude-code || exit 2"
    entry = {"hooks": [{"type": "command", "command": command}]}
    drop_in = managed / "managed-settings.d" / "tether.json"
    drop_in.parent.mkdir()
    drop_in.write_text(json.dumps({"hooks": {event: [entry] for event in EVENTS["claude-code"]}}))
    (tmp_path / "site").chmod(0o700)
    code, out = run(tmp_path, capsys, managed)
    assert code == 1
    assert f"other users cannot use {tmp_path / 'site' / 'tether'} (under " in problems(out)


def test_disable_all_hooks_outside_managed_settings_leaves_only_managed_hooks(
    tmp_path: Path, capsys, same_tether, managed: Path, home: Path
) -> None:
    assert install(["claude-code", "--dir", str(tmp_path)]) == 0
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"disableAllHooks": true}')
    code, out = run(tmp_path, capsys, managed)
    assert code == 1 and f"{home / '.claude' / 'settings.json'}: it sets disableAllHooks" in problems(out)
    local = tmp_path / ".claude" / "settings.local.json"
    local.write_text('{"disableAllHooks": false}')  # the more specific file wins
    code, out = run(tmp_path, capsys, managed)
    assert code == 0, problems(out)


@pytest.mark.parametrize(
    ("agent", "var", "name"),
    [("claude-code", "CLAUDE_CONFIG_DIR", "settings.json"), ("codex", "CODEX_HOME", "hooks.json")],
)
def test_the_user_layer_is_where_the_agent_keeps_it(
    tmp_path: Path, capsys, same_tether, managed: Path, monkeypatch, agent: str, var: str, name: str
) -> None:
    monkeypatch.setenv(var, str(tmp_path / "elsewhere"))
    assert install([agent, "--user"]) == 0
    assert (tmp_path / "elsewhere" / name).is_file()
    code, out = run(tmp_path, capsys, managed, agent=agent)
    (user,) = [layer for layer in out["agents"][agent]["layers"] if layer["layer"] == "user"]
    assert code == 0 and user["file"] == str(tmp_path / "elsewhere" / name) and user["events"] == list(EVENTS[agent])


def test_codex_hooks_written_inline_in_toml_are_found(
    tmp_path: Path, capsys, same_tether, managed: Path, monkeypatch, shared_python: str
) -> None:
    """Codex also reads `[hooks]` tables in a layer's config.toml (and managed ones in requirements.toml);
    `[hooks.state]` is Codex's trust bookkeeping, no event."""
    # sys.executable is the system's python3 (shared_python): a managed command every user can run
    command = hook_command("codex", None)
    inline = "".join(
        f'[[hooks.{e}]]\n[[hooks.{e}.hooks]]\ntype = "command"\ncommand = {json.dumps(command)}\n'
        for e in EVENTS["codex"]
    )
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text('model = "x"\n[hooks.state]\nx = 1\n' + inline)
    code, out = run(tmp_path, capsys, managed, agent="codex")
    (toml,) = [layer for layer in out["agents"]["codex"]["layers"] if layer["file"].endswith("config.toml")]
    assert code == 0 and toml["layer"] == "project" and toml["events"] == list(EVENTS["codex"]), problems(out)
    (managed / "requirements.toml").write_text(
        '[hooks]\nmanaged_dir = "/x"\n' + inline.replace("PreToolUse", "Stop", 0)
    )
    code, out = run(tmp_path, capsys, managed, agent="codex")
    (req,) = [layer for layer in out["agents"]["codex"]["layers"] if layer["file"].endswith("requirements.toml")]
    assert req["layer"] == "managed" and req["events"] == list(EVENTS["codex"]) and code == 0, problems(out)
    (tmp_path / ".codex" / "config.toml").write_text("hooks = 3\n")
    code, out = run(tmp_path, capsys, managed, agent="codex")
    assert code == 1 and "field 'hooks' must be a table" in problems(out)


def test_the_cache_beside_the_database_is_named_writable_unwritable_or_none(
    tmp_path: Path, capsys, managed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the project's fold checkpoints and kept envelope go, and whether this user can write there: each state
    named in the JSON and the text (never a problem: a hook call without them only costs more)."""
    monkeypatch.delenv("TETHER_DB", raising=False)
    folds = tmp_path / ".tether" / "tether.db.folds"
    assert status.cache_state(tmp_path) == {
        "folder": str(folds),
        "state": "writable",
        "why": "fold checkpoints and the envelope kept (made at the first checkpoint)",
    }
    (tmp_path / ".tether").mkdir()
    folds.write_text("")  # a file where the folder goes: nothing can be kept
    _, out = run(tmp_path, capsys, managed)
    assert out["cache"]["state"] == "unwritable" and f"{folds} is not a directory" in out["cache"]["why"]
    assert "folds the whole log and validates the envelope again" in out["cache"]["why"]
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(managed)])
    assert f"cache: {folds}: unwritable: {folds} is not a directory" in capsys.readouterr().out
    folds.unlink()
    folds.mkdir()
    assert status.cache_state(tmp_path)["state"] == "writable"
    # a folder this user may not write (as a user other than its owner sees a 0755 folder of root's): a stand-in
    # for os.access, since this test may run as root, whom the mode bits do not stop
    monkeypatch.setattr(status.os, "access", lambda path, mode: Path(path) != folds)
    assert status.cache_state(tmp_path)["state"] == "unwritable"
    assert f"{folds} is not writable by this user" in status.cache_state(tmp_path)["why"]
    monkeypatch.setenv("TETHER_DB", "postgresql://db.example/tether")
    assert status.cache_state(tmp_path)["state"] == "none"


def test_a_table_older_than_a_module_of_the_package_is_named_stale(shared: Path) -> None:
    from tether import compiled

    package = shared / "tether"
    (package / "hooks" / "__pycache__").mkdir(parents=True)
    (package / "hooks" / "entry.py").write_text("")
    assert status.table_state(package, status.init_table(package)) == "missing"
    table = package / "__pycache__" / f"dataclass-code.cpython-311.v{compiled.FORMAT}.a70d0d0a.marshal"
    table.parent.mkdir()
    table.write_bytes(b"")
    os.utime(package / "hooks" / "entry.py", (1, 1))
    assert status.table_state(package, status.init_table(package)) == "current"
    (package / "hooks" / "__pycache__" / "x.py").write_text("")  # bytecode folders are not the package's modules
    os.utime(package / "hooks" / "__pycache__" / "x.py", (4e9, 4e9))
    assert status.table_state(package, str(table)) == "current"
    os.utime(package / "hooks" / "entry.py", (4e9, 4e9))  # an upgrade after the install warmed it
    assert status.table_state(package, str(table)) == "stale"
    assert status.table_line("stale", str(table)).startswith(f"stale __init__ code table: {table}")


@pytest.mark.parametrize("agent", ["claude-code", "codex"])
def test_tethers_hook_on_an_event_it_refuses_is_a_problem(
    tmp_path: Path, capsys, same_tether, agent: str, managed: Path
) -> None:
    """An entry copied onto every event: tether refuses each call of one it does not answer (exit 2), which some
    events read as "stop" (Claude Code's PostToolBatch ends the agent's loop). An event it only records is fine."""
    assert install([agent, "--dir", str(tmp_path)]) == 0
    path = tmp_path / (".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json")
    settings = json.loads(path.read_text())
    ours = settings["hooks"]["Stop"][0]
    settings["hooks"]["PostToolBatch"] = [ours]
    settings["hooks"]["SubagentStop"] = [ours]
    path.write_text(json.dumps(settings))
    code, out = run(tmp_path, capsys, managed, agent=agent)
    assert code == 1
    text = problems(out)
    assert "tether's hook is on PostToolBatch, an event it does not answer" in text, text
    assert "SubagentStop" not in text and "remove tether's entry from hooks.PostToolBatch" in text
