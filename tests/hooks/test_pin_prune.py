"""Pins are pruned: one file per session that named no project was left in ``hook-sessions`` for ever. A pin not read
for :data:`pin.IDLE_S` is dropped by the daemon when it starts (no call waits then); a session's call that reads its
pin refreshes the pin's time once it is half that old, so a live session's pin is never the one dropped. Only this
user's regular files go: a link, another user's file, a directory that is a link, are left as they are."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tether.hooks import pin
from tether.hooks.session import run_id_for

DAY = 86400.0


def aged(path: Path, days: float) -> Path:
    when = time.time() - days * DAY
    os.utime(path, (when, when), follow_symlinks=False)
    return path


def pin_of(session: str, project: Path) -> Path:
    run_id = run_id_for("codex", session)
    assert pin.pinned(run_id, str(project)) == str(project)
    return Path(pin.pin_paths(run_id)[0])


def test_an_idle_pin_is_pruned_a_fresh_one_and_what_is_not_ours_kept(tmp_path: Path) -> None:
    old, fresh = pin_of("old", tmp_path), pin_of("fresh", tmp_path)
    aged(old, 40)
    folder = old.parent
    target = aged(pin_of("target", tmp_path), 40)
    link = folder / "a-link"
    link.symlink_to(target)
    aged(link, 40)
    tmp = folder / f"{old.name}.123.abcd.tmp"  # left by a first call that died between write and link
    tmp.write_text("/x")
    aged(tmp, 40)
    assert pin.prune() == 3  # old, target, tmp
    assert not old.exists() and not tmp.exists() and not target.exists()
    assert fresh.exists() and link.is_symlink(), "a fresh pin and a link are left"


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_another_users_pin_is_left(tmp_path: Path) -> None:
    theirs = pin_of("theirs", tmp_path)
    os.chown(theirs, 12345, 12345)
    aged(theirs, 40)
    assert pin.prune() == 0 and theirs.exists()


def test_a_folder_that_is_a_link_is_not_pruned_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    victim = elsewhere / "precious"
    victim.write_text("/keep")
    aged(victim, 40)
    state = tmp_path / "state"
    (state / "tether").mkdir(parents=True)
    (state / "tether" / "hook-sessions").symlink_to(elsewhere)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    assert pin.prune() == 0 and victim.exists()


def test_a_live_session_refreshes_its_pin_so_it_is_never_pruned(tmp_path: Path) -> None:
    live = pin_of("live", tmp_path)
    aged(live, 20)  # past half the idle time: the session's next call refreshes it
    assert pin.pinned(run_id_for("codex", "live"), str(tmp_path / "moved")) == str(tmp_path)
    assert time.time() - live.stat().st_mtime < 60
    aged(live, 10)  # under half: read, not written
    before = live.stat().st_mtime
    assert pin.peek(run_id_for("codex", "live")) == str(tmp_path)
    assert live.stat().st_mtime == before
    assert pin.prune() == 0 and live.exists()


def test_a_pin_refreshed_while_it_is_pruned_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: a session's call refreshes its pin between the sweep's look at the pin's time and its removal."""
    racing = aged(pin_of("racing", tmp_path), 40)
    real_rename = os.rename

    def rename_after_a_refresh(src: str, dst: str, **kw: object) -> None:
        os.utime(racing)  # the session's call, at the worst moment
        real_rename(src, dst, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(pin.os, "rename", rename_after_a_refresh)
    assert pin.prune() == 0
    monkeypatch.undo()
    assert racing.exists() and pin.peek(run_id_for("codex", "racing")) == str(tmp_path)


def test_the_daemon_prunes_when_it_starts(
    tmp_path: Path, start_daemon: Callable[[], tuple[Path, threading.Thread]]
) -> None:
    old = aged(pin_of("gone", tmp_path), 40)
    start_daemon()
    deadline = time.monotonic() + 30
    while old.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old.exists()
