"""Canonical JSON and hashing.

Every hash in tether (plan, contract, event chain, blobs, approval arguments) is
SHA-256 over the same canonical form, so two processes that agree on a value
agree on its hash: sorted keys, no insignificant whitespace, UTF-8, no NaN.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

HASH_PREFIX = "sha256:"


#: What ``json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`` builds
#: for every call, built once: ``dumps`` is ``JSONEncoder(**options).encode(value)``.
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json(value: Any) -> str:
    """Serialise ``value`` deterministically (sorted keys, compact separators)."""
    return _ENCODER.encode(value)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return HASH_PREFIX + sha256_hex(canonical_json(value))


def bytes_hash(data: bytes) -> str:
    return HASH_PREFIX + sha256_hex(data)
