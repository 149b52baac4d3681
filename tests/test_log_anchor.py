"""The anchor: a full rewrite of the log (every later hash recomputed) is caught with a key, and named.

The attacker here has write access to the database, not to the key or the anchor file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tether.events.anchor import AnchorKey, Signer
from tether.events.store import EventStore


def tether(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tether.cli.main", *args], capture_output=True, text=True, timeout=120)


def config(tmp_path: Path) -> Path:
    return tmp_path / "xdg-config" / "tether"


def signed_run(tmp_path: Path, n: int = 10, every: int = 4) -> tuple[Path, str, Signer]:
    """A finished run with checkpoints every ``every`` events and at its end."""
    assert tether("key", "init").returncode == 0
    signer = Signer(AnchorKey.load(config(tmp_path) / "anchor.key"), config(tmp_path) / "anchors.jsonl", every)
    db = tmp_path / "t.db"
    with EventStore.open(db, signer=signer) as store:
        run = store.create_run("t", [("run.started", {"task": "t"})])
        for i in range(n):
            store.append(run, "model.requested", {"turn": i, "model": "x"})
        store.append(run, "run.finished", {"status": "COMPLETE", "result": "done"})
    return db, run, signer


def rewrite(db: Path, run: str, seq: int, payload: dict[str, Any], *, drop_anchors: bool = False) -> None:
    """Edit one event and recompute, by hand, its hash, every later hash and the run's head."""
    conn = sqlite3.connect(db)
    conn.executescript("DROP TRIGGER events_no_update; DROP TRIGGER anchors_no_delete;")
    if drop_anchors:
        conn.execute("DELETE FROM anchors")
    conn.execute("UPDATE events SET payload=? WHERE run_id=? AND seq=?", (json.dumps(payload), run, seq))
    rows = conn.execute("SELECT seq, ts, kind, payload FROM events WHERE run_id=? ORDER BY seq", (run,)).fetchall()
    prev = "0" * 64
    for s, ts, kind, body in rows:
        head = json.dumps({"kind": kind, "run_id": run, "seq": s, "ts": ts}, sort_keys=True, separators=(",", ":"))
        h = hashlib.sha256((prev + head + body).encode()).hexdigest()
        conn.execute("UPDATE events SET hash=? WHERE run_id=? AND seq=?", (bytes.fromhex(h), run, s))
        prev = h
    conn.execute("UPDATE runs SET head_hash=? WHERE run_id=?", (prev, run))
    conn.commit()
    conn.close()


def verify(db: Path, run: str, *extra: str) -> tuple[int, dict[str, Any]]:
    proc = tether("log", "verify", run, "--db", str(db), "--json", *extra)
    return proc.returncode, json.loads(proc.stdout)[0]


def test_key_init_writes_a_private_key_outside_the_database_and_never_overwrites(tmp_path: Path) -> None:
    made = tether("key", "init", "--json")
    assert made.returncode == 0, made.stderr
    info = json.loads(made.stdout)
    key = Path(info["key"])
    assert key == config(tmp_path) / "anchor.key" and info["key_id"].startswith("ed25519:")
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    before = key.read_bytes()
    again = tether("key", "init")
    assert again.returncode == 2 and "refusing to overwrite" in again.stderr
    assert key.read_bytes() == before
    key.chmod(0o644)
    loose = tether("key", "show")
    assert loose.returncode == 2 and "mode 600" in loose.stderr


def test_checkpoints_are_signed_at_every_n_events_and_at_the_end(tmp_path: Path) -> None:
    db, run, signer = signed_run(tmp_path, n=10, every=4)
    with EventStore.open(db, readonly=True) as store:
        seqs = [c.seq for c in store.checkpoints(run)]
    assert seqs == [0, 4, 8, 11]  # the first event, crossing 4 and 8, and run.finished at seq 11
    lines = [json.loads(line) for line in signer.anchor_file.read_text().splitlines()]
    assert [ln["seq"] for ln in lines] == seqs
    code, out = verify(db, run)
    assert code == 0 and out["head"]["seq"] == 11
    assert out["anchor"]["checkpoints"] == 4 and out["anchor"]["last_signed_seq"] == 11
    assert out["anchor"]["limits"] == []


def test_a_hand_recomputed_chain_is_caught_with_a_key_naming_the_first_signed_checkpoint(tmp_path: Path) -> None:
    db, run, _ = signed_run(tmp_path)
    rewrite(db, run, 6, {"turn": 99, "model": "forged"})
    with EventStore.open(db, readonly=True) as store:
        assert store.verify(run) == 12  # the chain alone is consistent again: this is what the key is for
    code, out = verify(db, run)
    assert code == 1 and out["seq"] == 8  # the first signed checkpoint at or after the edit
    assert "first signed checkpoint that no longer matches: seq 8" in out["reason"]
    human = tether("log", "verify", run, "--db", str(db))
    assert human.returncode == 1 and "first bad seq 8" in human.stdout


def test_deleting_the_checkpoints_from_the_database_does_not_hide_a_rewrite(tmp_path: Path) -> None:
    db, run, _ = signed_run(tmp_path)
    rewrite(db, run, 2, {"turn": 99, "model": "forged"}, drop_anchors=True)
    code, out = verify(db, run)
    assert code == 1 and out["seq"] == 4  # the anchor file outside the database still has them


def test_a_forged_or_altered_signature_is_refused(tmp_path: Path) -> None:
    db, run, signer = signed_run(tmp_path)
    lines = signer.anchor_file.read_text().splitlines()
    forged = json.loads(lines[0])
    forged["hash"] = "f" * 64  # claims another head, keeps the old signature
    signer.anchor_file.write_text("\n".join([json.dumps(forged), *lines[1:]]) + "\n")
    code, out = verify(db, run)
    assert code == 1 and out["seq"] == 0 and "does not verify" in out["reason"]


def test_without_a_key_verify_says_plainly_what_it_cannot_detect(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    with EventStore.open(db) as store:
        run = store.create_run("t", [("run.started", {"task": "t"})])
    rewrite(db, run, 0, {"task": "forged"})
    code, out = verify(db, run)
    assert code == 0 and out["anchor"]["key_id"] is None
    assert "full rewrite" in out["anchor"]["limits"][0]
    human = tether("log", "verify", run, "--db", str(db))
    assert "not detectable" in human.stdout and "tether key init" in human.stdout


def test_verifying_with_only_the_public_key(tmp_path: Path) -> None:
    db, run, signer = signed_run(tmp_path)
    pub = config(tmp_path) / "anchor.pub"
    code, out = verify(db, run, "--key", str(pub), "--anchor-file", str(signer.anchor_file))
    assert code == 0 and out["anchor"]["checkpoints"] == 4
    rewrite(db, run, 9, {"turn": 0, "model": "forged"}, drop_anchors=True)
    code, out = verify(db, run, "--key", str(pub), "--anchor-file", str(signer.anchor_file))
    assert code == 1 and out["seq"] == 11


def test_a_key_that_cannot_be_loaded_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.key"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot base64\n-----END PRIVATE KEY-----\n")
    os.chmod(bad, 0o600)
    db, run, _ = signed_run(tmp_path)
    proc = tether("log", "verify", run, "--db", str(db), "--key", str(bad))
    assert proc.returncode == 2 and "bad.key" in proc.stderr and "not a PEM private key" in proc.stderr
    assert "internal error" not in proc.stderr


@pytest.mark.parametrize("line", ["{not json", '{"run_id": "RUN", "seq": "four"}'])
def test_a_malformed_anchor_file_line_names_file_and_line(tmp_path: Path, line: str) -> None:
    db, run, signer = signed_run(tmp_path)
    with signer.anchor_file.open("a") as f:
        f.write(line.replace("RUN", run) + ("" if run in line else f" {run}") + "\n")
    proc = tether("log", "verify", run, "--db", str(db))
    assert proc.returncode == 2 and f"{signer.anchor_file}:5" in proc.stderr
