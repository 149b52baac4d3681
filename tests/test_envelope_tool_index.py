"""``Envelope.tool`` indexes the tools by name: it must answer as the first match of the list would, however the
envelope was made (a copy, an update of its tools), and the index must never show in what the envelope is."""

from __future__ import annotations

import copy
import pickle

from tether.envelope.schema import Effect, Envelope, ToolContract


def contract(name: str, purpose: str = "p") -> ToolContract:
    return ToolContract(name=name, purpose=purpose, effects=[Effect.READ])


def envelope(*tools: ToolContract) -> Envelope:
    return Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "h"}, "tools": [t.model_dump() for t in tools]})


def first(env: Envelope, name: str) -> ToolContract | None:
    return next((t for t in env.tools if t.name == name), None)


def test_the_first_tool_of_a_name_as_the_list_says() -> None:
    env = envelope(contract("a", "first"), contract("b"), contract("a", "second"))
    for name in ("a", "b", "c", ""):
        assert env.tool(name) is first(env, name)
    assert env.tool("a") is not None and env.tool("a").purpose == "first"  # type: ignore[union-attr]


def test_a_copy_with_other_tools_is_indexed_again() -> None:
    env = envelope(contract("a"), contract("b"))
    assert env.tool("b") is not None  # the index is built and kept on this instance
    fewer = env.model_copy(update={"tools": [contract("a")]})  # model_copy copies the instance's __dict__
    assert fewer.tool("b") is None and fewer.tool("a") is first(fewer, "a")
    swapped = env.model_copy(update={"tools": [contract("b", "new"), contract("a")]})
    assert swapped.tool("b") is first(swapped, "b") and swapped.tool("b").purpose == "new"  # type: ignore[union-attr]
    for other in (copy.deepcopy(env), pickle.loads(pickle.dumps(env)), env.model_copy()):
        assert other.tool("a") is first(other, "a") and other.tool("b") is first(other, "b")


def test_the_list_changed_in_place_is_seen() -> None:
    env = envelope(contract("a"))
    assert env.tool("b") is None
    env.tools.append(contract("b"))
    assert env.tool("b") is first(env, "b")
    env.tools[0] = contract("a", "replaced")
    assert env.tool("a").purpose == "replaced"  # type: ignore[union-attr]


def test_the_index_is_not_part_of_the_envelope() -> None:
    env, same = envelope(contract("a")), envelope(contract("a"))
    before = (env.model_dump(), env.model_dump(mode="json"), env.model_dump_json(), repr(env))
    env.tool("a")
    assert env == same and same == env
    assert (env.model_dump(), env.model_dump(mode="json"), env.model_dump_json(), repr(env)) == before
    assert Envelope.model_validate(env.model_dump()) == env
