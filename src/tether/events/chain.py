"""The hash chain: hash = SHA-256(prev_hash ‖ canonical event)."""

from __future__ import annotations

from tether.canonical import canonical_json, sha256_hex

GENESIS = "0" * 64


def event_hash(prev_hash: str, run_id: str, seq: int, ts: str, kind: str, payload_json: str) -> str:
    """Chain one event. ``payload_json`` is already canonical, so it is hashed verbatim."""
    head = canonical_json({"run_id": run_id, "seq": seq, "ts": ts, "kind": kind})
    return sha256_hex(prev_hash + head + payload_json)
