"""Option allowlists: a program the profile allows stays allowed only under the options its table lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.policy import knowledge
from tether.policy.decision import Verdict
from tether.policy.defaults import default_envelope
from tether.policy.gate import Gate

ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
TABLED = sorted(n for n, s in knowledge.SPECS.items() if s.kind in ("read", "build") and not s.inert and n != ".")


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Gate:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "src").mkdir()
    return Gate(default_envelope(), ws)


def verdict(gate: Gate, command: str) -> Verdict:
    return gate.decide("bash", {"command": command}).verdict


@pytest.mark.parametrize("name", TABLED)
def test_an_option_outside_the_table_is_not_allowed(gate: Gate, name: str) -> None:
    d = gate.decide("bash", {"command": f"{name} --tether-unlisted-option src"})
    assert d.verdict is not ALLOW, d.to_dict()


@pytest.mark.parametrize("name", TABLED)
def test_an_argument_known_only_at_run_time_is_not_allowed(gate: Gate, name: str) -> None:
    assert verdict(gate, f'{name} "$OPTION"') is not ALLOW


CODE_OPTIONS = sorted(
    {(n, o) for n, s in knowledge.SPECS.items() for o in s.code if s.kind != "none" and not o.startswith("-exec")}
    | {("git " + sub, o) for sub, s in (knowledge.GIT.subcommands or {}).items() for o in s.code}
)


@pytest.mark.parametrize(("name", "option"), CODE_OPTIONS)
def test_every_option_that_runs_code_is_asked_about(gate: Gate, name: str, option: str) -> None:
    for spelling in (f"{name} {option} 'sh -c id' src", f"{name} {option}='sh -c id' src"):
        d = gate.decide("bash", {"command": spelling})
        assert d.verdict is not ALLOW, (spelling, d.to_dict())


ISSUE_EXAMPLES = [
    "git -c core.pager='sh -c id' log",
    "git -c alias.st='!id' st",
    "git --config-env=core.pager=X log",
    "GIT_CONFIG_GLOBAL=/tmp/evil git log",
    "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=id git log",
    "GIT_EXTERNAL_DIFF=/tmp/x git diff",
    "GIT_PAGER='sh -c id' git log",
    "GIT_DIR=/tmp/evil/.git git status",
    "git rebase --exec 'id' HEAD~2",
    "git rebase -x id HEAD~2",
    "git rebase -i HEAD~2",
    "git bisect run ./evil.sh",
    "git grep --open-files-in-pager='sh -c id' TODO",
    "git grep -Oid TODO",
    "git grep --open-files TODO",
    "git log --ext-diff -p",
    "git -C /tmp status",
    "git --git-dir=/tmp/x/.git log",
    "git --exec-path=/tmp log",
    "tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='sh -c id' src",
    "tar cf x.tar --checkpoint-act=exec=id src",
    "tar xf x.tar --to-command=id",
    "tar -I 'sh -c id' -xf x.tar",
    "tar --use-compress-program=id -xf x.tar",
    "zip -TT 'sh -c id' x.zip src",
    "zip x.zip -T -TT=id src",
    "sort --compress-program=sh -S 1 big.txt",
    "sort --compress-prog sh big.txt",
    "LESSOPEN='|id %s' less README.md",
    "PAGER='sh -c id' man ls",
    "make --eval='all:; id'",
    "make --ev 'all:; id'",
    "make -E 'all:; id'",
    "make -f - <<< 'all:; id'",
    "echo 'all:; id' | make -f -",
    "make -f /tmp/evil.mk",
    "make -C /tmp",
    "cd /tmp && make",
    "LD_PRELOAD=/tmp/x.so ls",
    "LD_LIBRARY_PATH=/tmp ls",
    "BASH_ENV=/tmp/x bash -c ls",
    "ENV=/tmp/x sh -c ls",
    "PYTHONSTARTUP=/tmp/x python3 -c 'print(1)'",
    "PYTHONPATH=/tmp/evil pytest",
    "PYTHONWARNINGS=ignore::evil.Thing pytest",
    "NODE_OPTIONS='--require /tmp/x.js' npm test",
    "PERL5OPT=-Mevil perl x.pl",
    "RUBYOPT=-revil ruby x.rb",
    "EDITOR='sh -c id' git commit",
    "VISUAL=id git commit",
    "export LD_PRELOAD=/tmp/x.so; ls",
    "env LD_PRELOAD=/tmp/x.so ls",
    "PATH=/tmp:$PATH ls",
    "HOME=/tmp/evil git log",
    "sed -i '1e id' src/a.py",
    "sed 's/x/y/e' src/a.py",
    "awk 'BEGIN{system(\"id\")}'",
    "hash -p /tmp/evil ls; ls",
    "install -s --strip-program=/tmp/x a b",
    "split --filter='sh -c id' big.txt",
    "gcc -wrapper sh,-c,id src/a.c",
    "gcc -B/tmp/evil src/a.c",
    "gcc -fplugin=/tmp/x.so src/a.c",
    "gcc -Wl,-plugin=/tmp/x.so src/a.c",
    "cargo --config 'target.x.runner=\"id\"' test",
    "go test -exec id ./...",
    "npm test --script-shell=/tmp/x",
    "uv run sh -c 'id; rm -rf ~'",
    "pytest --basetemp=/home",
    "pytest -p evil_plugin",
    "git diff --output=/tmp/out.txt",
    "git diff --output ../out.txt",
]


@pytest.mark.parametrize("command", ISSUE_EXAMPLES)
def test_code_hidden_in_options_and_environment_is_not_allowed(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is not ALLOW, d.to_dict()


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git diff --stat HEAD~1",
        "git log --oneline -n 20",
        "git -C src log -p -1",
        "git grep -n TODO",
        "git diff --output=changes.patch",
        "ls -la src",
        "grep -rn TODO src",
        "head -20 src/a.py",
        "tar czf dist/src.tgz src",
        "sort -u -o sorted.txt names.txt",
        "make -j4 test",
        "GIT_AUTHOR_NAME=bot git commit -m x",
        "PYTHONPATH=src python -m pytest",
        "PATH=$PATH:./node_modules/.bin tsc --noEmit",
        "gcc -O2 -Wall -Isrc -o build/a src/a.c",
    ],
)
def test_vetted_options_stay_allowed(gate: Gate, command: str) -> None:
    d = gate.decide("bash", {"command": command})
    assert d.verdict is ALLOW, d.to_dict()


def test_a_refusal_names_the_option(gate: Gate) -> None:
    d = gate.decide("bash", {"command": "sort --compress-program=gzip x"})
    assert d.deciding_rule == "coding:ask-exec-option" and "--compress-program" in d.reason
    d = gate.decide("bash", {"command": "ls --frobnicate"})
    assert d.deciding_rule == "coding:ask-option" and "--frobnicate" in d.reason


def test_an_allow_rule_does_not_lift_an_option_that_runs_code(tmp_path: Path) -> None:
    base = default_envelope()
    perms = base.permissions.model_validate({"allow": [{"id": "tar-ok", "rule": "bash(tar:*)"}]})
    gate = Gate(base.model_copy(update={"permissions": perms}), tmp_path)
    assert verdict(gate, "tar --frob x") is ALLOW  # an explicit allow lifts the profile's doubt …
    assert verdict(gate, "tar cf x.tar --checkpoint-action=exec=id src") is ASK  # … but not code execution
