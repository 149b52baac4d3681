"""A run's chain checked in one pass (events/store.py ``chain_hashes``) vouches for exactly what ``verify_rows`` does,
or for nothing: every way of editing a stored row that the row-by-row check refuses is refused by ``verify_run``
with the same seq and words, and the one-pass check itself returns None for it (it never returns hashes where the
row-by-row check raises)."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_schema3 import edit, make_fork, make_run

from tether.errors import LogCorrupt
from tether.events import store as store_module
from tether.events.chain import GENESIS, event_hash
from tether.events.store import EventStore, is_utf8


def rehash_from(db: Path, run: str, seq: int) -> None:
    """Every stored hash from ``seq`` on recomputed over the rows as they now are: a consistent rewrite."""
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT seq, ts, kind, payload FROM events WHERE run_id=? ORDER BY seq", (run,)).fetchall()
    prev = GENESIS
    conn.executescript("DROP TRIGGER IF EXISTS events_no_update;")
    for s, ts, kind, body in rows:
        h = event_hash(prev, run, s, ts, kind, body)
        if s >= seq:
            conn.execute("UPDATE events SET hash=? WHERE run_id=? AND seq=?", (bytes.fromhex(h), run, s))
        prev = h
    conn.execute("UPDATE runs SET head_hash=? WHERE run_id=?", (prev, run))
    conn.commit()
    conn.close()


def rewritten(db: Path, run: str, seq: int, payload: str) -> None:
    """Row ``seq``'s payload replaced, and the chain rewritten over it to the head."""
    edit(db, "UPDATE events SET payload=? WHERE run_id=? AND seq=?", (payload, run, seq))
    rehash_from(db, run, seq)


def reference(store: EventStore, run: str) -> list[str] | tuple[int, str]:
    """What the row-by-row check says: the hashes, or (seq, message) of its refusal."""
    try:
        return store_module.verify_rows(store.run(run), store._rows(run))
    except LogCorrupt as e:
        return e.seq, str(e)


def outcome(store: EventStore, run: str) -> list[str] | tuple[int, str]:
    try:
        store.verify_run(run)
        return store._verified_hashes(store.run(run))
    except LogCorrupt as e:
        return e.seq, str(e)


def one_pass(store: EventStore, run: str) -> list[str] | None:
    rows = store._conn.execute(store_module.SELECT_CHAIN, (run,)).fetchall()
    return store_module.chain_hashes(store.run(run), rows)


EDITS: dict[str, Callable[[Path, str], None]] = {
    "payload edited": lambda db, r: edit(db, "UPDATE events SET payload='{}' WHERE run_id=? AND seq=3", (r,)),
    "payload edited, the chain rewritten": lambda db, r: rewritten(db, r, 3, '{"turn":9}'),
    "payload not an object, the chain rewritten": lambda db, r: rewritten(db, r, 2, "[1]"),
    "payload as bytes": lambda db, r: edit(
        db, "UPDATE events SET payload=CAST(payload AS BLOB) WHERE run_id=? AND seq=2", (r,)
    ),
    "kind as bytes": lambda db, r: edit(db, "UPDATE events SET kind=CAST(kind AS BLOB) WHERE run_id=? AND seq=2", (r,)),
    "ts a number": lambda db, r: edit(db, "UPDATE events SET ts=12345 WHERE run_id=? AND seq=4", (r,)),
    "seq a fraction": lambda db, r: edit(db, "UPDATE events SET seq=4.5 WHERE run_id=? AND seq=4", (r,)),
    "hash bit flipped": lambda db, r: edit(db, "UPDATE events SET hash=zeroblob(32) WHERE run_id=? AND seq=1", (r,)),
    "hash as hex text": lambda db, r: edit(
        db, "UPDATE events SET hash=lower(hex(hash)) WHERE run_id=? AND seq=5", (r,)
    ),
    "row deleted": lambda db, r: edit(db, "DELETE FROM events WHERE run_id=? AND seq=2", (r,)),
    "last row deleted": lambda db, r: edit(
        db, "DELETE FROM events WHERE run_id=? AND seq=(SELECT max(seq) FROM events WHERE run_id=?)", (r, r)
    ),
    "row renumbered": lambda db, r: edit(db, "UPDATE events SET seq=seq+100 WHERE run_id=? AND seq=4", (r,)),
    "head moved in the runs table": lambda db, r: edit(db, "UPDATE runs SET head_seq=head_seq-1 WHERE run_id=?", (r,)),
    "head hash changed": lambda db, r: edit(db, "UPDATE runs SET head_hash=? WHERE run_id=?", (GENESIS, r)),
    "first row's hash over another run id": lambda db, r: edit(
        db, "UPDATE events SET run_id='x' || run_id WHERE run_id=? AND seq=0", (r,)
    ),
}


#: Edits the row-by-row check accepts: without an anchor key a consistent rewrite is the log (docs/hook-latency.md).
ACCEPTED = {"payload edited, the chain rewritten"}


#: The two SHA-256 constructors the one pass may hash with (``chain_sha256``): the builtin one, OpenSSL's.
HASHERS: dict[str, Callable[[bytes], Any]] = {
    "builtin": __import__("_sha256" if sys.version_info < (3, 12) else "_sha2").sha256,
    "hashlib": hashlib.sha256,
}


@pytest.mark.parametrize("hasher", sorted(HASHERS))
@pytest.mark.parametrize("name", sorted(EDITS))
def test_an_edited_row_is_judged_as_row_by_row(
    tmp_path: Path, name: str, hasher: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "chain_sha256", lambda rows: HASHERS[hasher])
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run, other = make_run(store, n=8), make_run(store, n=3, model="y")
    EDITS[name](db, run)
    with EventStore.open(db, readonly=True) as store:
        said = reference(store, run)
        assert isinstance(said, list) == (name in ACCEPTED), f"{name}: {said}"
        assert one_pass(store, run) == (said if isinstance(said, list) else None)
        assert outcome(store, run) == said
        assert outcome(store, other) == reference(store, other)  # the other run is untouched


def test_an_intact_run_is_vouched_for_in_one_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = make_run(store, n=40)
        want = reference(store, run)
        assert one_pass(store, run) == want
        monkeypatch.setattr(store_module, "verify_rows", lambda *a: pytest.fail("the row-by-row check ran"))
        assert store.verify_run(run).events == 41
        assert store._verified_hashes(store.run(run)) == want


def test_a_long_log_is_hashed_by_openssl_a_short_one_without_loading_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenSSL's constructor (faster per byte: ``hashlib.sha256`` is it) once ``_hashlib`` is loaded or once the log
    pays for loading it, taken from ``_hashlib`` without ``hashlib.py``; else the builtin constructor tether hashes
    with, and libcrypto is not loaded for a short session's cold call."""
    monkeypatch.delitem(sys.modules, "_hashlib")
    monkeypatch.delitem(sys.modules, "hashlib", raising=False)
    assert store_module.chain_sha256(store_module.HASHLIB_ROWS - 1) is store_module.sha256
    assert "_hashlib" not in sys.modules
    assert store_module.chain_sha256(store_module.HASHLIB_ROWS) is sys.modules["_hashlib"].openssl_sha256
    assert store_module.chain_sha256(3) is sys.modules["_hashlib"].openssl_sha256  # loaded now: no cost left to save
    assert "hashlib" not in sys.modules, "hashlib.py is not needed for it"
    assert sys.modules["_hashlib"].openssl_sha256(b"x").digest() == hashlib.sha256(b"x").digest()


def test_a_fork_is_checked_row_by_row(tmp_path: Path) -> None:
    """A fork's log begins with its parent's rows: the one-pass check is not asked, and the fork verifies as ever."""
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        parent = make_run(store, n=6)
        fork = make_fork(store, parent, 3)
        assert store.verify_run(fork).events == 4 + 2 + 1
        assert store._verified_hashes(store.run(fork)) == reference(store, fork)
    edit(db, "UPDATE events SET payload='{}' WHERE run_id=? AND seq=2", (parent,))
    with EventStore.open(db, readonly=True) as store:
        said = reference(store, fork)
        assert isinstance(said, tuple) and said[0] == 2
        assert outcome(store, fork) == said


def test_a_hash_stored_as_text_is_judged_as_row_by_row(tmp_path: Path) -> None:
    """A row's 32 hash bytes stored as TEXT (``CAST(hash AS TEXT)``): the one-pass read decodes the column as UTF-8
    and failed on bytes that are not, so verify_run said "the database cannot be read" at seq 0, where the row-by-row
    read (the column's hex) accepts the very bytes as the hash (a middle row) or names the row (the last one, against
    the runs table's head). Now both are what the row-by-row check says."""
    for at_last in (False, True):
        db = tmp_path / f"t{at_last}.db"
        with EventStore.open(db) as store:
            run = make_run(store, n=8)
        conn = sqlite3.connect(db)
        stored = conn.execute("SELECT seq, hash FROM events WHERE run_id=? ORDER BY seq", (run,)).fetchall()
        conn.close()
        seqs = [s for s, h in stored if not is_utf8(h)]
        seq = seqs[-1] if at_last else seqs[0]
        assert at_last or seq != stored[-1][0]
        edit(db, "UPDATE events SET hash=CAST(hash AS TEXT) WHERE run_id=? AND seq=?", (run, seq))
        with EventStore.open(db, readonly=True) as store:
            said = reference(store, run)
            assert outcome(store, run) == said
            if not at_last or seq != stored[-1][0]:
                assert isinstance(said, list), said
