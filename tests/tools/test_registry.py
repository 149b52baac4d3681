from __future__ import annotations

from typing import Any

import pytest

import tether.tools
from tether.envelope.schema import Effect, Envelope, ToolContract
from tether.errors import EnvelopeInvalid, InputError
from tether.tools import ToolContext, builtin_tools, default_contracts, resolve_tools, tool
from tether.tools.finish import finish

BUILTIN_NAMES = [
    "read_file",
    "list_dir",
    "search",
    "write_file",
    "edit_file",
    "bash",
    "git_diff",
    "run_tests",
    "finish",
    "plan",
    "hypothesis",
    "read_result",
    "delegate",
]

EXPECTED_EFFECTS = {
    "read_file": [Effect.READ],
    "list_dir": [Effect.READ],
    "search": [Effect.READ],
    "write_file": [Effect.WRITE],
    "edit_file": [Effect.WRITE],
    "bash": [Effect.EXEC],
    "git_diff": [Effect.READ],
    "run_tests": [Effect.EXEC],
    "finish": [Effect.READ],
    "plan": [Effect.READ],
    "hypothesis": [Effect.READ],
    "read_result": [Effect.READ],
    "delegate": [Effect.EXEC],
}


def _envelope(tools: list[dict[str, Any]]) -> Envelope:
    return Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "sha256:" + "0" * 64}, "tools": tools})


def test_public_surface() -> None:
    assert sorted(tether.tools.__all__) == sorted(
        [
            "FAILURE_CLASSES",
            "Tool",
            "ToolArgsError",
            "ToolContext",
            "ToolFailure",
            "ToolResult",
            "builtin_tools",
            "default_contracts",
            "resolve_tools",
            "tool",
        ]
    )
    for name in tether.tools.__all__:
        assert hasattr(tether.tools, name)


def test_builtins_and_their_effects() -> None:
    tools = builtin_tools()
    assert list(tools) == BUILTIN_NAMES
    assert {name: t.contract.effects for name, t in tools.items()} == EXPECTED_EFFECTS
    idempotent = {name for name, t in tools.items() if t.contract.idempotent}
    assert idempotent == {
        "read_file",
        "list_dir",
        "search",
        "write_file",
        "git_diff",
        "run_tests",
        "finish",
        "plan",
        "hypothesis",
        "read_result",
        "delegate",
    }


def test_default_contracts_are_complete() -> None:
    contracts = default_contracts()
    assert [c.name for c in contracts] == BUILTIN_NAMES
    for c in contracts:
        assert c.purpose and not c.purpose.endswith(" ")
        assert c.timeout_s is not None and c.timeout_s > 0, c.name
        assert c.idempotent is not None and c.on_failure is not None, c.name
        assert c.evidence, c.name
        assert c.rollback and c.rollback != "none", c.name  # no built-in is irreversible
        assert c.input_schema["type"] == "object" and c.input_schema["additionalProperties"] is False
        # Round-trips through the envelope schema (what `tether init` writes must load back).
        assert ToolContract.model_validate(c.model_dump(mode="json")) == c
    by_name = {c.name: c for c in contracts}
    for name in ("write_file", "edit_file", "bash"):  # what they change is in the kernel's rollback receipt
        assert (by_name[name].rollback or "").startswith("tether undo: "), name
    assert by_name["read_file"].input_schema["required"] == ["path"]
    assert by_name["finish"].input_schema["required"] == ["summary"]


def test_resolve_tools_returns_exactly_the_envelope_tools() -> None:
    env = _envelope([c.model_dump(mode="json") for c in default_contracts() if c.name in ("read_file", "finish")])
    resolved = resolve_tools(env)
    assert list(resolved) == ["read_file", "finish"]
    assert resolved["finish"] is finish


def test_resolve_tools_names_every_unimplemented_tool() -> None:
    env = _envelope(
        [
            {"name": "read_file", "purpose": "r", "effects": ["read"]},
            {"name": "deploy", "purpose": "d", "effects": ["external"]},
            {"name": "email", "purpose": "e", "effects": ["external"]},
        ]
    )
    with pytest.raises(EnvelopeInvalid) as info:
        resolve_tools(env)
    assert isinstance(info.value, InputError)
    assert [p.path for p in info.value.problems] == ["$.tools[1].name", "$.tools[2].name"]
    assert info.value.problems[0].found == "'deploy'"
    assert "read_file" in info.value.problems[0].expected


def test_resolve_tools_refuses_under_declared_effects() -> None:
    env = _envelope([{"name": "bash", "purpose": "shell", "effects": ["read"]}])
    with pytest.raises(EnvelopeInvalid) as info:
        resolve_tools(env)
    (problem,) = info.value.problems
    assert problem.path == "$.tools[0].effects" and "add: exec" in problem.expected
    # Declaring more than the implementation has is fine (stricter gating).
    env = _envelope([{"name": "bash", "purpose": "shell", "effects": ["exec", "network"]}])
    assert list(resolve_tools(env)) == ["bash"]


def test_extra_tools_implement_and_override(ctx: ToolContext) -> None:
    @tool(effects=["external"], rollback="cancel the deployment")
    def deploy(env: str) -> str:
        """Deploy."""
        return f"deployed {env}"

    @tool(effects=["read"], name="finish")
    def my_finish(summary: str) -> str:
        """My own finish."""
        return "custom"

    env = _envelope(
        [
            {"name": "deploy", "purpose": "d", "effects": ["external"]},
            {"name": "finish", "purpose": "f", "effects": ["read"]},
        ]
    )
    resolved = resolve_tools(env, extra=[deploy, my_finish])
    assert resolved["deploy"] is deploy and resolved["finish"] is my_finish
    assert resolved["finish"].invoke({"summary": "x"}, ctx).content == "custom"
    with pytest.raises(ValueError, match="two extra tools"):
        resolve_tools(env, extra=[deploy, deploy])


def test_finish_is_a_claim_not_an_action(ctx: ToolContext) -> None:
    r = finish.invoke({"summary": "fixed the off-by-one in parser.py; tests pass"}, ctx)
    assert r.ok and r.data == {"claim": "fixed the off-by-one in parser.py; tests pass"}
    assert r.changed_files == ()
    assert "verification" in r.content
    with pytest.raises(tether.tools.ToolArgsError):
        finish.validate({"summary": ""})
