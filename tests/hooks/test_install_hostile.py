"""Attacks on `tether hook install|uninstall|status`: hooks that only look like tether's, settings files tether
could not write back whole (duplicate keys, numbers out of range, NaN, nesting too deep), things that are not
regular files (a FIFO must not hang the installer or status)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tether.hooks import status
from tether.hooks.install import EVENTS, main, ours, uninstall_main

SRC = Path(__file__).resolve().parents[2] / "src"
SHARED_PYTHON = "/usr/bin/python3"  # the shared_python fixture's (conftest.py)


pytestmark = pytest.mark.usefixtures("home")  # HOME and the agents' config dirs of every test: tmp_path's (conftest.py)


NOT_TETHERS = [
    "echo hook claude-code",
    "my-audit hook claude-code --log /var/log/x",
    "/home/u/mytether/hooks/launch.py claude-code",
    "bash /home/u/notether/hooks/hook.sh /usr/bin/python3 claude-code",
    "echo 'hook claude-code",  # not valid shell: tether never writes one
    "python3 -m mytether.cli.main hook claude-code",
]
TETHERS = [
    "tether hook claude-code",
    "/opt/venv/bin/tether hook claude-code --envelope /x.yaml || exit 2",
    "/opt/venv/bin/python -m tether.cli.main hook claude-code",
    "/usr/bin/python3 -I -S /opt/venv/lib/python3.11/site-packages/tether/hooks/launch.py claude-code || exit 2",
    "/bin/bash '/opt/my venv/tether/hooks/hook.sh' /opt/venv/bin/python claude-code || exit 2",
]


@pytest.mark.parametrize("command", NOT_TETHERS)
def test_a_users_hook_that_merely_looks_like_tethers_is_never_removed(tmp_path: Path, command: str) -> None:
    assert not ours({"type": "command", "command": command}, "claude-code")
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}]}}
    path.write_text(json.dumps(mine))
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert json.loads(path.read_text()) == mine, "install then uninstall leaves the user's hook as it was"


@pytest.mark.parametrize("command", TETHERS)
def test_every_form_tether_wrote_is_recognised(command: str) -> None:
    assert ours({"type": "command", "command": command}, "claude-code")
    assert not ours({"type": "command", "command": command}, "codex")
    assert not ours({"type": "command", "command": [command]}, "claude-code"), "a command that is not a string"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"model": "a", "model": "b"}', "duplicate key 'model'"),
        ('{"hooks": {}, "hooks": {"Stop": []}}', "duplicate key 'hooks'"),
        ('{"x": 1e400}', "out of range"),
        ('{"x": NaN}', "NaN is not JSON"),
        ('{"x": -Infinity}', "Infinity is not JSON"),
        ("[" * 100_000, "nested too deeply"),
        ('{"x": "\\u00e9"}' + "\udcff", "not valid JSON"),
    ],
)
def test_a_file_tether_could_not_write_back_whole_is_refused_and_untouched(
    tmp_path: Path, text: str, why: str, capsys
) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    before = path.read_bytes()
    assert main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert path.read_bytes() == before
    err = capsys.readouterr().err
    assert why in err or "utf-8" in err, err


def test_status_reads_duplicate_keys_as_the_agent_does_and_rejects_nan(tmp_path: Path, capsys) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"disableAllHooks": true, "disableAllHooks": false, "x": 1e400}')
    layer = status.read_layer("project", path, "claude-code")
    assert layer.error is None and layer.settings["disableAllHooks"] is False
    path.write_text('{"x": NaN}')
    assert "NaN" in (status.read_layer("project", path, "claude-code").error or "")
    path.write_text("[" * 100_000)
    assert "nested too deeply" in (status.read_layer("project", path, "claude-code").error or "")


def _cli(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "hook", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_settings_path_that_is_no_regular_file_is_refused_without_hanging(tmp_path: Path, kind: str) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    why = {"fifo": "not a regular file", "directory": "Is a directory"}
    if kind == "fifo":
        os.mkfifo(path)  # opening it to read would wait for a writer forever
    else:
        path.mkdir()
    done = _cli(["install", "claude-code"], tmp_path)
    assert done.returncode == 2 and why[kind] in done.stderr, done.stderr
    done = _cli(["uninstall", "claude-code"], tmp_path)
    assert done.returncode == 2 and why[kind] in done.stderr, done.stderr
    done = _cli(["status", "claude-code", "--json"], tmp_path)
    out = json.loads(done.stdout)
    assert done.returncode == 1
    assert any(why[kind] in p["problem"] and p["file"] == str(path) for p in out["problems"])
    assert path.is_fifo() if kind == "fifo" else path.is_dir(), "left as it was"


def test_an_oversized_settings_file_is_refused_not_read_whole(tmp_path: Path, monkeypatch, capsys) -> None:
    from tether.hooks import settings

    monkeypatch.setattr(settings, "MAX_SETTINGS_BYTES", 1000)
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"x": "' + "a" * 2000 + '"}')
    assert main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert "larger than" in capsys.readouterr().err


def test_install_then_uninstall_round_trips_every_other_key(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {
        "model": "x",
        "big": 123456789012345678901234567890,
        "float": 0.1,
        "text": 'é \u2028 \U0001f600 \\ "',
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 5}]}],
            "Notification": [],
            "Stop": [{"hooks": []}],
        },
    }
    path.write_text(json.dumps(theirs))
    for agent in EVENTS:
        assert main([agent, "--dir", str(tmp_path)]) == 0
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert json.loads(path.read_text()) == theirs


# --- the managed layer: who can read, who can change -------------------------------------------------------------


def test_a_relative_managed_dir_is_judged_from_the_root_not_the_cwd(shared: Path, shared_python, monkeypatch, capsys):
    private = shared / "private"
    (private / "open").mkdir(parents=True)
    private.chmod(0o700)  # other users cannot get past it, though the cwd below it is 0755
    (private / "open").chmod(0o755)
    monkeypatch.chdir(private / "open")
    assert main(["claude-code", "--managed", "--managed-dir", "m"]) == 2
    err = capsys.readouterr().err
    assert f"under {private}, mode drwx------" in err and str(private / "open" / "m") in err, err
    assert os.listdir(private / "open") == []


def test_a_managed_interpreter_others_could_replace_is_refused(shared: Path, shared_python, monkeypatch, capsys):
    bin_dir = shared / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    bin_dir.chmod(0o777)  # any user could swap the python every user's agent runs
    python = bin_dir / "python"
    python.symlink_to(SHARED_PYTHON)
    monkeypatch.setattr(sys, "executable", str(python))
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 2
    err = capsys.readouterr().err
    assert f"{bin_dir} (mode drwxrwxrwx: users other than its owner can change it)" in err, err
    assert not managed.exists()
    bin_dir.chmod(0o1777)  # sticky, but the entry below is fine only if it is no one else's
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0


@pytest.mark.root
def test_a_managed_command_or_layer_owned_by_another_user_is_refused(shared: Path, shared_python, capsys) -> None:
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    os.chown(envelope, 65534, 65534)  # nobody could rewrite the policy every user runs under
    managed = shared / "m"
    argv = ["claude-code", "--managed", "--managed-dir", str(managed), "--envelope", str(envelope)]
    assert main(argv) == 2
    assert f"{envelope} (owned by uid 65534, who can change it)" in capsys.readouterr().err
    os.chown(envelope, 0, 0)
    managed.mkdir()
    os.chown(managed, 65534, 65534)  # a managed directory a user owns is no managed layer
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{managed} (owned by uid 65534" in err and "a user could rewrite" in err, err
    assert os.listdir(managed) == []


def test_the_package_is_checked_file_by_file(tmp_path: Path) -> None:
    from tether.hooks.trust import changeable_by_others, unreadable_for_others

    package = Path(tempfile.mkdtemp(dir="/tmp", prefix="tether-pkg-"))
    try:
        package.chmod(0o755)
        (package / "tether" / "hooks").mkdir(parents=True)
        (package / "tether" / "hooks" / "hook.sh").write_text("")
        (package / "tether" / "kernel.py").write_text("")
        command = f"/usr/bin/bash {package}/tether/hooks/hook.sh /usr/bin/python3 claude-code || exit 2"
        assert changeable_by_others(command) == []
        (package / "tether" / "kernel.py").chmod(0o666)  # any user could put code into every user's hook
        assert changeable_by_others(command) == [
            f"{package}/tether/kernel.py (mode -rw-rw-rw-: users other than its owner can change it)"
        ]
        (package / "tether" / "kernel.py").chmod(0o600)  # pip under umask 077: other users cannot import it
        assert unreadable_for_others(command) == [
            f"{package}/tether/kernel.py (mode -rw-------: other users cannot read it)"
        ]
        (package / "tether" / "kernel.py").chmod(0o644)
        assert unreadable_for_others(command) == []
        (package / "tether" / "__pycache__").mkdir(mode=0o777)
        (package / "tether" / "__pycache__").chmod(0o777)  # a planted kernel.cpython-311.pyc would run instead
        assert changeable_by_others(command) == [
            f"{package}/tether/__pycache__ (mode drwxrwxrwx: users other than its owner can change it)"
        ]
    finally:
        shutil.rmtree(package)


def test_status_names_a_managed_layer_and_command_others_could_change(shared: Path, shared_python, capsys) -> None:
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    drop_in = managed / "managed-settings.d" / "tether.json"
    drop_in.chmod(0o666)
    capsys.readouterr()
    code = status.main(["claude-code", "--dir", str(shared), "--managed-dir", str(managed), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert any(
        p["file"] == str(drop_in) and "managed settings a user could rewrite" in p["problem"] for p in out["problems"]
    ), out["problems"]


# --- matchers and duplicates: tether's hook exactly once, on every call -----------------------------------------


def _tether_groups(settings: dict, event: str) -> list[dict]:
    return [g for g in settings["hooks"].get(event, []) if any(ours(h, "claude-code") for h in g["hooks"])]


def test_install_leaves_one_tether_entry_per_event_and_it_sees_every_tool(tmp_path: Path) -> None:
    """A tether entry moved under ``matcher: Bash`` (Write and Edit would go ungoverned), a second copy and an
    earlier release's entry: one install leaves exactly one entry per event, in a group that sees every call;
    the user's own hooks stay where they were."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"type": "command", "command": "guard.sh"}
    old = {"type": "command", "command": "/old/bin/tether hook claude-code"}
    path.write_text(
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {"matcher": "Bash", "hooks": [mine, old]},
                        {"matcher": "Bash", "hooks": [old]},
                        {"matcher": ".*", "hooks": [old, old]},
                    ],
                    "SessionStart": [{"matcher": "startup", "hooks": [old]}],
                    "Stop": [{"hooks": [old]}, {"hooks": [old]}],
                }
            }
        )
    )
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    written = json.loads(path.read_text())
    for event in EVENTS["claude-code"]:
        (group,) = _tether_groups(written, event)
        assert group.get("matcher", "") in ("", "*", ".*"), (event, group)
        assert sum(ours(h, "claude-code") for h in group["hooks"]) == 1, event
    assert written["hooks"]["PreToolUse"][0] == {"matcher": "Bash", "hooks": [mine]}
    assert len(written["hooks"]["PreToolUse"]) == 2, "the group tether's copy emptied went; the .* one kept it"
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert json.loads(path.read_text()) == written, "a second install changes nothing"


def test_status_says_tether_under_a_narrow_matcher_does_not_govern_the_event(tmp_path: Path, capsys, shared):
    from tether.hooks.command import hook_command

    path = tmp_path / ".claude" / "settings.json"
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    settings = json.loads(path.read_text())
    settings["hooks"]["PreToolUse"] = [
        {"matcher": "Bash", "hooks": [{"type": "command", "command": hook_command("claude-code", None)}]}
    ]
    path.write_text(json.dumps(settings))
    capsys.readouterr()
    code = status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(shared), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["agents"]["claude-code"]["missing_events"] == ["PreToolUse"]
    (layer,) = [la for la in out["agents"]["claude-code"]["layers"] if la["file"] == str(path)]
    assert layer["narrowed"] == ["PreToolUse (matcher 'Bash')"]
    assert any(
        "missing on PreToolUse (only under a matcher that selects some calls: PreToolUse (matcher 'Bash'))"
        in p["problem"]
        for p in out["problems"]
    ), out["problems"]


# --- other writers and crashes ------------------------------------------------------------------------------------


def test_an_edit_made_while_tether_writes_is_never_lost(tmp_path: Path, monkeypatch) -> None:
    """The agent or an editor (which take no lock of tether's) saves the file between tether's read and its
    rename: tether reads again and merges into that version instead of writing over it."""
    from tether.hooks import install

    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "a"}')
    real, calls = install.merged, []

    def racing(settings, *args):
        calls.append(dict(settings))
        if len(calls) == 1:
            path.write_text('{"model": "b", "permissions": {"allow": ["Bash(ls)"]}}')  # the editor saves
        return real(settings, *args)

    monkeypatch.setattr(install, "merged", racing)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    written = json.loads(path.read_text())
    assert written["model"] == "b" and written["permissions"] == {"allow": ["Bash(ls)"]}, "the edit is kept"
    assert all(_tether_groups(written, event) for event in EVENTS["claude-code"])
    assert [c.get("model") for c in calls] == ["a", "b"]


def test_a_file_that_keeps_changing_is_left_to_its_writer(tmp_path: Path, monkeypatch, capsys) -> None:
    from tether.hooks import install

    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{}")
    real, n = install.removed, iter(range(1000))

    def racing(settings, *args):
        path.write_text(json.dumps({**installed, "edit": next(n)}))  # it keeps saving, tether's hooks in it
        return real(settings, *args)

    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    installed = json.loads(path.read_text())
    monkeypatch.setattr(install, "removed", racing)
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 1
    assert "changed each of the 5 times tether read it" in capsys.readouterr().err
    assert json.loads(path.read_text()) == {**installed, "edit": 4}, "the other writer's last version stands"
    assert os.listdir(path.parent) == ["settings.json"], "no temporary file left"


def test_a_crash_before_the_rename_leaves_the_old_file_and_no_json_beside_it(shared: Path, shared_python) -> None:
    """Killed at the worst moment (the new file written and synced, not yet renamed): the settings are the old
    ones, whole; the temporary file left behind is no ``*.json``, so neither Claude Code's drop-in directory
    nor status takes it for settings."""
    managed = shared / "m"
    drop_ins = managed / "managed-settings.d"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    before = (drop_ins / "tether.json").read_bytes()
    code = (
        "import os, sys; from tether.hooks import install; "
        "os.replace = lambda *a: os._exit(9); "
        f"sys.exit(install.main(['claude-code', '--managed', '--lock', '--managed-dir', {str(managed)!r}]))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run([SHARED_PYTHON, "-c", code], env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode == 9, done.stderr
    assert (drop_ins / "tether.json").read_bytes() == before
    (left,) = [name for name in os.listdir(drop_ins) if name != "tether.json"]
    assert left.startswith("tether.json.") and not left.endswith(".json")
    layers = status.layers("claude-code", shared, managed)
    assert [la.file for la in layers if la.layer == "managed"][1:] == [str(drop_ins / "tether.json")]


# --- the command: one exact argv for the agent's shell ----------------------------------------------------------

HOSTILE_DIR = "my venv 'q' \"dq\" $HOME `id` ; & | *\nline2 \\ é"


def test_a_hostile_interpreter_path_is_one_exact_argv_recognised_and_parsed(tmp_path: Path, monkeypatch) -> None:
    weird = tmp_path / HOSTILE_DIR / "bin"
    weird.mkdir(parents=True)
    python = weird / "python3"
    python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(python))
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    command = json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    command = command["command"]
    assert command.endswith(" || exit 2")
    # What sh -c makes of the command's words: exactly the argv tether meant (printed NUL-separated).
    shown = subprocess.run(
        ["sh", "-c", "set -- " + command.removesuffix(" || exit 2") + '; printf "%s\\0" "$@"'],
        capture_output=True,
        check=True,
    ).stdout.decode()
    words = shown.split("\0")[:-1]
    assert words[3] == str(python) and words[4] == "claude-code" and len(words) == 5, words
    assert ours({"command": command}, "claude-code")
    parsed = status.parse_command(command)
    assert not isinstance(parsed, str) and parsed[2] == str(python)
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == {}


def test_an_interpreter_path_that_is_not_utf8_is_refused_and_status_says_it_cannot_run(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    """Settings are UTF-8 JSON: a path with a byte that is no UTF-8 would reach the agent mangled (U+FFFD), so
    every call would fail; status, which runs the path as Python sees it, would have said all is well."""
    raw = os.fsencode(str(tmp_path)) + b"/caf\xe9/bin"
    os.makedirs(raw)
    python = os.fsdecode(raw + b"/python3")
    os.symlink(sys.executable, python)
    monkeypatch.setattr(sys, "executable", python)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert "not valid UTF-8" in capsys.readouterr().err
    assert not (tmp_path / ".claude" / "settings.json").exists()
    from tether.hooks.command import hook_command

    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": hook_command("claude-code", None)}]}]}}
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))  # \udce9, as JSON escapes it
    assert status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(tmp_path / "none")]) == 1
    out = capsys.readouterr().out
    assert "tether's command cannot run" in out and "caf\\xe9" in out, out


def test_bash_is_never_taken_from_a_relative_path_entry(tmp_path: Path, monkeypatch) -> None:
    from tether.hooks.command import hook_command

    planted = tmp_path / "bash"
    planted.write_text("#!/bin/sh\necho planted\n")
    planted.chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", ".:" + os.environ.get("PATH", "/usr/bin:/bin"))
    assert not hook_command("claude-code", None).startswith("./"), "a project's ./bash would run every call"


def test_status_runs_only_a_program_named_like_python(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    fake = tmp_path / "not-python"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\n")
    fake.chmod(0o755)
    found = status.probe(str(fake))
    assert isinstance(found, str) and "does not look like a Python interpreter" in found
    assert not marker.exists()
    link = tmp_path / "python3"
    link.symlink_to(fake)  # named python, resolving to something else
    assert "does not look like" in str(status.probe(str(link))) and not marker.exists()


# --- links out of where the install writes ------------------------------------------------------------------------


def test_a_project_whose_settings_folder_links_out_of_it_is_refused(tmp_path: Path, capsys) -> None:
    """A cloned repository's ``.claude`` pointing elsewhere (another user's dotfiles, ``/etc/claude-code/
    managed-settings.d``): a project install, perhaps run as root, must not write there."""
    project, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    assert main(["claude-code", "--dir", str(project)]) == 2
    assert uninstall_main(["claude-code", "--dir", str(project)]) == 2
    assert "is a link out of the project" in capsys.readouterr().err
    assert os.listdir(elsewhere) == []
    (project / ".claude").unlink()
    (project / "shared-settings").mkdir()
    (project / ".claude").symlink_to("shared-settings")  # a link within the project is fine
    assert main(["claude-code", "--dir", str(project)]) == 0
    assert (project / "shared-settings" / "settings.json").is_file()


@pytest.mark.parametrize(
    ("files", "open_one"),
    [
        (("pyvenv.cfg",), "pyvenv.cfg"),
        (("pyvenv.cfg", "bin/pyvenv.cfg"), "pyvenv.cfg"),
        (("pyvenv.cfg", "bin/pyvenv.cfg"), "bin/pyvenv.cfg"),
    ],
)
def test_a_venv_whose_pyvenv_cfg_others_could_edit_is_refused(
    shared: Path, system_python: str, monkeypatch, capsys, files: tuple[str, ...], open_one: str
) -> None:
    """A venv's interpreter reads ``pyvenv.cfg`` at start-up (its ``home`` picks the base interpreter): the path
    calculation reads the one a directory above it first, ``site`` the one beside it first, so with both there,
    another user who may edit either picks the standard library every user runs."""
    venv = shared / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(SHARED_PYTHON)
    for name in files:
        (venv / name).write_text("home = /usr/bin\n")
        (venv / name).chmod(0o644)
    (venv / open_one).chmod(0o666)
    monkeypatch.setattr(sys, "executable", str(venv / "bin" / "python3"))
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 2
    assert f"{venv / open_one} (mode -rw-rw-rw-" in capsys.readouterr().err
    (venv / open_one).chmod(0o644)
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0


@pytest.mark.root
def test_a_managed_dir_linking_into_another_users_directory_is_refused(shared: Path, shared_python, capsys):
    """``/etc/claude-code`` a link to a root-owned 0755 directory inside a user's home: the user cannot edit
    the directory, but can rename it away and put their own in its place."""
    home = shared / "home-dev"
    (home / "cc").mkdir(parents=True)
    os.chown(home, 65534, 65534)
    link = shared / "etc-claude-code"
    link.symlink_to(home / "cc")
    assert main(["claude-code", "--managed", "--managed-dir", str(link)]) == 2
    err = capsys.readouterr().err
    assert f"{home} (owned by uid 65534" in err, err
    assert os.listdir(home / "cc") == []


def test_a_reinstall_without_lock_never_unlocks_and_uninstall_does(shared: Path, shared_python) -> None:
    managed = shared / "m"
    drop_in = managed / "managed-settings.d" / "tether.json"
    assert main(["claude-code", "--managed", "--lock", "--managed-dir", str(managed)]) == 0
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    assert json.loads(drop_in.read_text())["allowManagedHooksOnly"] is True
    assert uninstall_main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    assert not drop_in.exists()


@pytest.mark.root
def test_status_as_root_never_runs_a_program_another_user_could_change(tmp_path: Path, shared: Path, capsys):
    """``sudo tether hook status`` with a developer's HOME (sudo -E) reads their settings: the interpreter named
    there is theirs to change, so root must not run it."""
    from tether.hooks.command import hook_command

    theirs = shared / "dev-venv" / "bin"
    theirs.mkdir(parents=True)
    marker = shared / "ran"
    fake = theirs / "python3"
    fake.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    fake.chmod(0o755)
    os.chown(fake, 65534, 65534)
    user = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    user.parent.mkdir()
    command = hook_command("claude-code", None).replace(sys.executable, str(fake))
    entry = {"hooks": [{"type": "command", "command": command}]}
    user.write_text(json.dumps({"hooks": {event: [entry] for event in EVENTS["claude-code"]}}))
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(shared / "none"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert not marker.exists(), "root ran a program another user could change"
    (layer,) = [la for la in out["agents"]["claude-code"]["layers"] if la["file"] == str(user)]
    (cmd,) = layer["commands"]
    assert cmd["runnable"] is False and "is another user's to change" in cmd["notes"][0], cmd


@pytest.mark.root
def test_status_says_a_client_or_envelope_this_user_cannot_read_is_a_problem(shared: Path) -> None:
    """bash needs only to read the client (not run it), but it must read it: a 0600 root-owned hook.sh fails
    every call of every other user, though it exists and the interpreter imports tether fine."""
    client = shared / "tether" / "hooks" / "hook.sh"
    client.parent.mkdir(parents=True)
    client.write_text("exit 2\n")
    client.chmod(0o755)
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    envelope.chmod(0o600)
    words = ["/usr/bin/bash", str(client), SHARED_PYTHON, "claude-code", "--envelope", str(envelope)]
    code = (
        "import json, sys; from tether.hooks.status import missing_files; "
        f"print(json.dumps(missing_files({words!r}, {str(client)!r}, {SHARED_PYTHON!r})))"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}

    def as_nobody() -> list[str]:
        done = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SHARED_PYTHON, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(done.stdout)

    assert as_nobody() == [f"the envelope {envelope} named in tether's command cannot be read by this user"]
    envelope.chmod(0o644)
    client.chmod(0o711)  # runnable, not readable: bash cannot read the script
    assert as_nobody() == [f"{client} in tether's command cannot be read by this user"]
    client.chmod(0o644)
    assert as_nobody() == []


@pytest.mark.root
@pytest.mark.parametrize("closed", ["managed", "drop-ins"])
def test_a_managed_directory_this_user_cannot_search_is_named_not_a_crash(shared: Path, closed: str) -> None:
    """An admin's umask 077 made /etc/claude-code (or its managed-settings.d) 0700: status run by a developer
    names it (not "no file", not a traceback); uninstall exits 1 naming it."""
    managed = shared / "m"
    (managed / "managed-settings.d").mkdir(parents=True)
    (managed / "managed-settings.d" / "tether.json").write_text("{}")
    (managed if closed == "managed" else managed / "managed-settings.d").chmod(0o700)
    home = shared / "home"
    home.mkdir()
    os.chown(home, 65534, 65534)
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": str(home), "TETHER_HOOK_SOCKET": str(home / "s")}
    nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SHARED_PYTHON, "-m", "tether.cli.main"]

    def run(verb: str, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*nobody, "hook", verb, "claude-code", *flags, "--managed-dir", str(managed)],
            env=env,
            cwd=home,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    done = run("status")
    assert done.returncode == 1 and "Traceback" not in done.stderr and "failed" not in done.stderr, done.stderr
    assert "Permission denied" in done.stdout, done.stdout
    done = run("uninstall", "--managed")
    assert done.returncode == 1 and "Permission denied" in done.stderr, done.stderr


def test_install_then_uninstall_gives_back_a_file_byte_for_byte(tmp_path: Path) -> None:
    """A file in the layout tether writes (2-space JSON): every byte comes back, non-ASCII text included (it
    was turned into \\u escapes); a lone surrogate escape stays an escape."""
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    theirs = {
        "model": "opus",
        "statusLine": {"type": "command", "command": "echo 'café ✓ 日本'"},
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]},
        "env": {"X": "\u2028"},
    }
    text = json.dumps(theirs, indent=2, ensure_ascii=False) + "\n"
    path.write_text(text, encoding="utf-8")
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert "café ✓ 日本" in path.read_text(encoding="utf-8")
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert path.read_bytes() == text.encode("utf-8")
    path.write_text('{"x": "\\ud800"}')
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert '"\\ud800"' in path.read_text() and json.loads(path.read_text())["x"] == "\ud800"


def test_a_user_layer_inside_the_project_runs_nothing_from_the_project(tmp_path: Path, monkeypatch, capsys):
    """``CLAUDE_CONFIG_DIR=./.cfg`` set by a project's .envrc: the "user" settings are the project's, and so is
    the interpreter they name: status reads it, never runs it."""
    from tether.hooks.command import hook_command

    planted = tmp_path / ".venv" / "bin" / "python3"
    planted.parent.mkdir(parents=True)
    marker = tmp_path / "ran"
    planted.write_text(f"#!/bin/sh\ntouch {marker}\n")
    planted.chmod(0o755)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / ".cfg"))
    (tmp_path / ".cfg").mkdir()
    command = hook_command("claude-code", None).replace(sys.executable, str(planted))
    entry = {"hooks": [{"type": "command", "command": command}]}
    (tmp_path / ".cfg" / "settings.json").write_text(json.dumps({"hooks": {"Stop": [entry]}}))
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(tmp_path / "none"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert not marker.exists(), "status ran a program the project planted"
    (layer,) = [la for la in out["agents"]["claude-code"]["layers"] if la["layer"] == "user"]
    assert "is inside the project: not run" in layer["commands"][0]["notes"][0]


def test_the_code_digest_reads_each_file_bounded(tmp_path: Path, monkeypatch) -> None:
    from tether.hooks import settings

    package = tmp_path / "tether"
    package.mkdir()
    (package / "__init__.py").write_text('__version__ = "0"\n')
    huge = package / "huge.py"
    with huge.open("wb") as f:  # sparse: 64 GiB that cost nothing on disk, and would take minutes to read
        f.truncate(64 << 30)
    monkeypatch.setattr(settings, "MAX_SETTINGS_BYTES", 1 << 20)
    status.fingerprint.cache_clear()
    assert len(status.fingerprint(str(package))) == 16


@pytest.mark.root
def test_sudo_in_a_developers_project_leaves_the_settings_file_theirs(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text('{"model": "x"}')
    path.chmod(0o640)
    os.chown(path, 65534, 65534)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    info = path.stat()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o777) == (65534, 65534, 0o640)
    assert json.loads(path.read_text())["model"] == "x"


@pytest.mark.root
def test_sudo_in_a_developers_project_makes_the_new_settings_theirs(tmp_path: Path) -> None:
    project = tmp_path / "repo"
    project.mkdir()
    os.chown(project, 65534, 65534)
    assert main(["claude-code", "--dir", str(project)]) == 0
    for made in (project / ".claude", project / ".claude" / "settings.json"):
        assert (made.stat().st_uid, made.stat().st_gid) == (65534, 65534), made


def test_a_temporary_file_swapped_for_a_link_never_redirects_chmod_or_chown(tmp_path: Path, monkeypatch) -> None:
    """In a directory another user owns (sudo in their project), they can rename tether's temporary file and
    put a link to /etc/shadow in its place between two calls: tether sets mode and owner by descriptor, so the
    link's target keeps its own."""
    victim = tmp_path / "shadow"
    victim.write_text("secret")
    victim.chmod(0o600)
    real = tempfile.mkstemp

    def swapped(*args, **kwargs):
        fd, name = real(*args, **kwargs)
        os.rename(name, name + ".moved")
        os.symlink(victim, name)
        return fd, name

    monkeypatch.setattr(tempfile, "mkstemp", swapped)
    main(["claude-code", "--dir", str(tmp_path)])
    assert victim.stat().st_mode & 0o777 == 0o600 and victim.read_text() == "secret"


def test_the_bash_client_runs_nothing_the_agents_environment_names(tmp_path: Path, monkeypatch) -> None:
    """bash sources ``$BASH_ENV`` before a script, and takes functions exported in the environment over its
    builtins: either would let whatever sets the agent's environment answer for tether (a developer turning off
    a managed gate). The command runs ``bash -p``, which reads neither; its interpreter runs ``-I``."""
    from tether.hooks.command import hook_command

    marker = tmp_path / "ran"
    sourced = tmp_path / "bash_env.sh"
    sourced.write_text(f"echo BASH_ENV >> {marker}\n")
    command = hook_command("claude-code", None)
    env = {
        **os.environ,
        "BASH_ENV": str(sourced),
        "BASH_FUNC_printf%%": f"() {{ echo function >> {marker}; }}",
        "TETHER_HOOK_DAEMON": "0",
        "CLAUDE_PROJECT_DIR": str(tmp_path),
    }
    done = subprocess.run(["sh", "-c", command], input=b"not json", env=env, capture_output=True, timeout=120)
    assert done.returncode == 2, done.stderr  # the malformed input refused, by tether
    assert not marker.exists(), marker.read_text()


def test_status_names_a_bash_client_command_without_p(tmp_path: Path, capsys) -> None:
    from tether.hooks.command import hook_command

    command = hook_command("claude-code", None).replace(" -p ", " ", 1)  # as releases before it wrote it
    settings = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    status.main(["claude-code", "--dir", str(tmp_path), "--managed-dir", str(tmp_path / "none"), "--json"])
    problems = [p["problem"] for p in json.loads(capsys.readouterr().out)["problems"]]
    assert any("runs bash without -p" in p for p in problems), problems
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0  # the fix: install again, in place
    assert (
        " -p "
        in json.loads((tmp_path / ".claude" / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]["command"]
    )
