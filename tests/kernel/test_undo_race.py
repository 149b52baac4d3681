"""A concurrent writer against ``tether undo``'s apply step: a folder swapped for a symlink to a place outside the
workspace, again and again, while undo restores and removes files under it.

Undo checks each path and then renames into it. Done by path, the kernel walks the path again at the rename, so a
folder swapped for a symlink between the two sends the operator's write (a file whose bytes the agent chose) or
removal outside the workspace. The swap here is the attacker's usual one: ``renameat2(RENAME_EXCHANGE)`` of the
folder and a ready symlink, so the name always exists and flips between the two in one system call, from another
process, as fast as it can. Each test retries the undo many times; before the fix (renames by path) both found the
outside folder changed within a few hundred tries.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.canonical import bytes_hash
from tether.events.kinds_files import FileImage
from tether.kernel.undo import Found, Step, UndoFailed, apply

TRIES = 400
PAYLOAD = b"ssh-ed25519 AAAA-the-agents-key agent@elsewhere\n"

#: Flips ``d`` (a folder) and ``lnk`` (a symlink to the outside folder) until ``stop`` exists.
SWAPPER = r"""
import ctypes, os, sys
ws, stop = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
a, b = os.path.join(ws, "d").encode(), os.path.join(ws, "lnk").encode()
print("go", flush=True)
n = 0
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:
        sys.exit("renameat2: errno %d" % ctypes.get_errno())
    n += 1
    if n % 64 == 0 and os.path.exists(stop):
        break
"""


@contextlib.contextmanager
def _swapping(ws: Path, outside: Path) -> Iterator[None]:
    """``ws/d`` flips between the real folder and a symlink to ``outside`` in another process, all the while."""
    os.symlink(outside, ws / "lnk")
    stop = ws.parent / "stop"
    proc = subprocess.Popen([sys.executable, "-c", SWAPPER, str(ws), str(stop)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "go\n"
        yield
    finally:
        stop.touch()
        assert proc.wait(timeout=30) == 0


def _image(data: bytes) -> FileImage:
    return FileImage(kind="file", digest=bytes_hash(data), mode=0o644, size=len(data))


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    (ws / "d").mkdir(parents=True)
    outside.mkdir()
    return ws, outside


def test_a_restored_file_never_lands_outside_through_a_swapped_folder(places: tuple[Path, Path]) -> None:
    """Undoing the deletion of ``d/k<i>`` (the agent's bytes) while ``d`` flips to a symlink to ``outside``: every
    file restored is in the workspace's real folder, none in ``outside`` (an ~/.ssh, say)."""
    ws, outside = places
    target = _image(PAYLOAD)
    refused = 0
    with _swapping(ws, outside):
        for i in range(TRIES):
            step = Step(f"d/k{i}", expected=None, target=target)
            try:
                apply(ws, [Found(step, None)], {target.digest: PAYLOAD})
            except UndoFailed:
                refused += 1
            assert not list(outside.iterdir()), f"try {i}: undo wrote outside the workspace: {list(outside.iterdir())}"
    placed = {p.name for p in (ws / "d").iterdir()} | {p.name for p in (ws / "lnk").iterdir()}
    assert len(placed) + refused == TRIES
    assert not [p.name for p in ws.iterdir() if p.name.startswith(".tether-undo-")]


def test_a_removal_never_takes_a_file_from_outside_through_a_swapped_folder(places: tuple[Path, Path]) -> None:
    """Undoing the creation of ``d/k<i>`` while ``d`` flips to a symlink to ``outside``, where a file of the same
    name is the operator's: the operator's files all stay."""
    ws, outside = places
    made = _image(b"the agent's file\n")
    for i in range(TRIES):
        (ws / "d" / f"k{i}").write_bytes(b"the agent's file\n")
        (outside / f"k{i}").write_bytes(b"the operator's file\n")
    with _swapping(ws, outside):
        for i in range(TRIES):
            step = Step(f"d/k{i}", expected=made, target=None)
            with contextlib.suppress(UndoFailed):
                apply(ws, [Found(step, made)], {})
            assert (outside / f"k{i}").exists(), f"try {i}: undo removed a file outside the workspace"
    assert sorted(p.name for p in outside.iterdir()) == sorted(f"k{i}" for i in range(TRIES))


#: Swaps every staging folder that appears in ``ws`` for a symlink to ``outside`` until ``stop`` exists.
STAGE_SWAPPER = r"""
import os, sys
ws, outside, stop = sys.argv[1], sys.argv[2], sys.argv[3]
print("go", flush=True)
n = 0
while not os.path.exists(stop):
    for name in os.listdir(ws):
        path = os.path.join(ws, name)
        if name.startswith(".tether-undo-") and not os.path.islink(path):
            n += 1
            try:
                os.rename(path, os.path.join(ws, "moved-%d" % n))
                os.symlink(outside, path)
            except OSError:
                pass
"""


def test_a_staging_folder_swapped_for_a_symlink_is_never_written_or_emptied(places: tuple[Path, Path]) -> None:
    """Undo stages the content it restores in ``.tether-undo-*`` and empties it at the end. Another process swaps
    each one for a symlink to ``outside`` as soon as it appears: the staged files must not be written there, and
    emptying the staging folder must not empty ``outside`` (the operator's files)."""
    ws, outside = places
    keep = {f"keep-{i}": f"the operator's file {i}\n".encode() for i in range(5)}
    for name, data in keep.items():
        (outside / name).write_bytes(data)
    target = _image(PAYLOAD)
    stop = ws.parent / "stop"
    proc = subprocess.Popen(
        [sys.executable, "-c", STAGE_SWAPPER, str(ws), str(outside), str(stop)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "go\n"
        for i in range(TRIES // 4):
            steps = [Step(f"d/k{i}-{j}", expected=None, target=target) for j in range(3)]
            with contextlib.suppress(UndoFailed):
                apply(ws, [Found(s, None) for s in steps], {target.digest: PAYLOAD})
            now = {p.name: p.read_bytes() for p in outside.iterdir()}
            assert now == keep, f"try {i}: undo changed a folder outside the workspace: {sorted(now)}"
    finally:
        stop.touch()
        assert proc.wait(timeout=30) == 0
