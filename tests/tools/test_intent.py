"""The intent tools (``plan``, ``hypothesis``) record what the model means to do and change nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.tools import ToolArgsError, ToolContext
from tether.tools.intent import hypothesis, plan


def test_plan_and_hypothesis_tools_record_intent_only(ctx: ToolContext, workspace: Path) -> None:
    assert [e.value for e in plan.contract.effects] == ["read"]
    assert [e.value for e in hypothesis.contract.effects] == ["read"]
    r = plan.invoke({"tasks": [{"id": "a", "title": "A", "status": "ACTIVE"}]}, ctx)
    assert r.ok and "a: ACTIVE A" in r.content and r.changed_files == ()
    with pytest.raises(ToolArgsError):
        plan.invoke({"tasks": [{"id": "a", "status": "DONE"}]}, ctx)
    h = hypothesis.invoke({"id": "h1", "statement": "x", "act": True}, ctx)
    assert h.ok and "acting on" in h.content
    assert list(workspace.iterdir()) == []
