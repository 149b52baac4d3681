"""A 300-turn run against a small window: compaction keeps it inside, its invariants intact, every prompt exact.

The model is a function (stateless, like a real provider: it reads its place from the conversation),
the tools are the real read-only ones, the log is real SQLite. Checked message by message after every
compaction: the system prompt (instructions, plan, labelled sections), the task, the invariant block
(tasks, beliefs, unresolved failures, diff), the last turns whole; every call's manifest rebuilds the
exact messages; a crash in the middle of a compaction resumes to the same context.
"""

from __future__ import annotations

import contextlib
import dataclasses
import html
import json
import re
import sqlite3
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from runkit import tether

from tether import EventStore, Harness
from tether.cli.demo_cmds import prepare
from tether.envelope.hashing import contract_hash
from tether.envelope.load import load_envelope
from tether.envelope.schema import ToolContract
from tether.errors import InputError, ProviderError
from tether.events.kinds_context import ContextCompacted
from tether.events.kinds_kernel import ContextSection, ModelRequested
from tether.events.store import Event
from tether.kernel.compaction import SUMMARY_INSTRUCTION
from tether.kernel.context import Transcript
from tether.kernel.manifest import ManifestMismatch, check, context_at, full_manifests, message_hash, requests
from tether.models.base import Message, ModelResponse, ToolCall, ToolSpec, Usage
from tether.models.function import FunctionModel
from tether.models.scripted import compacted_turns
from tether.status import RunStatus

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "bugfix"
TURNS = 300
WINDOW = 6_000
TASK = "Survey notes.txt and report what it says."
NOTE = "line {i}: observation about the survey, number {i}"
SECTION = ContextSection(label="Memory (from earlier runs)", source="memory", text="The user prefers short answers.")


class Crash(BaseException):
    """The process dying mid-step: nothing after it runs, nothing is caught."""


def turn_of(messages: list[Message]) -> int:
    return sum(1 for m in messages if m.role == "assistant") + compacted_turns(messages)


def agent(
    summaries: list[int],
    crash_at_summary: int | None = None,
    stop_after: int | None = None,
    summary_fails: bool = False,
) -> FunctionModel:
    """Reads notes.txt a slice per turn; plans at turn 1 and 40; reads a missing file at turn 3 (never fixed)."""

    def fn(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        if messages[0].content == SUMMARY_INSTRUCTION:
            summaries.append(1)
            if crash_at_summary is not None and len(summaries) == crash_at_summary:
                raise Crash()
            if summary_fails:
                raise ProviderError("503 overloaded", transient=True, status=503)
            turns = re.findall(r"turn (\d+):", messages[1].content)
            return ModelResponse(
                f"Read notes.txt through turn {turns[-1] if turns else '?'}.",
                (),
                "complete",
                "stop",
                Usage(len(messages[1].content) // 4, 12),
                "fn",
            )
        n = turn_of(messages)
        if stop_after is not None and n > stop_after:
            raise ProviderError("401 stop here", transient=False, status=401)
        if n == 1:
            call = ToolCall(
                f"p{n}",
                "plan",
                {
                    "tasks": [
                        {"id": "survey", "title": "read all notes", "status": "ACTIVE"},
                        {"id": "report", "title": "write the report"},
                    ]
                },
            )
        elif n == 3:
            call = ToolCall(f"m{n}", "read_file", {"path": "missing.py"})
        else:
            start = 1 + (n * 7) % 2900
            call = ToolCall(f"r{n}", "read_file", {"path": "notes.txt", "start_line": start, "end_line": start + 6})
        return ModelResponse(f"turn {n}: reading on", (call,), "tool_request", "tool_calls", Usage(100, 20), "fn")

    return FunctionModel(fn)


def envelope(base: Path, window: int = WINDOW) -> Path:
    """The example's envelope with a small window, room for 300 turns and read_result, recompiled in place."""
    env = load_envelope(base / "envelope.yaml")
    agent_ = env.agent.model_copy(update={"max_turns": TURNS, "context_window": window})
    reader = ToolContract(
        name="read_result", purpose="Page through a shortened result.", effects=["read"], trust="untrusted"
    )
    budgets = env.budgets.model_copy(
        update={"turns": 10 * TURNS, "tool_calls": 10 * TURNS, "tokens": 10**9, "wall_s": 3600}
    )
    env = env.model_copy(update={"agent": agent_, "budgets": budgets, "tools": [*env.tools, reader]})
    data = env.model_copy(update={"contract_hash": contract_hash(env)}).model_dump(mode="json", exclude_none=True)
    (base / "envelope.yaml").write_text(json.dumps(data))
    return base / "envelope.yaml"


def drive(
    base: Path, model: FunctionModel, db: Path, run_id: str | None = None, window: int | None = None, **hooks: Any
) -> str:
    h = Harness(base / "envelope.yaml", model=model, db=db, sandbox="local", **hooks)
    h.options = dataclasses.replace(h.options, sections=[SECTION], context_window=window)
    if run_id is None:
        with contextlib.suppress(Crash):
            h.run(TASK)
        with EventStore.open(db) as store:
            (info,) = store.runs()
            return info.run_id
    h.resume(run_id)
    return run_id


def workspace(tmp: Path, window: int = WINDOW) -> Path:
    base = prepare(EXAMPLE, tmp)
    (base / "project" / "notes.txt").write_text("".join(f"{NOTE.format(i=i)}\n" for i in range(1, 3001)))
    envelope(base, window)
    return base


@dataclasses.dataclass(frozen=True)
class LongRun:
    events: list[Event]
    summaries: list[int]
    db: Path
    run_id: str


@pytest.fixture(scope="module")
def long_run(tmp_path_factory: pytest.TempPathFactory) -> LongRun:
    base = workspace(tmp_path_factory.mktemp("long"))
    summaries: list[int] = []
    db = base / "t.db"
    run_id = drive(base, agent(summaries), db)
    with EventStore.open(db) as store:
        return LongRun(store.events(run_id), summaries, db, run_id)


@pytest.mark.slow
def test_a_long_run_stays_inside_its_window(long_run: LongRun) -> None:
    events, summaries = long_run.events, long_run.summaries
    requested = [e.data_as(ModelRequested) for e in events if e.kind == ModelRequested.KIND]
    compactions = [e.data_as(ContextCompacted) for e in events if e.kind == ContextCompacted.KIND]
    assert len(requested) == TURNS and events[-1].payload["status"] == RunStatus.BUDGET_STOP.value
    assert len(compactions) >= 10 and len(summaries) == len(compactions)
    assert all(c.method == "model" and c.after_tokens < c.before_tokens for c in compactions)
    assert max(r.prompt_tokens_est or 0 for r in requested) <= WINDOW
    assert all(r.counter == "estimate:3.5chars" and r.manifest for r in requested)
    assert sum(c.input_tokens + c.output_tokens for c in compactions) > 0  # the summaries are counted in the budget


@pytest.mark.slow
def test_every_prompt_is_rebuilt_exactly_and_the_invariants_survive_every_compaction(
    long_run: LongRun,
) -> None:
    events = long_run.events
    live = Transcript(load_envelope(EXAMPLE / "envelope.yaml"))
    compacted: set[int] = set()
    manifests = full_manifests(events)
    for i, e in enumerate(events):
        if e.kind == ContextCompacted.KIND:
            compacted.add(e.data_as(ContextCompacted).turn)
        if e.kind != ModelRequested.KIND:
            continue
        request = e.data_as(ModelRequested)
        messages = live.feed(events[:i]).messages()
        assert [message_hash(m) for m in messages] == [r.hash for r in manifests[i]], request.turn
        if request.turn in compacted or request.turn % 25 == 0:  # the rebuild `tether show --context` does
            assert context_at(events, request.turn).messages == messages
        if compacted:
            invariants_hold(events, e.seq, messages)


def invariants_hold(events: list[Event], seq: int, messages: list[Message]) -> None:
    system, task, summary, *rest = messages
    assert system.role == "system" and system.content.startswith("You are a careful software engineer.")
    assert "Intent plan:" in system.content and "Make tests/test_stats.py pass" in system.content
    assert system.content.endswith("Memory (from earlier runs):\nThe user prefers short answers.")
    assert (task.role, task.content) == ("user", TASK)
    assert summary.role == "user" and "earlier turns" in summary.content and "Read notes.txt through" in summary.content
    assert (
        "survey [ACTIVE] read all notes" in summary.content and "report [PENDING] write the report" in summary.content
    )
    assert 'read_file({"path": "missing.py"})' in summary.content  # the unresolved failure
    assert "Current beliefs:" in summary.content and "The run's changes so far:" in summary.content
    said = [e.payload["text"] for e in events if e.kind == "model.responded" and e.seq < seq]
    kept = [m.content for m in rest if m.role == "assistant"]
    assert kept and kept == said[-len(kept) :]  # the last turns, whole and in order
    calls: set[str] = set()
    for m in rest:  # every tool result answers a call of the assistant message before it
        if m.role == "assistant":
            calls = {c.id for c in m.tool_calls}
        elif m.role == "tool":
            assert m.tool_call_id in calls


def compare(events: list[Event], others: list[Event], turns: range) -> None:
    for turn in turns:
        ours, theirs = context_at(events, turn), context_at(others, turn)
        assert [r.hash for r in ours.records] == [r.hash for r in theirs.records], turn


@pytest.mark.slow
def test_a_crash_in_the_middle_of_a_compaction_resumes_to_the_same_context(long_run: LongRun, tmp_path: Path) -> None:
    events = long_run.events
    second = [e for e in events if e.kind == ContextCompacted.KIND][1].data_as(ContextCompacted).turn
    base = workspace(tmp_path)
    summaries: list[int] = []
    db = base / "t.db"
    run_id = drive(base, agent(summaries, crash_at_summary=2), db)
    with EventStore.open(db) as store:
        crashed = store.events(run_id)
    assert sum(1 for e in crashed if e.kind == ContextCompacted.KIND) == 1 and crashed[-1].kind != "run.finished"
    drive(base, agent(summaries, stop_after=second + 3), db, run_id)
    with EventStore.open(db) as store:
        resumed = store.events(run_id)
    assert sum(1 for e in resumed if e.kind == ContextCompacted.KIND) == 2
    compare(resumed, events, range(1, second + 4))


@pytest.mark.slow
def test_a_crash_after_the_compaction_is_logged_resumes_without_summarising_again(
    long_run: LongRun, tmp_path: Path
) -> None:
    events = long_run.events
    first = next(e for e in events if e.kind == ContextCompacted.KIND).data_as(ContextCompacted).turn
    base = workspace(tmp_path)
    summaries: list[int] = []
    db = base / "t.db"

    def die(e: Event) -> None:
        if e.kind == ContextCompacted.KIND:
            raise Crash()

    run_id = drive(base, agent(summaries), db, on_event=die)
    assert summaries == [1]
    drive(base, agent(summaries, stop_after=first + 2), db, run_id)
    assert summaries == [1]  # the logged summary was used, not made again
    with EventStore.open(db) as store:
        compare(store.events(run_id), events, range(1, first + 3))


def test_show_context_prints_the_messages_of_a_turn_checked(long_run: LongRun) -> None:
    compacted = next(e for e in long_run.events if e.kind == ContextCompacted.KIND).data_as(ContextCompacted).turn
    proc = tether("show", long_run.run_id, "--context", str(compacted), "--db", str(long_run.db), "--json")
    assert proc.returncode == 0, proc.stderr
    shown = json.loads(proc.stdout)
    ctx = context_at(long_run.events, compacted)
    assert [m["content"] for m in shown["messages"]] == [m.content for m in ctx.messages]
    assert [m["hash"] for m in shown["messages"]] == [r.hash for r in ctx.records]
    assert shown["messages"][2]["seqs"] and shown["counter"] == "estimate:3.5chars"
    text = tether("show", long_run.run_id[:12], "--context", str(compacted), "--db", str(long_run.db))
    assert text.returncode == 0 and "every message matches its recorded hash" in text.stdout
    assert "earlier turns were compacted" in text.stdout and TASK in text.stdout
    with pytest.raises(InputError, match=r"turn 9999: no model call at that turn \(turns with a model call: 0-299\)"):
        context_at(long_run.events, 9999)


def test_each_call_records_only_the_messages_that_changed_since_the_call_before(long_run: LongRun) -> None:
    """Repeating every earlier record at every call would grow the log with the square of its length."""
    calls = requests(long_run.events)
    whole = full_manifests(long_run.events)
    written = sum(len(r.manifest) for _, r in calls)
    sent = sum(len(whole[i]) for i, _ in calls)
    assert calls[0][1].manifest_kept == 0 and all(r.manifest_kept >= 2 for _, r in calls[1:])  # system, task
    assert written * 3 < sent, (written, sent)


def test_a_call_that_keeps_more_records_than_the_call_before_had_is_named(tmp_path: Path) -> None:
    with EventStore.open(tmp_path / "t.db") as store:
        run = store.create_run("t", [ModelRequested(turn=0, model="m", manifest_kept=0)])
        store.append(run, ModelRequested(turn=1, model="m", manifest_kept=3))
        events = store.events(run)
    with pytest.raises(InputError, match="keeps 3 records of the previous call's manifest, which has 0"):
        full_manifests(events)


def test_a_message_that_does_not_match_its_manifest_is_named(long_run: LongRun) -> None:
    events = long_run.events
    index, _ = requests(events)[40]
    messages = Transcript(load_envelope(EXAMPLE / "envelope.yaml")).feed(events[:index]).messages()
    whole = full_manifests(events)[index]
    forged = [*whole]
    forged[3] = forged[3].model_copy(update={"hash": "0" * 16})
    with pytest.raises(ManifestMismatch, match=r"message 4 \((assistant|tool|user)\b.*recorded hash 0{16}"):
        check(messages, forged, "turn 40")
    with pytest.raises(ManifestMismatch, match="rebuilds 2 messages; the call recorded"):
        check(messages[:2], whole, "turn 40")


def test_a_long_result_is_kept_whole_and_paged_with_read_result(tmp_path: Path) -> None:
    """Shown as head + tail + handle; read_result pages the blob; a wrong handle or a blob hash reads nothing."""
    base = workspace(tmp_path, window=200_000)
    whole = "".join(f"{NOTE.format(i=i)}\n" for i in range(1, 1001))
    numbered = [f"{n:>6}\t{line}" for n, line in enumerate(whole.splitlines(), start=1)]

    def fn(messages: list[Message], tools: list[ToolSpec]) -> ModelResponse:
        n = turn_of(messages)
        calls = {
            0: ToolCall("big", "read_file", {"path": "notes.txt", "start_line": 1, "end_line": 1000}),
            1: ToolCall("page", "read_result", {"handle": "big", "start": 20_000, "end": 20_400}),
            2: ToolCall("nope", "read_result", {"handle": "r1"}),
            3: ToolCall("hash", "read_result", {"handle": a_blob()}) if n == 3 else None,
        }
        if calls.get(n) is None:
            raise ProviderError("401 stop here", transient=False, status=401)
        call = calls[n]
        assert call is not None
        return ModelResponse("", (call,), "tool_request", "tool_calls", Usage(1, 1), "fn")

    def a_blob() -> str:  # a real blob of the store (the big result's): not a handle of this run
        with sqlite3.connect(db) as conn:
            return str(conn.execute("SELECT hash FROM blobs ORDER BY size DESC LIMIT 1").fetchone()[0])

    db = base / "t.db"
    run_id = drive(base, FunctionModel(fn), db)
    with EventStore.open(db) as store:
        events = store.events(run_id)
        big = next(e for e in events if e.kind == "action.completed" and e.payload["call_id"] == "big")
        stored = store.get_blob(big.payload["result"]["blob"]).decode()
    assert all(line in stored for line in numbered[::97]) and big.payload["result"]["chars"] == len(stored) > 12_000
    assert len(big.payload["result"]["content"]) < 12_000  # the event holds the head and tail only
    shown = {
        m.tool_call_id: m.content for m in Transcript(load_envelope(EXAMPLE / "envelope.yaml")).feed(events).messages()
    }
    assert shown["big"].startswith(stored[:4000]) and shown["big"].endswith(stored[-6000:])
    assert 'read_result(handle="big", start=N, end=M)' in shown["big"]
    page = (
        f"[characters 20000-20400 of {len(stored)} of result big; read on with start=20400]\n" + stored[20_000:20_400]
    )
    assert shown["page"].startswith("<<untrusted-data ") and page in shown["page"]  # a page may hold anyone's words
    assert "no stored result 'r1' in this run" in shown["nope"]
    assert "no stored result 'sha256:" in shown["hash"]


def test_the_console_shows_what_the_model_saw_at_a_turn(long_run: LongRun) -> None:
    """The loop view links to the turn's context page: every message, its tokens, hash and source events."""
    from tether.console.server import Background

    turn = next(e for e in long_run.events if e.kind == ContextCompacted.KIND).data_as(ContextCompacted).turn
    ctx = context_at(long_run.events, turn)
    server = Background(long_run.db)
    base = server.url.rstrip("/")
    try:
        loop = urllib.request.urlopen(f"{base}/runs/{long_run.run_id}/turns/{turn}", timeout=30).read()
        assert f'href="/runs/{long_run.run_id}/turns/{turn}/context"'.encode() in loop
        page = urllib.request.urlopen(f"{base}/runs/{long_run.run_id}/turns/{turn}/context", timeout=30)
        body = page.read().decode()
        assert f"{len(ctx.messages)} messages to function:fn" in body and "every message matches" in body
        assert all(r.hash in body for r in ctx.records)
        assert html.escape(ctx.messages[2].content.splitlines()[0]) in body
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(f"{base}/runs/{long_run.run_id}/turns/9999/context", timeout=30)
    finally:
        server.stop()


def test_a_run_s_context_window_overrides_the_envelope_s_and_is_logged(tmp_path: Path) -> None:
    base = workspace(tmp_path, window=200_000)
    db = base / "t.db"
    run_id = drive(base, agent([], stop_after=0), db, window=3_000)
    with EventStore.open(db) as store:
        events = store.events(run_id)
    request = next(e.data_as(ModelRequested) for e in events if e.kind == ModelRequested.KIND)
    assert events[0].payload["context_window"] == 3_000
    assert request.max_tokens == 3_000 - (request.prompt_tokens_est or 0)  # what the run's window leaves


def test_when_the_model_cannot_summarise_the_digest_stands_in(tmp_path: Path) -> None:
    base = workspace(tmp_path)
    db = base / "t.db"
    run_id = drive(base, agent([], stop_after=30, summary_fails=True), db)
    with EventStore.open(db) as store:
        events = store.events(run_id)
    compactions = [e.data_as(ContextCompacted) for e in events if e.kind == ContextCompacted.KIND]
    assert compactions and all(c.method == "digest" and c.input_tokens == 0 for c in compactions)
    assert compactions[0].fallback == "the model could not summarise: 503 overloaded"
    assert "notes.txt" in compactions[0].summary and "missing.py" in compactions[0].summary
    last = [e for e in events if e.kind == ModelRequested.KIND][-1].data_as(ModelRequested).turn
    assert "a digest of the log" in context_at(events, last).messages[2].content
