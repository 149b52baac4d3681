"""The manifest keeps the settled messages' records between calls: it must count exactly what a fresh count
would, however the transcript changed in between (a section joining the system message, a compaction,
another transcript), and count only what is new."""

from __future__ import annotations

from typing import Any

import pytest

from tether.envelope.schema import Envelope
from tether.events.store import Event
from tether.kernel.context import Transcript
from tether.kernel.manifest import Counted, Joined, Manifests, Record, Settled, delta
from tether.models.base import Message, ToolSpec
from tether.models.tokens import ESTIMATOR, Counter

SPECS = [ToolSpec("bash", "run a command", {"type": "object"})]


def env() -> Envelope:
    return Envelope.model_validate({"plan": {"path": "p.yaml", "hash": "h"}, "agent": {"instructions": "Be careful."}})


def responded(*calls: str, text: str = "") -> tuple[str, dict[str, Any]]:
    tool_calls = [{"id": c, "name": "bash", "args": {"command": f"echo {c}"}} for c in calls]
    return "model.responded", {"text": text, "tool_calls": tool_calls, "termination": "tool_request"}


def invalid(call: str) -> tuple[str, dict[str, Any]]:
    return "action.invalid", {"call_id": call, "tool": "bash", "error": f"{call} was malformed"}


LOG: list[tuple[str, dict[str, Any]]] = [
    ("run.started", {"task": "fix the bug"}),
    responded("c1"),
    invalid("c1"),
    responded("c2", "c3"),
    ("context.section", {"label": "Skill", "text": "run pytest first"}),  # the system message changes
    invalid("c2"),
    invalid("c3"),
    responded("c4"),
    invalid("c4"),
    responded("c5"),
    (
        "context.compacted",
        {"last_seq": 6, "summary": "tried twice", "invariants": "tests fail", "method": "digest", "untrusted": []},
    ),
    invalid("c5"),
    responded(text="thinking"),  # no call: a host note joins the open turn
    responded("c6"),
    ("context.section", {"label": "Memory", "text": "the user prefers small diffs"}),
    invalid("c6"),
]
EVENTS = [Event("r", seq, "2026-01-01T00:00:00+00:00", kind, payload) for seq, (kind, payload) in enumerate(LOG)]


def fresh(events: list[Event]) -> Counted:
    """No cache at all: a new transcript and new manifests."""
    return Manifests(ESTIMATOR).count(Transcript(env()).feed(events), SPECS)


def naive_delta(previous: Counted | None, current: Counted) -> tuple[int, list[Record]]:
    kept = 0
    if previous is not None:
        for old, new in zip(previous.records, current.records, strict=False):
            if old != new:
                break
            kept += 1
    return kept, current.records[kept:]


def test_cached_counts_equal_a_fresh_count_after_every_event() -> None:
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    previous: Counted | None = None
    rewrites = []
    for n in range(1, len(EVENTS) + 1):
        live = manifests.count(transcript.feed(EVENTS[:n]), SPECS)
        expected = fresh(EVENTS[:n])
        assert live.messages == expected.messages, n
        assert live.records == expected.records, n
        assert live.total == expected.total == sum(r.tokens for r in expected.records) + expected.tools_tokens
        assert delta(previous, live) == naive_delta(previous, live), n
        previous = live
        rewrites.append(transcript.rewrites)
    assert rewrites[-1] == 3 and len(set(rewrites)) == 4  # two sections and a compaction, each a new lineage


def test_a_section_added_between_two_calls_is_in_the_next_manifest() -> None:
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    before = manifests.count(transcript.feed(EVENTS[:4]), SPECS)
    after = manifests.count(transcript.feed(EVENTS[:5]), SPECS)
    assert "run pytest first" in after.messages[0].content and after.records[0] != before.records[0]
    assert after.records[0].seqs == (4,) and after.total > before.total
    assert delta(before, after)[0] == 0  # the system message differs: nothing is kept


def test_a_compaction_drops_the_covered_records() -> None:
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    before = manifests.count(transcript.feed(EVENTS[:10]), SPECS)
    after = manifests.count(transcript.feed(EVENTS[:11]), SPECS)
    assert after.messages[2].content.startswith("[") and after.records[2].seqs == (10,)
    assert len(after.records) < len(before.records) and after.records == fresh(EVENTS[:11]).records
    assert delta(before, after)[0] == 2  # system and task only


def test_another_transcript_is_never_read_through_the_first_ones_records() -> None:
    manifests = Manifests(ESTIMATOR)
    first = manifests.count(Transcript(env()).feed(EVENTS[:9]), SPECS)
    other = [Event("r", 0, "", "run.started", {"task": "another task"})]
    second = manifests.count(Transcript(env()).feed(other), SPECS)
    assert second.records == fresh(other).records and second.messages[1].content == "another task"
    assert first.lineage is not second.lineage


def test_a_call_counts_only_the_messages_new_since_the_last() -> None:
    counted: list[str] = []

    def count(text: str) -> int:
        counted.append(text)
        return len(text)

    manifests, transcript = Manifests(Counter("spy", count)), Transcript(env())
    manifests.count(transcript.feed(EVENTS[:8]), SPECS)
    counted.clear()
    manifests.count(transcript.feed(EVENTS[:9]), SPECS)  # c4's invalid result: one open-turn message
    assert len(counted) == 1
    counted.clear()
    manifests.count(transcript.feed(EVENTS[:10]), SPECS)  # c5 settles the tool result and opens a turn
    assert len(counted) == 2  # the assistant message and c5's pending result: the settled result, unchanged since
    # the last call counted it in the open turn, keeps that record


def test_messages_are_never_shared_with_the_transcript() -> None:
    """The list a call gets is its own: the transcript growing afterwards does not change a sent prompt."""
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    sent = manifests.count(transcript.feed(EVENTS[:4]), SPECS)
    copy = list(sent.messages), list(sent.records)
    manifests.count(transcript.feed(EVENTS[:10]), SPECS)
    assert (sent.messages, sent.records) == copy
    assert all(isinstance(m, Message) for m in sent.messages)


def test_every_sent_prompt_stays_as_sent_through_sections_and_a_compaction() -> None:
    """A prompt reads the transcript's settled messages without copying them: no later event (a section
    replacing the system message, a compaction removing turns, more turns) may change one already built."""
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    sent: list[tuple[Counted, list[Message], list[Record]]] = []
    for n in range(1, len(EVENTS) + 1):
        counted = manifests.count(transcript.feed(EVENTS[:n]), SPECS)
        sent.append((counted, list(counted.messages), list(counted.records)))
    for n, (counted, messages, records) in enumerate(sent, 1):
        assert list(counted.messages) == messages == fresh(EVENTS[:n]).messages, n
        assert list(counted.records) == records, n


def test_a_joined_prompt_reads_like_the_list_it_stands_for() -> None:
    head = list("abcdef")
    joined, expected = Joined(head, 4, ["x", "y"]), list("abcdxy")
    head.append("g")  # the head grows after the prompt was built: not part of it
    assert list(joined) == expected and len(joined) == 6 and joined == expected
    for i in range(-6, 6):
        assert joined[i] == expected[i]
    for i in (6, -7):
        with pytest.raises(IndexError):
            joined[i]
    for start in range(-8, 9):
        for stop in [*range(-8, 9), None]:
            for step in (None, 1, 2, -1, -3):
                assert joined[start:stop:step] == expected[start:stop:step], (start, stop, step)
    assert joined != list("abcdx") and joined != "abcdxy"


def test_settled_records_read_back_as_appended() -> None:
    """The settled records are kept column by column (the hash as a 64-bit integer): each reads back equal to
    the record appended, leading zeros of its hash and its very sources tuple included."""
    appended = [
        Record("system", 0, "0" * 16, ()),
        Record("user", 5, "000000000000abcd", (0,)),
        Record("assistant", 2**40, "f" * 16, (3, 7)),
        Record("tool", 1, "0123456789abcdef", (9,)),
    ]
    settled = Settled()
    for r in appended:
        settled.append(r)
    assert len(settled) == 4 and list(settled) == appended and settled[-1] == appended[-1]
    assert all(a.seqs is b.seqs for a, b in zip(settled, appended, strict=True))
    assert settled[1:3] == appended[1:3] and settled[::-2] == appended[::-2]
    with pytest.raises(IndexError):
        settled[4]
    joined = Joined(settled, 3, [appended[3]])
    assert list(joined) == appended and joined[1:] == appended[1:]


def test_the_tools_are_counted_again_when_a_description_or_schema_changes() -> None:
    manifests, transcript = Manifests(ESTIMATOR), Transcript(env())
    first = manifests.count(transcript.feed(EVENTS[:2]), SPECS).tools_tokens
    longer = [ToolSpec("bash", "run a command " * 40, {"type": "object"})]
    schema = [ToolSpec("bash", "run a command", {"type": "object", "properties": {"command": {"type": "string"}}})]
    for specs in (longer, schema):
        got = manifests.count(transcript.feed(EVENTS[:2]), specs).tools_tokens
        assert got == Manifests(ESTIMATOR).count(Transcript(env()).feed(EVENTS[:2]), specs).tools_tokens > first
    assert manifests.count(transcript.feed(EVENTS[:2]), list(SPECS)).tools_tokens == first  # an equal list: same
