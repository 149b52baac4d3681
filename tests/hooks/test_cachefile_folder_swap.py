"""guard/cachefile: a cache file (a fold checkpoint, a kept envelope: the log's events and the session's state) is
written only into the folder that was checked as this user's alone, and read only from a regular file there.

The attack on the write: whoever may write the folder's parent renames the checked folder away and puts a link to a
folder of theirs in its place, between the check and the write. ``write_own`` checked the folder with ``lstat`` and
then wrote by its path (``mkstemp(dir=folder)``, ``os.replace(tmp, target)``), so the checkpoint (the session's
events and state) landed in the other folder. The swap is made where it can happen, inside the write after the check
(the sweep of dead writers' temporaries, which runs there), with real renames and a real link.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tether.guard import cachefile


def _swapped_during_the_write(monkeypatch: pytest.MonkeyPatch, folder: Path, theirs: Path) -> list[Path]:
    """Make the sweep (run by a write after its check) rename ``folder`` away and link ``theirs`` in its place."""
    moved: list[Path] = []
    sweep = cachefile.sweep

    def swapping(where: object, now: float | None = None) -> None:
        if not moved:
            moved.append(folder.with_name(folder.name + ".moved"))
            folder.rename(moved[0])
            folder.symlink_to(theirs, target_is_directory=True)
        sweep(where, now)  # type: ignore[arg-type]

    monkeypatch.setattr(cachefile, "sweep", swapping)
    return moved


def test_a_folder_swapped_for_a_link_after_the_check_does_not_get_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, theirs = tmp_path / "folds", tmp_path / "theirs"
    theirs.mkdir()
    folder.mkdir(mode=0o700)
    moved = _swapped_during_the_write(monkeypatch, folder, theirs)
    cachefile.write_own(folder, folder / "run.ckpt", b"the session's state")
    assert moved and folder.is_symlink(), "the swap was made"
    assert list(theirs.iterdir()) == [], "written into the folder swapped in after the check"
    assert (moved[0] / "run.ckpt").read_bytes() == b"the session's state"  # the folder checked, wherever it is now


def test_the_written_file_is_this_users_alone_and_read_back(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "folds"
    assert cachefile.write_own(folder, folder / "run.ckpt", b"x" * 10) == folder / "run.ckpt"
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(folder / "run.ckpt").st_mode) == 0o600
    found = cachefile.read_own(folder, "run.ckpt", 100)
    assert found is not None and found[0] == b"x" * 10
    assert [p.name for p in folder.iterdir()] == ["run.ckpt"]  # no temporary left


def test_a_failed_write_leaves_no_temporary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "folds"

    def full(*a: object, **k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    assert cachefile.write_own(folder, folder / "run.ckpt", b"x") is None
    assert list(folder.iterdir()) == []


def test_a_fifo_a_huge_file_and_a_hard_link_are_not_read(tmp_path: Path) -> None:
    """What the reader meets in the folder: a FIFO (opened without blocking, not a regular file), a file over the
    limit (not read at all), a second name of a file (one of this user's: read, as the same file's bytes)."""
    folder = tmp_path / "folds"
    folder.mkdir(mode=0o700)
    os.mkfifo(folder / "fifo", 0o600)
    assert cachefile.read_own(folder, "fifo", 100) is None
    (folder / "huge").write_bytes(b"x" * 101)
    (folder / "huge").chmod(0o600)
    assert cachefile.read_own(folder, "huge", 100) is None
    os.link(folder / "huge", folder / "second")
    assert cachefile.read_own(folder, "second", 200) is not None
