"""Strict validation refuses dangerous envelopes, names the path and the safer form, and takes
acknowledgements only by name. Each test tries a spelling that could slip past a naive check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli.main import app
from tether.envelope import contract_hash, load_envelope
from tether.envelope.schema import Envelope
from tether.errors import Problem
from tether.policy.strict import accepted_risks, strict_problems

runner = CliRunner()


def edit(path: Path, mutate: Any) -> Path:
    """Change an envelope and reseal its contract hash, so only the intended problem remains."""
    data = yaml.safe_load(path.read_text())
    mutate(data)
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems(path: Path) -> list[Problem]:
    return strict_problems(load_envelope(path), path)


def only(path: Path) -> Problem:
    found = problems(path)
    assert len(found) == 1, found
    return found[0]


def fs(data: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = data["environment"]["filesystem"]
    return result


# -- globs ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("glob", ["../**", "src/../../x/**", "../../etc/passwd", "~/.ssh/*", "/etc/**", "/root/.ssh/*"])
@pytest.mark.parametrize("kind", ["read", "write"])
def test_glob_outside_workspace(example: Path, kind: str, glob: str) -> None:
    env = edit(example / "envelope.yaml", lambda d: fs(d)[kind].append(glob))
    p = only(env)
    assert p.path == f"$.environment.filesystem.{kind}[{len(fs(yaml.safe_load(env.read_text()))[kind]) - 1}]"
    assert "relative to the workspace" in p.expected or "inside the workspace" in p.expected


def test_absolute_glob_inside_workspace_gets_its_relative_form(example: Path) -> None:
    ws = (example / "project").resolve()
    env = edit(example / "envelope.yaml", lambda d: fs(d)["write"].append(f"{ws}/docs/**"))
    assert "'docs/**'" in only(env).expected


def test_negated_and_deny_globs_outside_are_harmless(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        fs(d)["write"].append("!../**")
        fs(d)["deny"].append("../secrets/**")

    assert problems(edit(example / "envelope.yaml", mutate)) == []


# -- workspace --------------------------------------------------------------------------------------


@pytest.mark.parametrize("workspace", ["/", "/etc", "/usr", "/tmp", "/home"])
def test_system_workspace(example: Path, workspace: str) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"].update(workspace=workspace))
    p = only(env)
    assert p.path == "$.environment.workspace" and "system directory" in p.found


def test_home_workspace_in_any_spelling(example: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home" / "someone"
    (home / "proj").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    for spelling in (str(home), f"{home}/proj/..", str(tmp_path / "home")):
        env = edit(example / "envelope.yaml", lambda d, s=spelling: d["environment"].update(workspace=s))
        assert "home directory" in only(env).found, spelling
    ok = edit(example / "envelope.yaml", lambda d: d["environment"].update(workspace=str(home / "proj")))
    assert problems(ok) == []


def test_relative_workspace_resolving_to_root(example: Path) -> None:
    depth = len(example.resolve().parts)
    env = edit(example / "envelope.yaml", lambda d: d["environment"].update(workspace="../" * depth))
    assert only(env).found.startswith("/ ")


# -- .git and the log -------------------------------------------------------------------------------


@pytest.mark.parametrize("glob", ["**", ".git/**", ".git/hooks/*", "*config", ".*/**", "**/hooks/**"])
def test_writable_git(example: Path, glob: str) -> None:
    env = edit(example / "envelope.yaml", lambda d: fs(d)["write"].append(glob))
    found = problems(env)
    assert any("git" in p.found and p.path.startswith("$.environment.filesystem.write[") for p in found), found
    assert all("risk: git-writable" in p.expected for p in found if ".git/" in p.found)


def test_git_denied_makes_broad_writes_acceptable(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        fs(d)["write"].append("**")
        fs(d)["deny"] += [".git/**", ".tether/**"]

    assert problems(edit(example / "envelope.yaml", mutate)) == []


def test_writable_audit_log_cannot_be_acknowledged(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        fs(d)["write"].append(".tether/**")
        d["acknowledge"] = [{"risk": "git-writable", "reason": "trying"}]

    found = problems(edit(example / "envelope.yaml", mutate))
    assert {p.path for p in found} == {"$.environment.filesystem.write[1]", "$.acknowledge[0].risk"}
    assert any("the run's own log" in p.found for p in found)


# -- network ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["*", "**", "*.*", " * ", "0.0.0.0/0", "::/0"])
def test_network_any(example: Path, host: str) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"]["network"].update(allow=["pypi.org", host]))
    p = only(env)
    assert p.path == "$.environment.network.allow[1]" and "risk: network-any" in p.expected


@pytest.mark.parametrize("host", ["10.0.0.1", "2130706433", "[::1]:443", "a.*.org", "pypi.org:0"])
def test_an_allow_entry_that_is_no_host_name_is_named(example: Path, host: str) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"]["network"].update(allow=["pypi.org", host]))
    p = only(env)
    assert p.path == "$.environment.network.allow[1]" and "expected" in p.expected


def test_loopback_is_a_risk_to_acknowledge(example: Path) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"]["network"].update(allow_loopback=True))
    p = only(env)
    assert p.path == "$.environment.network.allow_loopback" and "risk: network-loopback" in p.expected


def test_exact_hosts_pass(example: Path) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"]["network"].update(allow=["pypi.org"]))
    assert problems(env) == []


# -- shell ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rule",
    [
        "bash",
        "bash(*)",
        "bash(:*)",
        "bash( * )",
        "bash(* *)",
        "bash(**)",
        "bash(?*)",
        "bash(python:*)",
        "bash(sh -c:*)",
    ],
)
def test_blanket_shell_allow(example: Path, rule: str) -> None:
    env = edit(
        example / "envelope.yaml",
        lambda d: d["permissions"]["allow"].append({"id": "wide", "rule": rule, "when": {"command": "pytest*"}}),
    )
    p = only(env)
    assert p.path == "$.permissions.allow[2].rule" and "risk: shell-any" in p.expected


def test_shell_named_differently_is_still_a_shell(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        bash = next(t for t in d["tools"] if t["name"] == "bash")
        d["tools"].append({**bash, "name": "Bash"})
        d["permissions"]["allow"].append({"id": "wide", "rule": "Bash"})

    assert only(edit(example / "envelope.yaml", mutate)).path == "$.permissions.allow[2].rule"


def test_narrow_shell_rules_and_fixed_command_tools_pass(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["permissions"]["allow"] += [
            {"id": "ruff", "rule": "bash(ruff check:*)"},
            {"id": "py-m", "rule": "bash(python -m pytest:*)"},
        ]

    env = edit(example / "envelope.yaml", mutate)
    assert problems(env) == []  # and the example's own `run_tests` allow (a fixed command) passes too


# -- secrets ----------------------------------------------------------------------------------------


SECRET = {"name": "gh", "source": "env:GITHUB_TOKEN", "tools": ["bash"], "hosts": ["api.github.com"]}


def test_secrets_refuse_local_sandbox(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["secrets"] = [SECRET]
        d["environment"]["sandbox"] = {"backend": "local", "required": True}
        d["acknowledge"] = [{"risk": "shell-any", "reason": "cannot acknowledge secrets on local"}]

    found = problems(edit(example / "envelope.yaml", mutate))
    assert [p.path for p in found] == ["$.environment.sandbox.backend", "$.acknowledge[0].risk"]
    assert "local isolates nothing" in found[0].expected


def test_secrets_refuse_a_bwrap_that_may_fall_back(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["secrets"] = [SECRET]
        d["environment"]["sandbox"] = {"backend": "bwrap", "required": False}

    assert only(edit(example / "envelope.yaml", mutate)).path == "$.environment.sandbox.required"


# -- acknowledgements -------------------------------------------------------------------------------


def test_acknowledged_risks_are_accepted_and_listed(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["network"]["allow"] = ["*"]
        d["permissions"]["allow"].append({"id": "any", "rule": "bash(*)"})
        d["acknowledge"] = [
            {"risk": "network-any", "reason": "reads arbitrary documentation sites; throwaway VM"},
            {"risk": "shell-any", "reason": "  trusted internal agent  "},
        ]

    env = edit(example / "envelope.yaml", mutate)
    assert problems(env) == []
    accepted = [a.to_dict() for a in accepted_risks(load_envelope(env), env)]
    assert accepted == [
        {
            "risk": "network-any",
            "path": "$.environment.network.allow[0]",
            "found": "'*' (any host)",
            "reason": "reads arbitrary documentation sites; throwaway VM",
        },
        {
            "risk": "shell-any",
            "path": "$.permissions.allow[2].rule",
            "found": "'bash(*)' (allows e.g. 'tether-probe-any-program --any-option')",
            "reason": "trusted internal agent",
        },
    ]


def test_acknowledgement_of_one_risk_does_not_accept_another(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["network"]["allow"] = ["*"]
        d["permissions"]["allow"].append({"id": "any", "rule": "bash"})
        d["acknowledge"] = [{"risk": "network-any", "reason": "docs"}]

    assert only(edit(example / "envelope.yaml", mutate)).path == "$.permissions.allow[2].rule"


@pytest.mark.parametrize(
    ("ack", "path"),
    [
        ({"risk": "network-any", "reason": "   "}, "$.acknowledge[0].reason"),  # blank reason
        ({"risk": "network-any"}, "$.acknowledge[0].reason"),  # no reason
        ({"risk": "everything", "reason": "x"}, "$.acknowledge[0].risk"),  # not a named risk
        ({"risk": "network-any", "reason": "x", "scope": "all"}, "$.acknowledge[0].scope"),
    ],
)
def test_malformed_acknowledgement_is_a_schema_error(example: Path, ack: dict[str, Any], path: str) -> None:
    data = yaml.safe_load((example / "envelope.yaml").read_text())
    data["acknowledge"] = [ack]
    (example / "envelope.yaml").write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["validate", str(example / "envelope.yaml"), "--json"])
    assert result.exit_code == 1
    assert path in [p["path"] for p in json.loads(result.output)["problems"]]


def test_duplicate_and_unneeded_acknowledgements(example: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["network"]["allow"] = ["*"]
        d["acknowledge"] = [
            {"risk": "network-any", "reason": "a"},
            {"risk": "network-any", "reason": "b"},
            {"risk": "git-writable", "reason": "c"},
        ]

    assert [p.path for p in problems(edit(example / "envelope.yaml", mutate))] == [
        "$.acknowledge[1].risk",
        "$.acknowledge[2].risk",
    ]


def test_cli_strict_names_path_and_safer_form(example: Path) -> None:
    env = edit(example / "envelope.yaml", lambda d: d["environment"]["network"].update(allow=["*"]))
    result = runner.invoke(app, ["validate", str(env), "--strict", "--json"])
    assert result.exit_code == 1
    (p,) = json.loads(result.output)["problems"]
    assert p["path"] == "$.environment.network.allow[0]"
    assert p["expected"].startswith("the exact host names the task needs")
