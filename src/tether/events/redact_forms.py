"""The forms of a secret's value that :class:`~.redact.Redactor` finds, and how it finds them: the regexes of every
form (compiled at first use), the prefilter's seeds and its automaton, the plain forms whose cut-off pieces are
redacted at a string's edges.

Apart from :mod:`.redact` because only a redactor that holds a secret reads them: every process that writes events
imports the redactor (a cold hook call too), and a run without a secret (most) never unmarshals or makes any of
this (:class:`_Exact` is a class to make). See :mod:`.redact` for what is caught and what it costs.
"""

from __future__ import annotations

import re

from tether.memo import cache
from tether.records import dataclass, field
from tether.typeless import TypeVar

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import Any

    from ahocorasick_rs import BytesAhoCorasick

MIN_CORE = 8
"""The shortest base64 run that is redacted as part of a longer base64 stream."""

SEED = 12
"""Bytes of each form the prefilter looks for: short enough for the automaton's SIMD prefilter, long enough
that ordinary text almost never holds one."""

_ASCII_WS = b" \t\n\r\x0b\x0c"  # the whitespace a split value may have in it (the prefilter removes these)


@cache
def _ws(data: bool) -> re.Pattern[Any]:
    """A run of the whitespace a split value may hold, in bytes (``data``) or text."""
    return re.compile(rb"[ \t\n\r\x0b\x0c]+" if data else r"[ \t\n\r\x0b\x0c]+")


@cache
def _not_ws(data: bool) -> re.Pattern[Any]:
    """One character that is not such whitespace, in bytes (``data``) or text."""
    return re.compile(rb"[^ \t\n\r\x0b\x0c]" if data else r"[^ \t\n\r\x0b\x0c]")


T = TypeVar("T", str, bytes)


def _char(c: str, url: bool) -> str:
    """``c``, a space also as ``+``; with ``url``, also its percent-encoding (any case)."""
    encoded = "".join(f"%{b:02X}" for b in c.encode())
    alts = [re.escape(c), *([f"(?i:{encoded})"] if url else []), *([r"\+"] if c == " " else [])]
    return alts[0] if len(alts) == 1 else f"(?:{'|'.join(alts)})"


def _b64(raw: bytes) -> list[str]:
    """The base64 text ``raw`` determines, in both alphabets: whole (with its padding), and the part of a longer
    stream it determines at each of the three alignments it can have there. (base64 is imported here and in
    :func:`_literals`, where a run has a secret: a hook call without one does without it.)"""
    import base64

    out: list[str] = []
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        out.append(encode(raw).decode())
        for offset, drop in ((0, 0), (1, 2), (2, 3)):  # chars that also hold bits of the bytes before
            core = encode(b"\0" * offset + raw).decode()[drop : 4 * ((offset + len(raw)) // 3)]  # full groups only
            if len(core) >= MIN_CORE and core != out[-1].rstrip("="):
                out.append(core)
    return out


def _b64_runs(raw: bytes) -> list[str]:
    """:func:`_b64` as regexes; padding optional."""
    runs = []
    for text in _b64(raw):
        bare = text.rstrip("=")
        runs.append(re.escape(bare) + (f"(?:{text[len(bare) :]})?" if text != bare else ""))
    return runs


def _forms(value: str, *, squeezed: bool = False, url: bool = True) -> str:
    """One regex for every form of ``value`` this module catches (longest first: the alternation takes the first);
    ``squeezed``: as found in text whose whitespace was removed (the encoded forms have none of their own);
    ``url``: characters may be percent-encoded (only worth its cost where the text holds a ``%``)."""
    raw = value.encode()
    chars = _ws(False).sub("", value) if squeezed else value
    alts = ["".join(_char(c, url) for c in chars), f"(?i:{raw.hex()})", *_b64_runs(raw)]
    return "|".join(sorted(alts, key=len, reverse=True))


def _seeds(value: str) -> set[bytes]:
    """What the prefilter looks for: the start of each form, lowered and without whitespace (as it looks in the
    text it searches: lowered, whitespace removed, percent-decoded). Every exact hit starts with one."""
    raw = value.encode()
    forms = [raw, raw.replace(b" ", b"+"), raw.hex().encode(), *(t.rstrip("=").encode() for t in _b64(raw))]
    return {f.lower().translate(None, _ASCII_WS)[:SEED] for f in forms} - {b""}


def _literals(value: str) -> list[str]:
    """The plain forms whose cut-off pieces are redacted at string edges."""
    import base64

    raw = value.encode()
    return [value, raw.hex(), raw.hex().upper(), base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()]


@dataclass(frozen=True)
class _Exact:
    """One value's forms, compiled when first needed: as they are and with whitespace removed, with and without
    percent-encoding, for text and for bytes (as bytes, a non-ASCII character is its UTF-8)."""

    name: str
    value: str
    _compiled: dict[tuple[bool, bool, bool], re.Pattern[Any]] = field(default_factory=dict)

    def pattern(self, *, squeezed: bool, url: bool, data: bool) -> re.Pattern[Any]:
        key = (squeezed, url, data)
        if key not in self._compiled:
            forms = _forms(self.value, squeezed=squeezed, url=url)
            self._compiled[key] = re.compile(forms.encode() if data else forms)
        return self._compiled[key]


def _automaton(seeds: list[bytes]) -> BytesAhoCorasick:
    """The seeds' automaton; its library is imported here, where a run has a secret (a hook call without one, most,
    does without its import: ~0.5 ms)."""
    from ahocorasick_rs import BytesAhoCorasick, MatchKind

    return BytesAhoCorasick(seeds, matchkind=MatchKind.LeftmostFirst)


def _unsplit(s: T, squeezed: re.Pattern[T], ws: re.Pattern[T], not_ws: re.Pattern[T], mark: T) -> T:
    """Forms split by whitespace: found in ``s`` with its whitespace removed, replaced in ``s`` itself (from the
    first character of the hit to its last, whitespace between included)."""
    if not ws.search(s):
        return s
    hits = list(squeezed.finditer(ws.sub(s[:0], s)))
    if not hits:
        return s
    at = [m.start() for m in not_ws.finditer(s)]
    for hit in reversed(hits):
        s = s[: at[hit.start()]] + mark + s[at[hit.end() - 1] + 1 :]
    return s
