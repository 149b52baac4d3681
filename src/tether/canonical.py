"""Canonical JSON and hashing.

Every hash in tether (plan, contract, event chain, blobs, approval arguments) is
SHA-256 over the same canonical form, so two processes that agree on a value
agree on its hash: sorted keys, no insignificant whitespace, UTF-8, no NaN.
"""

from __future__ import annotations

import sys

from tether.jsonc import encode_basestring, make_encoder, not_serializable

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from hashlib import _Hash
    from typing import Any

HASH_PREFIX = "sha256:"


#: The canonical form is ``json.dumps(value, **CANONICAL)``: what json's C encoder, which :mod:`tether.jsonc` runs
#: without json's Python modules (they import ``re``: a cold hook call imports neither), makes of these options.
CANONICAL = {"sort_keys": True, "separators": (",", ":"), "ensure_ascii": False, "allow_nan": False}


def canonical_json(value: Any) -> str:
    """Serialise ``value`` deterministically (sorted keys, compact separators).

    What ``json.dumps(value, **CANONICAL)`` runs, without its Python layers: ``JSONEncoder.iterencode`` builds a
    float closure and a C encoder for each call (a frame and a function object each time; ``content_hash`` runs
    four a step, issue 18). The C encoder is built per call here too, with a fresh ``markers`` dict, so a cycle
    still raises ``ValueError`` and an error half-way leaves nothing behind for the next call
    (``tests/store/test_canonical_json.py``)."""
    if type(value) is str:  # encode()'s own shortcut for a string
        return encode_basestring(value)
    encoder = make_encoder({}, not_serializable, encode_basestring, None, ":", ",", True, False, False)
    return "".join(encoder(value, 0))


#: The C encoder ``json.dumps(value, **CANONICAL)`` runs for a dict or a list (``JSONEncoder.iterencode`` builds one
#: per call), built once and without the check for circular references: for :func:`canonical_tree` only.
_TREE = make_encoder(None, not_serializable, encode_basestring, None, ":", ",", True, False, False)


def canonical_tree(value: dict[str, Any]) -> str:
    """:func:`canonical_json` of a JSON object that holds no cycle: the same text (``tests/test_canonical.py``),
    without the Python layers of ``JSONEncoder.encode`` and the cycle check (about 1 us per event of a step's
    8, issue 18). For the append path, whose payloads are pydantic's JSON-mode dumps: a fresh tree, in which a
    cycle cannot occur (pydantic's serializer refuses one). A cycle here would raise ``RecursionError``."""
    return "".join(_TREE(value, 0))


def _sha256_maker() -> Callable[..., _Hash]:
    """The SHA-256 constructor tether hashes with: ``hashlib.sha256`` when ``hashlib`` is imported already (the
    loop, the daemon: OpenSSL's, the fastest per byte), else the interpreter's builtin one (``_sha256``; ``_sha2``
    on 3.12). Importing ``hashlib`` loads OpenSSL's libcrypto (~3-4 ms of a cold hook call), which hashes only a
    few small texts (a session's key, the event chain, a kept file's body); the digests are the same
    (``tests/test_canonical_sha256.py``). :func:`sha256_hex` hands a large input to ``hashlib`` whichever this is."""
    if "hashlib" not in sys.modules:
        for name in ("_sha256", "_sha2"):
            try:
                return __import__(name).sha256  # type: ignore[no-any-return]
            except (ImportError, AttributeError):  # pragma: no cover - a build without the builtin one
                continue
    import hashlib

    return hashlib.sha256


#: ``sha256(data)``: a SHA-256 hash object, as ``hashlib.sha256`` (see :func:`_sha256_maker`).
sha256 = _sha256_maker()
#: The size from which :func:`sha256_hex` hashes with OpenSSL's ``hashlib`` (faster per byte) whatever ``sha256`` is.
LARGE = 1 << 16


def openssl_sha256() -> Callable[..., _Hash]:
    """OpenSSL's SHA-256 constructor, from ``_hashlib``: the very function ``hashlib.sha256`` is, without
    ``hashlib.py``, which also loads ``_blake2`` and makes every algorithm's constructor (~0.65 ms of a cold call,
    on top of the ~3.3 ms libcrypto costs to load). ``hashlib``'s where the interpreter has no ``_hashlib``."""
    try:
        from _hashlib import openssl_sha256 as made
    except ImportError:  # pragma: no cover - an interpreter built without OpenSSL
        from hashlib import sha256 as made
    return made


def sha256_hex(data: bytes | memoryview | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) >= LARGE:
        return openssl_sha256()(data).hexdigest()
    return sha256(data).hexdigest()


def content_hash(value: Any) -> str:
    """``sha256:<hex>`` of the canonical JSON of ``value``."""
    return HASH_PREFIX + sha256_hex(canonical_json(value))


def bytes_hash(data: bytes) -> str:
    return HASH_PREFIX + sha256_hex(data)
