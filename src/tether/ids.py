"""Random ids, without the ``uuid`` module.

Where tether needs only a random unique string (a lease's owner, a call or approval id, a fork's suffix), the text
of ``uuid.uuid4().hex`` is made here from ``os.urandom`` directly: importing ``uuid`` loads ``_uuid`` and
``platform`` (~3 ms of a cold hook call, which makes one such id at most). The text is exactly a version 4 UUID's
(the version and variant bits set as ``uuid.UUID(bytes=..., version=4)`` sets them), so whatever reads one back as
a UUID reads it as before; ``tests/test_ids.py`` holds it to ``uuid``'s parsing.
"""

from __future__ import annotations

import os


def uuid4_hex() -> str:
    """32 lowercase hex digits of a random version 4 UUID: ``uuid.uuid4().hex``."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return raw.hex()
