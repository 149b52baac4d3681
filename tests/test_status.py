"""The status vocabulary: every status has an exit code, finishes and waits only use their own statuses."""

from __future__ import annotations

import pytest

from tether.cli.common import EXIT_BLOCKED, EXIT_INVALID, EXIT_OK, EXIT_RUNTIME, EXIT_WAITING, exit_code
from tether.events.payload import InvalidPayload, validate_payload
from tether.state import RunState
from tether.status import SUCCESS, TERMINAL, WAITING, RunStatus

EXPECTED = {
    RunStatus.NEW: EXIT_RUNTIME,
    RunStatus.RUNNING: EXIT_RUNTIME,
    RunStatus.WAITING_APPROVAL: EXIT_WAITING,
    RunStatus.COMPLETE: EXIT_OK,
    RunStatus.NO_OP: EXIT_OK,
    RunStatus.NEEDS_INPUT: EXIT_WAITING,
    RunStatus.BLOCKED_PERMISSION: EXIT_INVALID,
    RunStatus.BLOCKED_DEPENDENCY: EXIT_BLOCKED,
    RunStatus.VERIFY_FAILED: EXIT_INVALID,
    RunStatus.NO_PROGRESS: EXIT_INVALID,
    RunStatus.BUDGET_STOP: EXIT_INVALID,
}


@pytest.mark.parametrize("status", list(RunStatus))
def test_every_status_has_its_exit_code(status: RunStatus) -> None:
    assert exit_code(status) == EXPECTED[status]


def test_the_table_names_every_status() -> None:
    assert set(EXPECTED) == set(RunStatus)
    assert {s for s in RunStatus if exit_code(s) == EXIT_OK} == SUCCESS


def test_a_status_is_its_string_so_old_logs_read_back() -> None:
    assert RunStatus("COMPLETE") is RunStatus.COMPLETE and RunStatus.COMPLETE == "COMPLETE"
    assert TERMINAL.isdisjoint(WAITING) and RunStatus.RUNNING not in TERMINAL | WAITING
    assert all(s.terminal for s in TERMINAL) and not RunStatus.WAITING_APPROVAL.terminal


@pytest.mark.parametrize("status", ["RUNNING", "NEW", "WAITING_APPROVAL", "DONE", "complete", ""])
def test_a_run_finishes_only_in_a_terminal_status(status: str) -> None:
    with pytest.raises(InvalidPayload, match=r"run\.finished"):
        validate_payload("run.finished", {"status": status})


@pytest.mark.parametrize("status", ["RUNNING", "COMPLETE", "NEEDS_INPUT", "WAITING"])
def test_a_run_waits_only_in_a_waiting_status(status: str) -> None:
    with pytest.raises(InvalidPayload, match=r"run\.waiting"):
        validate_payload("run.waiting", {"status": status, "reason": "x"})


def test_the_fold_reads_statuses_as_members() -> None:
    from tether.events.store import Event

    payload = validate_payload("run.finished", {"status": "NO_OP"})
    state = RunState()
    state.apply(Event("r", 0, "2026-01-01T00:00:00+00:00", "run.finished", payload, "", ""))
    assert state.status is RunStatus.NO_OP and state.finished
