"""The hashes a Temporal-hosted run carries are checked against its log: a different envelope is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("temporalio")

from tether.distributed.activities import hashes_of, mismatch, recorded_hashes
from tether.distributed.client import submission
from tether.kernel.session import load_checked


def test_the_submitted_hashes_are_those_run_started_records(example: Path) -> None:
    sub = submission(example / "envelope.yaml", "t", db=None, address="127.0.0.1:1")
    env = load_checked(example / "envelope.yaml").envelope
    started = {"envelope": env.model_dump(mode="json"), "plan_hash": env.plan.hash, "contract_hash": env.contract_hash}
    assert mismatch(recorded_hashes(started), sub) == [] and mismatch(hashes_of(env), sub) == []
    assert sub.db == str((example / "project" / ".tether" / "tether.db").resolve())  # absolute: workers read it


def test_an_edited_envelope_or_another_plan_is_named_field_by_field(example: Path) -> None:
    sub = submission(example / "envelope.yaml", "t", db="/x.db", address="127.0.0.1:1")
    env = load_checked(example / "envelope.yaml").envelope.model_dump(mode="json")
    env["budgets"]["usd"] = 1000.0  # a widened budget, contract hash left alone
    started = {"envelope": env, "plan_hash": "sha256:0", "contract_hash": sub.contract_hash}
    wrong = mismatch(recorded_hashes(started), sub)
    assert [w.split(" ")[0] for w in wrong] == ["envelope_hash", "plan_hash"]
