from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import Field

from tether.envelope.schema import Effect, OnFailure, ToolContract
from tether.errors import InputError, SandboxUnavailable
from tether.tools import Tool, ToolArgsError, ToolContext, ToolFailure, ToolResult, tool
from tether.tools.contract import MAX_CONTENT_CHARS


@tool(effects=["read", Effect.NETWORK], timeout_s=7, idempotent=True, on_failure="retry", evidence=["count"])
def count_words(
    ctx: ToolContext, path: str, limit: Annotated[int, Field(ge=1, le=10)] = 5, tags: list[str] | None = None
) -> str:
    """Count the words in a file.

    Args:
        path: Where the file is,
            relative to the workspace.
        limit: Stop after this many.

    Returns:
        a string
    """
    return f"{ctx.workspace.name}:{path}:{limit}:{tags}"


def test_contract_is_built_from_signature_and_docstring() -> None:
    c = count_words.contract
    assert isinstance(c, ToolContract)
    assert c.name == "count_words"
    assert c.purpose == "Count the words in a file."
    assert c.effects == [Effect.READ, Effect.NETWORK]
    assert (c.timeout_s, c.idempotent, c.on_failure, c.evidence, c.rollback) == (
        7,
        True,
        OnFailure.RETRY,
        ["count"],
        "none",
    )
    schema = c.input_schema
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["path"]
    assert set(schema["properties"]) == {"path", "limit", "tags"}  # ctx is not an argument
    assert schema["properties"]["path"]["description"] == "Where the file is, relative to the workspace."
    assert schema["properties"]["limit"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "default": 5,
        "description": "Stop after this many.",
    }
    # The contract round-trips through the envelope schema (strict, extra keys forbidden).
    assert ToolContract.model_validate(c.model_dump(mode="json")) == c


def test_validate_normalises_and_fills_defaults() -> None:
    assert count_words.validate({"path": "a.txt", "limit": "3"}) == {"path": "a.txt", "limit": 3, "tags": None}


def test_validate_names_every_bad_field() -> None:
    with pytest.raises(ToolArgsError) as info:
        count_words.validate({"limit": 99, "tags": "x", "colour": "red"})
    err = info.value
    assert isinstance(err, InputError)
    by_path = {p.path: p for p in err.problems}
    assert set(by_path) == {"$.path", "$.limit", "$.tags", "$.colour"}
    assert by_path["$.path"].found == "missing"
    assert "less than or equal to 10" in by_path["$.limit"].expected
    assert by_path["$.colour"].found == "an unknown argument"
    assert "path, limit, tags" in by_path["$.colour"].expected
    result = err.to_result()
    assert not result.ok and result.failure_class == "invalid_args"
    assert "nothing was executed" in result.content and "$.limit" in result.content
    assert result.data["tool"] == "count_words" and len(result.data["problems"]) == 4


def test_validate_rejects_non_mapping() -> None:
    with pytest.raises(ToolArgsError, match=r"\$: found list"):
        count_words.validate(["a.txt"])  # type: ignore[arg-type]


def test_invoke_passes_context_and_wraps_string(ctx: ToolContext) -> None:
    result = count_words.invoke({"path": "a.txt", "tags": ["x"]}, ctx)
    assert result == ToolResult(ok=True, content=f"{ctx.workspace.name}:a.txt:5:['x']")


def test_invoke_raises_on_invalid_args_without_running(ctx: ToolContext) -> None:
    calls: list[int] = []

    @tool(effects=["write"])
    def touch(n: int) -> None:
        """Touch."""
        calls.append(n)

    with pytest.raises(ToolArgsError):
        touch.invoke({"n": "not a number"}, ctx)
    assert calls == []
    assert touch.invoke({"n": 2}, ctx) == ToolResult(ok=True, content="ok")
    assert calls == [2]


def test_return_values_are_wrapped(ctx: ToolContext) -> None:
    @tool(effects=["read"], purpose="Return a dict.")
    def as_dict() -> dict[str, Any]:
        return {"b": 1, "a": [1, 2]}

    result = as_dict.invoke({}, ctx)
    assert result.ok and result.data == {"b": 1, "a": [1, 2]}
    assert result.content.index('"a"') < result.content.index('"b"')  # sorted JSON


def test_failures_are_data_but_runtime_failures_propagate(ctx: ToolContext) -> None:
    @tool(effects=["read"])
    def flaky(mode: str) -> str:
        """Fail in various ways."""
        if mode == "failure":
            raise ToolFailure("not_found", "no such thing", path="x")
        if mode == "bug":
            raise KeyError("oops")
        if mode == "os":
            raise PermissionError(13, "Permission denied")
        raise SandboxUnavailable("bwrap missing", fix="install bubblewrap")

    r = flaky.invoke({"mode": "failure"}, ctx)
    assert (r.ok, r.failure_class, r.content, r.data) == (False, "not_found", "no such thing", {"path": "x"})
    r = flaky.invoke({"mode": "bug"}, ctx)
    assert (r.ok, r.failure_class) == (False, "tool_error") and "KeyError" in r.content
    r = flaky.invoke({"mode": "os"}, ctx)
    assert (r.ok, r.failure_class) == (False, "os_error")
    with pytest.raises(SandboxUnavailable):
        flaky.invoke({"mode": "sandbox"}, ctx)


def test_content_is_bounded(ctx: ToolContext) -> None:
    @tool(effects=["read"])
    def big() -> str:
        """Big output."""
        return "x" * (MAX_CONTENT_CHARS * 3)

    content = big.invoke({}, ctx).content
    assert len(content) < MAX_CONTENT_CHARS + 200
    assert "more characters truncated" in content


def test_default_preview_shows_normalised_args(ctx: ToolContext) -> None:
    text = count_words.preview({"path": "a.txt"}, ctx)
    assert text.startswith("count_words\n")
    assert '"limit": 5' in text and '"path": "a.txt"' in text


def test_custom_preview_and_its_failures(ctx: ToolContext) -> None:
    def show(ctx: ToolContext, n: int) -> str:
        if n < 0:
            raise ToolFailure("invalid_args", "negative")
        if n == 0:
            raise ZeroDivisionError("boom")
        return f"would do {n}"

    @tool(effects=["write"], preview=show)
    def do(ctx: ToolContext, n: int) -> str:
        """Do n things."""
        raise AssertionError("preview must not execute the tool")

    assert do.preview({"n": 3}, ctx) == "would do 3"
    assert do.preview({"n": -1}, ctx) == "do would fail: [invalid_args] negative"
    broken = do.preview({"n": 0}, ctx)
    assert '"n": 0' in broken and "preview unavailable: ZeroDivisionError" in broken
    with pytest.raises(ToolArgsError):
        do.preview({"n": "x"}, ctx)


def test_decorator_rejects_incomplete_definitions() -> None:
    with pytest.raises(TypeError, match="needs a type annotation"):

        @tool(effects=["read"])
        def untyped(ctx: ToolContext, x) -> str:  # type: ignore[no-untyped-def]
            """Doc."""
            return ""

    with pytest.raises(TypeError, match="purpose"):

        @tool(effects=["read"])
        def undocumented() -> str:
            return ""

    with pytest.raises(ValueError):
        tool(effects=["teleport"])

    with pytest.raises(ValueError):
        tool(effects=["read"], on_failure="explode")


def test_name_and_purpose_overrides() -> None:
    @tool(effects=["read"], name="ns.thing", purpose="Explicit purpose.")
    def f() -> str:
        """Docstring purpose."""
        return ""

    assert isinstance(f, Tool)
    assert (f.name, f.contract.purpose) == ("ns.thing", "Explicit purpose.")
    assert f.contract.input_schema["properties"] == {}
