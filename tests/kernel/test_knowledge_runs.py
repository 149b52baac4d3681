"""Skills and memory end to end, through `tether run`: bind, load, run a skill's script under the gate;
carry a plan and a user's fact to a later run, with its source; forget it for good."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from runkit import write_script
from typer.testing import CliRunner

from tether import EventStore
from tether.cli.main import app
from tether.envelope import contract_hash
from tether.envelope.schema import Envelope

LOAD_SKILL = {
    "name": "load_skill",
    "purpose": "Load a bound skill's instructions or one of its files.",
    "effects": ["read"],
}
NO_PUSH = {
    "id": "no-push",
    "rule": "bash(git push:*)",
    "reason": "The plan forbids pushing.",
    "match": ["git push origin main"],
    "not_match": ["git status"],
}


def edit(path: Path, **sections: Any) -> None:
    data = yaml.safe_load(path.read_text())
    data["tools"].append(LOAD_SKILL)
    data["permissions"]["deny"].append(NO_PUSH)
    data.update(sections)
    data["contract_hash"] = ""
    data["contract_hash"] = contract_hash(Envelope.model_validate(data))
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def tether(*args: str, check: bool = False) -> Any:
    """The CLI in this process (the runs' tools and tests still run in subprocesses): no start-up per call."""
    result = CliRunner().invoke(app, list(args))
    assert not check or result.exit_code == 0, result.output
    return result


def run(bugfix: Path, task: str, *extra: str) -> Any:
    env, db = bugfix / "envelope.yaml", bugfix / "t.db"
    return tether("run", task, "-e", str(env), "--db", str(db), "--sandbox", "local", "--headless", "--json", *extra)


def events(bugfix: Path, index: int = -1) -> list[Any]:
    with EventStore.open(bugfix / "t.db") as store:
        return store.events(store.runs()[index].run_id)


def call(tool: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "args": args}]}


def result_of(evs: list[Any], tool: str) -> list[dict[str, Any]]:
    ids = {e.payload["call_id"] for e in evs if e.kind == "action.proposed" and e.payload["tool"] == tool}
    return [e.payload for e in evs if e.kind in ("action.completed", "action.decided") and e.payload["call_id"] in ids]


def test_a_bound_skill_is_loaded_and_its_script_still_passes_the_gate(bugfix: Path) -> None:
    skills = bugfix / "project" / ".claude" / "skills"
    release = skills / "release-fix"
    (release / "scripts").mkdir(parents=True)
    (release / "SKILL.md").write_text(
        "---\nname: release-fix\ndescription: Release a bug fix to the main branch after the tests pass.\n---\n"
        "Run scripts/release.sh from the project root.\n"
    )
    (release / "scripts" / "release.sh").write_text("#!/bin/sh\ngit push origin main\n")
    (skills / "pdf").mkdir()
    (skills / "pdf" / "SKILL.md").write_text("---\nname: pdf\ndescription: Fill PDF forms.\n---\nx\n")
    (skills / "broken").mkdir()
    (skills / "broken" / "SKILL.md").write_text("---\nname: ../escape\ndescription: d\n---\n")
    edit(bugfix / "envelope.yaml")
    write_script(
        bugfix,
        [
            call("load_skill", name="release-fix"),
            call("load_skill", name="pdf"),
            call("bash", command="git push origin main"),
            call("bash", command="sh .claude/skills/release-fix/scripts/release.sh"),
        ],
    )
    out = run(bugfix, "Fix the median bug and release the fix")
    evs = events(bugfix)
    bound = next(e.payload for e in evs if e.kind == "skills.bound")
    assert [b["skill"]["name"] for b in bound["bound"]] == ["release-fix"], out.stdout
    assert "release" in bound["bound"][0]["why"] and bound["ranked"][-1]["score"] == 0.0
    (problem,) = bound["problems"]
    assert problem["path"] == "$.name" and problem["file"].endswith("broken/SKILL.md")
    section = next(e.payload for e in evs if e.kind == "context.section" and e.payload["source"] == "skills")
    assert "release-fix: Release a bug fix" in section["text"] and "pdf" not in section["text"]
    loaded, unbound = (r for r in result_of(evs, "load_skill") if "result" in r)
    assert "Run scripts/release.sh" in loaded["result"]["content"]
    assert ".claude/skills/release-fix/scripts/release.sh" in loaded["result"]["content"]
    assert not unbound["result"]["ok"] and "no bound skill is named 'pdf'" in unbound["result"]["content"]
    verdicts = [r for r in result_of(evs, "bash") if "verdict" in r]
    assert verdicts[0]["verdict"] == "DENY" and verdicts[0]["deciding_rule"] == "no-push"
    assert verdicts[1]["verdict"] != "ALLOW", verdicts[1]  # the same push, inside the skill's script
    assert not any(e.kind == "action.completed" and e.payload["tool"] == "bash" for e in evs)
    shown = tether("show", evs[0].run_id, "--db", str(bugfix / "t.db")).stdout
    assert "skills bound: release-fix" in shown and "1 malformed" in shown


@pytest.mark.slow
def test_a_plan_and_a_users_fact_reach_the_next_run_with_their_source(bugfix: Path) -> None:
    edit(bugfix / "envelope.yaml", memory={})
    plan = [
        {"id": "read", "title": "Read the failure", "status": "ACTIVE"},
        {"id": "fix", "title": "Fix median", "depends_on": ["read"]},
    ]
    write_script(bugfix, [call("plan", tasks=plan), call("plan", tasks=[{"id": "read", "status": "VERIFYING"}])])
    task = "Fix the median bug. Our CI runs Python 3.11 only. Why is it slow?"
    run(bugfix, task)
    first = events(bugfix)
    (remembered,) = [e for e in first if e.kind == "memory.remembered"]
    (fact,) = remembered.payload["facts"]
    assert (fact["text"], fact["seq"], fact["source"]) == ("Our CI runs Python 3.11 only.", 0, "task")

    write_script(bugfix, [call("read_file", path="src/stats/core.py")])
    out = run(bugfix, "Carry on with the fix", "--continue-plan")
    second = events(bugfix)
    carried = next(e.payload for e in second if e.kind == "plan.carried")
    assert carried["from_run"] == first[0].run_id, out.stdout
    assert [(t["id"], t["status"]) for t in carried["tasks"]] == [("read", "VERIFYING"), ("fix", "PENDING")]
    recalled = next(e.payload for e in second if e.kind == "memory.recalled")
    assert [(f["text"], f["run_id"], f["seq"]) for f in recalled["facts"]] == [(fact["text"], first[0].run_id, 0)]
    sections = {e.payload["source"]: e.payload["text"] for e in second if e.kind == "context.section"}
    assert f"Our CI runs Python 3.11 only. (run {first[0].run_id}, event 0" in sections["memory"]
    assert "- read [VERIFYING] Read the failure" in sections["plan"]

    db = ["--db", str(bugfix / "t.db")]
    listed = json.loads(tether("memory", "list", "--json", *db, check=True).stdout)
    assert [f["id"] for f in listed["facts"]] == [fact["id"]]
    shown = tether("memory", "show", fact["id"][:6], *db, check=True).stdout
    assert first[0].run_id in shown and "Our CI runs Python 3.11 only." in shown
    tether("memory", "forget", fact["id"], "--reason", "we moved to 3.12", *db, check=True)
    write_script(bugfix, [call("read_file", path="src/stats/core.py")])
    run(bugfix, task)  # the user says it again: it stays forgotten
    third = events(bugfix)
    assert not any(e.kind in ("memory.recalled", "memory.remembered") for e in third)
    assert json.loads(tether("memory", "list", "--json", *db, check=True).stdout)["facts"] == []
    (gone,) = json.loads(tether("memory", "list", "--json", "--forgotten", *db, check=True).stdout)["facts"]
    assert (gone["fact_id"], gone["reason"]) == (fact["id"], "we moved to 3.12")


def test_continue_plan_without_an_earlier_plan_is_refused_before_anything_is_created(bugfix: Path) -> None:
    from tether import Harness
    from tether.errors import InputError

    harness = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local")
    with pytest.raises(InputError, match=r"no earlier run on workspace .* has a task list"):
        harness.run("go on", continue_plan=True)
    with EventStore.open(bugfix / "t.db") as store:
        assert store.runs() == []


def test_a_reason_given_when_declining_at_the_prompt_is_remembered_at_once(bugfix: Path) -> None:
    from tether import Harness
    from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest

    edit(bugfix / "envelope.yaml", memory={})
    write_script(bugfix, [call("bash", command="sudo ls")])

    def decline(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("deny", "ana", "No. This machine has no sudo rights for agents.")

    harness = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local", approver=decline)
    harness.run("Fix the median bug")
    evs = events(bugfix)
    denied = next(e for e in evs if e.kind == "approval.denied")
    told = [e for e in evs if e.kind == "memory.remembered" and e.seq > denied.seq]
    assert [(f["text"], f["seq"], f["source"]) for f in told[0].payload["facts"]] == [
        ("This machine has no sudo rights for agents.", denied.seq, "note")
    ]
