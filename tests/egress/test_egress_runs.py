"""A run whose envelope lists a host: the call's connection attempts are in the log, attributed, before its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from egresskit import TOKEN, Names, Upstream

from tether import EventStore
from tether.cli.demo_cmds import prepare
from tether.envelope import contract_hash
from tether.envelope.schema import Envelope
from tether.kernel.harness import Harness
from tether.observe.timeline import render
from tether.sandbox import egress

pytestmark = [pytest.mark.bwrap, pytest.mark.slow]  # a whole run: baseline tests, the calls, verification

FETCH = """
import urllib.error, urllib.request
for url in ("http://allowed.test:{port}/from-the-run", "http://other.test:{port}/"):
    try:
        print(urllib.request.urlopen(url, timeout=5).read().decode())
    except urllib.error.HTTPError as e:
        print("refused", e.headers.get("X-Tether-Egress"))
"""


EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"
FIX = {
    "name": "edit_file",
    "args": {
        "path": "src/stats/core.py",
        "old": "    return ordered[middle]\n",
        "new": (
            "    if len(ordered) % 2:\n        return ordered[middle]\n"
            "    return (ordered[middle - 1] + ordered[middle]) / 2\n"
        ),
    },
}
FINISH = {"name": "finish", "args": {"summary": "fixed median"}}


@pytest.fixture
def bugfix(tmp_path: Path) -> Path:
    return prepare(EXAMPLE, tmp_path)


def seal(path: Path, mutate: Any) -> None:
    data = yaml.safe_load(path.read_text())
    mutate(data)
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_attempts_are_logged_with_the_call_before_its_result(
    bugfix: Path, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    upstream.clear()
    monkeypatch.setattr(egress, "system_resolver", Names({"allowed.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]}))

    def mutate(d: dict[str, Any]) -> None:
        d["environment"]["network"] = {"allow": [f"allowed.test:{upstream.port}"], "allow_loopback": True}
        d["acknowledge"] = [{"risk": "network-loopback", "reason": "the test's server on 127.0.0.1"}]
        d["environment"]["sandbox"]["required"] = True
        d["permissions"]["allow"].append({"id": "fetch", "rule": "bash(python3 fetch.py)"})

    seal(bugfix / "envelope.yaml", mutate)
    (bugfix / "project" / "fetch.py").write_text(FETCH.format(port=upstream.port))
    fetch = {"name": "bash", "args": {"command": "python3 fetch.py"}}
    turns = [{"tool_calls": [fetch]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    (bugfix / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    out = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db").run("fix it")
    assert out.status == "COMPLETE", out
    with EventStore.open(bugfix / "t.db") as store:
        (info,) = store.runs()
        events = store.events(info.run_id)
        assert store.verify(info.run_id) == len(events)
    kinds = [e.kind for e in events]
    done = next(i for i, e in enumerate(events) if e.kind == "action.completed" and e.payload["tool"] == "bash")
    call = events[done].payload["call_id"]
    attempts = [e.payload for e in events if e.kind == "egress.attempt"]
    assert [(a["call_id"], a["host"], a["rule"]) for a in attempts] == [
        (call, "allowed.test", "allowed"),
        (call, "other.test", "not-listed"),
    ]
    assert kinds[done - 2 : done] == ["egress.attempt", "egress.attempt"]  # right before the result, one transaction
    assert (
        TOKEN in events[done].payload["result"]["content"]
        and "refused not-listed" in events[done].payload["result"]["content"]
    )
    assert [p for _, p, _, _ in upstream.requests] == ["/from-the-run"]
    shown = [render(e) or "" for e in events if e.kind == "egress.attempt"]  # what tether show prints
    assert "egress[/] GET allowed.test" in shown[0] and "→ 127.0.0.1" in shown[0]
    assert "egress refused[/] (not-listed) GET other.test" in shown[1]
