from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tether.control.resolver import ResolverInput, resolve

CASES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "golden" / "resolver.yaml").read_text())


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_resolver_golden(case: dict[str, Any]) -> None:
    res = resolve(ResolverInput(**case["input"]))
    got = {"state": res.state.value, "tier": res.tier, "dimension": res.dimension, "recovery": res.recovery}
    assert got == case["expect"], res.reason
    assert res.reason


def test_golden_file_covers_every_tier_and_state() -> None:
    assert {c["expect"]["tier"] for c in CASES} == {"contradiction", "critical", "warning", "normal"}
    assert {c["expect"]["state"] for c in CASES} == {"NORMAL", "CAUTIOUS", "BLOCKED", "HUMAN_REQUIRED"}
