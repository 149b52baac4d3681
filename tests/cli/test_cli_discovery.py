"""Finding the database: from here, from ./envelope.yaml's workspace, from parent directories; and the
machine's list of databases (`tether runs --all`), with stale entries pruned and shown as such."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tether.events import registry
from tether.events.store import EventStore


def tether(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TETHER_DB"}
    return subprocess.run(
        [sys.executable, "-m", "tether.cli.main", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env=env,
    )


def make_db(directory: Path) -> Path:
    path = directory / ".tether" / "tether.db"
    EventStore.open(path).close()
    return path


def test_found_through_the_envelopes_workspace(example: Path) -> None:
    """The issue's case: `tether approvals` from where `tether run` was started (the log is under the workspace)."""
    make_db(example / "project")
    proc = tether(example, "approvals")
    assert proc.returncode == 0, proc.stderr
    assert "no pending approvals" in proc.stdout


def test_found_from_a_subdirectory(tmp_path: Path) -> None:
    make_db(tmp_path)
    deep = tmp_path / "src" / "pkg"
    deep.mkdir(parents=True)
    proc = tether(deep, "runs", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == []


def test_here_comes_before_the_parents(tmp_path: Path) -> None:
    make_db(tmp_path)
    inner = tmp_path / "inner"
    with EventStore.open(make_db(inner)) as store:
        store.create_run("the inner one")
    proc = tether(inner, "runs", "--json")
    assert [r["task"] for r in json.loads(proc.stdout)] == ["the inner one"]


def test_not_found_names_every_place_it_looked(tmp_path: Path) -> None:
    (tmp_path / "envelope.yaml").write_text("not: [an envelope")
    proc = tether(tmp_path, "approvals", "--json")
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    assert error["exit"] == 2
    assert error["path"] == str(tmp_path.resolve() / ".tether" / "tether.db")
    assert str(tmp_path.resolve() / ".tether" / "tether.db") in error["error"]
    assert str(tmp_path.resolve().parent / ".tether" / "tether.db") in error["error"]
    assert "envelope.yaml (skipped: " in error["error"]  # a broken envelope is said, not silently ignored
    plain = tether(tmp_path, "approvals")
    assert plain.returncode == 2 and "looked for" in plain.stderr and plain.stdout == ""


def test_the_registry_lists_every_database_and_prunes_stale_ones(tmp_path: Path) -> None:
    a, b = make_db(tmp_path / "a"), make_db(tmp_path / "b")
    with EventStore.open(a) as store:
        store.create_run("task in a")
    EventStore.open(a).close()  # opening an existing database does not list it twice
    assert registry.prune().databases == [a.resolve(), b.resolve()]
    b.unlink()
    proc = tether(tmp_path, "runs", "--all", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert [r["task"] for r in listing["runs"]] == ["task in a"]
    assert listing["runs"][0]["db"] == str(a.resolve())
    assert listing["stale"] == [str(b.resolve())]
    again = json.loads(tether(tmp_path, "runs", "--all", "--json").stdout)
    assert again["stale"] == []  # pruned: shown once, then gone
    text = tether(tmp_path, "runs", "--all")
    assert str(a.resolve()) in text.stdout


def test_an_unreadable_registry_never_stops_a_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "state-is-a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    with EventStore.open(tmp_path / "db" / "t.db") as store:  # records nothing, raises nothing
        store.create_run("still runs")
    assert registry.record(tmp_path / "x.db") is False


def test_concurrent_creators_all_land_in_the_registry(tmp_path: Path) -> None:
    """Eight threads record while another prunes: no entry is lost, none doubled."""
    paths = [make_db(tmp_path / f"d{i}") for i in range(2)]
    paths[1].unlink()

    def create(i: int) -> None:
        make_db(tmp_path / f"n{i}")

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    threads.append(threading.Thread(target=registry.prune))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    listed = registry.prune().databases
    assert sorted(listed) == sorted(
        [paths[0].resolve()] + [(tmp_path / f"n{i}/.tether/tether.db").resolve() for i in range(8)]
    )


def test_a_hand_edited_registry_is_read_safely(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative lines, a non-database, blank lines: listed as stale or unreadable, never a crash or a guess."""
    real = make_db(tmp_path / "real")
    other = tmp_path / "notes.txt"
    other.write_text("not sqlite")
    monkeypatch.chdir(tmp_path)
    Path(registry.registry_path()).write_text(f"notes.txt\n\n{other}\n{real.resolve()}\n")
    proc = tether(tmp_path, "runs", "--all", "--json")
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert listing["stale"] == ["notes.txt"]
    assert [r["db"] for r in listing["runs"] if "error" in r] == [str(other)]
