"""``git stash -u`` (``--include-untracked``, ``-a``, ``--all``) and ``git clean -d`` take the work tree's untracked
files away, and ``.tether/`` (the session's log, the envelope) is untracked in a repository that does not ignore it.
``git stash -u`` was allowed (``coding:allow-git-work``, "changes only the local repository") and deleted the log;
the deletion was judged only against ``filesystem.deny``, and only when the envelope has one (the hooks' built-in
envelope has none). Each deletion is run for real first; then the gate must refuse it, with and without a deny list.
Whether git ignores ``.tether`` (then ``-u`` leaves it) is not read: refused all the same, as for a hidden file."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_deny_reach_writes import gate as deny_gate

from tether.hooks.calls import hook_envelope
from tether.policy import gate as gate_module
from tether.policy.decision import Verdict
from tether.policy.gate import Gate
from tether.policy.paths import PathPolicy, WalkBudget

GIT = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]


def repo(ws: Path, log: bool = True) -> Path:
    """A repository with a commit, a change, an untracked file in src/ and (``log``) tether's untracked folder."""
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "a.py").write_text("x = 1\n")
    subprocess.run([*GIT, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*GIT, "add", "."], cwd=ws, check=True)
    subprocess.run([*GIT, "commit", "-qm", "init"], cwd=ws, check=True)
    (ws / "src" / "a.py").write_text("x = 2\n")
    (ws / "src" / "new.py").write_text("y = 1\n")
    if log:
        (ws / ".tether").mkdir()
        (ws / ".tether" / "tether.db").write_text("log")
        (ws / ".tether" / "envelope.yaml").write_text("policy")
    return ws


def gates(ws: Path) -> list[Gate]:
    """The hooks' built-in envelope (no deny list) and one with a deny list."""
    return [Gate(hook_envelope(), ws), deny_gate(ws)]


DELETES = [
    "git stash -u",
    "git stash --include-untracked",
    "git stash -a",
    "git stash --all",
    "git stash push -q -u",
    "git stash -qu",
    "git stash push -u -- .",
    "git stash push -u -- '.t*'",
    "git clean -fd",
    "git clean -fdx",
    "git clean -f -d -- .tether",
    "git -C src clean -fd ..",
    "cd src && git stash -u",
]


@pytest.mark.parametrize("command", DELETES)
def test_an_untracked_log_taken_away_by_git_is_refused(command: str, tmp_path: Path) -> None:
    run = repo(tmp_path / "run")
    subprocess.run(["bash", "-c", command], cwd=run, check=True, capture_output=True)
    assert not (run / ".tether").exists()  # the premise: git took the log away
    for g in gates(repo(tmp_path / "ws")):
        d = g.decide("bash", {"command": command})
        assert d.verdict is Verdict.DENY, (command, d.to_dict())
        assert any(r["id"] == "path:protected" and ".tether" in r["reason"] for r in d.to_dict()["rules"]), d.to_dict()


KEEPS = [
    "git stash",  # tracked changes only: .tether stays
    "git stash push -u -- src",
    "git stash -u -- src/new.py",
    "git stash pop",
    "git stash list",
    "git clean -n -d",
]


@pytest.mark.parametrize("command", KEEPS)
def test_what_leaves_the_log_is_not_refused_for_it(command: str, tmp_path: Path) -> None:
    run, ws = repo(tmp_path / "run"), repo(tmp_path / "ws")
    if command == "git stash pop":
        for where in (run, ws):
            subprocess.run([*GIT, "stash", "-q"], cwd=where, check=True)
    subprocess.run(["bash", "-c", command], cwd=run, check=True, capture_output=True)
    assert (run / ".tether" / "tether.db").is_file()  # the premise: git left the log
    for g in gates(ws):
        d = g.decide("bash", {"command": command})
        assert d.deciding_rule != "path:protected", (command, d.to_dict())


def test_a_repository_without_the_log_stashes_untracked_files_as_before(tmp_path: Path) -> None:
    """No ``.tether`` under the stash's reach: allowed, as before. A nested repository (which git leaves alone) is
    not looked into, nor is the work tree's own ``.git``."""
    ws = repo(tmp_path)
    (ws / "src" / "sub").mkdir()
    subprocess.run([*GIT, "init", "-q"], cwd=ws / "src" / "sub", check=True)
    (ws / "src" / "sub" / ".git" / ".tether").mkdir()
    d = Gate(hook_envelope(), ws).decide("bash", {"command": "git stash push -u -- src"})
    assert d.verdict is Verdict.ALLOW, d.to_dict()
    d = Gate(hook_envelope(), repo(tmp_path / "none", log=False)).decide("bash", {"command": "git stash -u"})
    assert d.verdict is Verdict.ALLOW, d.to_dict()
    paths = PathPolicy(str(ws), hook_envelope().environment.filesystem)
    assert paths.protected_within(str(ws / "src"), names=(".tether",)) is None
    assert paths.protected_within(str(ws / "src")) is not None  # .git, looked for by default


def test_a_tree_too_large_to_look_at_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the decision's walk budget, whether the folder holds a ``.tether`` is not known: ASK."""
    ws = repo(tmp_path)
    for i in range(20):
        (ws / "src" / f"m{i}.py").write_text("")
    monkeypatch.setattr(gate_module, "WalkBudget", lambda: WalkBudget(10))
    d = Gate(hook_envelope(), ws).decide("bash", {"command": "git stash push -u -- src"})
    assert d.verdict is Verdict.ASK and d.deciding_rule == "path:protected", d.to_dict()
    assert "not known" in d.reason


@pytest.mark.parametrize(
    ("command", "refused"),
    [("git stash -u", True), ("git clean -fd ..", True), ("git clean -fd", True), ("git stash push -u -- src", False)],
)
def test_a_repository_above_the_workspace_takes_its_log_away_too(command: str, refused: bool, tmp_path: Path) -> None:
    """The workspace a subfolder of a repository: git's pathspec ``..`` (or none) reaches above the workspace, and
    the workspace's log with it."""
    ws = tmp_path / "proj"
    (ws / "src").mkdir(parents=True)
    (ws / ".tether").mkdir()
    (ws / ".tether" / "tether.db").write_text("log")
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    d = Gate(hook_envelope(), ws).decide("bash", {"command": command})
    assert ("path:protected" in {r["id"] for r in d.to_dict()["rules"]}) is refused, d.to_dict()
