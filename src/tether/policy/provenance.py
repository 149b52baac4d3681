"""Provenance: which values of a run first appeared in untrusted output, and which the user gave.

An injected instruction works by getting a value the user never gave — a recipient, a URL, an account, an
amount — into the arguments of a side-effecting call. So tether does not look for attack phrases (there is
no list of them): it remembers where each *value* first appeared. The per-run :class:`Provenance` index is
folded from the log in order, so a resumed or replayed run rebuilds the same index and the gate decides the
same; each step feeds only the new events (O(new output), never a rescan).

Sources, from the log:

* the user's words: the task and the intent plan (``run.started``), a human's note when continuing a run
  (``run.continued``), a human's reason for declining a call (``approval.denied``);
* tool output (``action.completed`` content, ``action.failed`` error), trusted or untrusted by the tool's
  contract (``envelope/trust.py``). Each value is indexed once, with the event that first brought it.

A value is **tainted** when it first appeared in untrusted output and the user's words do not hold it. The
model's own text is no source: a model that read an injection is exactly what this guards against.

Candidate values, normalised before comparison (Unicode NFKC, case folding, whitespace): URLs (scheme and
host lower-cased, IDNA host, default port, percent-decoding, no fragment, no trailing slash), e-mail
addresses (without ``+tag``, IDNA domain), host names, IBAN- and account-like numbers (spaces removed),
paths, and — only where an argument *is* one short value (at most :data:`MAX_ATOM` characters and
:data:`MAX_ATOM_WORDS` words: an address, an id, an amount, a title) rather than free text — amounts (of two digits or
more: a single digit is too common to say where it came from) and words of :data:`MIN_TOKEN` characters or more
with a letter in them. A value inside a larger one that is known and
clean (an address the user gave) is not judged on its own parts; one that is not known is, so a recipient
assembled from two untrusted outputs is caught by its host or its name.
"""

from __future__ import annotations

import posixpath
import re
from _collections_abc import Mapping  # collections.abc's, without the collections package
from enum import StrEnum

from tether.envelope.schema import Effect, Envelope, ToolContract, Trust
from tether.envelope.trust import trust_of
from tether.events.store import Event
from tether.memo import cache
from tether.quickenum import Quick
from tether.records import dataclass, field

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence
    from typing import Any

#: Shortest word that counts as a value of its own (shorter ones are too common to say where they came from).
MIN_TOKEN = 5

#: Longest argument still read as one value (an identifier, an address, an amount, a title) rather than free text.
MAX_ATOM = 80
MAX_ATOM_WORDS = 8


class ValueKind(StrEnum, metaclass=Quick):
    URL = "url"
    EMAIL = "email"
    ACCOUNT = "account"
    HOST = "host"
    PATH = "path"
    NUMBER = "number"
    TOKEN = "token"


#: Which kind names a span that several kinds match (a host is also a word): the most specific.
_RANK = {k: i for i, k in enumerate(ValueKind)}

# A scheme and an address's local part are bounded (RFC 5321 caps a local part at 64 characters): unbounded,
# every position of a long run of word characters would scan to the run's end — quadratic in the text, so a
# tool call carrying a base64 blob or minified code would hold a decision (and the hook daemon) for minutes.
#: The candidate values' patterns, each compiled at its first use (:func:`_pattern`): a session whose outputs are all
#: trusted never indexes them (:meth:`Provenance.taints`), and compiling the nine cost ~6.8 M instructions, a
#: twentieth of a cold hook call's imports.
_PATTERNS = {
    "url": r"\b[a-z][a-z0-9+.\-]{0,63}://[^\s<>\"'`]+",
    "email": r"[\w.%+\-]{1,64}@(?:[\w\-]+\.)+[\w\-]{2,}",
    "host": r"(?<![\w@.\-/])(?:[\w\-]+\.)+[^\W\d_][\w\-]*[^\W_]",
    "iban": r"\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,3})?\b",
    "digits": r"\d(?<![\w.\-]\d)(?: ?\d){7,}(?!\w|[.\-]\d)",
    "path": r"(?<![\w:/])(?:~|\.{1,2})?(?:/[\w.\-~]+)+/?",
    "amount": r"\d(?<![\w.,\-]\d)(?:\d{0,2}(?:,\d{3})+|\d*)(?:\.\d+)?(?![\w\-]|[.,]\d)",
    "token": r"\w(?<![\w\-]\w)(?<!\w\.\w)(?:(?<=[^\W\d_])|(?=[\w.\-]*[^\W\d_]))[\w.\-]*\w(?![\w\-]|\.\w|://)",
    "digit": r"\d",  # what iban, digits and amount match always holds (the same \d)
}
# ``digits``, ``amount`` and ``token`` begin with the class every match of theirs begins with (``\d``, ``\w``), their
# lookbehinds just after it, one character wider (the same test of the same characters), and token's lookahead split
# into "this character is a letter, or one follows": written so, sre skips in C the positions no match can start at
# instead of running the lookbehinds at each, for the same matches (the patterns as they were are in
# tests/policy/test_provenance_candidates.py, held to these): a command's output of 40 characters, searched at
# every step (issue 18), cost 17 k, 28 k and 35 k instructions in them, 14 k, 19 k and 29 k now.
_TRAILING = ".,;:!?)]}'\""


@cache
def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[name])


def fold(text: str) -> str:
    """Unicode NFKC, case-folded, whitespace collapsed: fullwidth, ligature and case spellings meet.
    (``unicodedata`` and ``decimal`` are imported where they are used: a hook call that folds no text, as a
    session of the workspace's own tools, does without both.)"""
    import unicodedata

    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _idna(host: str) -> str:
    host = host.strip(".")
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def canonical_url(url: str) -> str:
    """One spelling per address: lower scheme and host, IDNA, no default port, decoded path, no fragment."""
    from urllib.parse import unquote, urlsplit  # where a text holds a URL: urllib.parse imports ipaddress

    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return fold(unquote(url)).rstrip("/")
    host = _idna(parts.hostname or "")
    if port is not None and (parts.scheme, port) not in (("http", 80), ("https", 443)):
        host = f"{host}:{port}"
    path = fold(unquote(parts.path)).rstrip("/")
    query = fold(unquote(parts.query))
    return f"{parts.scheme}://{host}{path}" + (f"?{query}" if query else "")


def canonical_email(address: str) -> str:
    local, _, domain = fold(address).rpartition("@")
    return f"{local.split('+', 1)[0]}@{_idna(domain)}"


def canonical_number(text: str) -> str | None:
    if len(text) <= 18 and text.isascii() and text.isdigit() and text[0] != "0":
        return text  # a plain whole number well within Decimal's 28 digits is already its own form
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text.replace(",", ""))
    except InvalidOperation:
        return None
    return format(value.normalize(), "f")


@dataclass(frozen=True)
class Value:
    """A candidate value: its kind, its canonical form, and where it sits in the folded text."""

    kind: ValueKind
    norm: str
    start: int
    end: int


def _found(kind: ValueKind, pattern: re.Pattern[str], text: str) -> list[tuple[ValueKind, str, int, int]]:
    """Each match of ``pattern`` in ``text`` as (kind, text, start, end); a URL or a path without the punctuation
    that ends the sentence around it."""
    if kind is not ValueKind.URL and kind is not ValueKind.PATH:
        return [(kind, m[0], m.start(), m.end()) for m in pattern.finditer(text)]
    out: list[tuple[ValueKind, str, int, int]] = []
    for m in pattern.finditer(text):
        raw = m[0].rstrip(_TRAILING)
        out.append((kind, raw, m.start(), m.start() + len(raw)))
    return out


def _host_of(kind: ValueKind, raw: str, start: int) -> list[tuple[ValueKind, str, int, int]]:
    """The host inside a URL or an e-mail address, as a value of its own (spanning where it sits)."""
    if kind is ValueKind.EMAIL:
        at = raw.rindex("@") + 1
        return [(ValueKind.HOST, raw[at:], start + at, start + len(raw))]
    from urllib.parse import urlsplit  # a URL's host: where a text holds a URL

    try:
        host = urlsplit(raw).hostname
    except ValueError:
        return []
    at = raw.find(host) if host else -1
    return [] if not host or at < 0 else [(ValueKind.HOST, host, start + at, start + at + len(host))]


def _canonical(kind: ValueKind, raw: str) -> str | None:
    if kind is ValueKind.URL:
        return canonical_url(raw)
    if kind is ValueKind.EMAIL:
        return canonical_email(raw)
    if kind is ValueKind.HOST:
        return _idna(raw)
    if kind is ValueKind.ACCOUNT:
        return re.sub(r"[ \-]", "", raw).upper()
    if kind is ValueKind.PATH:
        if "%" not in raw:  # unquote's own shortcut: the text as it is
            return posixpath.normpath(raw)
        from urllib.parse import unquote  # where a path holds a %: urllib.parse imports ipaddress

        return posixpath.normpath(unquote(raw))
    return raw if len(raw) >= MIN_TOKEN else None


def _matches(folded: str, every: bool) -> list[tuple[ValueKind, str, int, int]]:
    """Every pattern's matches in ``folded``, kind by kind, then the hosts inside the URLs and addresses."""
    # Each pattern is tried only on text holding what every match of it holds (a scan in C, no match set up):
    # ``://`` for a URL, ``@`` for an address, a dot for a host, a slash for a path, two digits for an IBAN or an
    # amount (one that holds one digit is that digit, no value: ``candidates``), eight for a run of digits.
    digits = len(_pattern("digit").findall(folded))
    found: list[tuple[ValueKind, str, int, int]] = []
    if "://" in folded:
        found += _found(ValueKind.URL, _pattern("url"), folded)
    if "@" in folded:
        found += _found(ValueKind.EMAIL, _pattern("email"), folded)
    hosts = len(found)  # the URLs and addresses found so far hold a host each (added after the rest, below)
    if "." in folded:
        found += _found(ValueKind.HOST, _pattern("host"), folded)
    if digits >= 2:
        found += _found(ValueKind.ACCOUNT, _pattern("iban"), folded)
    if digits >= 8:
        found += _found(ValueKind.ACCOUNT, _pattern("digits"), folded)
    if "/" in folded:
        found += _found(ValueKind.PATH, _pattern("path"), folded)
    if every:
        found += _found(ValueKind.TOKEN, _pattern("token"), folded)
        if digits >= 2:
            found += _found(ValueKind.NUMBER, _pattern("amount"), folded)
    for k, raw, start, _ in found[:hosts]:
        found += _host_of(k, raw, start)
    return found


def candidates(text: str, *, every: bool = True) -> list[Value]:
    """The values in ``text``. ``every``: also its words and amounts (for indexing, and for an argument that is
    one short value); otherwise only the structured kinds, which say where they point even inside prose."""
    return [Value(*v) for v in _values(text, every)]


def keys(text: str) -> set[tuple[ValueKind, str]]:
    """What the index records of ``text``: each value's kind and canonical form (:func:`candidates` with every kind),
    without where it sits nor a :class:`Value` for each (a 200-line file's text: 2.4 -> 2.1 ms)."""
    return {(kind, norm) for kind, norm, _, _ in _values(text, True)}


def _values(text: str, every: bool) -> list[tuple[ValueKind, str, int, int]]:
    """:func:`candidates` as ``(kind, canonical form, start, end)`` tuples."""
    found = _matches(fold(text), every)
    out: list[tuple[ValueKind, str, int, int]] = []
    for kind, raw, start, end in found:
        if kind is ValueKind.TOKEN:  # the most common kind: the last case of _canonical, without the others
            if len(raw) >= MIN_TOKEN:
                out.append((kind, raw, start, end))
            continue
        if kind is ValueKind.NUMBER:
            if len(raw) < 2:  # one digit: fewer than the two a number needs (below)
                continue
            norm = canonical_number(raw)
        else:
            norm = _canonical(kind, raw)
        if norm and not (kind is ValueKind.NUMBER and sum(c.isdigit() for c in norm.lstrip("0.-")) < 2):
            out.append((kind, norm, start, end))
    return out


def _atom(text: str) -> bool:
    """Is an argument one short value (an address, an identifier, an amount, a title) rather than free text?"""
    return len(text) <= MAX_ATOM and len(text.split()) <= MAX_ATOM_WORDS


@dataclass(frozen=True)
class Source:
    """Where a value first appeared: the event (its seq), the tool, and whether that output was untrusted."""

    seq: int
    tool: str
    untrusted: bool


@dataclass(frozen=True)
class Taint:
    """A value in an argument that first appeared in untrusted output and is not in the user's words."""

    arg: str
    kind: ValueKind
    value: str
    source: Source

    def describe(self) -> str:
        return (
            f"args.{self.arg} holds {self.kind.value} {self.value!r}, which first appeared in untrusted output of "
            f"{self.source.tool} (event {self.source.seq}) and is not in the task, the plan or the user's messages"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "arg": self.arg,
            "kind": self.kind.value,
            "value": self.value,
            "source_seq": self.source.seq,
            "source_tool": self.source.tool,
        }


#: At most this many texts, and :data:`PENDING_CHARS` characters of them, wait to be indexed when the holder adds the
#: events one by one and keeps no list of them (:meth:`Provenance.add`, the kernel): a long run holds no more of its
#: outputs than that; beyond, they are indexed as before, in order. Bounded by characters as well as by count (issue
#: 18): a batch's search costs about what its text does, so a run of short outputs (a shell step's ``exit 0 (no
#: output)``: 40 characters, 170 k instructions to search) waits for 4,096 of them, and a run that ends first, with no
#: untrusted output, searches none; long outputs are indexed in batches of at most 256 K characters. A holder that
#: passes its whole log (:meth:`Provenance.feed`) holds the texts anyway, and its index waits until it is needed: a
#: hook's cold call feeds the events after its fold checkpoint at every call, and when their outputs passed this bound
#: (a coding session's Reads and Edits: 35 receipts) each call searched them all, a Read too (~150 ms after 1,000).
PENDING_MAX = 4096
PENDING_CHARS = 256 * 1024

#: The kinds whose events hold the user's words or a tool's output: what the index reads.
SOURCE_KINDS = frozenset({"run.started", "run.continued", "approval.denied", "action.completed", "action.failed"})


def _key(v: Value) -> tuple[ValueKind, str]:
    return (v.kind, v.norm)


@dataclass
class Provenance:
    """The run's index of values: where each first appeared, and which the user gave. Feed it the log in order.

    Indexed when first needed: only a value first seen in untrusted output can be tainted, so until an untrusted
    output has been fed no argument can be, and the texts fed so far wait (``_pending``, references to the
    events' own strings) without being searched; they are indexed in order, as if fed one by one, when
    :meth:`taints` or :meth:`tainted_source` first meet an untrusted output, ``known``/``user`` are read, or (events
    added one by one: :meth:`add`) :data:`PENDING_MAX` texts or :data:`PENDING_CHARS` characters wait. A session
    whose tools are all the workspace's (a coding agent's shell, files and search) and that ends before either never
    searches them.
    """

    env: Envelope
    _known: dict[tuple[ValueKind, str], Source] = field(default_factory=dict)
    _user: set[tuple[ValueKind, str]] = field(default_factory=set)
    fed: int = 0
    _trust: dict[str, bool] = field(default_factory=dict)
    # (seq, tool, untrusted, texts) in log order: an output's one text (seq >= 0), or the user's words (seq -1)
    _pending: list[tuple[int, str, bool, Sequence[str]]] = field(default_factory=list, repr=False, compare=False)
    _pending_chars: int = field(default=0, repr=False, compare=False)  # the characters of the texts in _pending
    _risky: bool = False  # an untrusted output was fed: taints are possible
    _since: int = field(default=-1, repr=False, compare=False)  # the seq of the first event whose text waits (-1: none)
    # the events before those in _pending whose texts a fold checkpoint left unsearched (:meth:`resume`): read first
    _later: Callable[[], Sequence[Event]] | None = field(default=None, repr=False, compare=False)

    @property
    def known(self) -> dict[tuple[ValueKind, str], Source]:
        """Each value seen in a tool's output, with where it first appeared."""
        self._index()
        return self._known

    @known.setter
    def known(self, value: dict[tuple[ValueKind, str], Source]) -> None:
        self._index()
        self._known = value
        self._risky = self._risky or any(s.untrusted for s in value.values())

    @property
    def user(self) -> set[tuple[ValueKind, str]]:
        """The values of the user's words."""
        self._index()
        return self._user

    @user.setter
    def user(self, value: set[tuple[ValueKind, str]]) -> None:
        self._index()
        self._user = value

    def kept(self) -> tuple[dict[tuple[ValueKind, str], Source], set[tuple[ValueKind, str]], int]:
        """What a fold checkpoint keeps of the index: the values indexed so far, the user's, and the seq of the first
        event whose text is not searched yet (-1: none). While no untrusted output was fed, nothing is searched to
        write it: the checkpoint names where the waiting texts begin in the log instead (a coding session's cold
        receipt that wrote one searched every output since the last, ~100 ms, and the first after an upgrade of
        tether, which writes the first checkpoint of a long session, every output of the session, ~3 s)."""
        if self._risky:
            self._index()
        return self._known, self._user, self._since

    def resume(
        self,
        known: dict[tuple[ValueKind, str], Source],
        user: set[tuple[ValueKind, str]],
        since: int,
        fed: int,
        later: Callable[[], Sequence[Event]] | None,
    ) -> Provenance:
        """The index as a checkpoint kept it (:meth:`kept`), ``fed`` events taken in; ``later`` reads the events from
        ``since`` whose texts it did not search (all trusted: a checkpoint of an index that had met an untrusted output
        searched them), read only when the index is first needed."""
        self._known, self._user, self.fed = known, user, fed
        self._risky = any(s.untrusted for s in known.values())
        self._since, self._later = (since, later) if since >= 0 and later is not None else (-1, None)
        return self

    def feed(self, events: Sequence[Event]) -> Provenance:
        """Take in ``events[self.fed:]`` (the caller passes the whole, growing log)."""
        for e in events[self.fed :]:
            self._take(e)
        self.fed = max(self.fed, len(events))
        return self

    def add(self, e: Event) -> Provenance:
        """Take in the log's next event (for a holder that feeds it each event as it lands)."""
        self._take(e)
        self.fed += 1
        return self._bounded()

    def add_all(self, events: Sequence[Event]) -> Provenance:
        """:meth:`add` for each of ``events`` in order (a step's batch: one call, not one per event)."""
        take = self._take
        for e in events:
            if e.kind in SOURCE_KINDS:  # what ``_take`` reads at all: the rest return at once, without its frame
                take(e)
            self.fed += 1
        return self._bounded()

    def _bounded(self) -> Provenance:
        """The texts waiting indexed once :data:`PENDING_MAX` or :data:`PENDING_CHARS` is reached (a holder that adds
        each event and keeps no list of them)."""
        if len(self._pending) >= PENDING_MAX or self._pending_chars >= PENDING_CHARS:
            self._index()
        return self

    def _untrusted(self, tool: str) -> bool:
        if tool not in self._trust:
            contract = self.env.tool(tool) or ToolContract(name=tool, purpose="undeclared", effects=[Effect.READ])
            self._trust[tool] = trust_of(contract, self.env) is Trust.UNTRUSTED
        return self._trust[tool]

    def _take(self, e: Event) -> None:
        kind = e.kind
        if kind not in SOURCE_KINDS:  # most events: their payload is not read (nor, for a read event, parsed)
            return
        if self._since < 0:
            self._since = e.seq
        p = e.payload
        texts: Sequence[str]
        if kind == "run.started":
            texts = (p.get("task", ""), *_strings(p.get("plan") or {}))
            self._pending.append((-1, "", False, texts))
        elif kind == "run.continued":
            texts = (p.get("note") or "", p.get("reason", ""))
            self._pending.append((-1, "", False, texts))
        elif kind == "approval.denied":
            texts = (p.get("reason", ""),)
            self._pending.append((-1, "", False, texts))
        else:  # action.completed, action.failed: a tool's output
            tool = p["tool"]
            text = (
                str(p.get("result", {}).get("content", "")) if kind == "action.completed" else str(p.get("error", ""))
            )
            untrusted = self._untrusted(tool)
            self._risky = self._risky or untrusted
            texts = (text,)
            self._pending.append((e.seq, tool, untrusted, texts))
        self._pending_chars += sum([len(t) for t in texts])

    def _index(self) -> None:
        """Index the texts fed and not yet indexed, in the order they were fed: those a checkpoint left first."""
        if self._later is not None:
            later, self._later, waiting, self._pending = self._later, None, self._pending, []
            for e in later():
                self._take(e)
            self._pending += waiting
        pending, self._pending, self._pending_chars, self._since = self._pending, [], 0, -1
        for seq, tool, untrusted, texts in pending:
            if seq < 0:
                for t in texts:
                    self._user.update(keys(t))
            else:
                source = Source(seq, tool, untrusted)
                for k in keys(texts[0]):
                    self._known.setdefault(k, source)

    def tainted_source(self, v: Value) -> Source | None:
        if not self._risky:
            return None  # no untrusted output fed: nothing is tainted
        source = self.known.get(_key(v))
        if source is None or not source.untrusted or _key(v) in self.user:
            return None
        return source

    def taints(self, args: Mapping[str, Any]) -> list[Taint]:
        """Every tainted value in ``args`` (nested values are named by their path: ``to[0]``, ``body.text``)."""
        if not self._risky:
            return []  # no untrusted output fed: no value can have first appeared in one
        self._index()
        out: list[Taint] = []
        for path, value in _leaves(args):
            out += self._judge(path, value)
        return out

    def _judge(self, path: str, value: Any) -> list[Taint]:
        if isinstance(value, bool) or value is None:
            return []
        text = str(value)
        values = candidates(text, every=isinstance(value, int | float) or _atom(text))
        judged: list[tuple[int, int]] = []
        out: list[Taint] = []
        seen: set[tuple[ValueKind, str]] = set()
        for v in sorted(values, key=lambda v: (v.start - v.end, _RANK[v.kind])):  # longest first: a whole covers parts
            if any(s <= v.start and v.end <= e for s, e in judged) or _key(v) in seen:
                continue
            seen.add(_key(v))
            source = self.tainted_source(v)
            if source is not None:
                out.append(Taint(path, v.kind, v.norm, source))
            if _key(v) in self._known or _key(v) in self._user:
                judged.append((v.start, v.end))
        return out


def _leaves(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            yield from _leaves(v, f"{path}[{i}]")
    else:
        yield path, value


def _strings(value: Any) -> list[str]:
    return [str(v) for _, v in _leaves(value) if isinstance(v, str)]


def provenance(events: Sequence[Event], env: Envelope) -> Provenance:
    """The index of a whole log (a one-off caller; the kernel keeps one and feeds it the new events)."""
    return Provenance(env).feed(events)
