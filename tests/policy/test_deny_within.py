"""``PathPolicy.deny_within``, the check behind a tree deleted, moved or changed as a whole (``rm -r``, ``mv DIR``,
``chmod -R``): a link inside the tree is not followed (removing it leaves what it points at, shown by running the
command for real), a folder that cannot be read and a tree past 4,000 entries fall back to what the deny list may
reach, and exactly 4,000 entries are all looked at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from test_deny_reach_writes import gate, make, touches_secret

from tether.policy.decision import Verdict


def with_links(ws: Path) -> Path:
    make(ws)
    (ws / "build").mkdir()
    (ws / "build" / "out.o").write_text("o\n")
    os.symlink("../secrets", ws / "build" / "dir-link")
    os.symlink("../secrets/key.txt", ws / "build" / "file-link")
    return ws


@pytest.mark.parametrize("command", ["rm -rf build", "chmod -R 777 build", "mv build b2", "gzip -r build"])
def test_a_link_inside_a_tree_to_a_hidden_place_is_not_followed(command: str, tmp_path: Path) -> None:
    assert not touches_secret(command, with_links(tmp_path / "run"))
    d = gate(with_links(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is not Verdict.DENY, d.to_dict()


def test_a_folder_that_cannot_be_read_falls_back_to_the_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root reads any folder, so the refusal to list one is the file system's answer, simulated: ``os.walk`` sees an
    error listing build/deep. With a pattern that may reach it (``*.pem``) the delete is refused; without one, not."""
    ws = make(tmp_path / "ws")
    (ws / "build" / "deep").mkdir(parents=True)
    deep = str(ws / "build" / "deep")
    real = os.scandir

    def scandir(path: str) -> object:
        if os.fspath(path) == deep:
            raise PermissionError(13, "Permission denied", path)
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    assert gate(ws, ("*.pem",)).decide("bash", {"command": "rm -rf build"}).verdict is Verdict.DENY
    assert gate(ws).decide("bash", {"command": "rm -rf build"}).verdict is not Verdict.DENY  # secrets/** not below


@pytest.mark.parametrize(("entries", "refused"), [(4000, False), (4001, True)])
def test_exactly_4000_entries_are_looked_at_and_one_more_is_the_reach(
    entries: int, refused: bool, tmp_path: Path
) -> None:
    """``*.pem`` may match under any tree: a tree of 4,000 entries is listed (none is a .pem: allowed); 4,001 is
    past the bound, and the pattern's reach refuses it."""
    ws = make(tmp_path / "ws")
    big = ws / "big"
    (big / "sub").mkdir(parents=True)
    for i in range(entries - 1):  # the sub folder is an entry too
        (big / "sub" / f"f{i}.txt").touch()
    d = gate(ws, ("*.pem",)).decide("bash", {"command": "rm -rf big"})
    assert (d.verdict is Verdict.DENY) is refused, d.to_dict()
    (big / "sub" / "f0.txt").rename(big / "sub" / "k.pem")  # one hidden file among them: refused either way
    assert gate(ws, ("*.pem",)).decide("bash", {"command": "rm -rf big"}).verdict is Verdict.DENY


#: Readers that follow a link under the tree they read: through build/dir-link or build/file-link they print the
#: hidden file (a glob crosses a link as deep as its components go; find hands cat a link; grep -R follows all).
FOLLOWERS = ["grep -R SECRET build", "grep -nR SECRET build", "grep --dereference-recursive SECRET build"]
FOLLOWERS += ["tar chf - build", "tar -c --dereference -f - build"]
FOLLOWERS += ["find build -follow -type f -exec cat {} +", "find build -type l -exec cat {} +"]
FOLLOWERS += ["head build/*/*", "cat build/*", "cat build/file-*"]
NOT_FOLLOWING = ["grep -r SECRET build", "tar cf - build", "grep -R SECRET src", "cat src/*", "head docs/*/*"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in FOLLOWERS] + [(c, False) for c in NOT_FOLLOWING])
def test_a_reader_that_follows_a_link_under_its_tree_to_a_hidden_place_is_refused(
    command: str, hides: bool, tmp_path: Path
) -> None:
    ran, ws = with_links(tmp_path / "run"), with_links(tmp_path / "ws")
    assert touches_secret(command, ran) is hides, "run for real, the command does (not) print the hidden file"
    assert (gate(ws).decide("bash", {"command": command}).verdict is Verdict.DENY) is hides


def test_a_link_follower_over_a_tree_too_big_to_look_at_is_refused(tmp_path: Path) -> None:
    ws = make(tmp_path / "ws")
    (ws / "big").mkdir()
    for i in range(4001):
        (ws / "big" / f"f{i}").touch()
    assert gate(ws).decide("bash", {"command": "grep -R x big"}).verdict is Verdict.DENY
    assert gate(ws).decide("bash", {"command": "grep -r x big"}).verdict is not Verdict.DENY


def with_hops(ws: Path) -> Path:
    """Links that reach secrets/ in more than one step: ``hop/l -> ../other`` (a folder nothing hides) whose
    ``other/s -> ../secrets``; ``out/o`` to a folder outside the workspace holding a link back in; a loop, a chain
    of 30 links, a target with ``..`` inside it."""
    make(ws)
    for d in ("hop", "other", "out", "loop", "chain", "dots"):
        (ws / d).mkdir()
    os.symlink("../other", ws / "hop" / "l")
    os.symlink("../secrets", ws / "other" / "s")
    outside = ws.parent / f"{ws.name}-outside"
    outside.mkdir()
    os.symlink(ws / "secrets", outside / "back")
    os.symlink(outside, ws / "out" / "o")
    os.symlink("x", ws / "loop" / "y")
    os.symlink("y", ws / "loop" / "x")
    os.symlink("..", ws / "loop" / "up")  # to the workspace, which holds secrets/
    previous = "../secrets"
    for i in range(30):
        os.symlink(previous, ws / "chain" / f"c{i}")
        previous = f"c{i}"
    os.symlink("../dots/../src/../secrets", ws / "dots" / "d")
    return ws


HOPS = ["grep -R SECRET hop", "cat hop/*/*/*", "grep -R SECRET out", "grep -R SECRET chain", "grep -R SECRET dots"]
HOPS_HARMLESS = ["grep -r SECRET hop", "grep -r SECRET loop", "grep -R SECRET src"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in HOPS] + [(c, False) for c in HOPS_HARMLESS])
def test_a_reader_that_follows_links_through_a_folder_they_lead_to_is_refused(
    command: str, hides: bool, tmp_path: Path
) -> None:
    """The reader follows a link to a folder nothing hides and the links in that folder, in or out of the
    workspace: ``hop/l -> ../other`` then ``other/s -> ../secrets`` (``grep -R`` and the glob were allowed). A loop
    is looked at once; ``..`` in a target and long chains are resolved."""
    assert touches_secret(command, with_hops(tmp_path / "run")) is hides
    d = gate(with_hops(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


def test_a_loop_of_links_to_the_workspace_is_refused_not_walked_for_ever(tmp_path: Path) -> None:
    """``loop/up -> ..`` leads to the workspace, which holds secrets/: grep -R reads it (run for real)."""
    ws = with_hops(tmp_path / "ws")
    assert touches_secret("grep -R SECRET loop", with_hops(tmp_path / "run"))
    assert gate(ws).decide("bash", {"command": "grep -R SECRET loop"}).verdict is Verdict.DENY


SAME_LINE = [
    "ln -s secrets l && cat l/key.txt",
    "ln -s secrets l; cat l/key.txt",
    "ln -sf secrets l && grep -r SECRET l/",
    "mkdir q && ln -s ../secrets q/s && grep -R SECRET q",
    "ln -s secrets l && tar chf - l",
    "ln -s secrets/key.txt k && cat k",
    "cp -s secrets/key.txt k && cat k",
    "ln -s . l && cat l/secrets/key.txt",
]


@pytest.mark.parametrize("command", SAME_LINE)
def test_a_link_to_a_hidden_place_made_in_the_same_command_line_is_refused(command: str, tmp_path: Path) -> None:
    """The reader after the link reads through it before the gate could see the link (the gate judged ``l/key.txt``
    as a file of the workspace): a symbolic link to a hidden file, or to a folder holding one now, is DENY (it was
    allowed, or asked as a place outside the workspace)."""
    assert touches_secret(command, make(tmp_path / "run"))
    d = gate(make(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is Verdict.DENY, d.to_dict()


def test_a_link_to_a_folder_without_hidden_files_is_not_refused(tmp_path: Path) -> None:
    ws = make(tmp_path / "ws")
    assert gate(ws).decide("bash", {"command": "ln -s src l && cat l/a.py"}).verdict is not Verdict.DENY
