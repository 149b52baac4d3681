"""``verify_run(since=)``: the chain recomputed from a head the caller vouches for, and the whole log on any doubt.

A cold hook call passes its fold checkpoint's head (guard/checkpoint.py ``Pending.mark``); here the store alone is
attacked: a head that is not the log's, a rewrite on either side of it, a fork, and a signed anchor after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_chain_hashes import rewritten
from test_schema3 import edit, make_fork, make_run

from tether.errors import LogCorrupt
from tether.events.store import SELECT_CHAIN_SINCE, EventStore


@pytest.fixture
def logged(tmp_path: Path) -> tuple[EventStore, str, list[str]]:
    store = EventStore.open(tmp_path / "t.db")
    run = make_run(store, n=40)
    return store, run, list(store.verify_run(run).hashes)


def test_the_chain_is_recomputed_from_the_head_only(logged: tuple[EventStore, str, list[str]]) -> None:
    store, run, full = logged
    audit = store.verify_run(run, since=(30, full[30]))
    assert (audit.base, audit.events, audit.first, audit.head) == (30, 41, full[0], (40, full[40]))
    assert list(audit.hashes[30:]) == full[30:]
    assert set(audit.hashes[1:30]) == {""}  # not verified here: no event has that hash


def test_the_audit_reads_the_first_row_and_the_rows_from_the_head_only(
    logged: tuple[EventStore, str, list[str]],
) -> None:
    """Each part of the read is a range of the primary key: a seq bound with the run, not every row of the run (one
    ``seq = 0 OR seq >= ?`` walked them all: 7-15 ms of a cold hook call's audit after 7,500 events)."""
    store, run, _ = logged
    plan = store._conn.execute(f"EXPLAIN QUERY PLAN {SELECT_CHAIN_SINCE}", {"run": run, "seq": 30}).fetchall()
    searches = [row[3] for row in plan if "events" in row[3]]
    assert len(searches) == 2 and all("seq" in s for s in searches), plan


def test_a_head_at_the_first_event_is_the_whole_chain_once(logged: tuple[EventStore, str, list[str]]) -> None:
    store, run, full = logged
    audit = store.verify_run(run, since=(0, full[0]))
    assert (audit.base, audit.events, list(audit.hashes)) == (0, 41, full)


@pytest.mark.parametrize(
    "since",
    [
        pytest.param((30, "0" * 64), id="another-hash"),
        pytest.param((30, "zz" * 32), id="not-hex"),
        pytest.param((30, "ab"), id="short"),
        pytest.param((41, "0" * 64), id="past-the-head"),
        pytest.param((-1, "0" * 64), id="negative"),
        pytest.param((True, "0" * 64), id="bool"),
        pytest.param(("30", "0" * 64), id="text-seq"),
        pytest.param((30, None), id="no-hash"),
    ],
)
def test_a_head_that_is_not_the_logs_means_the_whole_log(
    logged: tuple[EventStore, str, list[str]], since: tuple[Any, Any]
) -> None:
    store, run, full = logged
    audit = store.verify_run(run, since=since)
    assert audit.base == 0 and list(audit.hashes) == full


def test_the_heads_own_hash_at_another_seq_means_the_whole_log(logged: tuple[EventStore, str, list[str]]) -> None:
    store, run, full = logged
    assert store.verify_run(run, since=(29, full[30])).base == 0


def test_a_row_after_the_head_rewritten_is_named(tmp_path: Path, logged: tuple[EventStore, str, list[str]]) -> None:
    store, run, full = logged
    edit(tmp_path / "t.db", "UPDATE events SET payload=? WHERE seq=35", ('{"turn":99,"model":"x","n_messages":0}',))
    with pytest.raises(LogCorrupt) as bad:
        store.verify_run(run, since=(30, full[30]))
    assert bad.value.seq == 35


def test_a_row_before_the_head_rewritten_is_the_known_limit(
    tmp_path: Path, logged: tuple[EventStore, str, list[str]]
) -> None:
    """Its stored hash kept: from the head on nothing changed, so only the whole log's audit sees it."""
    store, run, full = logged
    edit(tmp_path / "t.db", "UPDATE events SET payload=? WHERE seq=10", ('{"turn":99,"model":"x","n_messages":0}',))
    assert store.verify_run(run, since=(30, full[30])).base == 30
    with pytest.raises(LogCorrupt) as bad:
        store.verify_run(run)
    assert bad.value.seq == 10


def test_a_consistent_rewrite_through_the_head_is_named(
    tmp_path: Path, logged: tuple[EventStore, str, list[str]]
) -> None:
    """Every hash from seq 10 on recomputed and the run's head moved: the head's hash is no longer the caller's, the
    whole log is audited, and it holds (a rewrite nothing signed: what no audit without a key can see)."""
    store, run, full = logged
    rewritten(tmp_path / "t.db", run, 10, '{"turn":99,"model":"x","n_messages":0}')
    audit = store.verify_run(run, since=(30, full[30]))
    assert audit.base == 0 and audit.hashes[9] == full[9] and audit.hashes[30] != full[30]


def test_the_first_row_missing_means_the_whole_log(tmp_path: Path, logged: tuple[EventStore, str, list[str]]) -> None:
    store, run, full = logged
    edit(tmp_path / "t.db", "DELETE FROM events WHERE seq = 0")
    with pytest.raises(LogCorrupt) as bad:
        store.verify_run(run, since=(30, full[30]))
    assert bad.value.seq == 0


def test_a_fork_is_audited_whole(tmp_path: Path) -> None:
    store = EventStore.open(tmp_path / "t.db")
    parent = make_run(store, n=10)
    fork = make_fork(store, parent, at=5, n=6)
    hashes = list(store.verify_run(fork).hashes)
    assert store.verify_run(fork, since=(8, hashes[8])).base == 0


def test_a_signed_anchor_after_the_head_is_still_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a key, a rewrite after the head with every later hash recomputed chains from the head; the anchor signed
    over the old hashes after it names it."""
    from test_log_anchor import signed_run

    db, run, signer = signed_run(tmp_path, n=12, every=4)
    with EventStore.open(db, signer=signer) as store:
        full = list(store.verify_run(run).hashes)
        assert store.verify_run(run, since=(6, full[6])).base == 6
    rewritten(db, run, 9, '{"turn":99,"model":"x","n_messages":0}')
    with EventStore.open(db, signer=signer) as store, pytest.raises(LogCorrupt, match="signed checkpoint"):
        store.verify_run(run, since=(6, full[6]))
