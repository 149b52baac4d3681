"""The output contract's closing is a pure function of the log: evidence, unknowns, result, next action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tether.events.store import EventStore
from tether.events.stream import PagedLog
from tether.kernel.budgets import Breach
from tether.kernel.outcome import CLOSING_KINDS, closing
from tether.kernel.step import Finish
from tether.state import RunState
from tether.status import RunStatus


class Log:
    def __init__(self, tmp: Path, **started: Any) -> None:
        self.store = EventStore.open(tmp / "t.db")
        self.run = self.store.create_run("t")
        self.add("run.started", task="t", **started)

    def add(self, kind: str, **payload: Any) -> str:
        return self.store.append(self.run, kind, payload).id

    def action(self, call: str, tool: str, *, ok: bool | None, result: dict[str, Any] | None = None) -> str:
        self.add("action.proposed", call_id=call, tool=tool, args={}, args_hash=call, turn=0)
        if ok is None:
            return ""
        self.add("action.decided", call_id=call, verdict="ALLOW", deciding_rule="r", reason="r")
        self.add("action.started", call_id=call, tool=tool, args_hash=call)
        return self.add("action.completed", call_id=call, tool=tool, ok=ok, result=result or {})


def test_a_governed_session_s_call_with_no_receipt_may_have_run(tmp_path: Path) -> None:
    """The agent runs a governed session's tools, and tether hears of a run only from its receipt: a call let
    through, or asked of a person, with no receipt is not known not to have run (its receipt lost or refused: a
    PostToolUse over the hook's input limit was). Before, each was "proposed but not executed"."""
    log = Log(tmp_path, sandbox="external: claude-code")
    log.action("ran", "write_file", ok=True)
    log.action("lost", "write_file", ok=None)
    log.add("action.decided", call_id="lost", verdict="ALLOW", deciding_rule="r", reason="r")
    log.action("asked", "bash", ok=None)
    log.add("action.decided", call_id="asked", verdict="ASK", deciding_rule="r", reason="r")
    log.action("denied", "bash", ok=None)
    log.add("action.decided", call_id="denied", verdict="DENY", deciding_rule="r", reason="r")
    log.action("undecided", "bash", ok=None)
    events = log.store.events(log.run)
    out = closing(RunState.from_events(events), events, Finish(RunStatus.COMPLETE, "stopped"))
    assert sorted(out.unknowns) == [
        "asked (bash) was asked of a person and no receipt of it came: declined, or run unreported",
        "lost (write_file) was allowed and no receipt of it came: claude-code may have run it",
        "undecided (bash) was proposed but not executed",
    ]


def test_evidence_cites_the_latest_verdicts_and_successes_and_unknowns_name_what_did_not_run(tmp_path: Path) -> None:
    log = Log(tmp_path)
    successes = [log.action(f"c{i}", "bash", ok=True) for i in range(7)]
    log.action("bad", "bash", ok=False)
    log.action("never", "write_file", ok=None)
    verdicts = [log.add("verify.completed", accepted=False) for _ in range(4)]
    log.add("sensor.result", sensor="lint", result="SKIPPED", required=False, summary="ruff missing")
    log.add("sensor.result", sensor="tests", result="SKIPPED", required=True, summary="no tests")
    log.add("sensor.result", sensor="types", result="PASS", required=False)
    events = log.store.events(log.run)
    state = RunState.from_events(events)
    finish = Finish(RunStatus.NEEDS_INPUT, "stopped")

    out = closing(state, events, finish)
    assert out.evidence == verdicts[-3:] + successes[-5:]
    assert out.unknowns == [
        "never (write_file) was proposed but not executed",
        "optional sensor lint SKIPPED: ruff missing",
    ]
    assert (out.status, out.result) == (RunStatus.NEEDS_INPUT, "stopped")
    assert (
        out.next_action
        == f'inspect with `tether show`; to continue this run: tether resume {log.run} --note "<your answer>"'
    )
    assert closing(state, events, finish) == out  # pure: the same log says the same thing
    # what the runtime hands it: only the events of CLOSING_KINDS, read by a query of those kinds a page at a time
    # (pages of 3 seqs: the kinds' events fall across pages and among the staged, unwritten ones)
    written = events[-4].seq
    paged = PagedLog(log.store, log.run, lambda: (written, events[-3:]), page=3)
    assert closing(state, paged.only(CLOSING_KINDS), finish) == out
    assert {e.kind for e in paged.only(CLOSING_KINDS)} == {"action.completed", "verify.completed", "sensor.result"}


def test_the_result_is_the_accepted_claim_and_the_next_action_follows_the_status(tmp_path: Path) -> None:
    log = Log(tmp_path)
    log.action("f", "finish", ok=True, result={"data": {"claim": "fixed median"}})
    accepted = log.add("completion.accepted", call_id="f")
    events = log.store.events(log.run)
    state = RunState.from_events(events)
    out = closing(state, events, Finish(RunStatus.COMPLETE, "completion claimed and every required sensor passed"))
    assert out.result == "fixed median" and accepted in out.evidence
    assert out.next_action == "review the diff (`tether show`, or git diff) and merge it"
    over = Breach("usd", 2.5, 2.0)
    stop = closing(state, events, Finish(RunStatus.BUDGET_STOP, over.reason, breach=over))
    assert stop.next_action == (
        "decide whether the work is worth more than budgets.usd allows; "
        f"to continue this run: tether resume {log.run} --budget usd=<new limit>"
    )
    told = closing(state, events, Finish(RunStatus.NEEDS_INPUT, "x", next_action="answer the question"))
    assert told.next_action.startswith("answer the question; to continue this run: tether resume")
    final = closing(state, events, Finish(RunStatus.BLOCKED_PERMISSION, "arguments changed"))
    assert "resume" not in final.next_action  # never suggested where it would be refused
