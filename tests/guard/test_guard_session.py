"""The guard core: a session's run, the one decider, approvals answered anywhere, receipts — and attacks on each."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from tether.cli.main import app
from tether.errors import LogCorrupt
from tether.events import EventStore
from tether.guard import BudgetStop, Guard, GuardError, session_run_id
from tether.kernel.approvals import ApprovalAnswer, record_answer
from tether.policy.decision import Verdict
from tether.state import RunState
from tether.status import ActionStatus, RunStatus


def open_guard(store: EventStore, envelope: Path, session: str = "s1") -> Guard:
    return Guard.open(store, envelope, session, framework="test")


def approvals(envelope: Path, **settings: object) -> None:
    """Change the envelope's approvals section and compile it again (its contract hash sealed anew)."""
    doc = yaml.safe_load(envelope.read_text())
    doc["approvals"].update(settings)
    envelope.write_text(yaml.safe_dump(doc))
    compiled = CliRunner().invoke(app, ["compile", str(envelope.with_name("plan.yaml")), "-o", str(envelope)])
    assert compiled.exit_code == 0, compiled.output


def kinds(store: EventStore, run_id: str) -> list[str]:
    return [e.kind for e in store.events(run_id)]


def test_each_verdict_names_its_rule_and_the_log_verifies(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    allow = g.check("get_weather", {"city": "Paris"})
    ask = g.check("send_email", {"to": "team@example.com", "body": "sunny"})
    deny = g.check("delete_records", {"table": "customers"})
    assert (allow.verdict, allow.rule) == (Verdict.ALLOW, "weather-ok")
    assert (ask.verdict, ask.rule) == (Verdict.ASK, "email-needs-human")
    assert ask.approval_id and ask.approve_command == f"tether approve {ask.approval_id}"
    assert (deny.verdict, deny.rule) == (Verdict.DENY, "keep-customers")
    assert "customers table is never deleted" in deny.message()
    assert store.verify(g.run_id) == len(store.events(g.run_id))
    state = RunState.from_events(store.events(g.run_id))
    assert state.status is RunStatus.WAITING_APPROVAL
    assert [a.status for a in state.actions.values()] == [
        ActionStatus.DECIDED,
        ActionStatus.WAITING,
        ActionStatus.DENIED,
    ]


@pytest.mark.parametrize("tool", ["rm", "Get_Weather", "get_weather ", "get_weather;rm", ""])
def test_an_undeclared_tool_is_refused_whatever_its_spelling(store: EventStore, guarded: Path, tool: str) -> None:
    answer = open_guard(store, guarded).check(tool, {})
    assert (answer.verdict, answer.rule) == (Verdict.DENY, "envelope:undeclared-tool")
    assert "action.invalid" in kinds(store, answer.run_id)


def test_arguments_that_are_not_json_are_refused_before_anything_is_written(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    before = len(store.events(g.run_id))
    deep: list[object] = []
    for _ in range(100_000):
        deep = [deep]
    for bad in ({"city": float("nan")}, {"city": object()}, ["Paris"], {"city": deep}):
        with pytest.raises(GuardError, match=r"JSON|mapping"):
            g.check("get_weather", bad)  # type: ignore[arg-type]
    assert len(store.events(g.run_id)) == before


def test_an_approval_given_with_the_cli_is_read_when_the_call_is_checked_again(
    store: EventStore, guarded: Path
) -> None:
    g = open_guard(store, guarded)
    args = {"to": "team@example.com", "body": "sunny"}
    asked = g.check("send_email", args, call_id="call-7")
    result = CliRunner().invoke(app, ["approve", "--db", str(store.path), asked.approval_id or ""])
    assert result.exit_code == 0, result.output
    again = g.check("send_email", args, call_id="call-7")  # the framework resumes and asks again
    assert (again.verdict, again.rule) == (Verdict.ALLOW, "approval:granted")
    assert again.call_id == "call-7"
    g.run_call("call-7", lambda: "sent")
    state = g.refresh()
    assert state.status is RunStatus.RUNNING  # nothing pending: the session goes on
    assert state.actions["call-7"].status is ActionStatus.COMPLETED


def test_the_same_call_id_with_other_arguments_is_a_new_call_not_the_approved_one(
    store: EventStore, guarded: Path
) -> None:
    g = open_guard(store, guarded)
    asked = g.check("send_email", {"to": "team@example.com", "body": "sunny"}, call_id="c1")
    g.answer(asked.approval_id or "", "once", by="alice")
    swapped = g.check("send_email", {"to": "everyone@example.com", "body": "sunny"}, call_id="c1")
    assert swapped.verdict is Verdict.ASK and swapped.call_id != "c1"
    with pytest.raises(GuardError, match="not allowed to run"):
        g.started(swapped.call_id)


def test_a_human_denial_is_final_for_the_identical_call(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    args = {"to": "team@example.com", "body": "sunny"}
    asked = g.check("send_email", args)
    denied = g.answer(asked.approval_id or "", "deny", by="alice", reason="not today")
    assert (denied.verdict, denied.rule, denied.reason) == (Verdict.DENY, "approval:denied", "not today")
    again = g.check("send_email", args)  # a new call id, the same call: not asked twice
    assert (again.verdict, again.rule) == (Verdict.DENY, "kernel:denied-before")
    first = g.answer(asked.approval_id or "", "once", by="mallory")  # a second answer does not overturn the first
    assert first.verdict is Verdict.DENY


def test_approving_for_the_run_does_not_lift_an_approval_class_the_envelope_requires(
    store: EventStore, guarded: Path
) -> None:
    g = open_guard(store, guarded)
    asked = g.check("send_email", {"to": "team@example.com", "body": "x"})
    g.answer(asked.approval_id or "", "run", by="alice")
    assert g.refresh().run_rules[0]["rule"] == "send_email"
    later = g.check("send_email", {"to": "team@example.com", "body": "x"})
    assert (later.verdict, later.rule) == (Verdict.ASK, "approval:published")  # approvals.require_for: published


def test_receipts_only_for_allowed_calls_and_only_once(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    denied = g.check("delete_records", {"table": "customers"})
    with pytest.raises(GuardError, match="not allowed to run"):
        g.completed(denied.call_id, ok=True, output="deleted 10 rows")
    with pytest.raises(GuardError, match="no call"):
        g.completed("never-checked", ok=True)
    ok = g.check("get_weather", {"city": "Oslo"})
    g.started(ok.call_id)
    assert kinds(store, g.run_id)[-1] == "action.started"  # durable before the tool runs
    g.completed(ok.call_id, ok=True, output="x" * 200_000)
    with pytest.raises(GuardError, match="completes once"):
        g.completed(ok.call_id, ok=True)
    content = g.output(g.refresh().actions[ok.call_id])
    assert len(content) < 70_000 and "characters not kept" in content


def test_a_tool_that_raises_is_recorded_as_failed_and_the_exception_goes_on(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    ok = g.check("get_weather", {"city": "Oslo"})

    def boom() -> str:
        raise TimeoutError("the weather service did not answer")

    with pytest.raises(TimeoutError):
        g.run_call(ok.call_id, boom)
    a = g.refresh().actions[ok.call_id]
    assert a.ok is False and "did not answer" in g.output(a)


def test_a_session_finds_its_run_again_and_keeps_its_contract(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded, "thread-9")
    g.check("get_weather", {"city": "Rome"})
    again = open_guard(store, guarded, "thread-9")
    assert again.run_id == g.run_id == session_run_id("test", "thread-9")
    assert len(again.state.actions) == 1
    assert open_guard(store, guarded, "thread-10").run_id != g.run_id
    assert Guard.open(store, guarded, "thread-9", framework="other").run_id != g.run_id
    doc = yaml.safe_load(guarded.read_text())
    doc["permissions"]["deny"] = []  # someone loosens the file: the running session is not re-governed by it
    loose = guarded.with_name("loose.yaml")
    loose.write_text(yaml.safe_dump(doc))
    compiled = CliRunner().invoke(app, ["compile", str(guarded.with_name("plan.yaml")), "-o", str(loose)])
    assert compiled.exit_code == 0, compiled.output
    with pytest.raises(GuardError, match="began under another envelope"):
        Guard.open(store, loose, "thread-9", framework="test")


def test_a_rewritten_log_is_refused_on_open(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    g.check("get_weather", {"city": "Rome"})
    conn = sqlite3.connect(store.path)  # an attacker with file access: the triggers dropped, a decision edited
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload=replace(payload, 'Rome', 'Oslo') WHERE run_id=?", (g.run_id,))
    conn.commit()
    conn.close()
    with pytest.raises(LogCorrupt, match="seq"):
        open_guard(store, guarded)


def test_an_unanswered_approval_expires_into_a_denial(store: EventStore, guarded: Path) -> None:
    approvals(guarded, timeout_s=0.2)
    g = open_guard(store, guarded)
    asked = g.check("send_email", {"to": "a@example.com", "body": "x"})
    time.sleep(0.3)
    late = g.verdict(asked.call_id)
    assert (late.verdict, late.rule) == (Verdict.DENY, "approval:expired")
    assert g.answer(asked.approval_id or "", "once", by="alice").verdict is Verdict.DENY  # too late to approve
    assert g.refresh().status is RunStatus.RUNNING


def test_on_timeout_stop_ends_the_run_through_next_step_and_later_calls_are_refused(
    store: EventStore, guarded: Path
) -> None:
    approvals(guarded, timeout_s=0.2, on_timeout="stop")
    g = open_guard(store, guarded)
    asked = g.check("send_email", {"to": "a@example.com", "body": "x"})
    time.sleep(0.3)
    g.verdict(asked.call_id)
    state = g.refresh()
    assert state.status is RunStatus.NEEDS_INPUT and kinds(store, g.run_id)[-1] == "run.finished"
    after = g.check("get_weather", {"city": "Rome"})
    assert (after.verdict, after.rule) == (Verdict.DENY, "run:finished")


def test_threads_racing_on_one_session_lose_nothing(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    other = EventStore.open(store.path)  # a second connection, as a second process would have
    h = open_guard(other, guarded)
    answers = []

    def work(guard: Guard, n: int) -> None:
        for i in range(10):
            a = guard.check("get_weather", {"city": f"c{n}-{i}"})
            guard.run_call(a.call_id, lambda: "sunny")
            answers.append(a)

    threads = [threading.Thread(target=work, args=(x, n)) for n, x in enumerate((g, h, g, h))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    other.close()
    state = RunState.from_events(store.events(g.run_id))
    assert len(answers) == 40 and all(a.allowed for a in answers)
    assert sum(a.status is ActionStatus.COMPLETED for a in state.actions.values()) == 40
    assert store.verify(g.run_id) == len(store.events(g.run_id))


def _open_in_process(db: str, envelope: str, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()
    with EventStore.open(db) as s:
        Guard.open(s, envelope, "shared", framework="test").check("get_weather", {"city": "x"})


def test_two_processes_opening_one_new_session_share_one_run(tmp_path: Path, guarded: Path) -> None:
    db = tmp_path / "race.db"
    EventStore.open(db).close()
    ctx = multiprocessing.get_context("fork")  # tether is imported already: the children start at once
    barrier = ctx.Barrier(2)
    procs = [ctx.Process(target=_open_in_process, args=(str(db), str(guarded), barrier)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    assert [p.exitcode for p in procs] == [0, 0]
    with EventStore.open(db) as s:
        runs = s.runs()
        assert [r.run_id for r in runs] == [session_run_id("test", "shared")]
        assert kinds(s, runs[0].run_id).count("run.started") == 1
        assert len(RunState.from_events(s.events(runs[0].run_id)).actions) == 2


def test_record_answer_from_another_process_is_seen(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    asked = g.check("send_email", {"to": "a@example.com", "body": "x"})
    with EventStore.open(store.path) as other:
        record_answer(other, asked.approval_id or "", ApprovalAnswer("deny", "bob", "wrong list"))
    assert g.verdict(asked.call_id).reason == "wrong list"


def budgets(envelope: Path, **limits: object) -> None:
    """Change the envelope's budgets and compile it again."""
    doc = yaml.safe_load(envelope.read_text())
    doc["budgets"].update(limits)
    envelope.write_text(yaml.safe_dump(doc))
    compiled = CliRunner().invoke(app, ["compile", str(envelope.with_name("plan.yaml")), "-o", str(envelope)])
    assert compiled.exit_code == 0, compiled.output


def test_past_the_tool_call_budget_the_guard_raises_and_the_run_ends_budget_stop(
    store: EventStore, guarded: Path
) -> None:
    budgets(guarded, tool_calls=2)
    g = open_guard(store, guarded)
    g.check("delete_records", {"table": "customers"})  # denied: a refused call spends nothing
    first = g.check("get_weather", {"city": "Oslo"})
    g.run_call(first.call_id, lambda: "rain")
    assert g.check("get_weather", {"city": "Rome"}).allowed  # allowed is spent, before its receipt comes
    with pytest.raises(BudgetStop, match=r"budgets.tool_calls exhausted: used 2 of 2") as spent:
        g.check("get_weather", {"city": "Paris"})
    assert spent.value.answer.rule == "budget:tool_calls"
    state = g.refresh()
    assert state.status is RunStatus.BUDGET_STOP and "budgets.tool_calls" in state.result
    assert kinds(store, g.run_id)[-3:] == ["session.ended", "budget.exceeded", "run.finished"]
    assert "tether resume" not in state.next_action, "a governed run is not continued by tether resume"
    with pytest.raises(BudgetStop, match="BUDGET_STOP"):  # every later call too: the session is spent
        g.check("get_weather", {"city": "Paris"})
    assert store.verify(g.run_id) == len(store.events(g.run_id))


def test_past_the_wall_time_budget_the_next_call_ends_the_run(store: EventStore, guarded: Path) -> None:
    budgets(guarded, wall_s=0.2)
    g = open_guard(store, guarded)
    assert g.check("get_weather", {"city": "Oslo"}).allowed
    time.sleep(0.3)
    with pytest.raises(BudgetStop, match=r"budgets.wall_s exhausted"):
        g.check("get_weather", {"city": "Oslo"})
    assert g.refresh().status is RunStatus.BUDGET_STOP


def test_close_ends_the_run_through_next_step_and_later_calls_are_refused(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    g.run_call(g.check("get_weather", {"city": "Oslo"}).call_id, lambda: "rain")
    asked = g.check("send_email", {"to": "team@example.com", "body": "x"})
    state = g.close("the conversation is over")
    assert state.status is RunStatus.COMPLETE and "the conversation is over" in state.result
    assert asked.approval_id not in state.pending_approvals, "a pending approval expires with the session"
    assert kinds(store, g.run_id)[-2:] == ["session.ended", "run.finished"]
    later = g.check("get_weather", {"city": "Oslo"})
    assert (later.verdict, later.rule) == (Verdict.DENY, "run:finished")
    assert g.close().status is RunStatus.COMPLETE, "closing an ended run changes nothing"
    assert kinds(store, g.run_id).count("run.finished") == 1
    runs = CliRunner().invoke(app, ["runs", "--db", str(store.path)])
    assert g.run_id in runs.output and "COMPLETE" in runs.output, runs.output


def test_a_session_closed_with_a_call_still_running_needs_input(store: EventStore, guarded: Path) -> None:
    g = open_guard(store, guarded)
    call = g.check("get_weather", {"city": "Oslo"})
    g.started(call.call_id)  # the program crashed or closed before the receipt
    state = g.close()
    assert state.status is RunStatus.NEEDS_INPUT and call.call_id in state.result


def test_two_writers_racing_for_the_last_call_of_a_budget_let_only_one_through(tmp_path: Path, guarded: Path) -> None:
    budgets(guarded, tool_calls=1)
    stores = [EventStore.open(tmp_path / "race.db", create=True) for _ in range(2)]
    guards = [open_guard(s, guarded) for s in stores]
    barrier = threading.Barrier(2)
    verdicts: list[str] = []

    def call(g: Guard, city: str) -> None:
        barrier.wait()
        try:
            verdicts.append(g.check("get_weather", {"city": city}).verdict.name)
        except BudgetStop:
            verdicts.append("BUDGET_STOP")

    threads = [threading.Thread(target=call, args=(g, c)) for g, c in zip(guards, ("Oslo", "Rome"), strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(verdicts) == ["ALLOW", "BUDGET_STOP"]
    assert stores[0].verify(guards[0].run_id) == len(stores[0].events(guards[0].run_id))
    for s in stores:
        s.close()


def test_the_gate_reads_the_control_state_and_escalation_the_log_holds(store: EventStore, tmp_path: Path) -> None:
    """The guard decides with the control state and the escalation its run state folded (a hook's PreToolUse
    does not import the control layer): a control.changed to BLOCKED, CAUTIOUS or back to NORMAL, and a recovery
    escalated to a person, each appended by another guard of the session (another process), change the next
    decision of a command the gate allows and the execution review reviews; a run.continued answers the
    escalation."""
    from tether.events.kinds import RunContinued
    from tether.events.kinds_control import ControlChanged, RecoverySwitched
    from tether.hooks.calls import hook_envelope

    def opened() -> Guard:
        return Guard.open(store, hook_envelope(), "s1", framework="test", workspace=tmp_path, strict=False)

    def control(g: Guard, previous: str, state: str) -> None:
        g.record([ControlChanged(previous=previous, state=state, tier="warning", reason="test", dimension="d")])

    g, other = opened(), opened()
    assert g.check("bash", {"command": "touch a.txt"}).verdict is Verdict.ALLOW
    control(other, "NORMAL", "BLOCKED")
    blocked = g.check("bash", {"command": "touch b.txt"})
    assert (blocked.verdict, blocked.rule) == (Verdict.DENY, "control:blocked"), blocked
    control(other, "BLOCKED", "CAUTIOUS")
    cautious = g.check("bash", {"command": "touch c.txt"})
    assert (cautious.verdict, cautious.rule) == (Verdict.ASK, "control:cautious"), cautious
    control(other, "CAUTIOUS", "NORMAL")
    assert g.check("bash", {"command": "touch d.txt"}).verdict is Verdict.ALLOW
    other.record([RecoverySwitched(previous="minimal_fix", strategy="escalate_human", reason="stuck", guidance="ask")])
    waiting = g.check("bash", {"command": "touch e.txt"})
    assert waiting.verdict is not Verdict.ALLOW and "recovery has escalated to a human" in waiting.reason, waiting
    other.record([RunContinued(by="ann", from_status=RunStatus.RUNNING, reason="carry on")])
    assert g.check("bash", {"command": "touch f.txt"}).verdict is Verdict.ALLOW
    state = RunState.from_events(store.events(g.run_id))
    assert state.control.value == "NORMAL" and not state.awaiting_human
