"""``ToolContext.on(sandbox)`` is ``dataclasses.replace(ctx, sandbox=sandbox)``: the kernel's held command gets its
context so (issue 18). Every field is given a value of its own, read from ``dataclasses.fields``, so a field added
to the class later that ``on`` does not carry over fails here."""

from __future__ import annotations

import dataclasses
from typing import Any

from tether.tools.context import ToolContext


def test_on_is_replace_for_every_field() -> None:
    values: dict[str, Any] = {f.name: object() for f in dataclasses.fields(ToolContext)}
    ctx = ToolContext(**values)
    other: Any = object()
    moved = ctx.on(other)
    assert moved == dataclasses.replace(ctx, sandbox=other)
    assert moved.sandbox is other
    for f in dataclasses.fields(ToolContext):
        if f.name != "sandbox":
            assert getattr(moved, f.name) is getattr(ctx, f.name), f.name
    assert ctx.sandbox is values["sandbox"]  # the original is left as it was
