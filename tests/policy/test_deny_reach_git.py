"""git commands that rewrite the work tree's tracked files (``git stash``, ``git reset --hard``, ``git checkout -- .``,
``git checkout BRANCH``, ``git restore .``) change a file ``filesystem.deny`` hides when git tracks it; ``git clean``
deletes one git does not track. Each is first run for real in a fresh workspace, to show that it changes the hidden
file; then the gate must refuse it. Where the hidden files are not tracked (ignored, the usual case) the rewrites
touch none of them and are not refused: the gate reads the index (:mod:`tether.policy.gitindex`) to tell."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from test_deny_reach_writes import gate, touches_secret
from test_deny_reach_writes import make as make_tracked

from tether.policy import gitindex
from tether.policy.decision import Verdict

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def make(ws: Path, *, tracked: bool) -> Path:
    """``tracked``: secrets/key.txt is committed and changed since, and secrets/new.txt is untracked; otherwise
    secrets/ is ignored by git, src/a.py changed since its commit, and a branch ``other`` changes src/a.py."""
    if tracked:
        make_tracked(ws)
        (ws / "secrets" / "new.txt").write_text("untracked\n")
    else:
        (ws / "src").mkdir(parents=True)
        (ws / "secrets").mkdir()
        (ws / "src" / "a.py").write_text("x = 1\n")
        (ws / "secrets" / "key.txt").write_text("SECRET\n")
        (ws / ".gitignore").write_text("secrets/\n")
        subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True)
        subprocess.run([*GIT, "add", "."], cwd=ws, check=True)
        subprocess.run([*GIT, "commit", "-qm", "init"], cwd=ws, check=True)
        (ws / "src" / "a.py").write_text("x = 2\n")
    subprocess.run([*GIT, "branch", "-q", "other"], cwd=ws, check=True)
    return ws


REWRITES = [
    "git checkout -- .",
    "git checkout .",
    "git checkout -f HEAD",
    "git checkout HEAD -- secrets",
    "git reset --hard",
    "git reset -q --hard HEAD",
    "git stash",
    "git stash push -q",
    "git restore .",
    "git clean -fdx",
    "git clean -fx secrets",
    "git checkout -- 'secrets/*'",
    "git checkout -- ':(glob)secrets/**'",
    "cd src && git checkout -- ..",
]
KEEPS = ["git stash list", "git checkout -b feat", "git reset -q HEAD", "git clean -n -x", "git restore src"]


@pytest.mark.parametrize(("command", "hides"), [(c, True) for c in REWRITES] + [(c, False) for c in KEEPS])
def test_a_git_rewrite_is_refused_when_it_changes_a_tracked_hidden_file(
    command: str, hides: bool, tmp_path: Path
) -> None:
    assert touches_secret(command, make(tmp_path / "run", tracked=True)) is hides
    verdict = gate(make(tmp_path / "ws", tracked=True)).decide("bash", {"command": command}).verdict
    assert (verdict is Verdict.DENY) is hides, (command, verdict)


@pytest.mark.parametrize("command", [c for c in REWRITES if "clean" not in c and "secrets" not in c])
def test_the_same_rewrites_are_not_refused_where_git_tracks_no_hidden_file(command: str, tmp_path: Path) -> None:
    """secrets/ ignored: git's rewrites leave it alone (run for real), so the index keeps them from a DENY."""
    assert not touches_secret(command, make(tmp_path / "run", tracked=False))
    d = gate(make(tmp_path / "ws", tracked=False)).decide("bash", {"command": command})
    assert d.verdict is not Verdict.DENY, d.to_dict()


def test_an_index_the_gate_cannot_read_fails_closed(tmp_path: Path) -> None:
    ws = make(tmp_path / "ws", tracked=False)
    assert gitindex.tracked(str(ws)) == [".gitignore", "src/a.py"]
    index = ws / ".git" / "index"
    good = index.read_bytes()
    for bad in (good[:40], b"DIRC" + (4).to_bytes(4, "big") + good[8:], good[:152] + b"\x00\x05" + good[154:]):
        index.write_bytes(bad)
        assert gitindex.tracked(str(ws)) is None
        assert gate(ws).decide("bash", {"command": "git stash"}).verdict is Verdict.DENY
    index.unlink()
    assert gitindex.tracked(str(ws)) == []  # a fresh repository: nothing tracked yet


def test_a_version_3_index_with_extended_flags_is_read(tmp_path: Path) -> None:
    """``git add -N`` sets an entry's extended flags, which makes the index version 3."""
    ws = make(tmp_path / "ws", tracked=False)
    (ws / "src" / "new.py").write_text("n = 1\n")
    subprocess.run([*GIT, "add", "-N", "src/new.py"], cwd=ws, check=True)
    assert int.from_bytes((ws / ".git" / "index").read_bytes()[4:8], "big") == 3
    assert gitindex.tracked(str(ws)) == [".gitignore", "src/a.py", "src/new.py"]


def test_every_index_git_writes_is_read(tmp_path: Path) -> None:
    """Version 4 (names prefix-compressed), a SHA-256 repository, a linked work tree (``.git`` a file): read, so
    the rewrites there are judged by what git tracks, not refused for an index the gate could not read."""
    v4 = make(tmp_path / "v4", tracked=True)
    subprocess.run([*GIT, "update-index", "--index-version", "4"], cwd=v4, check=True)
    assert int.from_bytes((v4 / ".git" / "index").read_bytes()[4:8], "big") == 4
    assert "secrets/key.txt" in (gitindex.tracked(str(v4)) or [])

    sha256 = tmp_path / "sha256"
    sha256.mkdir()
    subprocess.run([*GIT, "init", "-q", "--object-format=sha256"], cwd=sha256, check=True)
    (sha256 / "src").mkdir()
    (sha256 / "src" / "a.py").write_text("x = 1\n")
    (sha256 / "b.txt").write_text("b\n")
    subprocess.run([*GIT, "add", "."], cwd=sha256, check=True)
    assert gitindex.tracked(str(sha256)) == ["b.txt", "src/a.py"]

    main = make(tmp_path / "main", tracked=False)
    linked = tmp_path / "linked"
    subprocess.run([*GIT, "worktree", "add", "-q", str(linked), "other"], cwd=main, check=True)
    assert (linked / ".git").is_file()
    assert gitindex.tracked(str(linked)) == [".gitignore", "src/a.py"]
    (linked / "secrets").mkdir()
    (linked / "secrets" / "key.txt").write_text("SECRET\n")  # ignored there too
    assert gate(linked).decide("bash", {"command": "git stash"}).verdict is not Verdict.DENY


def test_a_sparse_index_fails_closed(tmp_path: Path) -> None:
    """A sparse index lists a folder outside the cone as one entry: the files under it are not named."""
    ws = make(tmp_path / "ws", tracked=False)
    (ws / "lib").mkdir()
    (ws / "lib" / "x.py").write_text("y = 1\n")
    subprocess.run([*GIT, "add", "."], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "lib"], cwd=ws, check=True)
    subprocess.run([*GIT, "sparse-checkout", "set", "--cone", "--sparse-index", "src"], cwd=ws, check=True)
    listed = subprocess.run([*GIT, "ls-files", "--sparse"], cwd=ws, check=True, capture_output=True, text=True)
    assert "lib/\n" in listed.stdout  # the folder is one entry of the index
    assert gitindex.tracked(str(ws)) is None
    assert gate(ws).decide("bash", {"command": "git stash"}).verdict is Verdict.DENY


def _branch_with(ws: Path, branch: str, mode: str, path: str, data: str, index: Path) -> None:
    """A branch on HEAD whose commit adds ``path`` (of git ``mode``) holding ``data``, made from a blob and a tree in
    a separate ``index``, never reading or writing the work tree."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}

    def git(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True, text=True, input=stdin, env=env)
        return done.stdout.strip()

    blob = git("hash-object", "-w", "--stdin", stdin=data)
    git("read-tree", "HEAD")
    git("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
    git("branch", branch, git("commit-tree", git("write-tree"), "-p", "HEAD", "-m", branch))


def make_evil_branch(ws: Path) -> Path:
    """secrets/ ignored and untracked (the usual case), and a branch ``evil`` whose commit holds secrets/key.txt
    (made from a blob and a tree, never reading the hidden file): git writes it over the ignored file."""
    make(ws, tracked=False)
    _branch_with(ws, "evil", "100644", "secrets/key.txt", "evil\n", ws / ".git" / "evil-index")
    subprocess.run([*GIT, "checkout", "-q", "--", "."], cwd=ws, check=True)  # clean, so that a rebase runs
    return ws


FROM_COMMITS = [
    "git checkout -q evil",
    "git checkout -m -q evil",
    "git switch -q evil",
    "git checkout evil -- .",
    "git checkout -q evil -- secrets",
    "git reset -q --hard evil",
    "git merge -q evil",
    "git rebase -q evil",
    "git cherry-pick evil",
    "git restore --source=evil .",
    "git restore -s evil .",
    "git pull -q . evil",
    "git read-tree -u --reset evil",
]
FROM_COMMITS_HARMLESS = [
    "git checkout -q other",
    "git switch -q other",
    "git checkout -q evil -- src",
    "git merge -q other",
    "git rebase -q other",
    "git reset -q --hard other",
]


@pytest.mark.parametrize(
    ("command", "hides"), [(c, True) for c in FROM_COMMITS] + [(c, False) for c in FROM_COMMITS_HARMLESS]
)
def test_a_rewrite_from_a_commit_that_holds_a_hidden_file_is_refused(command: str, hides: bool, tmp_path: Path) -> None:
    """The index is not all a rewrite writes: a branch checked out, a hard reset's target, a merge, a rebase, a
    cherry-pick write their commits' files, over an ignored one too (git treats it as expendable). The gate reads
    the trees of the commits named (``gitindex.committed``); one it cannot resolve (a pull, a range) fails closed.
    All of them were allowed or only asked."""
    assert touches_secret(command, make_evil_branch(tmp_path / "run")) is hides
    d = gate(make_evil_branch(tmp_path / "ws")).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is hides, d.to_dict()


def test_committed_reads_revisions_with_their_suffixes(tmp_path: Path) -> None:
    ws = make_evil_branch(tmp_path / "ws")
    assert "secrets/key.txt" in (gitindex.committed(str(ws), ["evil"]) or [])
    assert "secrets/key.txt" in (gitindex.committed(str(ws), ["evil~0"]) or [])
    assert gitindex.committed(str(ws), ["evil~1"]) == [".gitignore", "src/a.py"]
    assert gitindex.committed(str(ws), ["evil^"]) == [".gitignore", "src/a.py"]
    assert gitindex.committed(str(ws), [], replays="evil~1") == []  # HEAD is evil~1: nothing to replay
    assert gitindex.committed(str(ws), ["nope"]) is None
    assert gitindex.committed(str(ws), ["evil~5"]) is None
    assert gate(ws).decide("bash", {"command": "git reset -q --hard HEAD~5"}).verdict is Verdict.DENY


@pytest.mark.parametrize(
    ("command", "hides"),
    [
        ("git stash -a", True),
        ("git stash --all", True),
        ("git stash push -q -a", True),
        ("git stash -qa", True),
        ("git stash -u", False),  # secrets/ is ignored: -u leaves it
        ("git stash", False),
    ],
)
def test_stash_all_takes_ignored_files_away(command: str, hides: bool, tmp_path: Path) -> None:
    """``git stash --all`` moves ignored files into the stash, deleting them from the work tree, as ``git clean -x``
    does; it was allowed. Judged like git clean: a hidden file under its pathspecs on disk (``-u`` too, fail closed:
    the gate does not read which files git ignores)."""
    assert touches_secret(command, make(tmp_path / "run", tracked=False)) is hides
    d = gate(make(tmp_path / "ws", tracked=False)).decide("bash", {"command": command})
    assert (d.verdict is Verdict.DENY) is (hides or "-u" in command), d.to_dict()


def make_planted(ws: Path) -> Path:
    """make_evil_branch's workspace, plus: a branch ``lnk`` where ``secrets`` is a symbolic link (checking it out
    empties the ignored secrets/ to put the link there), an index file ``p.idx`` holding ``evil``'s files, and a
    repository ``planted`` in the workspace whose commit holds secrets/key.txt."""
    make_evil_branch(ws)
    _branch_with(ws, "lnk", "120000", "secrets", "elsewhere", ws / "p.idx")
    subprocess.run(
        [*GIT, "read-tree", "evil"], cwd=ws, check=True, env={**os.environ, "GIT_INDEX_FILE": str(ws / "p.idx")}
    )
    planted = ws / "planted"
    subprocess.run([*GIT, "init", "-q", str(planted)], check=True)
    (planted / "secrets").mkdir()
    (planted / "secrets" / "key.txt").write_text("evil\n")
    for step in (["add", "."], ["commit", "-qm", "p"]):
        subprocess.run([*GIT, *step], cwd=planted, check=True)
    (planted / "secrets" / "key.txt").unlink()
    (planted / "secrets").rmdir()
    return ws


MOVED = [
    "git checkout -q lnk",
    "GIT_INDEX_FILE=p.idx git checkout-index -a -f",
    "export GIT_INDEX_FILE=p.idx; git checkout-index -af",
    "env GIT_INDEX_FILE=p.idx git checkout-index -a -f",
    "git --git-dir=planted/.git --work-tree=. reset -q --hard",
    "GIT_DIR=planted/.git GIT_WORK_TREE=. git reset -q --hard",
]


@pytest.mark.parametrize("command", MOVED)
def test_a_rewrite_elsewhere_than_the_gate_reads_is_refused(command: str, tmp_path: Path) -> None:
    """A link (or file) where a directory of hidden files is: git empties it (ignored files are expendable). An index,
    git directory or work tree moved (GIT_INDEX_FILE, GIT_DIR, --git-dir, --work-tree; -c too): the gate
    does not read what git would, so the reach decides. Each asked or was allowed."""
    assert touches_secret(command, make_planted(tmp_path / "run"))
    d = gate(make_planted(tmp_path / "ws")).decide("bash", {"command": command})
    assert d.verdict is Verdict.DENY, d.to_dict()


def test_a_planted_repository_whose_work_tree_is_elsewhere_is_not_read(tmp_path: Path) -> None:
    """``core.worktree`` set in a repository of the workspace (a human approved the ``git config``) makes its work
    tree the workspace: its index and commits are not under ``planted/``, so the gate does not read them as if."""
    ws = make_planted(tmp_path / "ws")
    assert gitindex.tracked(str(ws / "planted")) == ["secrets/key.txt"]
    assert gate(ws).decide("bash", {"command": "git -C planted reset -q --hard"}).verdict is not Verdict.DENY
    subprocess.run([*GIT, "config", "core.worktree", "../.."], cwd=ws / "planted", check=True)
    assert gitindex.tracked(str(ws / "planted")) is None
    assert gitindex.committed(str(ws / "planted"), ["HEAD"]) is None
    assert gate(ws).decide("bash", {"command": "git -C planted reset -q --hard"}).verdict is Verdict.DENY
    d = gate(ws).decide("bash", {"command": "git -C planted -c core.worktree=.. reset -q --hard"})
    assert d.verdict is Verdict.DENY  # (git reads core.worktree from -c only with GIT_DIR: not shown run)
    run = make_planted(tmp_path / "run")
    subprocess.run([*GIT, "config", "core.worktree", "../.."], cwd=run / "planted", check=True)
    assert touches_secret("git -C planted reset -q --hard", run)


def test_the_commit_bounds_fail_closed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_PATHS paths in the trees read, or MAX_COMMITS commits a rebase replays, the commits are unknown and
    the reach decides: ``git checkout other`` (a branch without the hidden file, allowed) is refused then."""
    ws = make_evil_branch(tmp_path / "ws")
    assert gate(ws).decide("bash", {"command": "git checkout -q other"}).verdict is not Verdict.DENY
    monkeypatch.setattr(gitindex, "MAX_PATHS", 1)
    assert gitindex.committed(str(ws), ["other"]) is None
    monkeypatch.setattr(gitindex, "MAX_PATHS", 0)  # the gate reads only where the deny list may reach: .gitignore
    assert gate(ws).decide("bash", {"command": "git checkout -q other"}).verdict is Verdict.DENY
    monkeypatch.setattr(gitindex, "MAX_PATHS", 50_000)
    subprocess.run([*GIT, "checkout", "-q", "-b", "ahead"], cwd=ws, check=True)
    for i in range(3):
        subprocess.run([*GIT, "commit", "-q", "--allow-empty", "-m", f"c{i}"], cwd=ws, check=True)
    assert gitindex.committed(str(ws), ["other"], replays="other") == [".gitignore", "src/a.py"]
    monkeypatch.setattr(gitindex, "MAX_COMMITS", 2)
    assert gitindex.committed(str(ws), ["other"], replays="other") is None
    assert gate(ws).decide("bash", {"command": "git rebase -q other"}).verdict is Verdict.DENY


def make_evil_before(ws: Path) -> Path:
    """make_evil_branch's workspace where ``evil`` is the branch checked out before (``-``, ``@{-1}``): HEAD moved
    there and back by its reference alone, the work tree untouched."""
    make_evil_branch(ws)
    here = subprocess.run(["git", "branch", "--show-current"], cwd=ws, capture_output=True, text=True).stdout.strip()
    for step in (["symbolic-ref", "HEAD", "refs/heads/evil"], ["symbolic-ref", "HEAD", f"refs/heads/{here}"]):
        subprocess.run([*GIT, *step], cwd=ws, check=True)
    subprocess.run(
        [*GIT, "update-ref", "-m", f"checkout: moving from evil to {here}", "HEAD", "HEAD"], cwd=ws, check=True
    )
    subprocess.run([*GIT, "reset", "-q"], cwd=ws, check=True)
    return ws


@pytest.mark.parametrize("command", ["git checkout -q -", "git switch -q -", "git checkout -q @{-1}"])
def test_the_branch_before_is_not_read_and_fails_closed(command: str, tmp_path: Path) -> None:
    """``-`` is the branch checked out before: a revision, not an option (it was taken for one, and allowed)."""
    assert touches_secret(command, make_evil_before(tmp_path / "run"))
    assert gate(make_evil_before(tmp_path / "ws")).decide("bash", {"command": command}).verdict is Verdict.DENY


def _branch_of_many(ws: Path, branch: str, files: int, hidden: bool) -> None:
    """A branch whose commit holds ``files`` files under vendor/ (one blob, many names: a big repository's tree)
    and, with ``hidden``, secrets/key.txt; written through a separate index, never touching the work tree."""
    env = {**os.environ, "GIT_INDEX_FILE": str(ws / ".git" / f"{branch}-index")}

    def git(*args: str, stdin: str | None = None) -> str:
        done = subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True, text=True, input=stdin, env=env)
        return done.stdout.strip()

    blob = git("hash-object", "-w", "--stdin", stdin="x\n")
    names = [f"vendor/m{i // 100}/f{i}.c" for i in range(files)] + (["secrets/key.txt"] if hidden else [])
    git("read-tree", "HEAD")
    git("update-index", "--index-info", stdin="".join(f"100644 {blob}\t{n}\n" for n in names))
    git("branch", branch, git("commit-tree", git("write-tree"), "-p", "HEAD", "-m", branch))


def test_a_big_repository_is_read_only_where_the_deny_list_reaches(tmp_path: Path) -> None:
    """A branch of 60,000 files (past MAX_PATHS) is judged, not refused for its size: the gate walks only the
    folders the deny list may reach (secrets/ here, and the files at the top). Before, every rewrite from such a
    commit failed closed (DENY) in a big repository, after reading ~0.1 ms a file."""
    ws = make(tmp_path / "ws", tracked=False)
    _branch_of_many(ws, "big", 60_000, hidden=False)
    _branch_of_many(ws, "bigevil", 60_000, hidden=True)
    assert gitindex.committed(str(ws), ["big"]) is None  # all of it: past the bound
    assert gate(ws).decide("bash", {"command": "git checkout -q big"}).verdict is not Verdict.DENY
    d = gate(ws).decide("bash", {"command": "git checkout -q bigevil"})
    assert d.verdict is Verdict.DENY and "secrets/key.txt" in d.to_dict()["reason"], d.to_dict()
