"""The append path's bytes are fixed: a scripted step's events, appended every way the code appends, make the
same rows and hashes as the recorded golden value.

The events are one step of ``benchmarks/loop.py``'s scripted loop (the eight kinds a governed step appends, as
the runtime built them), a tool output with characters JSON must escape, floats that print oddly, and a secret
the store redacts. The clock and the run id are fixed, so every byte of every row is: a change to the
canonical JSON, the chain, the validation or the redaction of the append path that changes any stored byte or
hash fails here. The golden digest was computed on main before the append path's CPU work (issue 18).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tether.events.store as store_module
import tether.events.storebase as storebase_module
from tether.canonical import canonical_json, sha256_hex
from tether.events.chain import event_hash
from tether.events.payload import Payload, model_of
from tether.events.store import Batch, Event, EventStore

RUN = "20261201-000000-golden"
SECRET = "hunter2-Sécret"

#: One step of the scripted loop: (kind, payload) per event, grouped as the runtime appends them.
STEP: list[list[tuple[str, dict[str, Any]]]] = [
    [
        (
            "model.requested",
            {
                "turn": 2,
                "model": "bench",
                "n_messages": 6,
                "max_tokens": 2048,
                "prompt_tokens_est": 2141,
                "capped_by": None,
                "worst_case_usd": None,
                "counter": "estimate:3.5chars",
                "tools_tokens": 1793,
                "manifest": [
                    {"role": "assistant", "tokens": 12, "hash": "c53d7e1e7f80c753", "seqs": [14]},
                    {"role": "tool", "tokens": 14, "hash": "3a429e2b89df50c1", "seqs": [19]},
                ],
                "manifest_kept": 4,
            },
        )
    ],
    [
        (
            "model.responded",
            {
                "turn": 2,
                "model": "bench",
                "text": "",
                "tool_calls": [{"id": "c3", "name": "bash", "args": {"command": "true 3"}}],
                "termination": "tool_request",
                "raw_stop_reason": "tool_use",
                "input_tokens": 1,
                "output_tokens": 1,
                "cost_usd": 0.0,
                "attempts": 1,
                "usage_reported": True,
            },
        ),
        (
            "action.proposed",
            {
                "call_id": "c3",
                "tool": "bash",
                "args": {"command": "true 3"},
                "args_hash": "sha256:1c92eb07f44fbf8d2587b8dcefae0df51323ac044a5b6f0026718b3162d38d7f",
                "turn": 2,
            },
        ),
    ],
    [
        (
            "review.gate",
            {"call_id": "c3", "tool": "bash", "ok": True, "risk": "MEDIUM", "reasons": ["effect exec: MEDIUM"]},
        ),
        (
            "action.decided",
            {
                "call_id": "c3",
                "verdict": "ALLOW",
                "deciding_rule": "coding:allow-read-only",
                "reason": "true only reads",
                "rules": [{"id": "coding:allow-read-only", "verdict": "ALLOW", "reason": "true only reads"}],
                "taints": [],
            },
        ),
    ],
    [
        (
            "action.started",
            {
                "call_id": "c3",
                "tool": "bash",
                "args_hash": "sha256:1c92eb07f44fbf8d2587b8dcefae0df51323ac044a5b6f0026718b3162d38d7f",
                "attempt": 1,
                "idempotent": False,
            },
        )
    ],
    [
        (
            "action.completed",
            {
                "call_id": "c3",
                "tool": "bash",
                "ok": True,
                "result": {
                    "ok": True,
                    "content": "$ true 3\nexit 0 (0.00s)\n(no output)",
                    "data": {
                        "backend": "local",
                        "command": "true 3",
                        "cwd": "/ws",
                        "exit_code": 0,
                        "timed_out": False,
                        "duration_s": 0.001559926000481937,
                        "stdout": "",
                        "stderr": "",
                        "stdout_bytes": 0,
                        "stderr_bytes": 0,
                        "truncated": False,
                        "timeout_s": 60.0,
                    },
                    "changed_files": [],
                    "failure_class": None,
                    "effects": ["exec"],
                },
                "changed_files": [],
                "observed_files": [],
                "unexplained": [],
                "undo": None,
                "duration_s": 0.001859,
            },
        )
    ],
    [
        (
            "diagnostics.computed",
            {
                "dimensions": {
                    "progress_rate": 1.0,
                    "failure_recurrence": 1.0,
                    "oscillation": 1.0,
                    "verification_strength": 1.0,
                    "belief_consistency": 1.0,
                    "belief_freshness": 1.0,
                    "evidence_support": 1.0,
                    "budget_headroom": 0.95,
                },
                "notes": {
                    "progress_rate": "3 novel of the last 3 receipts",
                    "failure_recurrence": "the most recurrent failure was seen 0 times",
                    "oscillation": "0 edit/revert flips",
                    "verification_strength": "0 of 0 reported sensors pass",
                    "belief_consistency": "0 contradictions in this attempt (weight 0)",
                    "belief_freshness": "no state-dependent beliefs yet",
                    "evidence_support": "0 of 0 claims backed by accepted verification",
                    "budget_headroom": "tightest budget: tool_calls (3 of 60 used)",
                },
                "through": "20261201-221236-9735d2#27",
            },
        )
    ],
]

#: A tool output JSON must escape (quotes, backslashes, control characters, a line separator, non-ASCII
#: text, an astral character), floats whose shortest form is unusual, a large integer, and the secret.
HOSTILE = (
    "action.completed",
    {
        "call_id": "c4",
        "tool": "bash",
        "ok": False,
        "result": {
            "ok": False,
            "content": 'é "quoted" \\ back\tslash\n\x00\x1f\x7f \u2028\u2029 Ünïcödé 日本 😀 ' + SECRET,
            "data": {"z": 1e21, "a": 1e-7, "m": -0.0, "b": 0.1 + 0.2, "n": 2**63 + 1, "k": {"y": [], "x": {}}},
        },
        "changed_files": ["src/ä.py"],
        "duration_s": 123456.789,
    },
)


def _model(kind: str, payload: dict[str, Any]) -> Payload:
    """The payload as the runtime builds it: its model, validated."""
    return model_of(kind).model_validate(payload)


@pytest.fixture
def fixed_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    tick = itertools.count()

    def now_iso() -> str:
        i = next(tick)
        return f"2026-12-01T00:{i // 60:02d}:{i % 60:02d}.{i * 7919 % 1000000:06d}+00:00"

    monkeypatch.setattr(store_module, "now_iso", now_iso)  # the events' times, a run's creation
    monkeypatch.setattr(storebase_module, "now_iso", now_iso)  # a lease's start, a checkpoint's signing
    yield


def _rows_digest(db: Path) -> tuple[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(db)
    try:
        rows = conn.execute(
            "SELECT run_id, seq, ts, kind, payload, lower(hex(hash)) FROM events ORDER BY run_id, seq"
        ).fetchall()
    finally:
        conn.close()
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode()).hexdigest(), rows


#: sha256 of the rows below, as main wrote them before the append path's CPU work (issue 18).
GOLDEN_ROWS = "215b40239060413e98f9575b434210413d1a22faa20161be45530f09fdb0c651"
GOLDEN_HEAD = (8, "5bad18ad5f602dfd46b62e1ee36c27dabed8632a68d653093bb514b6c78addbe")


def test_a_scripted_step_appends_the_golden_bytes(tmp_path: Path, fixed_clock: None) -> None:
    db = tmp_path / "t.db"
    store = EventStore.open(db)
    store.redact_also({"TOKEN": SECRET})
    first, *groups = STEP
    returned: list[Event] = []
    run = store.create_run("golden", [_model(*item) for item in first], run_id=RUN, lease=True)
    # a group appended on its own (durable), as raw (kind, dict) items, and as model objects
    returned += store.append_many(run, [_model(*item) for item in groups[0]])
    returned += store.append_many(run, groups[1], durable=False)
    returned.append(store.append(run, *groups[2][0]))
    # the runtime's path: events chained in memory, written in one transaction
    batch = Batch(run, store.head(run))
    for group in groups[3:]:
        returned += batch.add(store.redactor, [_model(*item) for item in group])
    returned += batch.add(store.redactor, [_model(*HOSTILE)], durable=True)
    store.append_batch(batch)
    store.release(run)

    digest, rows = _rows_digest(db)
    assert SECRET not in json.dumps(rows, ensure_ascii=False)
    assert store.verify(run) == len(rows) == 9
    # what each append returned is what a reader gets back from the row
    stored = store.events(run)
    assert [(e.seq, e.ts, e.kind, e.payload, e.prev_hash, e.hash) for e in returned] == [
        (e.seq, e.ts, e.kind, e.payload, e.prev_hash, e.hash) for e in stored[1:]
    ]
    assert [e.data for e in returned] == [e.data for e in stored[1:]]
    assert (digest, store.head(run)) == (GOLDEN_ROWS, GOLDEN_HEAD)
    store.close()


def _reference_hash(prev: str, run_id: object, seq: object, ts: object, kind: object, body: str) -> str:
    """The chain's definition, spelled out: SHA-256 of prev ‖ canonical JSON of the head ‖ the payload text."""
    return sha256_hex(prev + canonical_json({"run_id": run_id, "seq": seq, "ts": ts, "kind": kind}) + body)


TEXT = st.text(st.characters(exclude_categories=("Cs",)))  # any text UTF-8 can encode


@settings(max_examples=300, deadline=None)
@given(run_id=TEXT, seq=st.integers(min_value=-(2**70), max_value=2**70), ts=TEXT, kind=TEXT, body=TEXT)
def test_the_head_written_directly_is_the_canonical_json(run_id: str, seq: int, ts: str, kind: str, body: str) -> None:
    assert event_hash("0" * 64, run_id, seq, ts, kind, body) == _reference_hash("0" * 64, run_id, seq, ts, kind, body)


@pytest.mark.parametrize(
    "head",
    [
        ("r", True, "t", "k"),  # a bool is an int to Python, not to JSON
        ("r", 1.0, "t", "k"),
        ("r", 3, None, "k"),
        (["r"], 3, "t", "k"),
    ],
)
def test_a_head_of_other_types_goes_through_the_canonical_json(head: tuple[Any, Any, Any, Any]) -> None:
    run_id, seq, ts, kind = head
    assert event_hash("p", run_id, seq, ts, kind, "{}") == _reference_hash("p", run_id, seq, ts, kind, "{}")


def test_a_lone_surrogate_fails_as_before() -> None:
    with pytest.raises(UnicodeEncodeError):
        event_hash("0" * 64, "r\ud800", 1, "t", "k", "{}")
