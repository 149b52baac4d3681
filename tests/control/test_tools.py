from __future__ import annotations

from pathlib import Path

import pytest
from control_helpers import envelope

from tether.control.tools import hypothesis, plan
from tether.sandbox.local import LocalSandbox
from tether.tools.context import ToolContext
from tether.tools.contract import ToolArgsError


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(tmp_path, LocalSandbox(), envelope(), 5)


def test_plan_and_hypothesis_tools_record_intent_only(tmp_path: Path) -> None:
    assert [e.value for e in plan.contract.effects] == ["read"]
    assert [e.value for e in hypothesis.contract.effects] == ["read"]
    r = plan.invoke({"tasks": [{"id": "a", "title": "A", "status": "ACTIVE"}]}, ctx(tmp_path))
    assert r.ok and "a: ACTIVE A" in r.content and r.changed_files == ()
    with pytest.raises(ToolArgsError):
        plan.invoke({"tasks": [{"id": "a", "status": "DONE"}]}, ctx(tmp_path))
    h = hypothesis.invoke({"id": "h1", "statement": "x", "act": True}, ctx(tmp_path))
    assert h.ok and "acting on" in h.content
    assert list(tmp_path.iterdir()) == []
