"""A log that git tracks is rewound by any git command that puts the work tree's tracked files back: ``git add -A`` and
``git commit`` (both allowed) put ``.tether/tether.db`` in a commit, and ``git stash`` or ``git checkout -f HEAD``
(both allowed, "changes only the local repository") then wrote the committed copy over the log: every event since
the commit was gone, and the shorter chain still verified. The same for a commit that holds the log although the
index no longer lists it (``git reset --hard OLD``). Each rewrite is run for real first; then the gate must refuse
it, with the hooks' envelope (no deny list) and with one that has a deny list."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_deny_reach_writes import gate as deny_gate

from tether.hooks.calls import hook_envelope
from tether.policy import gitindex
from tether.policy.decision import Verdict
from tether.policy.gate import Gate

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def git(ws: Path, *args: str) -> None:
    subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True)


def repo(ws: Path, *, track: bool = True, version: int = 2, sha: str = "sha1") -> Path:
    """A repository whose work tree holds src/a.py and tether's log; with ``track`` the log was committed (as
    ``git add -A`` does) and has grown since. A branch ``other`` changes src/a.py."""
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / ".tether").mkdir()
    (ws / ".tether" / "tether.db").write_text("events 0-10\n")
    git(ws, "init", "-q", f"--object-format={sha}")
    git(ws, "add", "src", *([".tether"] if track else []))
    git(ws, "commit", "-qm", "init")
    git(ws, "branch", "other")
    if version != 2:
        git(ws, "update-index", "--index-version", str(version))
    (ws / ".tether" / "tether.db").write_text("events 0-27\n")
    (ws / "src" / "a.py").write_text("x = 2\n")
    return ws


def gates(ws: Path) -> list[Gate]:
    return [Gate(hook_envelope(), ws), deny_gate(ws)]


def refused_for_the_log(g: Gate, command: str) -> bool:
    d = g.decide("bash", {"command": command})
    protected = [r for r in d.to_dict()["rules"] if r["id"] == "path:protected" and ".tether" in r["reason"]]
    return d.verdict is Verdict.DENY and bool(protected)


REWINDS = [
    "git stash",
    "git stash push -q",
    "git checkout -f HEAD",
    "git checkout -- .",
    "git checkout .",
    "git reset --hard",
    "git reset -q --hard HEAD",
    "git restore .",
    "git restore .tether",
    "git checkout HEAD -- .tether/tether.db",
    "cd src && git checkout -f HEAD",
    "git -C src reset --hard",
]


@pytest.mark.parametrize("command", REWINDS)
def test_a_rewrite_that_puts_back_a_committed_log_is_refused(command: str, tmp_path: Path) -> None:
    run = repo(tmp_path / "run")
    subprocess.run(["bash", "-c", command], cwd=run, check=True, capture_output=True)
    assert (run / ".tether" / "tether.db").read_text() == "events 0-10\n"  # the premise: the log was rewound
    ws = repo(tmp_path / "ws")
    for g in gates(ws):
        assert refused_for_the_log(g, command), (command, g.decide("bash", {"command": command}).to_dict())


def test_an_index_of_version_4_is_read_as_well(tmp_path: Path) -> None:
    """Version 4 compresses each path against the one before it: the log's name is not in its bytes as written."""
    ws = repo(tmp_path, version=4)
    assert (ws / ".git" / "index").read_bytes()[4:8] == b"\x00\x00\x00\x04"
    assert all(refused_for_the_log(g, "git stash") for g in gates(ws))


def test_a_split_index_is_not_read_from_its_bytes_and_fails_closed(tmp_path: Path) -> None:
    """A split index keeps most entries in ``sharedindex.*``: its own bytes do not name the log (dulwich does not
    read it either: not known, ASK)."""
    ws = repo(tmp_path)
    git(ws, "update-index", "--split-index")
    git(ws, "-c", "splitIndex.maxPercentChange=100", "add", "src")
    assert b".tether/" not in (ws / ".git" / "index").read_bytes()
    assert gitindex.may_list(str(ws), ".tether/")
    for g in gates(ws):
        d = g.decide("bash", {"command": "git stash"})
        assert d.verdict is not Verdict.ALLOW and "path:protected" in {r["id"] for r in d.to_dict()["rules"]}


def test_a_commit_that_holds_the_log_is_refused_though_the_index_no_longer_lists_it(tmp_path: Path) -> None:
    def untracked(ws: Path) -> Path:
        repo(ws)
        git(ws, "rm", "-q", "--cached", "-r", ".tether")
        git(ws, "commit", "-qm", "untrack the log")
        return ws

    run = untracked(tmp_path / "run")
    subprocess.run(["bash", "-c", "git reset -q --hard HEAD~1"], cwd=run, check=True, capture_output=True)
    assert (run / ".tether" / "tether.db").read_text() == "events 0-10\n"  # the premise
    ws = untracked(tmp_path / "ws")
    for g in gates(ws):
        assert refused_for_the_log(g, "git reset -q --hard HEAD~1")
        assert not refused_for_the_log(g, "git reset -q --hard HEAD")  # HEAD holds no log: it is left alone


KEEPS = ["git stash", "git checkout -f HEAD", "git reset --hard", "git checkout other", "git restore ."]


@pytest.mark.parametrize("command", KEEPS)
def test_an_untracked_log_is_left_alone_and_the_rewrite_allowed(command: str, tmp_path: Path) -> None:
    run = repo(tmp_path / "run", track=False)
    subprocess.run(["bash", "-c", command], cwd=run, check=True, capture_output=True)
    assert (run / ".tether" / "tether.db").read_text() == "events 0-27\n"  # the premise: the log was left
    for g in gates(repo(tmp_path / "ws", track=False)):
        assert not refused_for_the_log(g, command)


def test_a_rewrite_under_other_pathspecs_leaves_a_tracked_log_alone(tmp_path: Path) -> None:
    run = repo(tmp_path / "run")
    subprocess.run([*GIT, "stash", "push", "-q", "--", "src"], cwd=run, check=True)
    assert (run / ".tether" / "tether.db").read_text() == "events 0-27\n"
    for g in gates(repo(tmp_path / "ws")):
        for command in ("git stash push -- src", "git checkout -- src", "git restore src/a.py"):
            assert not refused_for_the_log(g, command), command


RESUMES = ["git rebase --continue", "git rebase --abort", "git merge --abort", "git cherry-pick --continue"]


@pytest.mark.parametrize("command", RESUMES)
def test_resuming_an_operation_writes_from_what_was_judged_when_it_began(command: str, tmp_path: Path) -> None:
    """What resumes or ends a rebase or merge writes from the commits named when it began (judged then) or from HEAD:
    the index decides, as for ``git stash``; not knowing its commits does not ask."""
    for g in gates(repo(tmp_path / "untracked", track=False)):
        assert not refused_for_the_log(g, command)
    for g in gates(repo(tmp_path / "tracked")):
        assert refused_for_the_log(g, command)


def test_a_bisect_walks_commits_not_named_and_asks(tmp_path: Path) -> None:
    d = Gate(hook_envelope(), repo(tmp_path, track=False)).decide("bash", {"command": "git bisect good"})
    assert d.verdict is Verdict.ASK and d.deciding_rule == "path:protected", d.to_dict()


def test_a_workspace_without_tethers_folder_reads_no_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the workspace holds no ``.tether`` (the log kept elsewhere) and the envelope no deny list, a rewrite is
    judged as before, without opening the repository."""
    ws = repo(tmp_path, track=False)
    (ws / ".tether" / "tether.db").unlink()
    (ws / ".tether").rmdir()

    def unread(*args: object, **kwargs: object) -> None:
        raise AssertionError("the repository was read")

    monkeypatch.setattr(gitindex, "own", unread)
    monkeypatch.setattr(gitindex, "tracked", unread)
    for command in ("git stash", "git checkout other", "git bisect good"):
        assert Gate(hook_envelope(), ws).decide("bash", {"command": command}).deciding_rule != "path:protected"


def shipped(ws: Path, sha: str = "sha1") -> Path:
    """A project that ships its envelope (docs/hooks.md: ``.tether/envelope.yaml``, written by the repository's
    authors): the envelope committed, the log not; a branch ``other`` that changes src/a.py only, and a branch
    ``looser`` whose envelope differs."""
    repo(ws, track=False, sha=sha)
    (ws / ".tether" / "envelope.yaml").write_text("profile: coding\n")
    git(ws, "add", ".tether/envelope.yaml")
    git(ws, "commit", "-qm", "ship the envelope")
    git(ws, "branch", "-f", "other")
    git(ws, "checkout", "-q", "-b", "looser")
    (ws / ".tether" / "envelope.yaml").write_text("profile: anything-goes\n")
    git(ws, "commit", "-qam", "looser")
    git(ws, "checkout", "-q", "-")
    return ws


@pytest.mark.parametrize("command", ["git stash", "git checkout other", "git merge other", "git checkout -f HEAD"])
def test_a_shipped_envelope_that_git_would_write_back_as_it_is_is_no_reason_to_refuse(
    command: str, tmp_path: Path
) -> None:
    for g in gates(shipped(tmp_path)):
        assert not refused_for_the_log(g, command), command


@pytest.mark.parametrize(
    ("command", "edited"),
    [("git stash", True), ("git checkout -f HEAD", True), ("git checkout looser", False), ("git merge looser", False)],
)
def test_an_envelope_that_git_would_change_is_refused(command: str, edited: bool, tmp_path: Path) -> None:
    """The user's uncommitted edit of the envelope put back to the commit's, or another branch's envelope written
    over it: each run for real first."""

    def make(ws: Path) -> Path:
        shipped(ws)
        if edited:
            (ws / ".tether" / "envelope.yaml").write_text("profile: coding\ndeny: [rm]\n")
        return ws

    run = make(tmp_path / "run")
    before = (run / ".tether" / "envelope.yaml").read_text()
    subprocess.run(["bash", "-c", command], cwd=run, check=True, capture_output=True)
    assert (run / ".tether" / "envelope.yaml").read_text() != before  # the premise
    for g in gates(make(tmp_path / "ws")):
        assert refused_for_the_log(g, command), command


def test_the_envelope_is_compared_in_a_sha256_repository_too(tmp_path: Path) -> None:
    ws = shipped(tmp_path, sha="sha256")
    assert len(subprocess.run(["git", "rev-parse", "HEAD"], cwd=ws, capture_output=True, text=True).stdout) == 65
    assert not any(refused_for_the_log(g, "git stash") for g in gates(ws))
    (ws / ".tether" / "envelope.yaml").write_text("profile: coding\ndeny: [rm]\n")
    assert all(refused_for_the_log(g, "git stash") for g in gates(ws))


def test_an_orphan_branch_switched_to_deletes_what_git_tracks(tmp_path: Path) -> None:
    """``git switch --orphan`` empties the work tree of every tracked file (``checkout --orphan`` keeps them): a
    tracked log, or a shipped envelope as it is, would be deleted. It was allowed as a new branch."""

    def clean(made: Path) -> Path:  # git switches to an orphan only from a work tree without changes
        git(made, "commit", "-qam", "all of it", "--allow-empty")
        return made

    for make in (repo, shipped):
        run = clean(make(tmp_path / f"run-{make.__name__}"))
        subprocess.run([*GIT, "switch", "-q", "--orphan", "fresh"], cwd=run, check=True)
        tracked = ".tether/tether.db" if make is repo else ".tether/envelope.yaml"
        assert not (run / tracked).exists()  # the premise
        for g in gates(clean(make(tmp_path / f"ws-{make.__name__}"))):
            assert refused_for_the_log(g, "git switch --orphan fresh")
            assert not refused_for_the_log(g, "git checkout --orphan fresh")
    for g in gates(repo(tmp_path / "untracked", track=False)):
        assert not refused_for_the_log(g, "git switch --orphan fresh")


@pytest.mark.parametrize(
    ("config", "plain", "owned"),
    [
        ("\tbare = false\n", True, True),  # as git init writes it
        ("\tBare = FALSE\n", True, True),  # git's keys and booleans in any case
        ("\tbare = false\n\tworktree = ..\n", False, True),  # relative to .git: the same work tree
        ("\tbare = false\n\tWorkTree = ../..\n", False, False),
        ("\tbare = false\n[include]\n\tpath = other.cfg\n", False, True),
        ('\tbare = false\n[includeIf "gitdir:~/"]\n\tpath = other.cfg\n', False, True),
        ("\tbare = true\n", False, False),
        ("\tbare\n", False, False),  # a key without a value is true
    ],
)
def test_a_plain_configuration_is_read_without_dulwich_and_anything_else_with_it(
    config: str, plain: bool, owned: bool, tmp_path: Path
) -> None:
    """A cold ``git stash`` in a hook session paid ~40 ms to import dulwich only to learn that the repository's work
    tree is where its ``.git`` is: a configuration as ``git init`` writes it now answers that alone; one that sets
    ``core.worktree``, includes another file or may be bare goes to dulwich, which reads it as before."""
    ws = repo(tmp_path)
    (ws / ".git" / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n" + config)
    assert gitindex._plainly_own(str(ws)) is plain
    assert gitindex.own(str(ws)) is owned


def test_a_worktree_configuration_beside_the_repository_is_read_with_dulwich(tmp_path: Path) -> None:
    ws = repo(tmp_path)
    (ws / ".git" / "config.worktree").write_text("[core]\n\tworktree = ..\n")
    assert not gitindex._plainly_own(str(ws))


def monorepo(root: Path, *, track: bool) -> Path:
    """A project in a subfolder of a repository (the workspace is ``root/proj``; git finds ``root/.git`` above it),
    its log tracked by that repository or not."""
    (root / "proj" / "src").mkdir(parents=True)
    (root / "proj" / "src" / "a.py").write_text("x = 1\n")
    (root / "proj" / ".tether").mkdir()
    (root / "proj" / ".tether" / "tether.db").write_text("events 0-10\n")
    git(root, "init", "-q")
    git(root, "add", "proj/src", *(["proj/.tether"] if track else []))
    git(root, "commit", "-qm", "init")
    git(root, "branch", "other")
    (root / "proj" / ".tether" / "tether.db").write_text("events 0-27\n")
    (root / "proj" / "src" / "a.py").write_text("x = 2\n")
    return root / "proj"


def test_a_project_in_a_subfolder_of_a_repository_is_judged_by_that_repository(tmp_path: Path) -> None:
    """git finds the repository above the workspace; so does the log's check where the envelope hides nothing: an
    untracked log is no reason to ask (it asked: no repository of the workspace's own), a tracked one is refused."""
    run = monorepo(tmp_path / "run", track=True)
    subprocess.run([*GIT, "stash", "-q"], cwd=run, check=True)
    assert (run / ".tether" / "tether.db").read_text() == "events 0-10\n"  # the premise: rewound from above
    g = Gate(hook_envelope(), monorepo(tmp_path / "tracked", track=True))
    assert refused_for_the_log(g, "git stash") and refused_for_the_log(g, "git reset --hard")
    g = Gate(hook_envelope(), monorepo(tmp_path / "untracked", track=False))
    for command in ("git stash", "git checkout other", "git reset --hard", "git checkout -- src"):
        d = g.decide("bash", {"command": command})
        assert "path:protected" not in {r["id"] for r in d.to_dict()["rules"]}, (command, d.to_dict())
