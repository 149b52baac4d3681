"""The recorded Claude Code payloads are checked against the hook input types the ``claude-agent-sdk`` publishes.

A fixture that drifts from the SDK's schema (a field renamed, a required one missing, a wrong type, a field
the SDK does not know) fails here, so the hook tests keep testing what Claude Code sends. The SDK declares
its types with ``typing.TypedDict``, which pydantic validates only on Python 3.12+; they are rebuilt here as
``typing_extensions.TypedDict`` with the same fields (extra keys forbidden) so the check runs on 3.11 too.
The SDK publishes no type for SessionStart and SessionEnd: those fixtures are checked against its
``BaseHookInput`` (the fields every event carries) only. OpenAI publishes no Python package of Codex hook types.
"""

from __future__ import annotations

import functools
import json
import os
import types
import typing
from pathlib import Path
from typing import Any

import pytest
import typing_extensions
from pydantic import ConfigDict, TypeAdapter, ValidationError

if os.environ.get("CI"):  # installed by `make` (the hook-schemas extra): in CI this check may not skip
    import claude_agent_sdk.types as sdk
else:
    sdk = pytest.importorskip("claude_agent_sdk.types")

PAYLOADS = sorted((Path(__file__).parent / "payloads").glob("claude-code.*.json"))
UNTYPED = {"SessionStart", "SessionEnd"}  # no SDK type: the base fields only


def portable(tp: Any) -> Any:
    """``tp`` with every ``typing.TypedDict`` in it rebuilt as a ``typing_extensions`` one."""
    if typing.is_typeddict(tp):
        return _typeddict(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is None or not args or origin is typing.Literal:
        return tp
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(portable(a) for a in args)]  # noqa: UP007 - built from a runtime tuple
    return origin[tuple(portable(a) for a in args)] if len(args) > 1 else origin[portable(args[0])]


@functools.cache
def _typeddict(td: Any, *, strict: bool = True) -> Any:
    hints = typing.get_type_hints(td)
    fields = {
        k: portable(v) if k in td.__required_keys__ else typing_extensions.NotRequired[portable(v)]
        for k, v in hints.items()
    }
    out: Any = typing_extensions.TypedDict(td.__name__, fields)
    out.__pydantic_config__ = ConfigDict(extra="forbid" if strict else "ignore")
    return out


def schema_for(event: str) -> Any:
    if event in UNTYPED:
        return _typeddict(sdk.BaseHookInput, strict=False)
    return _typeddict(getattr(sdk, f"{event}HookInput"))


@pytest.mark.parametrize("path", PAYLOADS, ids=[p.stem for p in PAYLOADS])
def test_each_recorded_payload_matches_the_sdk_type(path: Path) -> None:
    data = json.loads(path.read_text())
    TypeAdapter(schema_for(data["hook_event_name"])).validate_python(data)


def test_every_event_the_sdk_types_has_a_recorded_payload() -> None:
    recorded = {p.stem.split(".", 1)[1] for p in PAYLOADS}
    published = {
        n.removesuffix("HookInput")
        for n in dir(sdk)
        if n.endswith("HookInput") and n not in ("BaseHookInput", "HookInput")
    }
    handled = {"PreToolUse", "PostToolUse", "PostToolUseFailure", "UserPromptSubmit", "Stop"}
    assert handled <= recorded & published, "the events tether acts on are recorded and typed by the SDK"
    assert published <= recorded, f"an event Claude Code sends that no test plays: {sorted(published - recorded)}"


@pytest.mark.parametrize(
    "drift",
    [
        {"tool_input": "ls"},  # not an object
        {"tool_use_id": None},
        {"hook_event_name": "PreToolUse2"},
        {"toolName": "Bash"},  # a field the SDK does not know
    ],
)
def test_a_drifted_payload_fails_the_check(drift: dict[str, Any]) -> None:
    data = {**json.loads((Path(__file__).parent / "payloads" / "claude-code.PreToolUse.json").read_text()), **drift}
    with pytest.raises(ValidationError):
        TypeAdapter(schema_for("PreToolUse")).validate_python(data)


def test_a_payload_missing_a_required_field_fails_the_check() -> None:
    data = json.loads((Path(__file__).parent / "payloads" / "claude-code.Stop.json").read_text())
    del data["stop_hook_active"]
    with pytest.raises(ValidationError):
        TypeAdapter(schema_for("Stop")).validate_python(data)
