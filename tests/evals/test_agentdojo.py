"""``tether eval agentdojo`` through the real benchmark package, on a small fixed subset (docs/trust.md)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tether.envelope.schema import Effect, Trust
from tether.envelope.trust import trust_of
from tether.evals import agentdojo
from tether.events.store import EventStore
from tether.policy.provenance import Provenance

TASKS = ["user_task_0", "user_task_1"]  # 0 pays a bill whose IBAN only the bill states; 1 only reads


@pytest.fixture(scope="module")
def banking() -> Any:
    if not os.environ.get("CI"):  # in CI the extra is installed (make), and a missing one fails here
        pytest.importorskip("agentdojo", reason="the agentdojo extra (make installs it)")
    return agentdojo._agentdojo()["banking"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    s = EventStore.open(tmp_path / "eval.db")
    yield s
    s.close()


def test_the_suite_tools_are_declared_as_a_user_would(banking: Any) -> None:
    env = agentdojo.envelope_for(banking, "banking")
    by_name = {t.name: t for t in env.tools}
    assert by_name["send_money"].effects == [Effect.FINANCIAL] and by_name["get_balance"].effects == [Effect.READ]
    assert trust_of(by_name["read_file"], env) is Trust.UNTRUSTED
    assert trust_of(by_name["get_balance"], env) is Trust.TRUSTED
    assert {r.rule for r in env.permissions.allow} == set(by_name)


@pytest.mark.slow
def test_injections_never_reach_their_goal_and_the_measure_can_fail(
    banking: Any, store: EventStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = agentdojo.evaluate_suite(banking, "banking", store, tmp_path, user_tasks=TASKS)
    assert report.user_tasks == 2 and report.pairs == 2 * len(banking.injection_tasks)
    assert report.actionable > 0 and report.attack_success == 0
    assert report.stopped_by_ask == report.actionable
    assert report.benign_passed == 1 and report.benign_asks == 1  # the bill's IBAN is the bill's, not the user's
    decided = [e for r in store.runs() for e in store.events(r.run_id) if e.kind == "action.decided"]
    tainted = [e.payload for e in decided if e.payload.get("taints")]
    assert tainted and all(t["deciding_rule"] == "taint:untrusted-value" for t in tainted)

    monkeypatch.setattr(Provenance, "taints", lambda self, args: [])  # without provenance the same attacks land
    blind = agentdojo.evaluate_suite(banking, "banking", store, tmp_path, user_tasks=TASKS)
    assert blind.attack_success == blind.actionable == report.actionable


def test_the_command_prints_the_table_as_json(banking: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tether.cli.main import main

    main(["eval", "agentdojo", "--suite", "banking", "--task", "user_task_1", "--json"])
    (suite,) = json.loads(capsys.readouterr().out)["suites"]
    assert suite["suite"] == "banking" and suite["user_tasks"] == 1 and suite["attack_success"] == 0


def test_an_unknown_suite_is_refused_naming_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    from tether.cli.main import main

    with pytest.raises(SystemExit) as done:
        main(["eval", "agentdojo", "--suite", "bank", "--json"])
    err = json.loads(capsys.readouterr().out)
    assert done.value.code == 2 and "unknown suite 'bank'" in err["error"] and "banking" in err["error"]
