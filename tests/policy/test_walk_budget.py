"""The folder walks of one decision share a budget. A command naming one large folder many times (``rm -rf src src
…``) walked it once per name: 5000 names of a 2000-file folder took 28-40 s here (a shared host), longer than a
hook call may take — and Claude Code lets a call through when its hook times out. Counted here by the entries the
walks yield, not by time."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tether.envelope.schema import Effect, Envelope, Environment, Filesystem, PlanRef, ToolContract
from tether.policy import paths
from tether.policy.decision import Verdict
from tether.policy.gate import Gate


def gate(ws: Path) -> Gate:
    fs = Filesystem(read=["**"], write=["**"], deny=["secrets/**", "**/*.pem"])
    plan = PlanRef(path="plan.yaml", hash="sha256:" + "0" * 64)
    shell = ToolContract(name="bash", purpose="shell", effects=[Effect.EXEC])
    return Gate(Envelope(plan=plan, environment=Environment(filesystem=fs), tools=[shell]), ws)


@pytest.fixture
def walked(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The entries every os.walk of the path policy yields, counted."""
    count = [0]
    real = os.walk

    def counting(top: str, **kw: object) -> Iterator[tuple[str, list[str], list[str]]]:
        for top_, dirs, files in real(top, **kw):  # type: ignore[call-overload]
            count[0] += len(dirs) + len(files)
            yield top_, dirs, files

    monkeypatch.setattr(paths.os, "walk", counting)
    return count


def test_one_folder_named_many_times_is_walked_within_the_decisions_budget(tmp_path: Path, walked: list[int]) -> None:
    for i in range(20):
        (tmp_path / "src" / f"d{i}").mkdir(parents=True)
        for j in range(100):
            (tmp_path / "src" / f"d{i}" / f"f{j}.py").write_text("x")
    decision = gate(tmp_path).decide("bash", {"command": "rm -rf " + " ".join(["src", "./src", "src/"] * 100)})
    assert decision.verdict is Verdict.ALLOW, decision.reason
    assert walked[0] <= paths.DECISION_WALK, f"{walked[0]} entries looked at for one decision"


def test_a_hidden_file_is_still_found_the_second_time_its_folder_is_named(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "key.pem").write_text("k")
    decision = gate(tmp_path).decide("bash", {"command": "rm -rf src src"})
    assert (decision.verdict, decision.deciding_rule) == (Verdict.DENY, "path:denied"), decision.reason


def test_past_the_budget_a_walk_answers_what_may_match(tmp_path: Path) -> None:
    """Folders beyond the budget are not looked at: the deny list's pattern that may match answers (fail closed)."""
    for i in range(30):
        (tmp_path / f"d{i}").mkdir()
        for j in range(1000):
            (tmp_path / f"d{i}" / f"f{j}.py").write_text("")
    decision = gate(tmp_path).decide("bash", {"command": "rm -rf " + " ".join(f"d{i}" for i in range(30))})
    assert (decision.verdict, decision.deciding_rule) == (Verdict.DENY, "path:denied"), decision.reason
