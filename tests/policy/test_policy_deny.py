"""Deny means deny: a deny rule that matches or may match gives DENY, never ASK; readers that choose
files themselves are refused when ``filesystem.deny`` may match what they read."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from tether.envelope.schema import (
    Effect,
    Envelope,
    Environment,
    Filesystem,
    Permissions,
    PlanRef,
    Rule,
    ToolContract,
)
from tether.policy.decision import Verdict
from tether.policy.gate import Gate

ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY


def envelope(deny: list[dict[str, str]] | None = None, fs_deny: list[str] | None = None) -> Envelope:
    return Envelope(
        plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=Filesystem(read=["**"], write=["**"], deny=fs_deny or [])),
        tools=[ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])],
        permissions=Permissions.model_validate({"deny": deny or []}),
    )


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    for d in ("src", "secrets", "docs"):
        (ws / d).mkdir()
    (ws / "src" / "a.py").write_text("x = 1\n")
    (ws / "secrets" / "key.txt").write_text("k\n")
    return ws


PUSH = [
    "git push",
    "git push origin main",
    "git push --force",
    "git push -u origin HEAD",
    "git push --tags",
]
PREFIXES = [
    "",
    "cd src && ",
    "ls; ",
    "true && ",
    "false || ",
    "env ",
    "env -i ",
    "command ",
    "exec ",
    "nohup ",
    "timeout 5 ",
    "nice -n 5 ",
    "sudo ",
    "time ",
    "GIT_AUTHOR_NAME=x ",
    "X=1 ",
    "/usr/bin/env ",
    "builtin command ",
    "setsid ",
    "stdbuf -oL ",
]
SPELLINGS = [
    *(p + c for p, c in itertools.product(PREFIXES, PUSH[:3])),
    "/usr/bin/git push",
    "git -C . push",
    "git -C src push",
    "git --no-pager push",
    "git -c user.name=x push",
    "git -c alias.p=push p",
    "git -c alias.p='!git push' p",
    "git config alias.p push && git p",
    "git --git-dir=.git push",
    "git --work-tree=. push",
    "git --exec-path=/usr/lib/git-core push",
    "git --frobnicate push",
    "git --namespace x push",
    "g''it pu''sh",
    "g\\it p\\ush",
    '"git" "push"',
    "'git' 'push'",
    "$'git' $'push'",
    "$'\\x67it' push",
    "bash -c 'git push'",
    "sh -c 'git push'",
    "bash -lc 'git push origin main'",
    "sh -c \"bash -c 'git push'\"",
    "bash <<< 'git push'",
    "bash <<EOF\ngit push\nEOF",
    "echo $(git push)",
    "echo `git push`",
    "cat <(git push)",
    "x=$(git push)",
    "eval git push",
    "eval 'git push'",
    'eval "$CMD"',
    "eval $(echo git push)",
    "a=git; $a push",
    "a=push; git $a",
    'a="git push"; $a',
    "c=git; p=push; $c $p",
    "for c in git; do $c push; done",
    "$GIT push",
    "${GIT:-git} push",
    "$(echo git) push",
    "`echo git` push",
    "git $(echo push)",
    "git $SUB",
    "git ${SUB}",
    "echo push | xargs git",
    "echo origin | xargs git push",
    "xargs -I{} git {} < subs.txt",
    "find . -maxdepth 0 -exec git push \\;",
    "find . -maxdepth 0 -execdir git push {} +",
    "f() { git push; }; f",
    "function f { git push; }; f",
    "f() { g; }; g() { git push; }; f",
    "(git push)",
    "{ git push; }",
    "if true; then git push; fi",
    "while false; do :; done; git push",
    "case x in x) git push;; esac",
    "trap 'git push' EXIT",
    "alias p='git push'",
    "watch -n 1 git push",
    "ls && git push || true",
    "git push &",
    "git push | cat",
    "git push > /dev/null 2>&1",
    "python3 -c 'import os; os.system(\"git push\")'",
    'python3 -c \'import subprocess; subprocess.run(["git", "push"])\'',
    "python3 -c \"__import__('os').system('gi'+'t pu'+'sh')\"",
    "perl -e 'system(\"git push\")'",
    "ruby -e 'system(\"git push\")'",
    'node -e \'require("child_process").execSync("git push")\'',
    "awk 'BEGIN{system(\"git push\")}'",
    "sed -n '1e git push' x",
    "tar cf x.tar --checkpoint=1 --checkpoint-action=exec='git push' src",
    "zip -TT 'git push' x.zip src",
    "sort --compress-program='git-push-wrapper' x",
    "make --eval='all:; git push'",
    "make -f - <<< 'all:; git push'",
    "git rebase --exec 'git push' HEAD~1",
    "git bisect run git push",
    "GIT_PAGER='git push' git log",
    "PAGER='sh -c \"git push\"' git log",
    "GIT_SSH_COMMAND='sh -c id' git status",
    "echo 'git push' | bash",
    "echo 'git push' | sh -s",
    'bash -c "$(echo git push)"',
    'sh -c "$PAYLOAD"',
    "source <(echo git push)",
    "echo 'git push' > x.sh; . <(cat x.sh)",
    "env -S 'git push'",
    "env --split-string='git push'",
    "su -c 'git push'",
    "flock /tmp/l -c 'git push'",
    "uv run git push",
    "poetry run git push",
    "git push; echo 'unterminated",
    "$( " * 60 + "git push" + " )" * 60,
    "(" * 80 + "git push" + ")" * 80,
]


def test_the_spellings_are_many() -> None:
    assert len(SPELLINGS) >= 150


@pytest.mark.parametrize("command", SPELLINGS, ids=range(len(SPELLINGS)))
def test_every_spelling_of_a_denied_command_is_denied(command: str, ws: Path) -> None:
    gate = Gate(envelope(deny=[{"id": "no-push", "rule": "bash(git push:*)", "reason": "never push"}]), ws)
    d = gate.decide("bash", {"command": command})
    assert d.verdict is DENY, d.to_dict()
    assert "no-push" in {m.id for m in d.matches}, d.to_dict()


@pytest.mark.parametrize("command", ["git status", "echo git push", "git log --oneline", "ls src", "grep -n push src"])
def test_the_deny_rule_does_not_swallow_what_it_cannot_match(command: str, ws: Path) -> None:
    gate = Gate(envelope(deny=[{"id": "no-push", "rule": "bash(git push:*)"}]), ws)
    assert gate.decide("bash", {"command": command}).verdict is ALLOW


def test_a_run_rule_cannot_approve_past_a_deny_rule(ws: Path) -> None:
    approved = Rule.model_validate({"id": "run:1", "rule": "bash(git push:*)"})
    gate = Gate(envelope(deny=[{"id": "no-push", "rule": "bash(git push:*)"}]), ws, run_rules=[approved])
    d = gate.decide("bash", {"command": "git push origin main"})
    assert (d.verdict, d.deciding_rule) == (DENY, "no-push")


FS_DENY = ["secrets/**", "/docs/*.pem"]
SELF_SELECTING = [
    "grep -r KEY .",
    "grep -rn KEY",
    "grep -R KEY /",
    "grep -r KEY ..",  # a directory above the workspace holds all of it
    "cd src && grep -r KEY ../..",
    "rg KEY ..",
    "find .. -type f -exec cat {} \\;",
    "rg KEY",
    "rg KEY .",
    "ag KEY",
    "find . -type f -exec cat {} \\;",
    "find . -name '*.txt' -exec grep -H k {} +",
    "find secrets -type f | xargs cat",
    "git ls-files | xargs cat",
    "cat secrets/*",
    "cat */key.txt",
    "cat docs/*.pem",
    "cat docs/*",
    "head -n 5 $(ls secrets)",
    'cat "$F"',
    "git show HEAD:secrets/key.txt",
    "git show HEAD:./secrets/key.txt",
    "git show HEAD",
    "git show",
    "git cat-file -p HEAD:secrets/key.txt",
    "git grep KEY",
    "git grep KEY HEAD",
    "git diff",
    "git diff HEAD~1",
    "git log -p",
    "git log --patch -1",
    "git stash show -p",
    "git archive HEAD",
    "git blame secrets/key.txt",
    "tar czf out.tgz .",
    "tar cf - . | cat",
    "zip -r out.zip .",
    "cp -r . /tmp/copy",
    "cat secrets/key.txt",
    "diff -r src secrets",
]


def test_a_pattern_without_a_slash_reaches_every_directory(ws: Path) -> None:
    gate = Gate(envelope(fs_deny=["*.pem"]), ws)
    assert gate.decide("bash", {"command": "grep -rn KEY src"}).verdict is DENY
    assert gate.decide("bash", {"command": "cat src/a.py"}).verdict is ALLOW


@pytest.mark.parametrize("command", SELF_SELECTING)
def test_readers_that_choose_files_are_refused_when_the_deny_list_may_match(command: str, ws: Path) -> None:
    gate = Gate(envelope(fs_deny=FS_DENY), ws)
    d = gate.decide("bash", {"command": command})
    assert d.verdict is DENY, d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "grep -rn KEY src",
        "rg KEY src",
        "find src -type f -exec cat {} \\;",
        "git show HEAD:src/a.py",
        "git grep KEY -- src",
        "git diff -- src",
        "git log --oneline",
        "zip -r out.zip src",
        "cat src/*.py",
        "ls secrets",
    ],
)
def test_readers_limited_to_places_the_deny_list_cannot_reach_are_allowed(command: str, ws: Path) -> None:
    gate = Gate(envelope(fs_deny=FS_DENY), ws)
    d = gate.decide("bash", {"command": command})
    assert d.verdict is ALLOW, d.to_dict()
