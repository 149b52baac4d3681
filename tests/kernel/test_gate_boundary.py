"""A run survives its gate: an exception inside the gate becomes an ASK, not a dead harness."""

from __future__ import annotations

from pathlib import Path

import pytest
from runkit import FIX, write_script

from tether import Harness
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest
from tether.policy.gate import Gate


def test_a_run_survives_a_failing_gate(bugfix: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a gate that raises (not only one that returns ASK) leaves the run waiting for a human."""

    def broken(self: Gate, tool: str, args: object) -> object:
        raise RuntimeError("gate exploded")

    asked: list[ApprovalRequest] = []

    def approver(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("deny", "carol")

    deep = "$(" * 400 + "ls" + ")" * 400
    write_script(bugfix, [{"tool_calls": [{"name": "bash", "args": {"command": deep}}]}, {"tool_calls": [FIX]}])
    monkeypatch.setattr(Gate, "decide", broken)
    harness = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local", approver=approver)
    contract = harness.run("fix it")
    assert contract.status != "RUNNING"
    assert asked, "the failing gate turned into a question for a human"
    assert "gate exploded" in asked[0].reason
