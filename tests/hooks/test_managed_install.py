"""`tether hook install --managed [--lock]` and `tether hook uninstall`: the managed layer, a drop-in of tether's
own, refusals that leave every file as it was (not root, other users locked out, a link), racing installers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.hooks.install import EVENTS, InstallError, main, ours, uninstall_main

SRC = Path(__file__).resolve().parents[2] / "src"
SHARED_PYTHON = "/usr/bin/python3"  # a system interpreter every user may run (the venv's is under /root)


pytestmark = pytest.mark.usefixtures("home")  # HOME and the agents' config dirs of every test: tmp_path's (conftest.py)


def tether_commands(settings: dict, event: str, agent: str = "claude-code") -> list[str]:
    return [h["command"] for g in settings.get("hooks", {}).get(event, []) for h in g["hooks"] if ours(h, agent)]


def test_managed_writes_a_drop_in_of_its_own_and_never_the_platform_teams_file(shared: Path, shared_python) -> None:
    managed = shared / "etc-claude-code"
    managed.mkdir()
    base = managed / "managed-settings.json"
    base.write_text('{"permissions": {"deny": ["Read(./.env)"]}, "hooks": {"Stop": []}}')
    before = base.read_bytes()
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    drop_in = managed / "managed-settings.d" / "tether.json"
    written = json.loads(drop_in.read_text())
    assert base.read_bytes() == before, "the platform team's file is not touched"
    for event in EVENTS["claude-code"]:
        (command,) = tether_commands(written, event)
        assert f" {shared_python} claude-code" in command
    assert "allowManagedHooksOnly" not in written
    assert main(["claude-code", "--managed", "--lock", "--managed-dir", str(managed)]) == 0
    locked = json.loads(drop_in.read_text())
    assert locked["allowManagedHooksOnly"] is True
    assert {k: v for k, v in locked.items() if k != "allowManagedHooksOnly"} == written, "idempotent"
    assert oct(drop_in.stat().st_mode & 0o777) == oct(0o644), "every user's Claude Code reads it"


def test_managed_codex_writes_the_system_layers_hooks_file(shared: Path, shared_python, capsys) -> None:
    managed = shared / "etc-codex"
    assert main(["codex", "--managed", "--managed-dir", str(managed)]) == 0
    written = json.loads((managed / "hooks.json").read_text())
    assert all(len(tether_commands(written, e, "codex")) == 1 for e in EVENTS["codex"])
    assert main(["codex", "--managed", "--lock", "--managed-dir", str(managed)]) == 2
    assert "allow_managed_hooks_only" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["claude-code", "--lock"],  # --lock without --managed
        ["claude-code", "--managed", "--user"],
        ["claude-code", "--managed-dir", "/x"],  # --managed-dir without --managed
        ["claude-code", "--managed", "--managed-dir"],
        ["cursor", "--managed"],
    ],
)
def test_usage_errors(argv: list[str], capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: ")


def test_managed_refuses_an_interpreter_other_users_cannot_reach(tmp_path: Path, monkeypatch, capsys) -> None:
    private = tmp_path / "private"
    (private / "venv" / "bin").mkdir(parents=True)
    private.chmod(0o700)
    python = private / "venv" / "bin" / "python"
    python.symlink_to(sys.executable)
    monkeypatch.setattr(sys, "executable", str(python))
    managed = tmp_path / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 2
    err = capsys.readouterr().err
    assert str(python) in err and "other users cannot" in err
    assert not managed.exists(), "nothing written"


def test_managed_refuses_an_envelope_other_users_cannot_read(shared: Path, shared_python, capsys) -> None:
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    envelope.chmod(0o600)
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed), "--envelope", str(envelope)]) == 2
    assert f"{envelope} (mode -rw-------" in capsys.readouterr().err
    envelope.chmod(0o644)
    assert main(["claude-code", "--managed", "--managed-dir", str(managed), "--envelope", str(envelope)]) == 0


def test_managed_layer_is_readable_by_every_user_whatever_the_umask(shared: Path, shared_python) -> None:
    old = os.umask(0o077)
    try:
        assert main(["claude-code", "--managed", "--managed-dir", str(shared / "new" / "etc")]) == 0
    finally:
        os.umask(old)
    drop_in = shared / "new" / "etc" / "managed-settings.d" / "tether.json"
    for path in (shared / "new", shared / "new" / "etc", drop_in.parent):
        assert path.stat().st_mode & 0o777 == 0o755, path
    assert drop_in.stat().st_mode & 0o777 == 0o644


def test_managed_refuses_a_directory_other_users_cannot_enter(shared: Path, shared_python, capsys) -> None:
    managed = shared / "etc"
    managed.mkdir(mode=0o700)
    managed.chmod(0o700)
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 2
    assert (
        f"other users' claude-code could not read {managed}/managed-settings.d/tether.json" in capsys.readouterr().err
    )
    assert os.listdir(managed) == []


@pytest.mark.root
def test_not_root_is_a_clear_error_and_nothing_is_half_written(shared: Path, shared_python) -> None:
    """A real non-root user (nobody) against a root-owned managed directory: install and uninstall exit 1, the
    file and the fix named, nothing changed, no temporary file left behind."""
    (shared / "managed-settings.d").mkdir(mode=0o755)
    argv = ["claude-code", "--managed", "--managed-dir", str(shared)]
    done = as_nobody("main", argv)
    assert done.returncode == 1, done.stderr
    assert f"cannot write {shared}/managed-settings.d/tether.json" in done.stderr
    assert "nothing was changed" in done.stderr
    assert (
        f"sudo {SHARED_PYTHON} -m tether.cli.main hook install claude-code --managed --managed-dir {shared}"
        in done.stderr
    )
    assert os.listdir(shared / "managed-settings.d") == []
    assert main(argv) == 0  # root installs
    before = (shared / "managed-settings.d" / "tether.json").read_bytes()
    done = as_nobody("uninstall_main", argv)
    assert done.returncode == 1 and "sudo" in done.stderr, done.stderr
    assert os.listdir(shared / "managed-settings.d") == ["tether.json"]
    assert (shared / "managed-settings.d" / "tether.json").read_bytes() == before


def as_nobody(function: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from tether.hooks.install import {function}; sys.exit({function}({argv!r}))"
    return subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", SHARED_PYTHON, "-c", code],
        env={"PYTHONPATH": str(SRC), "HOME": "/nonexistent", "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )


def test_a_settings_file_that_is_a_link_is_refused_and_neither_link_nor_target_changes(tmp_path: Path, capsys) -> None:
    target = tmp_path / "dotfiles" / "settings.json"
    target.parent.mkdir()
    target.write_text('{"model": "x"}')
    link = tmp_path / ".claude" / "settings.json"
    link.parent.mkdir()
    link.symlink_to(target)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert link.is_symlink() and target.read_text() == '{"model": "x"}'
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 2
    assert link.is_symlink() and target.read_text() == '{"model": "x"}'


def test_uninstall_removes_exactly_tethers_entries_and_what_it_emptied(tmp_path: Path, capsys) -> None:
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    mine = {"type": "command", "command": "my-formatter"}
    path.write_text(
        json.dumps(
            {
                "model": "x",
                "hooks": {
                    "PreToolUse": [{"matcher": "Bash", "hooks": [mine, "a string entry"]}],
                    "Notification": [],
                },
            }
        )
    )
    path.chmod(0o600)
    assert main(["claude-code", "--dir", str(tmp_path)]) == 0
    installed = json.loads(path.read_text())
    # a hand-edited entry: another interpreter, an extra key: still tether's, still removed
    group = installed["hooks"]["Stop"][0]
    group["hooks"][0] = {
        **group["hooks"][0],
        "command": "/opt/other/bin/python -I -S /opt/x/tether/hooks/launch.py claude-code --envelope /e.yaml || exit 2",
        "statusMessage": "mine now",
    }
    path.write_text(json.dumps(installed))
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert "removed 7 tether hook entries" in capsys.readouterr().out
    left = json.loads(path.read_text())
    assert left == {
        "model": "x",
        "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [mine, "a string entry"]}], "Notification": []},
    }
    assert path.stat().st_mode & 0o777 == 0o600, "permissions kept"
    before = path.read_bytes()
    assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 0
    assert "not installed" in capsys.readouterr().out and path.read_bytes() == before


def test_uninstall_of_a_file_with_only_tether_leaves_an_empty_object_and_a_malformed_one_is_untouched(
    tmp_path: Path,
) -> None:
    assert main(["codex", "--dir", str(tmp_path)]) == 0
    assert uninstall_main(["codex", "--dir", str(tmp_path)]) == 0
    assert json.loads((tmp_path / ".codex" / "hooks.json").read_text()) == {}
    bad = tmp_path / ".claude" / "settings.json"
    bad.parent.mkdir()
    for text in ("{not json", '{"hooks": {"Stop": "tether hook claude-code"}}', '{"hooks": []}'):
        bad.write_text(text)
        assert uninstall_main(["claude-code", "--dir", str(tmp_path)]) == 2
        assert bad.read_text() == text
    assert uninstall_main(["claude-code", "--dir", str(tmp_path / "nowhere")]) == 0


def test_uninstall_managed_deletes_tethers_drop_in_unless_someone_added_to_it(shared: Path, shared_python) -> None:
    managed = shared / "m"
    drop_in = managed / "managed-settings.d" / "tether.json"
    assert main(["claude-code", "--managed", "--lock", "--managed-dir", str(managed)]) == 0
    assert uninstall_main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    assert not drop_in.exists()
    assert main(["claude-code", "--managed", "--lock", "--managed-dir", str(managed)]) == 0
    added = {**json.loads(drop_in.read_text()), "env": {"X": "1"}}
    drop_in.write_text(json.dumps(added))
    assert uninstall_main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    assert json.loads(drop_in.read_text()) == {"env": {"X": "1"}}, "the lock goes with tether's hooks; the rest stays"


def test_racing_installers_leave_valid_json_with_one_entry_per_event(tmp_path: Path) -> None:
    """Eight installers at once, each with its own envelope: the file is valid JSON throughout and ends with one
    tether entry per event (the installers take turns on the directory's lock; each replaces atomically)."""
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"model": "x"}')
    envelopes = []
    for i in range(8):
        envelopes.append(tmp_path / f"e{i}.yaml")
        envelopes[-1].write_text("x: 1\n")
    code = "import sys; from tether.hooks.install import main; sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, "claude-code", "--dir", str(tmp_path), "--envelope", str(e)],
            env=env,
            stdout=subprocess.DEVNULL,
        )
        for e in envelopes
    ]
    seen = 0
    while any(p.poll() is None for p in procs):
        json.loads((tmp_path / ".claude" / "settings.json").read_text())  # never a torn file
        seen += 1
    assert all(p.wait() == 0 for p in procs)
    final = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert final["model"] == "x"
    for event in EVENTS["claude-code"]:
        assert len(tether_commands(final, event)) == 1, event
    assert [p.name for p in (tmp_path / ".claude").iterdir()] == ["settings.json"], "no temporary file left"


def test_the_cli_dispatches_install_uninstall_and_status(tmp_path: Path) -> None:
    """`tether hook install|uninstall|status` through the real command line (hooks go before typer)."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "HOME": str(tmp_path / "home")}

    def tether(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "tether.cli.main", "hook", *argv],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    assert tether("install", "claude-code", "--dir", str(tmp_path)).returncode == 0
    done = tether("status", "claude-code", "--dir", str(tmp_path), "--managed-dir", str(tmp_path / "m"), "--json")
    assert done.returncode in (0, 1), done.stderr  # 1 where the venv's interpreter imports another checkout's tether
    layers = json.loads(done.stdout)["agents"]["claude-code"]["layers"]
    assert [layer["events"] for layer in layers if layer["layer"] == "project"] == [list(EVENTS["claude-code"])]
    assert tether("status", "--nope").returncode == 2
    done = tether("uninstall", "claude-code", "--dir", str(tmp_path))
    assert done.returncode == 0 and "removed 7" in done.stdout
    assert json.loads((tmp_path / ".claude" / "settings.json").read_text()) == {}
    assert tether("uninstall", "claude-code", "--dir", str(tmp_path), "--lock").returncode == 2


def test_the_python_api(shared: Path, shared_python, tmp_path: Path) -> None:
    from tether.hooks.install import install, uninstall
    from tether.hooks.status import report

    path = install("claude-code", scope="managed", managed_dir=shared, lock=True)
    assert path == shared / "managed-settings.d" / "tether.json"
    out = report(["claude-code"], tmp_path, shared)
    assert out["agents"]["claude-code"]["managed_only"] == str(path)
    assert out["agents"]["claude-code"]["missing_events"] == []
    (managed,) = [layer for layer in out["agents"]["claude-code"]["layers"] if layer["file"] == str(path)]
    assert all("init_table" in cmd for cmd in managed["commands"])
    assert {cmd["init_table_state"] for cmd in managed["commands"]} <= {"missing", "stale", "current"}
    assert uninstall("claude-code", scope="managed", managed_dir=shared) == (path, 7)
    assert not path.exists()
    with pytest.raises(InstallError, match="--lock only goes with --managed"):
        install("claude-code", directory=tmp_path, lock=True)


def test_a_managed_install_without_an_envelope_says_who_then_decides(shared: Path, shared_python, capsys) -> None:
    """Without ``--envelope`` a project's own ``.tether/envelope.yaml`` decides: the managed layer holds tether's
    hook in place, but a cloned repository's authors write that policy. The installer says so."""
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    assert "the project's own .tether/envelope.yaml" in capsys.readouterr().err
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    assert main(["claude-code", "--managed", "--managed-dir", str(managed), "--envelope", str(envelope)]) == 0
    assert "envelope.yaml" not in capsys.readouterr().err


HOOK_PYTHON = sys.executable  # the test's own interpreter: it has tether's dependencies (the system python3 may not)


def test_warming_writes_a_table_owned_like_the_package_that_the_next_hook_process_reads(shared: Path) -> None:
    """The real warm, on a copy of tether's package: run as a hook starts Python, it writes the table beside the
    package's bytecode, owned as the package, writable by nobody else, holding the cold call's ``__init__`` code."""
    from tether import compiled
    from tether.hooks.install import warm

    parent = shared / "pkg"
    shutil.copytree(SRC / "tether", parent / "tether", ignore=shutil.ignore_patterns("__pycache__"))
    table, why = warm(HOOK_PYTHON, parent)
    assert table is not None, why
    assert table.parent == parent / "tether" / "__pycache__"
    info, package = table.stat(), (parent / "tether").stat()
    assert (info.st_uid, info.st_gid) == (package.st_uid, package.st_gid)
    assert info.st_mode & 0o022 == 0 and info.st_mode & 0o004, oct(info.st_mode)
    kept = compiled.read(str(table))
    assert len(kept) > 50, len(kept)  # a cold PreToolUse compiles ~114 __init__s
    again, _ = warm(HOOK_PYTHON, parent)  # a second warm finds it whole and keeps it
    assert again == table and compiled.read(str(table)).keys() >= kept.keys()


def test_warming_fails_softly_and_never_reads_another_tether(shared: Path, tmp_path: Path) -> None:
    from tether.hooks.install import warm

    table, why = warm(HOOK_PYTHON, shared / "nothing-here")  # no tether there: the venv's own is imported
    assert table is None and ("not from" in why or "failed" in why), why
    table, why = warm(str(tmp_path / "no-python"), shared)
    assert table is None and "did not run" in why


def fake_table_path(shared: Path) -> Path:
    """Where the stand-in warm leaves its table: outside the tree these tests share, whose walks by tests running
    beside this one would otherwise meet a file that comes and goes (and refuse their installs for it)."""
    return shared / "cache" / "dataclass-code.test.marshal"


@pytest.fixture
def fake_table(shared: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Path]]]:
    """``warm`` replaced by one that records its calls and leaves a table file (:func:`fake_table_path`)."""
    from tether.hooks import install

    table = fake_table_path(shared)
    table.parent.mkdir(exist_ok=True)
    calls: list[tuple[str, Path]] = []

    def fake(python: str, package_parent: Path = install.PACKAGE_PARENT) -> tuple[Path | None, str]:
        calls.append((python, package_parent))
        table.write_bytes(b"TETHERDC")
        table.chmod(0o644)
        return table, ""

    monkeypatch.setattr(install, "warm", fake)
    yield calls


def test_a_managed_install_warms_the_table_once_its_checks_passed(shared: Path, shared_python, fake_table, capsys):
    assert main(["claude-code", "--managed", "--managed-dir", str(shared / "m")]) == 0
    assert fake_table == [(shared_python, SRC.resolve())]
    out = capsys.readouterr().out
    assert "__init__ code table every user's hook process reads is in place" in out
    assert fake_table_path(shared).stat().st_mode & 0o777 == 0o644


def test_a_refused_managed_install_warms_nothing(shared: Path, shared_python, fake_table, capsys) -> None:
    envelope = shared / "envelope.yaml"
    envelope.write_text("x: 1\n")
    envelope.chmod(0o600)  # other users cannot read it: refused
    assert main(["claude-code", "--managed", "--managed-dir", str(shared / "m"), "--envelope", str(envelope)]) == 2
    assert fake_table == []
    assert not fake_table_path(shared).exists()
    assert main(["codex", "--managed", "--lock", "--managed-dir", str(shared / "c")]) == 2  # a usage error too
    assert fake_table == []


def test_a_warmed_table_another_user_could_write_is_removed_and_the_install_stands(
    shared: Path, shared_python, fake_table, monkeypatch, capsys
) -> None:
    """The second walk refuses the table (its verdict a stand-in: a table made ``0666`` in the tree these tests
    share would fail the installs of tests running beside this one): it is removed, the install stands."""
    from tether.hooks import install

    table = fake_table_path(shared)
    walks: list[str] = []
    real = install.judged

    def judged(command: str) -> tuple[list[str], list[str]]:
        walks.append(command)
        unusable, changed = real(command)
        loose = f"{table} (mode -rw-rw-rw-: users other than its owner can change it)"
        return unusable, [*changed, *([loose] if len(walks) > 1 else [])]

    monkeypatch.setattr(install, "judged", judged)
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 0
    err = capsys.readouterr().err
    assert f"warning: the __init__ code table was removed: {table} (mode -rw-rw-rw-" in err
    assert not table.exists()
    assert (managed / "managed-settings.d" / "tether.json").is_file(), "a failure to warm never fails the install"


@pytest.mark.parametrize("table_too", [False, True], ids=["table-trusted", "table-refused-too"])
def test_bytecode_the_warm_up_left_that_others_could_change_fails_the_install_before_the_settings(
    shared: Path, shared_python, fake_table, monkeypatch, capsys, table_too: bool
) -> None:
    """The walk after the warm-up is the check of what it wrote: beyond the table (removed, the install stands),
    anything it refuses is a refusal, and the settings are not written. (The walk's verdict is a stand-in here:
    a loose file in the tree these tests share would fail other tests' installs; the real thing, bytecode written
    under a umask of 0, is in ``test_managed_end_to_end.py``.)"""
    from tether.hooks import install

    cache = install.PACKAGE_PARENT / "tether" / "__pycache__"
    table = fake_table_path(shared)
    stray = f"{cache}/x.cpython-311.pyc (mode -rw-rw-rw-: users other than its owner can change it)"
    loose = [stray, *([f"{table} (mode -rw-rw-rw-: users other than its owner can change it)"] if table_too else [])]
    walks: list[str] = []
    real = install.judged

    def judged(command: str) -> tuple[list[str], list[str]]:
        walks.append(command)
        unusable, changed = real(command)
        return unusable, [*changed, *(loose if len(walks) > 1 else [])]

    monkeypatch.setattr(install, "judged", judged)
    managed = shared / "m"
    assert main(["claude-code", "--managed", "--managed-dir", str(managed)]) == 2
    err = capsys.readouterr().err
    assert stray in err and "the settings were not changed" in err, err
    assert not (managed / "managed-settings.d" / "tether.json").exists()
    assert len(walks) == 2
    assert table.exists() != table_too, "a refused table is removed (an earlier install's hook may read it)"


def test_a_failure_to_warm_is_a_warning(shared: Path, shared_python, monkeypatch, capsys) -> None:
    from tether.hooks import install

    monkeypatch.setattr(install, "warm", lambda python, package_parent=None: (None, "it broke"))
    assert main(["claude-code", "--managed", "--managed-dir", str(shared / "m")]) == 0
    assert "warning: the __init__ code table was not written: it broke" in capsys.readouterr().err


def test_status_names_the_table_beside_the_managed_package(shared: Path) -> None:
    from tether import compiled
    from tether.hooks.status import init_table

    package = shared / "tether"
    (package / "__pycache__").mkdir(parents=True)
    assert init_table(package) is None
    (package / "__pycache__" / f"dataclass-code.cpython-399.v{compiled.FORMAT + 1}.00.marshal").write_bytes(b"")
    assert init_table(package) is None, "another layout is not the table"
    table = package / "__pycache__" / f"dataclass-code.cpython-311.v{compiled.FORMAT}.a70d0d0a.marshal"
    table.write_bytes(b"")
    assert init_table(package) == str(table)
