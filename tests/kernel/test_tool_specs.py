"""``Runtime.tool_specs``: the model's tool list is built once and rebuilt whenever a tool's contract changes."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from tether.envelope.schema import Effect, ToolContract
from tether.kernel.runtime import Runtime
from tether.models.base import ToolSpec


def contract(name: str, purpose: str = "p", schema: dict[str, Any] | None = None) -> ToolContract:
    return ToolContract(name=name, purpose=purpose, effects=[Effect.READ], input_schema=schema or {"type": "object"})


def specs_of(rt: Any) -> tuple[ToolSpec, ...]:
    return Runtime.tool_specs(rt)


def expected(rt: Any) -> tuple[ToolSpec, ...]:
    return tuple(ToolSpec(t.contract.name, t.contract.purpose, t.contract.input_schema) for t in rt.tools.values())


def test_specs_follow_every_change_of_the_tools() -> None:
    a, b = SimpleNamespace(contract=contract("a")), SimpleNamespace(contract=contract("b"))
    rt = SimpleNamespace(tools={"a": a, "b": b}, _specs=None)
    first = specs_of(rt)
    assert first == expected(rt)
    assert specs_of(rt) is first  # unchanged tools: the same tuple, nothing rebuilt

    rt.tools = {**rt.tools, "c": SimpleNamespace(contract=contract("c"))}  # a tool added (an MCP server's)
    assert specs_of(rt) == expected(rt) and len(specs_of(rt)) == 3
    rt.tools = {"a": a, "b": b}  # withdrawn again
    assert specs_of(rt) == expected(rt)
    rt.tools = {"b": b, "a": a}  # the same tools in another order: the order the model is told
    assert specs_of(rt) == expected(rt) and specs_of(rt)[0].name == "b"

    b.contract = contract("b", purpose="new purpose")  # a contract replaced in place on its tool
    assert specs_of(rt) == expected(rt) and specs_of(rt)[0].description == "new purpose"
    b.contract = contract("b", purpose="new purpose", schema={"type": "object", "properties": {"x": {}}})
    assert specs_of(rt)[0].input_schema == {"type": "object", "properties": {"x": {}}}

    rt.tools = {}
    assert specs_of(rt) == ()


def test_an_equal_new_contract_keeps_the_specs_equal() -> None:
    rt = SimpleNamespace(tools={"a": SimpleNamespace(contract=contract("a"))}, _specs=None)
    first = specs_of(rt)
    rt.tools["a"].contract = contract("a")  # equal fields, another object
    assert specs_of(rt) == first == expected(rt)
