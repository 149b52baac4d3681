"""A project's first hook call keeps its store and the session's guard under the database's real inode, so the
second call of the session (in the daemon, or any process that answers several) reuses both instead of opening
the store and the guard again: keyed by the inode the file had before it existed ("none"), every new session
paid a second open (its log verified and folded again) at its second call."""

from __future__ import annotations

from pathlib import Path

import pytest
from hookkit import Hook

import tether.hooks.session as hook_session
from tether.control import fold as control_fold
from tether.guard.session import Guard


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    hook_session._CACHE.clear()
    control_fold.clear()
    yield Hook(tmp_path)
    hook_session._CACHE.clear()
    control_fold.clear()


def test_the_second_call_of_a_new_project_reuses_the_store_and_guard(
    hook: Hook, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened: list[str] = []
    real = Guard.open.__func__  # type: ignore[attr-defined]

    def counting(cls: type[Guard], *a: object, **k: object) -> Guard:
        guard = real(cls, *a, **k)
        opened.append(guard.run_id)
        return guard

    monkeypatch.setattr(Guard, "open", classmethod(counting))
    db = hook.workspace / ".tether" / "tether.db"
    assert not db.exists()
    assert hook.bash("grep -n needle src/app.py", call_id="toolu_1")[0] == "allow"
    assert hook.bash("git push origin main", call_id="toolu_2")[0] != "allow"
    assert hook.bash("grep -n other src/app.py", call_id="toolu_3")[0] == "allow"
    assert opened == [opened[0]], opened  # one open for three calls
    stores = list(hook.resident("store"))
    assert stores == [("store", str(db), db.stat().st_ino)]
    guards = list(hook.resident())
    assert len(guards) == 1 and guards[0][2] == db.stat().st_ino


def test_a_database_removed_and_made_anew_is_still_opened_anew(hook: Hook) -> None:
    db = hook.workspace / ".tether" / "tether.db"
    assert hook.bash("grep -n needle src/app.py", call_id="toolu_1")[0] == "allow"
    first = db.stat().st_ino
    for f in db.parent.glob("tether.db*"):
        if f.is_file():
            f.unlink()
    spare = db.parent / "spare"  # another file takes the freed inode, if the file system reuses it at once
    spare.write_bytes(b"")
    assert hook.bash("grep -n needle src/app.py", call_id="toolu_2")[0] == "allow"
    assert db.stat().st_ino != first
    assert ("store", str(db), db.stat().st_ino) in hook.resident("store")
