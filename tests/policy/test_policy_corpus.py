"""The shell corpus: every case gets its expected decision; no dangerous case is ever ALLOWed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tether.policy.decision import Verdict
from tether.policy.gate import shell_decision

CORPUS = Path(__file__).resolve().parents[1] / "data" / "shell_corpus.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text())["cases"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ws = tmp_path_factory.mktemp("ws")
    for d in ("src", "scripts", "build", "tests"):
        (ws / d).mkdir()
    (ws / "scripts" / "run.sh").write_text("#!/bin/sh\necho ok\n")
    return ws


def test_corpus_is_large_and_mixed() -> None:
    assert len(CASES) >= 150
    expected = {c["expect"] for c in CASES}
    assert expected == {"ALLOW", "ASK", "DENY"}
    assert sum(1 for c in CASES if c.get("dangerous")) >= 100


@pytest.mark.parametrize("case", CASES, ids=[f"{i}:{c['command'][:50]}" for i, c in enumerate(CASES)])
def test_case(case: dict[str, Any], workspace: Path) -> None:
    decision = shell_decision(case["command"], workspace=workspace)
    assert decision.verdict.name == case["expect"], decision.to_dict()
    assert decision.deciding_rule and decision.reason, "every decision names its rule and reason"
    if case.get("dangerous"):
        assert decision.verdict is not Verdict.ALLOW
