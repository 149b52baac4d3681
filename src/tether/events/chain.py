"""The hash chain: hash = SHA-256(prev_hash ‖ canonical event)."""

from __future__ import annotations

from tether.canonical import canonical_json, sha256, sha256_hex
from tether.jsonc import encode_basestring

GENESIS = "0" * 64


def event_hash(prev_hash: str, run_id: str, seq: int, ts: str, kind: str, payload_json: str) -> str:
    """Chain one event. ``payload_json`` is already canonical, so it is hashed verbatim.

    The head is the canonical JSON of ``{"run_id", "seq", "ts", "kind"}``; for the types every event has (three
    strings, an int) it is written here directly, keys in sorted order, each string as the canonical encoder
    writes it (``encode_basestring``: the same function, ``ensure_ascii=False``), which is the same text
    (``tests/test_eventlog_golden.py``, and a property test against :func:`canonical_json`); a value of any
    other type goes through :func:`canonical_json`.
    """
    if type(run_id) is str and type(seq) is int and type(ts) is str and type(kind) is str:
        head = (
            f'{{"kind":{encode_basestring(kind)},"run_id":{encode_basestring(run_id)},'
            f'"seq":{int.__repr__(seq)},"ts":{encode_basestring(ts)}}}'
        )
        return sha256((prev_hash + head + payload_json).encode()).hexdigest()
    head = canonical_json({"run_id": run_id, "seq": seq, "ts": ts, "kind": kind})
    return sha256_hex(prev_hash + head + payload_json)
