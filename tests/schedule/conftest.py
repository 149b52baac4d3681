"""A cheap governed project for schedule tests: the `tether init` template with one required sensor.

The template's run costs a test suite run on every start (the baseline and the tests sensor); schedules
are about firings, not verification, so the envelope here keeps the syntax sensor only and lets the agent
write under ``out/``. The scripted trajectory writes ``out/a.txt`` and finishes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tether.envelope import contract_hash
from tether.envelope.compile import builtin_template, compile_envelope
from tether.envelope.schema import Envelope

WRITE = {"name": "write_file", "args": {"path": "out/a.txt", "content": "hi\n"}}
FINISH = {"name": "finish", "args": {"summary": "wrote out/a.txt"}}


def make_project(root: Path, turns: list[dict[str, Any]] | None = None) -> Path:
    """``root`` holding plan.yaml, a sealed envelope.yaml and trajectory.yaml; the envelope's path."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("plan.yaml", "envelope.yaml"):
        (root / name).write_text(builtin_template(name), encoding="utf-8")
    compile_envelope(root / "plan.yaml", root / "envelope.yaml")
    data = yaml.safe_load((root / "envelope.yaml").read_text())
    data["verification"].update(sensors=[{"name": "syntax", "required": True}], must_fix="none")
    data["outputs"]["no_op"] = "required sensors pass"
    data["environment"]["filesystem"]["write"] = ["out/**"]
    data["budgets"].update(churn_pct=1000, churn_lines=1000)  # a new file is all churn
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    (root / "envelope.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    script = {"turns": [{"tool_calls": [call]} for call in turns or [WRITE, FINISH]]}
    (root / "trajectory.yaml").write_text(yaml.safe_dump(script, sort_keys=False))
    (root / "out").mkdir()
    return root / "envelope.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "proj")
