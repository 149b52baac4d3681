"""Attacks on the deny walk (sandbox/mask.py) from outside its own tests: a directory the walk cannot list, and a
filesystem mounted inside the workspace after a walk. Each must leave the denied file covered in the next command.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from machinekit import unavailable
from test_mask import DENY, SECRET, rel

import tether
from tether.sandbox import mask
from tether.sandbox.mask import Listings, masks

SRC = str(Path(tether.__file__).resolve().parents[1])


def in_namespace(flags: list[str], script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run by this interpreter under ``unshare flags`` (a user namespace the test creates); skipped
    where this host allows none."""
    if shutil.which("unshare") is None or subprocess.run(["unshare", *flags, "true"], check=False).returncode:
        unavailable("no user namespace here")
    env = {**os.environ, "PYTHONPATH": SRC, "HOME": str(tmp_path)}
    code = textwrap.dedent(script)
    return subprocess.run(
        ["unshare", *flags, sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )


def refuse(monkeypatch: pytest.MonkeyPatch, call: str, suffix: str, code: int) -> None:
    """``os.<call>`` as the walk sees it fails with ``code`` (an errno) for a path ending in ``suffix``."""
    real = getattr(os, call)

    def refused(path: str) -> object:
        if str(path).endswith(suffix):
            raise OSError(code, os.strerror(code), path)
        return real(path)

    monkeypatch.setattr(mask.os, call, refused)


def test_a_directory_that_cannot_be_listed_is_covered_whole(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The sandbox user (the caller, when tether is not root) can make a directory of its own unreadable in one
    command and readable again in the next: what the walk cannot list must be covered, not skipped; and a walk
    that could not list one is not kept (fd exhaustion is no inotify event)."""
    (workspace / "lib" / "sub").mkdir(parents=True)
    (workspace / "lib" / "sub" / ".env").write_text(SECRET)
    real = os.scandir
    refuse(monkeypatch, "scandir", "/lib", errno.EMFILE)
    assert rel(masks(workspace, DENY).dirs, workspace) == {"lib"}
    listings = Listings()
    assert rel(masks(workspace, DENY, listings).dirs, workspace) == {"lib"}
    monkeypatch.setattr(mask.os, "scandir", real)
    assert rel(masks(workspace, DENY, listings).files, workspace) == {"lib/sub/.env"}
    assert listings.walked == 2


def test_a_directory_past_an_unsearchable_one_is_covered(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "lib" / "sub").mkdir(parents=True)
    (workspace / "lib" / "sub" / ".env").write_text(SECRET)
    refuse(monkeypatch, "lstat", "/lib/sub", errno.EACCES)
    assert rel(masks(workspace, DENY, Listings()).dirs, workspace) == {"lib/sub"}


def test_a_vanished_directory_is_not_covered(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "gone").mkdir()
    refuse(monkeypatch, "scandir", "/gone", errno.ENOENT)
    assert masks(workspace, DENY) == mask.Masks()


@pytest.mark.bwrap
def test_an_unprivileged_sandbox_cannot_unhide_a_denied_file_by_chmod(tmp_path: Path) -> None:
    """tether not root (here: uid 1000 in a user namespace, no capabilities): the command runs as the caller and
    owns the workspace, so ``chmod 000`` then ``chmod 755`` was a way past the walk."""
    ws = tmp_path / "ws"
    r = in_namespace(
        ["-U", "--map-user=1000", "--map-group=1000"],
        f"""
        from pathlib import Path
        from tether.sandbox import BwrapSandbox
        ws = Path({str(ws)!r})
        (ws / "lib" / "sub").mkdir(parents=True)
        (ws / "lib" / ".env").write_text({SECRET!r})
        (ws / "lib" / "sub" / ".env").write_text({SECRET!r})
        box = BwrapSandbox(ws, deny=[".env"])
        for step in ("chmod 000 lib", "chmod 755 lib; chmod 644 lib", "chmod 755 lib; cat lib/.env lib/sub/.env"):
            print(box.run(step, cwd=ws, timeout_s=30).stdout)
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert SECRET not in r.stdout


@pytest.mark.parametrize("how", ["tmpfs", "bind"])
def test_a_filesystem_mounted_in_the_workspace_after_a_walk_is_walked(tmp_path: Path, how: str) -> None:
    """A mount is no inotify event on the directory it covers. In a mount namespace of its own (a container, a user
    namespace) tether's process sees mounts its user makes: the next walk must look, not take the last one."""
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    r = in_namespace(
        ["-Urm"],
        f"""
        import subprocess, time
        from pathlib import Path
        from tether.sandbox import mask
        from tether.sandbox.mask import Listings, masks
        mask.RACY_WINDOW_NS = 50_000_000
        ws, outside = Path({str(ws)!r}), Path({str(outside)!r})
        (ws / "sub").mkdir(parents=True)
        outside.mkdir()
        (outside / ".env").write_text("x")
        time.sleep(0.1)
        listings = Listings()
        masks(ws, [".env"], listings)
        masks(ws, [".env"], listings)
        assert listings.walked == 1, listings.walked
        if {how!r} == "tmpfs":
            subprocess.run(["mount", "-t", "tmpfs", "none", str(ws / "sub")], check=True)
            (ws / "sub" / ".env").write_text("x")
        else:
            subprocess.run(["mount", "--bind", str(outside), str(ws / "sub")], check=True)
        print(sorted(str(p.relative_to(ws)) for p in masks(ws, [".env"], listings).files))
        """,
        tmp_path,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "['sub/.env']"


def test_the_mount_table_is_watched_from_before_the_first_walk(workspace: Path) -> None:
    listings = Listings()
    assert listings.watch is not None
    masks(workspace, DENY, listings)
    time.sleep(0.01)
    assert listings.watch.quiet()


def test_a_tree_changed_while_walks_run_is_seen_whole_by_the_next_walk(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread makes directories, denied files, renames and hard links as fast as it can while walks run (a
    change between a directory's watch and its look, or between two walks): once it stops, the next walk covers
    exactly what a walk that remembers nothing covers."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 1_000_000)
    (workspace / "seed").write_text(SECRET)
    stop = threading.Event()

    def churn() -> None:
        i = 0
        while not stop.is_set():
            d = workspace / f"d{i % 7}" / f"e{i % 3}"
            d.mkdir(parents=True, exist_ok=True)
            (d / f"f{i}").write_text("x")
            if i % 3 == 0:
                os.rename(d / f"f{i}", d / f"f{i}.pem")
            if i % 5 == 0:
                os.link(workspace / "seed", d / f"l{i}")
            if i % 11 == 0:
                (workspace / f"d{i % 7}" / ".env").write_text(SECRET)
            i += 1

    listings = Listings()
    t = threading.Thread(target=churn)
    t.start()
    try:
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            masks(workspace, [*DENY, "seed"], listings)
    finally:
        stop.set()
        t.join(30)
    assert masks(workspace, [*DENY, "seed"], listings) == masks(workspace, [*DENY, "seed"])
    assert listings.walked > 1


@pytest.mark.bwrap
def test_a_denied_file_a_command_makes_is_covered_in_the_next(workspace: Path) -> None:
    from tether.sandbox import BwrapSandbox

    box = BwrapSandbox(workspace, deny=DENY)
    for _ in range(2):  # the second walk is the one taken whole from the last
        assert box.run("true", cwd=workspace, timeout_s=30).ok
    made = f"echo {SECRET} > .env; mkdir -p a/b; echo {SECRET} > a/b/k.pem; ln .env a/other; ln -s ../.env a/s"
    assert box.run(made, cwd=workspace, timeout_s=30).ok
    r = box.run("cat .env a/b/k.pem a/other a/s; grep -r hunter . 2>/dev/null", cwd=workspace, timeout_s=30)
    assert SECRET not in r.stdout


def test_another_name_in_a_directory_the_link_search_cannot_list_is_covered(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The search for other names of a denied file lists the tree afresh (the last walk may be taken whole): a
    directory it cannot list is covered whole, not skipped."""
    monkeypatch.setattr(mask, "RACY_WINDOW_NS", 50_000_000)
    (workspace / "x").mkdir()
    (workspace / ".env").write_text(SECRET)
    os.link(workspace / ".env", workspace / "x" / "innocent")
    time.sleep(0.1)
    listings = Listings()
    masks(workspace, DENY, listings)
    refuse(monkeypatch, "scandir", "/x", errno.EMFILE)
    got = masks(workspace, DENY, listings)
    assert "x" in rel(got.dirs, workspace) or "x/innocent" in rel(got.files, workspace)


@pytest.mark.parametrize("deny", ["config/prod.*", "config/keys/"])
def test_a_covered_path_whose_parent_was_renamed_stays_covered(workspace: Path, deny: str) -> None:
    """A glob with a directory in it names a path: ``mv config cfg`` (the sandbox can, its parent is not covered)
    leaves ``cfg/prod.yaml`` matching nothing. The last walk's covered inodes are found again wherever they are."""
    (workspace / "config" / "keys").mkdir(parents=True)
    (workspace / "config" / "prod.yaml").write_text(SECRET)
    (workspace / "config" / "keys" / "k").write_text(SECRET)
    listings = Listings()
    first = masks(workspace, [deny], listings)
    assert first.files or first.dirs
    os.rename(workspace / "config", workspace / "cfg")
    got = masks(workspace, [deny], listings)
    assert {p.name for p in (*got.files, *got.dirs)} == {p.name for p in (*first.files, *first.dirs)}
    assert all(p.is_relative_to(workspace.resolve() / "cfg") for p in (*got.files, *got.dirs))
    (workspace / "cfg" / "keys" / "k").unlink()
    (workspace / "cfg" / "keys").rmdir()
    (workspace / "cfg" / "prod.yaml").unlink()
    assert masks(workspace, [deny], listings) == mask.Masks() and listings.covered == set()


@pytest.mark.bwrap
def test_a_sandbox_that_renames_a_denied_files_parent_still_cannot_read_it(workspace: Path) -> None:
    from tether.sandbox import BwrapSandbox

    (workspace / "config").mkdir()
    (workspace / "config" / "prod.yaml").write_text(SECRET)
    for p in (workspace, workspace / "config"):
        p.chmod(0o777)
    (workspace / "config" / "prod.yaml").chmod(0o666)
    box = BwrapSandbox(workspace, deny=["config/prod.*"])
    assert box.run("mv config cfg", cwd=workspace, timeout_s=30).ok
    r = box.run("cat cfg/prod.yaml", cwd=workspace, timeout_s=30)
    assert SECRET not in r.stdout


def test_with_every_file_descriptor_taken_each_denied_file_is_still_covered(tmp_path: Path) -> None:
    """Real fd exhaustion (a low ``RLIMIT_NOFILE``, every descriptor open) in a fresh process: the walk cannot
    list a directory, so it covers it; once descriptors are free again the next walk lists it (not kept)."""
    ws = tmp_path / "ws"
    code = f"""
        import os, resource, time
        from pathlib import Path
        from tether.sandbox import mask
        from tether.sandbox.mask import Listings, masks
        mask.RACY_WINDOW_NS = 50_000_000
        ws = Path({str(ws)!r})
        (ws / "a" / "b").mkdir(parents=True)
        (ws / "a" / "b" / ".env").write_text("x")
        time.sleep(0.1)
        listings = Listings()
        masks(ws, [".env"], listings)
        (ws / "a" / "b" / "c").mkdir()  # an event: the next walk is a full one
        (ws / "a" / "b" / "c" / ".env").write_text("x")
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))
        held = []
        try:
            while True:
                held.append(os.open("/dev/null", os.O_RDONLY))
        except OSError:
            pass
        got = masks(ws, [".env"], listings)
        for fd in held:
            os.close(fd)
        print(sorted(str(p.relative_to(ws)) for p in (*got.files, *got.dirs)))
        again = masks(ws, [".env"], listings)
        print(sorted(str(p.relative_to(ws)) for p in (*again.files, *again.dirs)))
        """
    env = {**os.environ, "PYTHONPATH": SRC}
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    exhausted, freed = r.stdout.splitlines()
    assert exhausted == "['.']"  # the workspace itself could not be listed: covered whole
    assert freed == "['a/b/.env', 'a/b/c/.env']"
