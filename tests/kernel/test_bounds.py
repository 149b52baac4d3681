"""Side effects counted and bounded, end to end: real runs of the bugfix example with an external tool.

The tool ``post`` publishes over the network (its contract says so); it records each real call, so
a test can tell "denied" from "ran". The envelope allows it by a broad rule — the attacks are that
the allow rule lifts ``approvals.require_for`` or ``outputs.max_external``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from runkit import FINISH, FIX, recompile, write_script

from tether import EventStore, Harness, ToolResult, tool
from tether.kernel.approvals import ApprovalAnswer, ApprovalRequest
from tether.observe.timeline import render

SENT: list[str] = []


@tool(effects=["network", "published"], idempotent=False, timeout_s=5, rollback="none: a post cannot be unsent")
def post(message: str) -> ToolResult:
    """Publish a message to the team channel."""
    SENT.append(message)
    return ToolResult(ok=True, content="posted")


CONTRACT = """  - name: post
    purpose: Publish a message to the team channel.
    effects: [network, published]
    timeout_s: 5
    idempotent: false
    on_failure: return_error
    evidence: [the tool's returned content]
    rollback: "none: a post cannot be unsent"
"""
ALLOW = """    - id: allow-post
      rule: post
      reason: Posting is part of the job.
"""


def with_post(bugfix: Path, *, max_external: int) -> Path:
    """The example's envelope with the ``post`` tool, a broad allow rule for it, and the given limits."""
    env = bugfix / "envelope.yaml"
    text = env.read_text().replace("\npermissions:", "\n" + CONTRACT + "\npermissions:", 1)
    text = text.replace("  allow:\n", "  allow:\n" + ALLOW, 1).replace(
        "max_external: 0", f"max_external: {max_external}"
    )
    env.write_text(text)
    recompile(env)
    return env


def decided(db: Path, run_id: str, tool: str) -> list[tuple[str, str]]:
    with EventStore.open(db) as store:
        events = store.events(run_id)
    calls = {e.payload["call_id"] for e in events if e.kind == "action.proposed" and e.payload["tool"] == tool}
    return [
        (e.payload["verdict"], e.payload["deciding_rule"])
        for e in events
        if e.kind == "action.decided" and e.payload["call_id"] in calls
    ]


@pytest.fixture(autouse=True)
def _clear() -> None:
    SENT.clear()


def test_max_external_zero_denies_an_allowed_external_tool_and_it_never_runs(bugfix: Path) -> None:
    env = with_post(bugfix, max_external=0)  # require_for would ask; the limit denies first, so no human is asked
    say = {"name": "post", "args": {"message": "fixed!"}}
    write_script(
        bugfix, [{"tool_calls": [say]}, {"tool_calls": [say]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    )
    result = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[post]).run("fix it and tell the team")
    assert SENT == []
    verdicts = decided(bugfix / "t.db", result.run_id, "post")
    assert verdicts == [("DENY", "outputs:max-external"), ("DENY", "kernel:denied-before")]
    assert result.status == "COMPLETE"


def test_require_for_asks_despite_a_broad_allow_rule_and_the_limit_still_counts(bugfix: Path) -> None:
    env = with_post(bugfix, max_external=1)
    asked: list[ApprovalRequest] = []

    def human(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request)
        return ApprovalAnswer("run", by="alice")  # "for this run": still asked again next time

    first, second = ({"name": "post", "args": {"message": m}} for m in ("one", "two"))
    write_script(
        bugfix, [{"tool_calls": [first]}, {"tool_calls": [second]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    )
    result = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[post], approver=human).run("fix it, tell them")
    assert [r.args["message"] for r in asked] == ["one"]  # the second never reached a human: over the limit
    assert SENT == ["one"]
    assert decided(bugfix / "t.db", result.run_id, "post") == [
        ("ASK", "approval:published"),
        ("DENY", "outputs:max-external"),
    ]
    assert result.status == "COMPLETE"


def test_approve_for_this_run_does_not_lift_require_for(bugfix: Path) -> None:
    env = with_post(bugfix, max_external=5)
    asked: list[str] = []

    def human(request: ApprovalRequest) -> ApprovalAnswer:
        asked.append(request.args["message"])
        return ApprovalAnswer("run", by="alice")

    same = {"name": "post", "args": {"message": "same"}}
    write_script(
        bugfix, [{"tool_calls": [same]}, {"tool_calls": [same]}, {"tool_calls": [FIX]}, {"tool_calls": [FINISH]}]
    )
    result = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[post], approver=human).run("fix it, tell them")
    assert asked == ["same", "same"] and SENT == ["same", "same"]  # each call answered by a human
    assert result.status == "COMPLETE"


# ---- NO_OP: nothing changed, nothing sent, and the envelope's condition held --------------------------------


def already_fixed(bugfix: Path) -> None:
    """The bug fixed before the run (committed): the tests pass on the untouched workspace."""
    core = bugfix / "project" / "src" / "stats" / "core.py"
    core.write_text(core.read_text().replace(FIX["args"]["old"], FIX["args"]["new"]))


def set_no_op(env: Path, condition: str) -> None:
    env.write_text(env.read_text().replace("  no_op: tests pass", f"  no_op: {condition}"))
    recompile(env)


def noop_checks(db: Path, run_id: str) -> list[dict[str, object]]:
    with EventStore.open(db) as store:
        return [e.payload for e in store.events(run_id) if e.kind == "noop.checked"]


def test_nothing_to_do_ends_no_op_with_the_condition_recorded(bugfix: Path) -> None:
    already_fixed(bugfix)
    write_script(bugfix, [{"tool_calls": [{"name": "finish", "args": {"summary": "already correct"}}]}])
    result = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix the median")
    assert result.status == "NO_OP", result
    (check,) = noop_checks(bugfix / "t.db", result.run_id)
    assert check["holds"] is True and check["condition"] == "tests pass"
    assert check["changed_files"] == 0 and check["external_outputs"] == 0
    assert check["clauses"] == [{"clause": "tests pass", "holds": True, "detail": "sensor tests: PASS"}]
    with EventStore.open(bugfix / "t.db") as store:
        shown = [render(e) for e in store.events(result.run_id) if e.kind == "noop.checked"]
    assert shown and "no-op check[/] (tests pass): holds — tests pass: sensor tests: PASS" in str(shown[0])


def test_a_condition_that_does_not_hold_refuses_the_claim(bugfix: Path) -> None:
    already_fixed(bugfix)
    set_no_op(bugfix / "envelope.yaml", "required sensors pass and never")
    write_script(bugfix, [{"tool_calls": [{"name": "finish", "args": {"summary": "nothing to do"}}]}])
    result = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix the median")
    assert result.status != "NO_OP"
    (check,) = noop_checks(bugfix / "t.db", result.run_id)
    assert check["holds"] is False and [c["holds"] for c in check["clauses"]] == [True, False]  # type: ignore[index]
    with EventStore.open(bugfix / "t.db") as store:
        refused = [e.payload for e in store.events(result.run_id) if e.kind == "completion.refused"]
    assert refused and "outputs.no_op" in refused[0]["reasons"][-1] and "never" in refused[0]["reasons"][-1]


def test_a_no_op_claim_after_changing_a_file_is_never_no_op(bugfix: Path) -> None:
    already_fixed(bugfix)
    note = {
        "name": "edit_file",
        "args": {"path": "src/stats/core.py", "old": '"""Mean and median', "new": '"""Mean and median (checked)'},
    }
    write_script(bugfix, [{"tool_calls": [note]}, {"tool_calls": [{"name": "finish", "args": {"summary": "no-op"}}]}])
    result = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix the median")
    assert result.status == "COMPLETE"
    assert noop_checks(bugfix / "t.db", result.run_id) == []  # not a no-op: the condition is not even asked


def test_a_run_that_sent_something_out_is_never_no_op(bugfix: Path) -> None:
    already_fixed(bugfix)
    env = with_post(bugfix, max_external=1)
    say = {"name": "post", "args": {"message": "all good already"}}
    write_script(bugfix, [{"tool_calls": [say]}, {"tool_calls": [{"name": "finish", "args": {"summary": "told"}}]}])

    def human(request: ApprovalRequest) -> ApprovalAnswer:
        return ApprovalAnswer("once", by="alice")

    result = Harness(env, db=bugfix / "t.db", sandbox="local", tools=[post], approver=human).run("check, tell them")
    assert SENT == ["all good already"]
    assert result.status == "COMPLETE" and noop_checks(bugfix / "t.db", result.run_id) == []


# ---- a reply cut off at the token limit ------------------------------------------------------------------


def test_a_whole_looking_call_in_a_cut_off_reply_is_not_run(bugfix: Path) -> None:
    """The scripted model stops at the limit with the fix in full: it must not run; the next turn's copy does."""
    write_script(
        bugfix,
        [
            {"text": "Here is the fix", "tool_calls": [FIX], "stop": "truncated"},
            {"tool_calls": [FIX]},
            {"tool_calls": [FINISH]},
        ],
    )
    result = Harness(bugfix / "envelope.yaml", db=bugfix / "t.db", sandbox="local").run("fix the median")
    assert result.status == "COMPLETE"
    with EventStore.open(bugfix / "t.db") as store:
        events = store.events(result.run_id)
    (cut,) = [e.payload for e in events if e.kind == "model.truncated"]
    started = [e.payload["call_id"] for e in events if e.kind == "action.started"]
    assert cut["not_run"] == ["call_0_0"] and "call_0_0" not in started
    invalid = {e.payload["call_id"]: e.payload["error"] for e in events if e.kind == "action.invalid"}
    assert "cut off at the token limit" in invalid["call_0_0"]
    source = (bugfix / "project" / "src" / "stats" / "core.py").read_text()
    assert source.count("if len(ordered) % 2:") == 1
