"""Attenuation: a child envelope may only narrow its parent's. Every spelling that would widen is named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pathspec
import pytest

from tether.envelope import load_envelope
from tether.envelope.globcover import normalise, uncovered
from tether.envelope.narrow import NarrowingError, narrow, share_budgets, widenings
from tether.envelope.schema import Budgets, Envelope, Rule, Secret
from tether.errors import InputError

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def parent() -> Envelope:
    return load_envelope(REPO / "examples" / "bugfix" / "envelope.yaml")


def changed(env: Envelope, **sections: Any) -> Envelope:
    """``env`` with nested fields replaced: ``changed(e, environment={"network": {...}})``."""
    data = env.model_dump(mode="json")
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return Envelope.model_validate(data)


def with_fs(env: Envelope, **fs: list[str]) -> Envelope:
    assert env.environment.filesystem is not None
    filesystem = env.environment.filesystem.model_copy(update=fs)
    return env.model_copy(update={"environment": env.environment.model_copy(update={"filesystem": filesystem})})


def paths(parent: Envelope, child: Envelope) -> list[str]:
    return [w.path for w in widenings(parent, child)]


# -- the glob proofs, against pathspec itself -------------------------------------------------


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        (["src/a.py"], ["src/**"]),
        (["src/pkg/**"], ["src/**"]),
        (["src/*.py"], ["src/**"]),
        (["src/test_*.py"], ["src/*.py"]),
        (["lib/src/x"], ["src"]),  # an unanchored parent glob holds every 'src' at any depth
        (["**/*.py"], ["*.py"]),
        (["a/b.py"], ["*.py"]),
        (["src/**"], ["src/"]),
        (["**"], ["**"]),
        (["docs/**", "!docs/secret"], ["docs/**"]),  # a child's own exclusion only takes away
        (["src/**", "!src/gen/**"], ["src/**", "!src/gen/**"]),
        (["src/**", "!src/gen/**", "!src/x"], ["src/**", "!src/gen/**"]),
        ([], ["src/**"]),
    ],
)
def test_covered_globs(child: list[str], parent: list[str]) -> None:
    assert uncovered(child, parent) == []


@pytest.mark.parametrize(
    ("child", "parent", "why"),
    [
        (["**"], ["src/**"], "no parent glob"),
        (["src"], ["src/**"], "no parent glob"),  # 'src' matches a file named src and src dirs at any depth
        (["src/"], ["src/**"], "no parent glob"),  # unanchored: lib/src/x too
        (["/src"], ["src/**"], "no parent glob"),  # src itself, which 'src/**' does not hold
        (["SRC/**"], ["src/**"], "no parent glob"),  # the gate is case-sensitive
        (["./src/**"], ["src/**"], "'./'"),
        (["src//a"], ["src/**"], "'//'"),
        (["src/../etc/**"], ["src/**"], "'..'"),
        ([" src/**"], ["src/**"], "spaces"),
        (["src/[ab]*"], ["src/a*"], "no parent glob"),
        (["src/**.py"], ["src/*"], "no parent glob"),
        (["*.py"], ["src/*.py"], "no parent glob"),
        (["src/x"], ["./src/**"], "no parent glob"),  # a parent glob pathspec matches to nothing grants nothing
        (["src/**"], ["src/**", "!src/gen/**"], "exclusions"),  # the exclusion must come along
        (["!src/gen/**", "src/**"], ["src/**", "!src/gen/**"], "exclusions"),  # reordered: re-includes gen
    ],
)
def test_widening_globs(child: list[str], parent: list[str], why: str) -> None:
    found = uncovered(child, parent)
    assert found and why in found[0].why


PROBES = [
    "src",
    "src/a.py",
    "src/pkg/b.py",
    "src/gen/x.py",
    "lib/src/x",
    "a.py",
    "docs/a.md",
    "tests/t.py",
    "src/test_a.py",
    "x/y/z",
    ".git/config",
]


@pytest.mark.parametrize(
    ("child", "parent"),
    [
        (["src/a.py"], ["src/**"]),
        (["src/*.py"], ["src/**"]),
        (["lib/src/x"], ["src"]),
        (["**/*.py"], ["*.py"]),
        (["src/**"], ["src/"]),
        (["src/test_*.py"], ["src/*.py"]),
        (["src/**", "!src/gen/**", "!src/x"], ["src/**", "!src/gen/**"]),
    ],
)
def test_a_covered_child_matches_nothing_the_parent_does_not(child: list[str], parent: list[str]) -> None:
    """The proof agrees with the matcher the gate uses on real paths."""
    c, p = pathspec.GitIgnoreSpec.from_lines(child), pathspec.GitIgnoreSpec.from_lines(parent)
    assert [x for x in PROBES if c.match_file(x) and not p.match_file(x)] == []


def test_normalise_reads_the_spelling_a_person_means() -> None:
    assert normalise("./src/**") == "src/**"
    assert normalise(" src//pkg/./x ") == "src/pkg/x"
    assert normalise("!./gen/") == "!gen/"
    assert normalise("/src/") == "/src/"


# -- the envelope, section by section ---------------------------------------------------------


def test_a_copy_and_a_derived_child_only_narrow(parent: Envelope) -> None:
    assert widenings(parent, parent) == []
    child = narrow(parent, tools=["read_file", "write_file", "finish"], write=["./src/calc.py"], budget_share=0.25)
    assert widenings(parent, child) == []
    assert [t.name for t in child.tools] == ["read_file", "write_file", "finish"]
    assert child.environment.filesystem is not None and child.environment.filesystem.write == ["src/calc.py"]
    assert child.budgets.usd == pytest.approx(0.5) and child.budgets.turns == 7
    assert child.contract_hash != parent.contract_hash


def test_narrow_refuses_what_the_parent_lacks_naming_each(parent: Envelope) -> None:
    with pytest.raises(NarrowingError) as e:
        narrow(parent, tools=["read_file", "http_get"])
    assert "http_get" in str(e.value)
    with pytest.raises(NarrowingError) as e:
        narrow(parent, write=["tests/**", "src/**"], network=["pypi.org"])
    found = {w.path: w for w in e.value.widenings}
    assert set(found) == {"$.environment.filesystem.write[0]", "$.environment.network.allow[0]"}
    assert "tests/**" in found["$.environment.filesystem.write[0]"].child
    assert found["$.environment.network.allow[0]"].parent == "only the hosts []"
    with pytest.raises(InputError, match="budget_share"):
        narrow(parent, budget_share=1.5)


def test_tools_a_subset_with_unchanged_contracts(parent: Envelope) -> None:
    bash = parent.tool("bash")
    assert bash is not None
    relabelled = [t if t.name != "bash" else bash.model_copy(update={"effects": ["read"]}) for t in parent.tools]
    assert paths(parent, parent.model_copy(update={"tools": relabelled})) == [
        f"$.tools[{[t.name for t in parent.tools].index('bash')}]"
    ]
    extra = bash.model_copy(update={"name": "bash2"})
    assert paths(parent, parent.model_copy(update={"tools": [*parent.tools, extra]})) == [
        f"$.tools[{len(parent.tools)}]"
    ]


def test_filesystem_widening_and_dropped_denies(parent: Envelope) -> None:
    assert paths(parent, with_fs(parent, write=["**"])) == ["$.environment.filesystem.write[0]"]
    assert paths(parent, with_fs(parent, deny=[".env"])) == ["$.environment.filesystem.deny"]
    assert paths(parent, with_fs(parent, deny=[".env", "**/*.pem", "**/id_rsa*", "extra/**"])) == []
    unstated = parent.model_copy(
        update={"environment": parent.environment.model_copy(update={"filesystem": None, "workspace": "other"})}
    )
    # An unstated filesystem writes nothing and reads everything; the workspace must stay the parent's.
    assert paths(parent, unstated) == ["$.environment.workspace", "$.environment.filesystem.deny"]


def test_network_entries_ports_and_loopback(parent: Envelope) -> None:
    net = changed(parent, environment={"network": {"allow": ["*.example.com", "pypi.org:443"]}})
    for allow, ok in [
        (["api.example.com"], True),
        (["API.Example.com."], True),
        (["example.com"], False),  # a wildcard holds exactly one more label
        (["a.b.example.com"], False),
        (["*.example.com"], True),
        (["*.b.example.com"], False),
        (["pypi.org"], False),  # 443 and 80, where the parent allows 443 only
        (["pypi.org:443"], True),
        (["*"], False),
        (["10.0.0.1"], False),
    ]:
        child = changed(net, environment={"network": {"allow": allow}})
        assert (paths(net, child) == []) is ok, allow
    loop = changed(net, environment={"network": {"allow": [], "allow_loopback": True}})
    assert paths(net, loop) == ["$.environment.network.allow_loopback"]


def test_permissions_never_gain_an_allow_or_lose_a_deny(parent: Envelope) -> None:
    perms = parent.permissions
    push = Rule(id="ask-push", rule="bash(git push:*)")
    asking = parent.model_copy(update={"permissions": perms.model_copy(update={"ask": [push]})})
    # Reordered rules, other ids and reasons: the same rules (the gate's precedence ignores order).
    reordered = perms.model_copy(
        update={"allow": list(reversed(perms.allow)), "deny": [perms.deny[0].model_copy(update={"id": "x"})]}
    )
    assert paths(parent, parent.model_copy(update={"permissions": reordered})) == []
    # The parent's deny turned into an allow: both the lost deny and the new allow are named.
    flipped = perms.model_copy(update={"deny": [], "allow": [*perms.allow, perms.deny[0]]})
    assert sorted(paths(parent, parent.model_copy(update={"permissions": flipped}))) == [
        "$.permissions.allow[2]",
        "$.permissions.deny",
    ]
    # An ask may become a deny, never an allow; a new deny or ask is always fine.
    harder = asking.permissions.model_copy(update={"ask": [], "deny": [*perms.deny, push]})
    assert paths(asking, asking.model_copy(update={"permissions": harder})) == []
    softer = asking.permissions.model_copy(update={"ask": [], "allow": [*perms.allow, push]})
    assert sorted(paths(asking, asking.model_copy(update={"permissions": softer}))) == [
        "$.permissions.allow[2]",
        "$.permissions.ask",
    ]
    # A wider spelling of an allowed rule is a different rule; so is one with its 'when' dropped.
    wider = perms.model_copy(update={"allow": [perms.allow[0], Rule(id="p", rule="bash(pytest *)")]})
    assert paths(parent, parent.model_copy(update={"permissions": wider})) == ["$.permissions.allow[1]"]
    assert paths(parent, changed(parent, permissions={"profile": "none"})) == ["$.permissions.profile"]


def test_budgets_every_dimension_and_unbounded(parent: Envelope) -> None:
    more = parent.budgets.model_copy(update={"usd": 2.5, "wall_s": None})
    assert sorted(paths(parent, parent.model_copy(update={"budgets": more}))) == ["$.budgets.usd", "$.budgets.wall_s"]
    shared = share_budgets(parent.budgets, 0.5, Budgets(usd=0.1, tokens=None))
    assert shared.usd == pytest.approx(0.1) and shared.tokens == 200000 and shared.tool_calls == 30


def test_sandbox_approvals_outputs_verification_pricing(parent: Envelope) -> None:
    strict_parent = changed(parent, environment={"sandbox": {"backend": "bwrap", "required": True}})
    local = changed(strict_parent, environment={"sandbox": {"backend": "local", "required": False}})
    assert sorted(paths(strict_parent, local)) == [
        "$.environment.sandbox.backend",
        "$.environment.sandbox.required",
    ]
    fewer = changed(parent, approvals={"require_for": ["irreversible"]})
    assert paths(parent, fewer) == ["$.approvals.require_for"]
    assert paths(parent, changed(parent, outputs={"max_external": 3})) == ["$.outputs.max_external"]
    assert paths(parent, changed(parent, verification={"test_command": "true"})) == ["$.verification.test_command"]
    no_tests = [s for s in parent.model_dump(mode="json")["verification"]["sensors"] if s["name"] != "tests"]
    assert paths(parent, changed(parent, verification={"sensors": no_tests})) == ["$.verification.sensors"]
    free = {"scripted": {"input_per_mtok": 0, "output_per_mtok": 0}}
    assert paths(parent, changed(parent, pricing=free)) == ["$.pricing"]


def test_secrets_follow_tools_and_never_grow(parent: Envelope) -> None:
    token = Secret(name="GH", source="env:GH_TOKEN", tools=["bash", "run_tests"], hosts=["api.github.com"])
    holder = parent.model_copy(update={"environment": parent.environment.model_copy(update={"secrets": [token]})})
    child = narrow(holder, tools=["read_file", "bash"])
    assert child.environment.secrets == [token.model_copy(update={"tools": ["bash"]})]
    assert narrow(holder, tools=["read_file"]).environment.secrets == []
    other = token.model_copy(update={"source": "env:OTHER", "hosts": ["evil.example.com"]})
    grown = holder.model_copy(update={"environment": holder.environment.model_copy(update={"secrets": [other]})})
    assert sorted(paths(holder, grown)) == ["$.environment.secrets[0]", "$.environment.secrets[0].hosts"]
