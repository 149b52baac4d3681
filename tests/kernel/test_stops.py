"""Only ``next_step`` ends a run: the runtime records facts, and each fact ends the run as it always did.

Every fact that used to make ``kernel/runtime.py`` finish a run by itself is checked here to end it with
the same status, reason and advice through ``next_step``; the pending fact is consumed by the finish
(a resumable run goes on after it), and a crash between the fact and the finish — a real SIGKILL —
resumes to the very same finish without repeating what failed.
"""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tether import EventStore, Harness
from tether.envelope.load import load_envelope
from tether.envelope.schema import Envelope
from tether.kernel.runtime import Runtime
from tether.kernel.steps import CallModel, Finish, next_step
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.state import RunState
from tether.status import RunStatus

NOW = datetime.now(UTC)
CHECK = {"name": "tests", "ok": True, "detail": "ok"}

#: (kind, payload, the finish the runtime used to write itself before next_step decided it)
FACTS: list[tuple[str, dict[str, Any], Finish]] = [
    (
        "sandbox.failed",
        {"error": "bwrap: no user namespaces", "fix": "enable unprivileged user namespaces"},
        Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            "the required sandbox cannot start: bwrap: no user namespaces",
            "enable unprivileged user namespaces",
        ),
    ),
    (
        "model.context_full",
        {"turn": 3, "problem": "the prompt needs 9000 tokens of 8192", "window_setting": "llama-server -c"},
        Finish(
            RunStatus.NEEDS_INPUT,
            "context window full: the prompt needs 9000 tokens of 8192",
            "give the model more room: raise agent.context_window together with the server's own context size "
            "(llama-server -c), lower agent.max_output_tokens, or use a model with a larger window; then start a "
            "new run (what is left after compaction did not fit: docs/context.md)",
        ),
    ),
    (
        "model.failed",
        {"turn": 0, "model": "m", "error": "401 invalid key", "status": 401, "failure": "rejected"},
        Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            "the model provider rejected the request: 401 invalid key",
            "check the API key and its permissions",
        ),
    ),
    (
        "model.failed",
        {"turn": 0, "model": "m", "error": "503 busy", "status": 503, "attempts": 4, "failure": "outage"},
        Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            "the model provider failed after 4 attempts: 503 busy",
            "check that the provider or local server is up (after a timeout: raise agent.request_timeout_s)",
        ),
    ),
    (
        "model.failed",
        {"turn": 0, "model": "m", "error": "not json", "failure": "malformed"},
        Finish(
            RunStatus.BLOCKED_DEPENDENCY,
            "the model provider's answer could not be read (after 1 attempt): not json",
            "check that the server speaks the provider's API; set agent.provider_profile (docs/providers.md)",
        ),
    ),
    (
        "model.failed",
        {"turn": 0, "model": "m", "error": "too long", "attempts": 2, "failure": "context_overflow"},
        Finish(
            RunStatus.NEEDS_INPUT,
            "context window full: the provider said the request does not fit (after 2 attempts): too long",
            "give the model more room: raise agent.context_window together with the server's own context size "
            "(the server's context size), lower agent.max_output_tokens, or use a model with a larger window; "
            "then start a new run (what is left after compaction did not fit: docs/context.md)",
        ),
    ),
    (
        "approval.expired",
        {"approval_id": "ap-1", "outcome": "stop"},
        Finish(RunStatus.NEEDS_INPUT, "approval ap-1 expired and the envelope says stop"),
    ),
    (
        "approval.mismatch",
        {"approval_id": "ap-1", "call_id": "c1"},
        Finish(RunStatus.BLOCKED_PERMISSION, "arguments of c1 no longer match the approval"),
    ),
    (
        "action.failed",
        {"call_id": "c1", "tool": "bash", "error": "sandbox gone", "failure_class": "runtime", "dependency": True},
        Finish(RunStatus.BLOCKED_DEPENDENCY, "bash could not run: sandbox gone"),
    ),
    (
        "action.failed",
        {"call_id": "c1", "tool": "bash", "error": "bad cwd", "failure_class": "runtime", "fix": "fix the cwd"},
        Finish(RunStatus.NEEDS_INPUT, "bash could not run: bad cwd", "fix the cwd"),
    ),
    (
        "preflight.completed",
        {
            "ok": False,
            "checks": [
                CHECK,
                {
                    "name": "lint",
                    "ok": False,
                    "detail": "ruff missing",
                    "fix": "pip install ruff",
                    "status": "NEEDS_INPUT",
                },
                {"name": "types", "ok": False, "detail": "no mypy", "status": "BLOCKED_DEPENDENCY"},
            ],
        },
        Finish(
            RunStatus.BLOCKED_DEPENDENCY, "pre-flight failed: lint: ruff missing; types: no mypy", "pip install ruff"
        ),
    ),
    (
        "preflight.completed",
        {"ok": False, "checks": [{"name": "tests", "ok": False, "detail": "no tests", "status": "NEEDS_INPUT"}]},
        Finish(RunStatus.NEEDS_INPUT, "pre-flight failed: tests: no tests", ""),
    ),
]
NOT_STOPS = [
    ("approval.expired", {"approval_id": "ap-1", "outcome": "deny"}),
    ("preflight.completed", {"ok": True, "checks": [CHECK]}),
]


@pytest.fixture
def env() -> Envelope:
    return load_envelope(Path(__file__).resolve().parents[2] / "examples" / "bugfix" / "envelope.yaml")


class Log:
    """A real SQLite log that tests write events into, then fold."""

    def __init__(self, tmp: Path, env: Envelope) -> None:
        self.store = EventStore.open(tmp / "t.db")
        self.run = self.store.create_run("t")
        self.add("run.started", {"task": "t", "envelope": env.model_dump(mode="json")})

    def add(self, kind: str, payload: dict[str, Any]) -> None:
        self.store.append(self.run, kind, payload)

    def state(self) -> RunState:
        return RunState.from_events(self.store.events(self.run))

    def before(self, kind: str) -> None:
        """What precedes the fact in a real run: the approval it is about, or the action that was started."""
        if kind.startswith("approval."):
            self.approval()
        elif kind.startswith("action."):
            self.add("action.proposed", {"call_id": "c1", "tool": "bash", "args": {}, "args_hash": "h", "turn": 0})
            self.add("action.decided", {"call_id": "c1", "verdict": "ALLOW", "deciding_rule": "r", "reason": "r"})
            self.add("action.started", {"call_id": "c1", "tool": "bash", "args_hash": "h"})

    def approval(self) -> None:  # a call waiting for a human, with its approval requested
        self.add("action.proposed", {"call_id": "c1", "tool": "bash", "args": {}, "args_hash": "h", "turn": 0})
        self.add("action.decided", {"call_id": "c1", "verdict": "ASK", "deciding_rule": "r", "reason": "r"})
        request = {"call_id": "c1", "tool": "bash", "args_hash": "h", "preview": "", "reason": "r", "expires_at": 4e9}
        self.add("approval.requested", {"approval_id": "ap-1", **request})


@pytest.mark.parametrize(("kind", "payload", "finish"), FACTS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(FACTS)])
def test_each_fact_ends_the_run_as_the_runtime_used_to(
    tmp_path: Path, env: Envelope, kind: str, payload: dict[str, Any], finish: Finish
) -> None:
    log = Log(tmp_path, env)
    log.before(kind)
    log.add(kind, payload)
    assert next_step(log.state(), env, NOW) == finish


@pytest.mark.parametrize(("kind", "payload"), NOT_STOPS)
def test_facts_a_run_goes_on_from_do_not_stop_it(
    tmp_path: Path, env: Envelope, kind: str, payload: dict[str, Any]
) -> None:
    log = Log(tmp_path, env)
    log.before(kind)
    log.add(kind, payload)
    assert log.state().stop is None and not isinstance(next_step(log.state(), env, NOW), Finish)


def test_a_recorded_stop_comes_before_everything_else(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.approval()  # a human is being waited for...
    log.add("action.proposed", {"call_id": "c2", "tool": "bash", "args": {}, "args_hash": "h2", "turn": 0})
    log.add("action.started", {"call_id": "c2", "tool": "bash", "args_hash": "h2"})  # ...and a call is open
    log.add("sandbox.failed", {"error": "gone"})
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Finish) and step.status is RunStatus.BLOCKED_DEPENDENCY


def test_the_finish_consumes_the_stop_so_a_resumed_run_goes_on(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    log.add("model.failed", {"turn": 0, "model": "m", "error": "503", "failure": "outage"})
    log.add("run.finished", {"status": "BLOCKED_DEPENDENCY", "result": "provider failed", "last_error": "503"})
    log.add("run.resumed", {"reason": "tether resume"})
    state = log.state()
    assert state.stop is None and state.last_error == "503"
    assert next_step(state, env, NOW) == CallModel(0)


def test_only_the_latest_refusal_counts_and_an_acceptance_clears_it(tmp_path: Path, env: Envelope) -> None:
    log = Log(tmp_path, env)
    limit = env.verification.max_refusals
    refused = {"call_id": "f", "reasons": ["tests FAILED"], "refusals": limit + 1, "max_refusals": limit}
    log.add("completion.refused", refused)
    step = next_step(log.state(), env, NOW)
    assert isinstance(step, Finish) and step.status is RunStatus.VERIFY_FAILED
    assert (
        step.reason
        == f"completion was claimed {limit + 1} times and refused each time (limit {limit} refusals): tests FAILED"
    )
    log.add("completion.accepted", {"call_id": "g"})
    assert log.state().last_refusal is None


# ---- through the runtime ---------------------------------------------------------------------------

KILLER = """
import os, signal, sys
from tether import Harness
from tether.errors import ProviderError
from tether.kernel.runtime import Runtime
from tether.models.function import FunctionModel

envelope, db, kind = sys.argv[1:4]
drive = Runtime.drive

def step_by_step(self, steps=None):  # as a distributed worker drives: one step per call, written when it returns
    while drive(self, steps=1) is not None:
        if any(e.kind == kind for e in self.store.events(self.run_id)):
            os.kill(os.getpid(), signal.SIGKILL)  # after the fact is written, before the finish

def provider(messages, tools):
    raise ProviderError("401 invalid key", transient=False, status=401)

Runtime.drive = step_by_step
Harness(envelope, db=db, sandbox="local", model=FunctionModel(provider)).run("fix the median")
"""


def healthy(calls: list[int]) -> FunctionModel:
    def provider(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        calls.append(1)
        finish = ToolCall("f", "finish", {"summary": "done"})
        return ModelResponse("", (finish,), "tool_request", "tool_calls", Usage(1, 1), "fn")

    return FunctionModel(provider)


def test_a_crash_between_the_fact_and_the_finish_resumes_to_the_same_finish(bugfix: Path) -> None:
    db = bugfix / "t.db"
    proc = subprocess.run(
        [sys.executable, "-c", KILLER, str(bugfix / "envelope.yaml"), str(db), "model.failed"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == -9, proc.stderr  # it really died, right after model.failed was appended
    with EventStore.open(db) as store:
        (info,) = store.runs()
        crashed = [e.kind for e in store.events(info.run_id)]
    assert crashed[-1] == "model.failed" and "run.finished" not in crashed

    calls: list[int] = []
    contract = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model=healthy(calls)).resume(info.run_id)
    assert contract.status is RunStatus.BLOCKED_DEPENDENCY
    assert contract.result == "the model provider rejected the request: 401 invalid key"
    assert contract.next_action == (
        f"check the API key and its permissions; to continue this run: tether resume {info.run_id}"
    )
    assert calls == []  # the finish came from the recorded fact: the model was not asked again
    with EventStore.open(db) as store:
        kinds = [e.kind for e in store.events(info.run_id)]
    assert kinds.count("model.failed") == 1 and kinds.count("run.finished") == 1 and kinds[-1] == "run.finished"

    again = Harness(bugfix / "envelope.yaml", db=db, sandbox="local", model=healthy(calls)).resume(info.run_id)
    assert calls and again.status is not RunStatus.BLOCKED_DEPENDENCY  # resumable: the fact was consumed


def test_an_expired_approval_with_stop_ends_the_run_through_next_step(
    bugfix: Path, env: Envelope, monkeypatch: pytest.MonkeyPatch
) -> None:
    approvals = env.approvals.model_copy(update={"timeout_s": 60, "on_timeout": "stop"})
    stop = env.model_copy(update={"approvals": approvals, "contract_hash": ""})  # edited in memory: no contract hash

    def provider(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        push = ToolCall("p", "bash", {"command": "git push origin main"})
        return ModelResponse("", (push,), "tool_request", "tool_calls", Usage(1, 1), "fn")

    harness = Harness(
        stop, db=bugfix / "t.db", sandbox="local", model=FunctionModel(provider), workspace=bugfix / "project"
    )
    waiting = harness.run("push it")
    assert waiting.status is RunStatus.WAITING_APPROVAL
    later = datetime.now(UTC) + timedelta(seconds=61)  # the human did not answer in time
    monkeypatch.setattr(Runtime, "now", staticmethod(lambda: later))
    contract = harness.resume(waiting.run_id)
    assert contract.status is RunStatus.NEEDS_INPUT
    assert contract.result.startswith("approval ap-") and contract.result.endswith("expired and the envelope says stop")
