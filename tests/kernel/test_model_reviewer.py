"""The optional model-based reviewer: configured in the envelope, its findings can refuse a completion."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from runkit import FINISH, FIX, recompile, write_script

from tether import EventStore, Harness, RunState


def with_reviewer(bugfix: Path, reply: dict[str, Any] | None) -> Path:
    """Recompile the example with a scripted reviewer that always gives ``reply`` (None: a text-only answer)."""
    turn: dict[str, Any] = {"text": "Looks fine to me."}
    if reply is not None:
        turn = {"tool_calls": [{"name": "report_findings", "args": reply}]}
    turn["usage"] = {"input_tokens": 1200, "output_tokens": 80}
    (bugfix / "reviewer.yaml").write_text(yaml.safe_dump({"turns": [turn]}))
    env = bugfix / "envelope.yaml"
    env.write_text(
        env.read_text().replace("  test_command:", "  reviewer_model: scripted:reviewer.yaml\n  test_command:")
    )
    recompile(env)
    write_script(bugfix, [{"tool_calls": [FIX]}] + [{"tool_calls": [FINISH]}] * 3)
    return env


def run(bugfix: Path, env: Path) -> tuple[str, list[Any]]:
    contract = Harness(env, db=bugfix / "t.db", sandbox="local").run("fix it")
    with EventStore.open(bugfix / "t.db") as store:
        return contract.status, store.events(contract.run_id)


def test_a_clean_model_review_lets_the_run_complete(bugfix: Path) -> None:
    status, events = run(bugfix, with_reviewer(bugfix, {"findings": []}))
    assert status == "COMPLETE"
    (called,) = [e.payload for e in events if e.kind == "review.model_called"]
    assert (called["input_tokens"], called["output_tokens"], called["unaffordable"]) == (1200, 80, "")
    assert called["max_tokens"] >= 256 and called["prompt_tokens_est"] > 0
    assert RunState.from_events(events).used.tokens == 1280  # the scripted agent's turns report no usage
    assert not [e for e in events if e.kind == "review.finding" and e.payload["check"] == "model_reviewer"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            {"findings": [{"view": "adversarial", "severity": "high", "message": "median now hides a bug"}]},
            "median now hides a bug",
        ),
        (None, "no structured verdict"),  # fail closed: prose is not a verdict
    ],
)
def test_a_model_finding_refuses_the_completion(bugfix: Path, reply: dict[str, Any] | None, message: str) -> None:
    status, events = run(bugfix, with_reviewer(bugfix, reply))
    assert status == "VERIFY_FAILED"
    found = [e.payload for e in events if e.kind == "review.finding" and e.payload["check"] == "model_reviewer"]
    assert found and message in found[0]["message"]
    refused = [e.payload for e in events if e.kind == "completion.refused"]
    assert refused and any(message in r for r in refused[0]["reasons"])
