"""The context engine: labelled sections, compaction and long results, applied by the transcript from the log."""

from __future__ import annotations

from typing import Any

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.kernel.context import Transcript, build_messages


def env() -> Envelope:
    return Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "h"}, "agent": {"instructions": "Be careful."}})


def log(*items: tuple[str, dict[str, Any]]) -> list[Event]:
    return [Event("r", seq, "t", kind, payload) for seq, (kind, payload) in enumerate(items)]


def responded(turn: int, *calls: str, text: str = "") -> tuple[str, dict[str, Any]]:
    tool_calls = [{"id": c, "name": "read_file", "args": {"path": "a.py"}} for c in calls]
    return "model.responded", {
        "turn": turn,
        "model": "m",
        "text": text,
        "tool_calls": tool_calls,
        "termination": "tool_request",
    }


def completed(call_id: str, content: str, **extra: Any) -> tuple[str, dict[str, Any]]:
    return "action.completed", {
        "call_id": call_id,
        "tool": "read_file",
        "ok": True,
        "result": {"content": content, **extra},
    }


def test_a_section_joins_the_system_message_with_its_source() -> None:
    events = log(
        ("run.started", {"task": "fix it"}),
        ("context.section", {"label": "Skills", "source": "skills", "text": "- fix-tests: make tests pass\n"}),
        ("context.section", {"label": "Memory", "source": "memory", "text": "the user prefers tabs"}),
        responded(1, "c1"),
    )
    t = Transcript(env()).feed(events)
    (system, sources), (task, task_sources) = t.sourced()[:2]
    assert system.content.startswith("Be careful.")
    assert system.content.endswith("Skills:\n- fix-tests: make tests pass\n\nMemory:\nthe user prefers tabs")
    assert sources == (1, 2) and task.content == "fix it" and task_sources == (0,)
    assert build_messages(events, env()) == t.messages()
