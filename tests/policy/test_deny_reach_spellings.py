"""Spellings that read a file ``filesystem.deny`` hides through a directory the command itself moves to (tar's
``-C``, git's ``-C``, cd and a ``REV:./path`` relative to it) or a recursion an option's value asks for (grep's
``-d recurse``). Each command is first run for real in a real workspace, to show that it prints the denied
file's contents; then the gate must refuse it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, PlanRef, ToolContract
from tether.policy.decision import Verdict
from tether.policy.gate import Gate

SECRET = "SECRET-7f3a"
FS_DENY = ["secrets/**"]


def gate(ws: Path) -> Gate:
    fs = Filesystem(read=["**"], write=["**"], deny=FS_DENY)
    plan = PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64)
    shell = ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])
    return Gate(Envelope(plan=plan, environment=Environment(filesystem=fs), tools=[shell]), ws)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("reach") / "ws"
    for d in ("src", "secrets", "docs"):
        (ws / d).mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / "secrets" / "key.txt").write_text(SECRET + "\n")
    (ws / "key.txt").write_text("harmless\n")  # a file of the same name where the gate looked
    (ws / "list.txt").write_text("secrets/key.txt\n")
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "."], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "init"], cwd=ws, check=True)
    return ws


def prints_secret(command: str, ws: Path) -> bool:
    env = {**os.environ, "GIT_PAGER": "cat", "PAGER": "cat"}
    done = subprocess.run(["bash", "-c", command], cwd=ws, env=env, capture_output=True, check=False)
    if b"\x1f\x8b" in done.stdout[:2]:  # a gzip stream on stdout
        done = subprocess.run(["gzip", "-dc"], input=done.stdout, capture_output=True, check=False)
    return SECRET.encode() in done.stdout


READERS = [
    "tar cf - -C .. ws",
    "tar -C secrets -cf - .",
    "tar cf - -C secrets key.txt",
    "tar --directory=secrets -cf - key.txt",
    "tar -C .. -cf - ws/secrets",
    "cd src && tar cf - -C .. secrets",
    "tar cf - -C src ../secrets",
    "tar cf - -T list.txt",
    "tar cf - --files-from=list.txt",
    "tar -c -f - -T list.txt src",
    "git -C secrets show HEAD:./key.txt",
    "git -C src show HEAD:../secrets/key.txt",
    "cd src && git show HEAD:../secrets/key.txt",
    "git -C src cat-file -p HEAD:../secrets/key.txt",
    "git -C secrets grep SECRET -- key.txt",
    "git -C secrets blame key.txt",
    "git -C src -C ../secrets show HEAD:./key.txt",
    "git show :0:secrets/key.txt",
    "git show :secrets/key.txt",
    "git -C src show :0:../secrets/key.txt",
    "git cat-file -p :0:secrets/key.txt",
    "grep --directories=recurse SECRET .",
    "grep -d recurse SECRET .",
    "grep -drecurse SECRET .",
    "grep --directories recurse SECRET secrets",
    "egrep --dir=recurse SECRET .",
    "D=recurse; grep -d $D SECRET .",
    'grep -d "$(echo recurse)" SECRET .',
    # git's log family prints patches under more options than -p (-U and --unified imply it; --cc, -c, --binary)
    "git log --cc",
    "git log -U1",
    "git log --unified=1",
    "git whatchanged -U0",
    "git log --binary",
    "git log -c",
    "git log --patch-with-stat",
    "git log --patch-with-raw",
    "git log -pU0",
    "git log --stat -U0",
    "git log --no-patch -p",
    # these held already: git's own ways to another repository or to a blob
    "git --git-dir=.git show HEAD:secrets/key.txt",
    "GIT_DIR=.git git show HEAD:secrets/key.txt",
    "git archive HEAD secrets",
    "git archive HEAD",
    "git cat-file -p HEAD:secrets/key.txt",
    "git diff --no-index secrets/key.txt src/a.py",
    "git grep SECRET",
    "git log -p -- secrets",
    "git -C secrets log -p .",
    "git format-patch -1 --stdout",
]


@pytest.mark.parametrize("command", READERS)
def test_a_reader_that_moves_or_recurses_by_an_option_is_refused(command: str, ws: Path) -> None:
    assert prints_secret(command, ws), "the spelling does not read the denied file: the test proves nothing"
    d = gate(ws).decide("bash", {"command": command})
    assert d.verdict is Verdict.DENY, d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "tar cf - -C src .",
        "tar -C src -cf - a.py",
        "git -C src show HEAD:./a.py",
        "git show HEAD:src/a.py",
        "git show :0:src/a.py",
        "git -C src blame a.py",
        "grep -d skip SECRET src",
        "grep --directories=read x src/a.py",
        "grep -d recurse x src",
        "git log --stat",
        "git log --oneline -U1 -- src",
    ],
)
def test_the_same_readers_of_places_the_deny_list_cannot_reach_are_allowed(command: str, ws: Path) -> None:
    assert not prints_secret(command, ws)
    d = gate(ws).decide("bash", {"command": command})
    assert d.verdict is Verdict.ALLOW, d.to_dict()


@pytest.mark.parametrize(
    ("command", "prints"),
    [
        ("git log -p --no-patch", False),
        ("git log -p -s", False),
        ("git log -ps", False),
        ("git log --patch --no-patch --stat", False),
        ("git log --unified=2 --no-patch", False),
        ("git log --no-patch -p", True),
        ("git log -s -p", True),
        ("git log -sp", True),
        ("git log -p --no-patch -U1", True),
        ("git log -s -U3", True),
    ],
)
def test_no_patch_after_the_last_patch_option_prints_none(command: str, prints: bool, ws: Path) -> None:
    """git lets the last of ``-p`` (and the options that imply it) and ``-s``/``--no-patch`` win: the first five
    print no file and were refused (over-strict); the rest still print one and stay refused."""
    assert prints_secret(command, ws) is prints
    d = gate(ws).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is prints, d.to_dict()
    assert prints or d.verdict is Verdict.ALLOW
