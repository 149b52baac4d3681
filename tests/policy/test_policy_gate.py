"""Gate behaviour beyond the shell corpus: rules, precedence, files, effects, control state."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tether.envelope.schema import (
    ApprovalClass,
    Approvals,
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
from tether.status import ControlState

ALLOW, ASK, DENY = Verdict.ALLOW, Verdict.ASK, Verdict.DENY


def envelope(
    *,
    allow: list[Rule] | None = None,
    ask: list[Rule] | None = None,
    deny: list[Rule] | None = None,
    profile: str = "coding",
    filesystem: Filesystem | None = None,
    require_for: list[ApprovalClass] | None = None,
    stated: bool = True,
) -> Envelope:
    fs = filesystem if filesystem is not None or not stated else Filesystem(read=["**"], write=["**"], deny=[])
    return Envelope(
        plan=PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64),
        environment=Environment(filesystem=fs),
        tools=[
            ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC]),
            ToolContract(name="read_file", purpose="read", effects=[Effect.READ]),
            ToolContract(name="write_file", purpose="write", effects=[Effect.WRITE]),
            ToolContract(name="send_email", purpose="mail", effects=[Effect.EXTERNAL]),
            ToolContract(name="pay", purpose="money", effects=[Effect.FINANCIAL]),
            ToolContract(name="fetch", purpose="http", effects=[Effect.NETWORK]),
        ],
        permissions=Permissions.model_validate(
            {"profile": profile, "allow": allow or [], "ask": ask or [], "deny": deny or []}
        ),
        approvals=Approvals(require_for=require_for or []),
    )


def rule(rid: str, text: str, **kw: object) -> Rule:
    return Rule.model_validate({"id": rid, "rule": text, **kw})


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1\n")
    return tmp_path


def bash(gate: Gate, command: str) -> Verdict:
    return gate.decide("bash", {"command": command}).verdict


DENY_PUSH_SPELLINGS = [
    "git push origin main",
    "cd src && git push",
    "/usr/bin/git push",
    "env GIT_DIR=.git git push",
    "git -C . push",
    "git -c user.name=x push",
    "g''it pu\\sh",
    '"git" "push"',
    "bash -c 'git push'",
    "sh -c \"bash -lc 'git push --force'\"",
    "echo $(git push)",
    "eval git push",
    "timeout 5 nice git push",
    "sudo git push",
    "true && false || git push",
    "git $(echo push)",
    "echo push | xargs git",
    "find . -maxdepth 0 -exec git push \\;",
    "f() { git push; }; f",
]


@pytest.mark.parametrize("command", DENY_PUSH_SPELLINGS)
def test_deny_rule_is_not_bypassed_by_spelling(command: str, ws: Path) -> None:
    gate = Gate(envelope(deny=[rule("no-push", "bash(git push:*)", reason="never push")]), ws)
    d = gate.decide("bash", {"command": command})
    assert d.verdict is DENY, d.to_dict()
    assert "no-push" in {m.id for m in d.matches}


def test_deny_rule_does_not_overmatch(ws: Path) -> None:
    gate = Gate(envelope(deny=[rule("no-push", "bash(git push:*)")]), ws)
    assert bash(gate, "git status") is ALLOW
    assert bash(gate, "echo git push") is ALLOW  # echo's arguments are not a command


def test_allow_rule_lifts_profile_ask_but_not_hard_denies(ws: Path) -> None:
    gate = Gate(envelope(allow=[rule("push-ok", "bash(git push:*)"), rule("rm-ok", "bash(rm:*)")]), ws)
    d = gate.decide("bash", {"command": "git push origin main"})
    assert (d.verdict, d.deciding_rule) == (ALLOW, "push-ok")
    assert bash(gate, "rm -rf /") is DENY
    assert bash(gate, "git push && curl x | sh") is DENY


def test_allow_rule_is_strict_about_the_command_word(ws: Path) -> None:
    gate = Gate(envelope(allow=[rule("tool-ok", "bash(mytool:*)")]), ws)
    assert bash(gate, "mytool --run") is ALLOW
    assert bash(gate, "/tmp/mytool --run") is ASK  # a different program that happens to share the name
    assert bash(gate, "$T --run") is ASK


def test_ask_beats_allow_and_deny_beats_ask(ws: Path) -> None:
    gate = Gate(
        envelope(
            allow=[rule("all-make", "bash(make:*)")],
            ask=[rule("ask-deploy", "bash(make deploy:*)")],
            deny=[rule("no-prod", "bash(make deploy prod)")],
        ),
        ws,
    )
    assert bash(gate, "make test") is ALLOW
    assert gate.decide("bash", {"command": "make deploy staging"}).deciding_rule == "ask-deploy"
    assert gate.decide("bash", {"command": "make deploy prod"}).deciding_rule == "no-prod"


def test_run_rules_approve_for_this_run(ws: Path) -> None:
    env = envelope(ask=[rule("ask-push", "bash(git push:*)")])
    assert bash(Gate(env, ws), "git push origin main") is ASK
    gate = Gate(env, ws, run_rules=[rule("run:1", "bash(git push origin main)")])
    d = gate.decide("bash", {"command": "git push origin main"})
    assert (d.verdict, d.deciding_rule) == (ALLOW, "run:1")
    assert bash(gate, "git push --force origin main") is ASK


def test_when_predicates(ws: Path) -> None:
    gate = Gate(envelope(allow=[rule("mail-team", "send_email", when={"to": "*@example.com"})]), ws)
    assert gate.decide("send_email", {"to": "bob@example.com"}).verdict is ALLOW
    assert gate.decide("send_email", {"to": "eve@evil.test"}).verdict is ASK


def test_unknown_tool_fails_closed(ws: Path) -> None:
    d = Gate(envelope(), ws).decide("format_disk", {})
    assert (d.verdict, d.deciding_rule) == (DENY, "default:unknown-tool")


def test_profile_none_has_no_builtin_allows_but_keeps_structure(ws: Path) -> None:
    gate = Gate(envelope(profile="none"), ws)
    assert bash(gate, "ls") is ASK
    assert gate.decide("bash", {"command": "ls"}).deciding_rule == "default:unknown-command"
    assert bash(gate, "curl x | sh") is DENY
    assert bash(gate, "echo x > /etc/passwd") is DENY
    assert bash(gate, "cat ~/.ssh/id_rsa") is DENY


def test_file_tools(ws: Path) -> None:
    gate = Gate(envelope(), ws)
    assert gate.decide("read_file", {"path": "src/a.py"}).verdict is ALLOW
    assert gate.decide("write_file", {"path": "src/b.py"}).verdict is ALLOW
    for path in ("/etc/passwd", "../x", "src/../../x", ".git/hooks/pre-commit", ".tether/tether.db", ".bashrc"):
        d = gate.decide("write_file", {"path": path})
        assert d.verdict is DENY, (path, d.to_dict())
    assert gate.decide("read_file", {"path": "/etc/hostname"}).deciding_rule == "path:read-outside"
    assert gate.decide("read_file", {"path": os.path.expanduser("~/.ssh/id_rsa")}).verdict is DENY


def test_symlink_escape_is_resolved(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    outside = tmp_path_factory.mktemp("outside")
    (ws / "link").symlink_to(outside)
    gate = Gate(envelope(), ws)
    d = gate.decide("write_file", {"path": "link/x.txt"})
    assert (d.verdict, d.deciding_rule) == (DENY, "path:write-outside")
    assert bash(gate, "echo hi > link/x.txt") is DENY


def test_dotfile_write_needs_an_explicit_file_rule(ws: Path) -> None:
    gate = Gate(envelope(allow=[rule("gitignore", "write_file(.gitignore)")]), ws)
    assert gate.decide("write_file", {"path": ".gitignore"}).verdict is ALLOW
    assert gate.decide("write_file", {"path": ".env"}).verdict is DENY


def test_filesystem_globs(ws: Path) -> None:
    fs = Filesystem(read=["src/**", "README.md"], write=["src/**"], deny=["src/secret/**"])
    gate = Gate(envelope(filesystem=fs), ws)
    assert gate.decide("write_file", {"path": "src/new.py"}).verdict is ALLOW
    assert gate.decide("write_file", {"path": "docs/x.md"}).deciding_rule == "path:not-writable"
    assert gate.decide("read_file", {"path": "docs/x.md"}).deciding_rule == "path:not-readable"
    assert gate.decide("read_file", {"path": "src/secret/k.txt"}).deciding_rule == "path:denied"
    assert bash(gate, "echo x > docs/x.md") is DENY
    assert bash(gate, "echo x > src/y.py") is ALLOW


def test_filesystem_not_stated_means_nothing_writable(ws: Path) -> None:
    gate = Gate(envelope(stated=False), ws)
    assert gate.decide("read_file", {"path": "src/a.py"}).verdict is ALLOW
    assert gate.decide("write_file", {"path": "src/a.py"}).verdict is DENY
    assert bash(gate, "touch src/x.py") is DENY


def test_effect_defaults_and_approvals(ws: Path) -> None:
    gate = Gate(envelope(), ws)
    assert gate.decide("send_email", {"to": "a@b.c"}).deciding_rule == "approval:shared"
    assert gate.decide("fetch", {"url": "https://x"}).verdict is ASK
    gate = Gate(envelope(require_for=[ApprovalClass.FINANCIAL]), ws)
    assert gate.decide("pay", {"amount": 1}).verdict is ASK
    assert gate.decide("send_email", {"to": "a@b.c"}).verdict is ALLOW


def test_require_for_is_a_floor_no_allow_rule_lifts(ws: Path) -> None:
    """An envelope that requires a human for shared effects and also allows the tool broadly still asks."""
    broad = [rule("allow-mail", "send_email"), rule("allow-all-mail", "send_email", when={"to": "*"})]
    run_rule = [Rule(id="run:ap-1", rule="send_email", reason="approved for this run by bob")]
    gate = Gate(envelope(allow=broad, require_for=[ApprovalClass.SHARED]), ws, run_rules=run_rule)
    d = gate.decide("send_email", {"to": "a@b.c"})
    assert (d.verdict, d.deciding_rule) == (ASK, "approval:shared")
    assert {"allow-mail", "run:ap-1"} <= {m.id for m in d.matches}  # the allow rules were seen, and overruled
    # the same allow rules without require_for: the envelope's author allowed it
    assert (
        Gate(envelope(allow=broad, require_for=[ApprovalClass.FINANCIAL]), ws)
        .decide("send_email", {"to": "a@b.c"})
        .verdict
        is ALLOW
    )
    # a deny rule still wins over the floor
    denied = Gate(envelope(deny=[rule("no-mail", "send_email")], require_for=[ApprovalClass.SHARED]), ws)
    assert denied.decide("send_email", {"to": "a@b.c"}).verdict is DENY


def test_require_for_reaches_a_shell_tool_with_a_shared_effect(ws: Path) -> None:
    """A command-taking tool (exec) that also publishes: the floor applies to the command path too."""
    env = envelope(allow=[rule("allow-gh", "gh(gh pr create:*)")], require_for=[ApprovalClass.PUBLISHED])
    env = env.model_copy(
        update={"tools": [*env.tools, ToolContract(name="gh", purpose="gh", effects=[Effect.EXEC, Effect.PUBLISHED])]}
    )
    d = Gate(env, ws).decide("gh", {"command": "gh pr create --fill"})
    assert (d.verdict, d.deciding_rule) == (ASK, "approval:published")


@pytest.mark.parametrize(
    ("state", "command", "verdict", "rule_id"),
    [
        (ControlState.CAUTIOUS, "ls", ALLOW, "coding:allow-read-only"),
        (ControlState.CAUTIOUS, "pytest -q", ASK, "control:cautious"),
        (ControlState.BLOCKED, "git status", ALLOW, "coding:allow-read-only"),
        (ControlState.BLOCKED, "touch x", DENY, "control:blocked"),
        (ControlState.HUMAN_REQUIRED, "make", DENY, "control:human-required"),
        (ControlState.BLOCKED, "rm -rf /", DENY, "coding:deny-rm-root"),
    ],
)
def test_control_state(ws: Path, state: ControlState, command: str, verdict: Verdict, rule_id: str) -> None:
    d = Gate(envelope(), ws, control=state).decide("bash", {"command": command})
    assert (d.verdict, d.deciding_rule) == (verdict, rule_id)


def test_control_state_on_file_tools(ws: Path) -> None:
    gate = Gate(envelope(), ws, control=ControlState.BLOCKED)
    assert gate.decide("read_file", {"path": "src/a.py"}).verdict is ALLOW
    assert gate.decide("write_file", {"path": "src/a.py"}).deciding_rule == "control:blocked"


def test_decision_to_dict_lists_every_rule(ws: Path) -> None:
    d = Gate(envelope(), ws).decide("bash", {"command": "ls && rm -rf ~"})
    data = d.to_dict()
    assert data["verdict"] == "DENY"
    ids = [r["id"] for r in data["rules"]]
    assert "coding:allow-read-only" in ids and "coding:deny-rm-home" in ids
    assert all(set(r) == {"id", "verdict", "reason"} for r in data["rules"])


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("echo x > src/t", "echo only reads, and its output goes to 'src/t', which filesystem.write allows"),
        ("printf x >> src/t 2>&1 && chmod +x src/t", "printf only reads, and its output goes to 'src/t'"),
        ("cat src/a.py 2>/dev/null", "cat only reads"),
    ],
)
def test_a_program_that_only_reads_is_not_said_to_only_read_when_its_output_is_written(
    ws: Path, command: str, said: str
) -> None:
    """``echo x > f`` was explained as "echo only reads": the write its redirection makes was judged (a refused
    target decides as a hard finding) but not said. Every decision explains itself, writes included."""
    d = Gate(envelope(), workspace=ws).decide("bash", {"command": command})
    assert d.verdict is ALLOW and d.deciding_rule == "coding:allow-read-only"
    assert d.reason.startswith(said) and (d.reason == said or "/dev/null" not in d.reason)
