"""Project memory: which user sentences become facts, where they are kept, and forgetting for good."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tether.errors import InputError
from tether.memory import MemoryStore, facts_in, memory_path, stated
from tether.memory.extract import Stated

TASK = """Fix the failing date parser. Our CI runs on Python 3.11. Why does it fail on leap years?
The staging server listens on port 8080!
- Never edit files under generated/.
- Do not touch the vendored code.
- Please keep the public API.
Notes:
```
assert parse("2024-02-29") is a date
```
ok."""


def test_declarative_sentences_and_standing_rules_are_kept_requests_and_questions_not() -> None:
    assert facts_in(TASK) == [
        "Our CI runs on Python 3.11.",
        "The staging server listens on port 8080!",
        "Never edit files under generated/.",
        "Do not touch the vendored code.",
    ]


@pytest.mark.parametrize(
    ("sentence", "kept"),
    [
        ("Python 3.11 is required.", True),
        ("We deploy on Fridays.", True),
        ("Do not use tabs.", True),
        ("Carry on with the fix.", False),
        ("Postgres runs on port 5432.", False),  # no subject word, no linking verb: missed, by design
        ("Do the release now.", False),
        ("Is the cache warm?", False),
        ("Fix it, the build is red.", False),
    ],
)
def test_what_counts_as_a_statement(sentence: str, kept: bool) -> None:
    assert facts_in(sentence) == ([sentence] if kept else [])


def test_the_same_fact_twice_is_kept_once_and_huge_text_is_bounded() -> None:
    assert facts_in("The db is postgres. the DB   is Postgres") == ["The db is postgres."]
    assert len(facts_in("The sky is blue today. " * 100_000)) == 1


def ev(kind: str, seq: int, **payload: object) -> SimpleNamespace:
    return SimpleNamespace(kind=kind, seq=seq, payload=payload)


def test_only_human_text_is_read_never_tool_output_or_the_model() -> None:
    events = [
        ev("run.started", 0, task="The database is Postgres 16."),
        ev("model.responded", 3, text="The admin password is hunter2.", tool_calls=[]),
        ev("action.completed", 5, result={"content": "The deploy key is in /etc/keys."}),
        ev("approval.denied", 7, approval_id="a", by="ana", reason="The prod bucket is read-only for agents."),
        ev("run.continued", 9, by="ana", note="The release is due on Friday."),
    ]
    assert [(s.text, s.seq, s.source) for s in stated(events)] == [
        ("The database is Postgres 16.", 0, "task"),
        ("The prod bucket is read-only for agents.", 7, "note"),
        ("The release is due on Friday.", 9, "note"),
    ]


def test_facts_keep_their_source_and_a_forgotten_fact_never_returns(tmp_path: Path) -> None:
    path = memory_path(tmp_path / ".tether" / "tether.db")
    assert path == tmp_path / ".tether" / "memory.db"
    with MemoryStore.open(path) as mem:
        told = [Stated("The DB is Postgres.", 0, "task"), Stated("CI uses 3.11.", 0, "task")]
        new = mem.remember("run-1", told, "t1")
        assert [f.text for f in new] == ["The DB is Postgres.", "CI uses 3.11."]
        assert mem.remember("run-2", [Stated("the db is postgres", 0, "task")], "t2") == []  # known: first wins
        listed = [(f.text, f.run_id) for f in mem.facts()]
        assert listed == [("CI uses 3.11.", "run-1"), ("The DB is Postgres.", "run-1")]
        gone = mem.forget(new[0].id[:6], by="ana", reason="moved to MySQL", at="t3")
        assert gone.text == "The DB is Postgres."
        assert mem.remember("run-3", [Stated("The  DB is postgres!", 4, "note")], "t4") == []  # stated again
        assert [f.text for f in mem.facts()] == ["CI uses 3.11."]
        (record,) = mem.forgotten()
        assert (record.fact_id, record.run_id, record.by, record.reason) == (gone.id, "run-1", "ana", "moved to MySQL")
        with pytest.raises(InputError, match="was forgotten"):
            mem.get(gone.id)
        with pytest.raises(InputError, match="matches no fact"):
            mem.forget("f-nothing", by="ana", reason="", at="t5")
    # forgetting deletes the text from the files on disk, not only from what is listed
    for f in tmp_path.joinpath(".tether").iterdir():
        assert b"Postgres" not in f.read_bytes() and b"postgres" not in f.read_bytes(), f


def test_two_writers_remember_without_losing_or_doubling(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    with MemoryStore.open(path) as a, MemoryStore.open(path) as b:
        a.remember("r1", [Stated("Fact one is true.", 0, "task")], "t")
        b.remember("r2", [Stated("Fact one is true.", 0, "task"), Stated("Fact two holds.", 0, "task")], "t")
        assert sorted(f.text for f in a.facts()) == ["Fact one is true.", "Fact two holds."]


def test_an_open_while_another_process_switches_a_new_memory_to_wal_waits_for_it(tmp_path: Path) -> None:
    """Two runs open a new memory at once. The other process holds SQLite's write lock on the empty file, as a
    WAL switch does: the switch's lock upgrade is not busy-waited by SQLite, so it used to fail at once
    ("database is locked"); the open retries it until the other lets go."""
    path = tmp_path / "memory.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
            "c.execute('BEGIN IMMEDIATE'); print('held', flush=True); sys.stdin.read(); c.execute('ROLLBACK')",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "held" and path.stat().st_size == 0
        threading.Timer(0.5, holder.stdin.close).start()
        with MemoryStore.open(path) as mem:
            assert [f.text for f in mem.remember("r1", [Stated("Fact one is true.", 0, "task")], "t")] == [
                "Fact one is true."
            ]
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()


def test_a_file_that_is_not_a_memory_database_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "memory.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(InputError, match="not a tether memory database"):
        MemoryStore.open(bad)
    with pytest.raises(InputError, match="no memory here yet"):
        MemoryStore.open(tmp_path / "none.db", create=False)
