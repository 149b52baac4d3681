"""Redaction: every form of a secret's value becomes ``[secret:NAME]`` before anything is written.

Why here, beside the store: the store is the one writer of events and blobs, so a redactor it applies on
append cannot be bypassed by a new event kind, a new tool or a new view — and because redaction happens
before the event is hashed, the chain stays valid and nothing raw is ever on disk (not in the WAL either).
Everything downstream (the model's tool results, ``tether log show``, exports, the console, OpenTelemetry)
reads the redacted log.

The forms of a value ``v`` that are caught, in text and in bytes:

* ``v`` itself, each character also in any URL-encoding (``%2F``/``%2f``, ``+`` or ``%20`` for a space);
* its hex, lower, upper or mixed case;
* its base64, standard and URL-safe alphabets, with or without padding; and the part of a longer base64
  stream that ``v`` alone determines, at each of the three byte alignments ``v`` can have in that stream;
* any of these split by whitespace (``fold``, ``base64``'s 76-column lines, a value printed across lines);
* in text, a piece of at least :data:`MIN_FRAGMENT` characters of the value, its hex or its base64 at the
  very start or end of a string or around tether's output-cut marker (a value cut by the output cap).

Not caught: other transformations a command can apply (reversing, encrypting, ``rot13``, every other
character). A command that holds a secret can always smuggle it out in a form no filter knows; the broker
limits *which* commands get it, this module what tether itself records.

Cost: the exact forms are one compiled alternation, but a regex over many alternatives is slow on large
text, so it runs only where a secret may be. First, one Aho-Corasick pass (``ahocorasick_rs``, in Rust)
over the text lowered and with its whitespace removed (and, when it holds a ``%``, percent-decoded) looks
for any form of any value; a clean output — almost every output — costs that pass (about a millisecond
per MiB: ``benchmarks/redact.py``) and the two edge checks.
"""

from __future__ import annotations

import re

from tether.memo import cache
from tether.records import dataclass, field

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from ahocorasick_rs import BytesAhoCorasick

    from .redact_forms import _Exact

MIN_SECRET = 8
"""Shorter values are refused by the broker: they cannot be told from ordinary text, so cannot be redacted."""

MIN_FRAGMENT = 8
"""The shortest cut-off piece of a value that is redacted at a string's edge."""

#: The marks :class:`tether.sandbox.output.BoundedBuffer` and ``kernel/context.py``'s ``kept_result`` put where they
#: cut an output: a value may be cut in two there.
OMITTED_PATTERN = r"\n\[\.\.\. \d+ (?:bytes omitted by tether|characters in the blob)[^\n]*\]\n"


# The patterns are compiled at their first use, not at import: every process that writes events imports this module
# (a cold hook call too), yet only a redactor that holds secrets uses them.
@cache
def omitted() -> re.Pattern[str]:
    """:data:`OMITTED_PATTERN`, compiled."""
    return re.compile(OMITTED_PATTERN)


def marker(name: str) -> str:
    return f"[secret:{name}]"


@dataclass(frozen=True)
class Redactor:
    """Replaces the values of ``secrets`` (name -> value) in text, bytes and JSON-like data. Build once per run."""

    secrets: Mapping[str, str] = field(default_factory=dict)
    _exact: list[_Exact] = field(init=False, repr=False)
    _edges: list[tuple[str, str]] = field(init=False, repr=False)
    _seeds: BytesAhoCorasick | None = field(init=False, repr=False)
    _owners: list[list[int]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        values = {n: v for n, v in self.secrets.items() if v}
        short = sorted(n for n, v in values.items() if len(v) < MIN_SECRET)
        if short:
            raise ValueError(f"secret values shorter than {MIN_SECRET} characters cannot be redacted: {short}")
        set_ = object.__setattr__
        if not values:  # what the lines below make of no secret, without the forms' module (most runs hold none)
            set_(self, "_exact", [])
            set_(self, "_edges", [])
            set_(self, "_seeds", None)
            set_(self, "_owners", [])
            return
        from . import redact_forms as forms

        owners: dict[bytes, list[int]] = {}
        for i, v in enumerate(values.values()):
            for seed in forms._seeds(v):
                owners.setdefault(seed, []).append(i)
        set_(self, "_exact", [forms._Exact(self.secrets_name(n), v) for n, v in values.items()])
        set_(self, "_edges", [(f, self.secrets_name(n)) for n, v in values.items() for f in forms._literals(v)])
        set_(self, "_seeds", forms._automaton(list(owners)) if owners else None)
        set_(self, "_owners", list(owners.values()))

    def __bool__(self) -> bool:
        return bool(self._exact)

    def with_secrets(self, more: Mapping[str, str]) -> Redactor:
        """This redactor and ``more`` (a value seen again under the same name is kept as well: it may rotate)."""
        merged = dict(self.secrets)
        for name, value in more.items():
            key = name
            while key in merged and merged[key] != value:
                key += "'"  # a rotated value: both are redacted, under the same name
            merged[key] = value
        return self if merged == dict(self.secrets) else Redactor(merged)

    @staticmethod
    def secrets_name(key: str) -> str:
        return key.rstrip("'")

    # ---- text ------------------------------------------------------------------------------------

    def held(self, b: bytes) -> list[_Exact]:
        """The values ``b`` may hold a form of: never one missing that it does hold (the forms, lowered and
        unsplit, start with a seed), rarely one it does not. One automaton pass (two when ``b`` has a ``%``)."""
        if self._seeds is None:
            return []
        from .redact_forms import _ASCII_WS

        flat = b.lower().translate(None, _ASCII_WS)
        found = {i for p, _, _ in self._seeds.find_matches_as_indexes(flat) for i in self._owners[p]}
        if b"%" in flat:
            from urllib.parse import unquote_to_bytes  # where an output holds a %: urllib.parse imports ipaddress

            decoded = unquote_to_bytes(b).lower().translate(None, _ASCII_WS)
            found |= {i for p, _, _ in self._seeds.find_matches_as_indexes(decoded) for i in self._owners[p]}
        return [self._exact[i] for i in sorted(found)]

    def text(self, s: str) -> str:
        if not self._exact:
            return s
        from .redact_forms import _not_ws, _unsplit, _ws

        url = "%" in s
        for exact in self.held(s.encode(errors="surrogatepass")):
            mark = marker(exact.name)
            s = exact.pattern(squeezed=False, url=url, data=False).sub(mark, s)
            s = _unsplit(s, exact.pattern(squeezed=True, url=url, data=False), _ws(False), _not_ws(False), mark)
        return self._cut_pieces(s) if len(s) >= MIN_FRAGMENT else s

    def data(self, b: bytes) -> bytes:
        if not self._exact:
            return b  # held() finds nothing without a secret
        from .redact_forms import _not_ws, _unsplit, _ws

        url = b"%" in b
        for exact in self.held(b):
            mark = marker(exact.name).encode()
            b = exact.pattern(squeezed=False, url=url, data=True).sub(mark, b)
            b = _unsplit(b, exact.pattern(squeezed=True, url=url, data=True), _ws(True), _not_ws(True), mark)
        return b

    def value(self, v: Any) -> Any:
        """``v`` (str, bytes, or JSON-like dicts and lists of them, keys included) redacted; ``v`` itself when
        nothing in it changed, so a caller can tell by identity."""
        if not self._exact:
            return v
        if isinstance(v, str):
            out = self.text(v)
            return v if out == v else out
        if isinstance(v, bytes):
            data = self.data(v)
            return v if data == v else data
        if isinstance(v, dict):
            items = [(self.value(k), self.value(x)) for k, x in v.items()]
            same = all(k is k0 and x is x0 for (k, x), (k0, x0) in zip(items, v.items(), strict=True))
            return v if same else dict(items)
        if isinstance(v, list | tuple):
            seq = [self.value(x) for x in v]
            return v if all(a is b for a, b in zip(seq, v, strict=True)) else type(v)(seq)
        return v

    def _cut_pieces(self, s: str) -> str:
        """Pieces of a value at the edges of ``s`` and of the segments an output-cut marker separates."""
        cut_mark = omitted()
        if not cut_mark.search(s):
            return self._edge_pieces(s)
        parts = cut_mark.split(s)
        cuts = cut_mark.findall(s)
        out = [self._edge_pieces(parts[0])]
        for cut, part in zip(cuts, parts[1:], strict=True):
            out += [cut, self._edge_pieces(part)]
        return "".join(out)

    def _edge_pieces(self, s: str) -> str:
        start, end, head, tail = 0, len(s), "", ""
        for form, name in self._edges:
            window = s[start : start + len(form) - 1]
            q = window.find(form[-MIN_FRAGMENT:])
            while q != -1:
                if form.endswith(window[: q + MIN_FRAGMENT]):
                    start, head = start + q + MIN_FRAGMENT, marker(name)
                    break
                q = window.find(form[-MIN_FRAGMENT:], q + 1)
            lo = max(start, end - len(form) + 1)
            window = s[lo:end]
            p = window.find(form[:MIN_FRAGMENT])
            while p != -1:
                if form.startswith(window[p:]):
                    end, tail = lo + p, marker(name)
                    break
                p = window.find(form[:MIN_FRAGMENT], p + 1)
        return s if not head and not tail else head + s[start:end] + tail


__all__ = ["MIN_SECRET", "OMITTED_PATTERN", "Redactor", "marker", "omitted"]


def url_without_password(url: str) -> str:
    """``url`` with the password of its authority, if any, replaced by ``***``: a database URL fit for messages."""
    from urllib.parse import urlsplit, urlunsplit  # a URL's store, not a hook call's file

    parts = urlsplit(url)
    if parts.password is None:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=f"{userinfo.split(':', 1)[0]}:***@{host}"))
