"""The model's context is rebuilt from the log: incrementally or from scratch, the same messages."""

from __future__ import annotations

import json

from runkit import FinishedDemo

from tether import EventStore
from tether.envelope.schema import Envelope
from tether.kernel.context import Transcript, build_messages


def test_incremental_transcript_equals_a_rebuild_at_every_step(finished_demo: FinishedDemo) -> None:
    with EventStore.open(finished_demo.db, readonly=True) as store:
        events = store.events(finished_demo.run_id)
    env = Envelope.model_validate(events[0].payload["envelope"])
    live = Transcript(env)
    for n in range(1, len(events) + 1):
        assert live.feed(events[:n]).messages() == build_messages(events[:n], env)
    messages = live.messages()
    roles = [m.role for m in messages]
    assert roles[:2] == ["system", "user"] and roles.count("assistant") == 7
    denial = next(m for m in messages if m.role == "tool" and "denied" in m.content and "rule" in m.content)
    assert json.loads(denial.content)["rule"] == "coding:deny-rm-root"
    declined = [m for m in messages if m.role == "tool" and "demo-approver" in m.content]
    assert declined and json.loads(declined[0].content)["denied"] is True


def test_a_call_with_no_result_yet_is_shown_as_not_executed(finished_demo: FinishedDemo) -> None:
    """The open turn's call that has no result (the log cut right after the model asked for it) reads as not
    executed; once its result is in the log, the result (the transcript builds the placeholder only when needed)."""
    with EventStore.open(finished_demo.db, readonly=True) as store:
        events = store.events(finished_demo.run_id)
    env = Envelope.model_validate(events[0].payload["envelope"])
    asked = next(i for i, e in enumerate(events) if e.kind == "model.responded" and e.payload["tool_calls"])
    call_id = events[asked].payload["tool_calls"][0]["id"]
    cut = Transcript(env).feed(events[: asked + 1]).messages()
    shown = next(m for m in cut if m.role == "tool" and m.tool_call_id == call_id)
    assert json.loads(shown.content) == {"error": "not_executed", "detail": "the run stopped before this call ran"}
    whole = Transcript(env).feed(events).messages()
    answered = next(m for m in whole if m.role == "tool" and m.tool_call_id == call_id)
    assert "not_executed" not in answered.content
