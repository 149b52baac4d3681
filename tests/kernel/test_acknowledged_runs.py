"""Every run validates strictly first; accepted risks are recorded in run.started and shown by run and show."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from runkit import FINISH, FIX, tether, write_script

from tether import EventStore
from tether.envelope import contract_hash
from tether.envelope.schema import Envelope

REASON = "fetches arbitrary documentation pages; runs in a throwaway VM"


def edit(path: Path, mutate: Any) -> None:
    data = yaml.safe_load(path.read_text())
    mutate(data)
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def run(bugfix: Path, *extra: str) -> Any:
    return tether(
        "run",
        "fix it",
        "--envelope",
        str(bugfix / "envelope.yaml"),
        "--db",
        str(bugfix / "t.db"),
        "--sandbox",
        "local",
        "--headless",
        *extra,
    )


def test_accepted_risk_is_recorded_and_shown(bugfix: Path) -> None:
    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["network"]["allow"] = ["*"]
        d["acknowledge"] = [{"risk": "network-any", "reason": REASON}]

    edit(bugfix / "envelope.yaml", mutate)
    write_script(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    live = run(bugfix)
    assert live.returncode == 0, live.stdout + live.stderr
    assert "accepted risk network-any" in live.stdout and REASON in " ".join(live.stdout.split())
    with EventStore.open(bugfix / "t.db") as store:
        (info,) = store.runs()
        started = store.events(info.run_id)[0]
    assert started.kind == "run.started"
    assert started.payload["acknowledged"] == [
        {"risk": "network-any", "path": "$.environment.network.allow[0]", "found": "'*' (any host)", "reason": REASON}
    ]
    shown = tether("show", info.run_id, "--db", str(bugfix / "t.db"), check=True).stdout
    assert "accepted risk network-any" in shown


def test_unacknowledged_risk_stops_the_run_before_anything_is_written(bugfix: Path) -> None:
    edit(bugfix / "envelope.yaml", lambda d: d["environment"]["network"].update(allow=["*"]))
    write_script(bugfix, [{"tool_calls": [FIX]}, {"tool_calls": [FINISH]}])
    refused = run(bugfix, "--json")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    error = json.loads(refused.stdout)  # --json: the error is a JSON object on stdout
    assert error["type"] == "EnvelopeInvalid" and error["exit"] == 2
    assert "$.environment.network.allow[0]" in [p["path"] for p in error["problems"]]
    if (bugfix / "t.db").exists():
        with EventStore.open(bugfix / "t.db") as store:
            assert store.runs() == []  # rejected input writes nothing


def test_workspace_override_to_a_system_directory_is_refused(bugfix: Path) -> None:
    refused = run(bugfix, "--workspace", "/etc")
    assert refused.returncode == 2
    assert "--workspace" in refused.stderr and "system directory" in refused.stderr
