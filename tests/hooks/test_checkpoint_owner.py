"""A fold checkpoint is read only from a folder and a file of this user's alone, as a kept envelope is
(guard/envcache.py): a checkpoint another user could have written is a miss.

Without a store key a checkpoint is trusted as much as the log beside it, and its body is the state the session is
governed from (the run state: which calls were allowed, the run's rules). Whoever can write the file or its folder
but not the database — the folder made by someone else before the session's first checkpoint (a database in a
shared, sticky directory such as /tmp), a folder or file left writable by group or others, a link to a file
elsewhere — must not get a checkpoint of their making read. Before, the reader opened the path and checked nothing
of who owns it: each case here was restored (the guard's log a ``Log``).
"""

from __future__ import annotations

import os
import pwd
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hookkit import Hook
from machinekit import unavailable
from test_fold_checkpoint import calls, checkpoint_file, cold, folder, guard_of
from test_fold_checkpoint import hook as hook

from tether.guard.log import Log


def _writable_by_others(path: Path) -> None:
    path.chmod(0o666)


def _folder_writable_by_group(path: Path) -> None:
    path.parent.chmod(0o770)


def _linked_from_elsewhere(path: Path) -> None:
    elsewhere = path.parent.parent / "elsewhere.ckpt"
    shutil.copyfile(path, elsewhere)
    path.unlink()
    path.symlink_to(elsewhere)


def _owned_by_another_user(path: Path) -> None:
    if os.geteuid() != 0:
        unavailable("needs root to give a file to another user")
    try:
        other = pwd.getpwnam("tether-sandbox").pw_uid
    except KeyError:
        unavailable("no other user (tether-sandbox) to give the file to")
    os.chown(path, other, -1)


@pytest.mark.parametrize(
    "plant", [_writable_by_others, _folder_writable_by_group, _linked_from_elsewhere, _owned_by_another_user]
)
def test_a_checkpoint_another_user_could_have_written_is_ignored(
    hook: Hook,
    plant: Callable[[Path], None],
) -> None:
    calls(hook, 12)
    plant(checkpoint_file(hook))
    cold()
    assert calls(hook, 3, start=12) == ["ask", "allow", "allow"]
    assert not isinstance(guard_of(hook).events, Log), "restored from a checkpoint of someone else's making"


def test_a_checkpoint_of_this_users_alone_is_restored(hook: Hook) -> None:
    calls(hook, 12)
    assert oct(folder(hook).stat().st_mode & 0o777) == "0o700"
    cold()
    assert calls(hook, 3, start=12) == ["ask", "allow", "allow"]
    assert isinstance(guard_of(hook).events, Log)
