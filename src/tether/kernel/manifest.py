"""The context manifest: what went into each model call, and the check that the log rebuilds it exactly.

Before every call the runtime records, per message, its role, its token count, a hash of the message as
sent and the seqs of the events it was built from (``model.requested``'s ``manifest``). The messages
themselves are not stored a second time: they are a function of the log (:class:`~.context.Transcript`),
so ``tether show RUN --context TURN`` rebuilds them from the events before that call and checks each
against its recorded hash. A mismatch means the log or the context code changed since; it is an error
naming the message, never a silently different answer.

Counting and hashing a message is done once: the settled messages' records are kept between calls and
extended by the messages settled since (see :class:`Manifests`), so a call costs its new messages, flat in
the length of the run.

A call records only what changed since the previous call: ``manifest_kept`` leading records of the previous
call's full manifest, then its own. Without it a run whose window is unknown (so never compacted) would
write every earlier message's record again at every call, and its log would grow with the square of its
length. :func:`full_manifests` undoes the delta, walking the calls in log order.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import chain, islice
from typing import Any, NamedTuple, TypeVar, overload

from tether.canonical import content_hash
from tether.envelope.schema import Envelope
from tether.errors import InputError
from tether.events.kinds_kernel import MessageRecord, ModelRequested
from tether.events.store import Event
from tether.models.base import Message, ToolSpec
from tether.models.tokens import Counter

from .context import Sources, Transcript

HASH_DIGITS = 16
T = TypeVar("T")


class Record(NamedTuple):
    """One message's manifest record as a call reads it: a tuple whose ``seqs`` is the transcript's own sources
    tuple. The settled messages' records are not held as these but column by column (:class:`Settled`); a call's
    new records become payload models (:class:`~tether.events.kinds.MessageRecord`) only to be recorded
    (:func:`as_payload`)."""

    role: str
    tokens: int
    hash: str
    seqs: Sources

    def payload(self) -> MessageRecord:
        return MessageRecord(role=self.role, tokens=self.tokens, hash=self.hash, seqs=list(self.seqs))


def as_payload(records: Sequence[Record]) -> list[MessageRecord]:
    """``model.requested``'s ``manifest``: the records a call adds, as the event's payload models."""
    return [r.payload() for r in records]


def message_hash(m: Message) -> str:
    """The first 64 bits of the sha256 of the message as sent: role, text, tool calls and the call it answers."""
    calls = [{"id": c.id, "name": c.name, "args": c.args} for c in m.tool_calls]
    wire = {"role": m.role, "content": m.content, "tool_calls": calls, "tool_call_id": m.tool_call_id}
    return content_hash(wire).removeprefix("sha256:")[:HASH_DIGITS]


class Settled(Sequence[Record]):
    """The settled messages' records, kept for the whole run (two a step while the prompt never compacts, issue
    18), column by column: a role, a token count and the 64-bit hash as a machine integer each, and the
    transcript's own sources tuple; 32 bytes a record where a :class:`Record` and its hash string held 160, and a
    payload model five times that. Reading one builds its :class:`Record` (equal to the one appended). Only
    appended to: a new lineage starts a new one, so a prompt reading the first n records reads them as they
    were."""

    __slots__ = ("_hashes", "_roles", "_seqs", "_tokens")

    def __init__(self) -> None:
        self._roles: list[str] = []
        self._tokens = array("q")
        self._hashes = array("Q")
        self._seqs: list[Sources] = []

    def append(self, r: Record) -> None:
        self._roles.append(r.role)
        self._tokens.append(r.tokens)
        self._hashes.append(int(r.hash, 16))
        self._seqs.append(r.seqs)

    def __len__(self) -> int:
        return len(self._roles)

    @overload
    def __getitem__(self, i: int) -> Record: ...
    @overload
    def __getitem__(self, i: slice) -> list[Record]: ...
    def __getitem__(self, i: int | slice) -> Record | list[Record]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        return Record(self._roles[i], self._tokens[i], f"{self._hashes[i]:0{HASH_DIGITS}x}", self._seqs[i])


class Joined(Sequence[T]):
    """``head[:n]`` followed by ``tail``, without copying ``head``: a prompt's settled part is the transcript's and
    the manifests' own lists, which only grow by appending until they are rewritten (then a reader builds a new
    :class:`Counted`), so a call reads the run's history without copying it (a copy costs the run's length).

    Slices are lists."""

    __slots__ = ("_head", "_n", "_tail")

    def __init__(self, head: Sequence[T], n: int, tail: list[T]) -> None:
        self._head, self._n, self._tail = head, n, tail

    def __len__(self) -> int:
        return self._n + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> T: ...
    @overload
    def __getitem__(self, i: slice) -> list[T]: ...
    def __getitem__(self, i: int | slice) -> T | list[T]:
        n = self._n
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                return [self[j] for j in range(start, stop, step)]
            head = self._head[start : max(start, min(stop, n))]
            return (head if isinstance(head, list) else list(head)) + self._tail[max(start - n, 0) : max(stop - n, 0)]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("prompt index out of range")
        return self._head[i] if i < n else self._tail[i - n]

    def __iter__(self) -> Iterator[T]:
        return chain(islice(self._head, self._n), self._tail)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Joined({list(self)!r})"


@dataclass(frozen=True)
class Counted:
    """A prompt about to be sent: its messages, their manifest, and its tokens by ``counter``.

    ``records[:settled]`` are read from the manifests' ``lineage`` (:class:`Settled`, the records of the
    transcript's settled messages, which only grows until the transcript rewrites a message): two prompts of one
    lineage share that many leading records without comparing them."""

    messages: Sequence[Message]
    records: Sequence[Record]
    tools_tokens: int
    counter: str
    message_tokens: int
    lineage: object
    settled: int

    @property
    def total(self) -> int:
        return self.message_tokens + self.tools_tokens


class Manifests:
    """Counts and hashes the messages of each call, remembering the settled ones between calls.

    The settled messages' records and their token sum are kept across calls and only extended by the
    messages settled since, so a call costs its new messages, not the length of the run. A rewrite of a
    settled message (``Transcript.rewrites``: a section, a compaction) starts a new lineage, rebuilt from
    the per-message cache (a message object never changes, so its record is reused when its sources match).
    """

    def __init__(self, counter: Counter) -> None:
        self.counter = counter
        # The settled messages beside their records (issue 18); a restart turns them into ``_seen``,
        # id(message) -> (it, its seqs, record), for the rebuild only.
        self._msgs: list[Message] = []
        self._seen: dict[int, tuple[Message, Sources, Record]] = {}
        self._tools: tuple[tuple[ToolSpec, ...], int] | None = None
        self._of: tuple[Transcript, int] | None = None  # the transcript and its rewrites the lineage follows
        self._lineage = object()
        self._settled = Settled()
        self._settled_tokens = 0
        # The last call's open turn (built afresh by each call, so known by value): a tool result counted there
        # settles by the next call, whose record is then the same message's, not hashed and counted again.
        self._open: list[tuple[Message, Sources, Record]] = []

    def count(self, transcript: Transcript, specs: Sequence[ToolSpec]) -> Counted:
        done, froms = transcript.done, transcript.froms
        total = len(done)  # each len() of these is a Python __len__: asked once (issue 18)
        if (
            self._of is None
            or self._of[0] is not transcript
            or self._of[1] != transcript.rewrites
            or total < len(self._settled)
        ):
            self._restart(transcript)
        for i in range(len(self._settled), total):
            record = self._record(done[i], froms[i])
            self._settled.append(record)
            self._msgs.append(done[i])
            self._settled_tokens += record.tokens
        self._seen = {}
        tail = [(m, self._new(m, seqs)) for m, seqs in transcript.open_turn()]  # fresh objects every call
        self._open = [(m, r.seqs, r) for m, r in tail]
        settled = total  # the loop above settled every message of ``done``
        return Counted(
            messages=Joined(done, settled, [m for m, _ in tail]),
            records=Joined(self._settled, settled, [r for _, r in tail]),
            tools_tokens=self._tools_tokens(specs),
            counter=self.counter.name,
            message_tokens=self._settled_tokens + sum(r.tokens for _, r in tail),
            lineage=self._lineage,
            settled=settled,
        )

    def _restart(self, transcript: Transcript) -> None:
        """A new lineage, rebuilt reusing the records of the last lineage's messages still in ``done``."""
        live = {id(m) for m in transcript.done}
        last = zip(self._msgs, self._settled, strict=True)
        self._seen = {id(m): (m, r.seqs, r) for m, r in last if id(m) in live}
        self._msgs = []
        self._of = (transcript, transcript.rewrites)
        self._lineage = object()
        self._settled = Settled()
        self._settled_tokens = 0

    def _record(self, m: Message, seqs: Sources) -> Record:
        seen = self._seen.get(id(m))
        if seen is not None and seen[0] is m and seen[1] == seqs:
            return seen[2]
        for was, its, r in self._open:  # equal message, equal sources: the same record (with the settled seqs)
            if was == m and its == seqs:
                return Record(r.role, r.tokens, r.hash, seqs)
        return self._new(m, seqs)

    def _new(self, m: Message, seqs: Sources) -> Record:
        return Record(m.role, self.counter.message(m), message_hash(m), seqs)

    def _tools_tokens(self, specs: Sequence[ToolSpec]) -> int:
        """Counted again whenever a tool's name, description or schema changed (keyed by names alone, a longer
        description kept the old count). The runtime hands the same tuple while no contract changes: no compare."""
        cached = self._tools
        if cached is None or (cached[0] is not specs and cached[0] != tuple(specs)):
            cached = self._tools = (tuple(specs), self.counter.tools(specs))
        return cached[1]


def delta(previous: Counted | None, current: Counted) -> tuple[int, list[Record]]:
    """(kept, new): how many leading records of ``current`` the previous call's full manifest holds, and the rest.

    ``previous`` is None when this driver has not recorded a call (a new process): then nothing is kept.
    Records shared by lineage are kept without a comparison; the rest are compared until one differs."""
    kept = 0
    if previous is not None:
        old, new = previous.records, current.records
        if previous.lineage is current.lineage:
            kept = min(previous.settled, current.settled)
        while kept < len(old) and kept < len(new) and old[kept] == new[kept]:
            kept += 1
    return kept, list(current.records[kept:])


def full_manifests(events: Sequence[Event]) -> dict[int, list[MessageRecord]]:
    """Each recorded call's whole manifest, by its index in ``events``.

    A call that keeps more records than the previous call has is a damaged log, named as such."""
    out: dict[int, list[MessageRecord]] = {}
    previous: list[MessageRecord] = []
    for i, request in requests(events):
        if request.manifest_kept > len(previous):
            raise InputError(
                f"event {events[i].seq}: model.requested keeps {request.manifest_kept} records of the previous "
                f"call's manifest, which has {len(previous)}"
            )
        previous = previous[: request.manifest_kept] + list(request.manifest)
        out[i] = previous
    return out


class ManifestMismatch(InputError):
    """The messages rebuilt from the log are not those the call recorded."""


@dataclass(frozen=True)
class TurnContext:
    """The messages of one recorded call, rebuilt from the log and checked against its manifest."""

    turn: int
    seq: int
    request: ModelRequested
    messages: list[Message]
    records: list[MessageRecord]
    """The call's whole manifest (its own records after the ones it kept from the call before)."""


def requests(events: Sequence[Event]) -> list[tuple[int, ModelRequested]]:
    """Every recorded call: (its index in ``events``, its ``model.requested``)."""
    return [(i, e.data_as(ModelRequested)) for i, e in enumerate(events) if e.kind == ModelRequested.KIND]


def context_at(events: Sequence[Event], turn: int) -> TurnContext:
    """The messages sent at ``turn`` (its last call, if it was retried after a compaction), checked.

    Raises :class:`ManifestMismatch` naming the first message whose rebuilt hash, role or count differs,
    and :class:`~tether.errors.InputError` for a turn with no recorded call or a call recorded without
    a manifest (older logs).
    """
    calls = [(i, r) for i, r in requests(events) if r.turn == turn]
    if not calls:
        turns = sorted({r.turn for _, r in requests(events)})
        known = f"turns with a model call: {turns[0]}-{turns[-1]}" if turns else "no model call was recorded"
        raise InputError(f"turn {turn}: no model call at that turn ({known})")
    index, request = calls[-1]
    records = full_manifests(events)[index]
    if not records:
        raise InputError(f"turn {turn}: the call (event {events[index].seq}) was recorded without a manifest")
    messages = Transcript(_envelope(events), None).feed(events[:index]).messages()
    check(messages, records, f"turn {turn} (event {events[index].seq})")
    return TurnContext(turn, events[index].seq, request, messages, records)


def check(messages: Sequence[Message], manifest: Sequence[MessageRecord | Record], where: str) -> None:
    if len(messages) != len(manifest):
        raise ManifestMismatch(f"{where}: the log rebuilds {len(messages)} messages; the call recorded {len(manifest)}")
    for n, (m, r) in enumerate(zip(messages, manifest, strict=True), start=1):
        got = message_hash(m)
        if m.role != r.role or got != r.hash:
            raise ManifestMismatch(
                f"{where}: message {n} ({r.role}, built from events {_seqs(r.seqs)}) does not match the "
                f"manifest: recorded hash {r.hash}, rebuilt {m.role} message hashes to {got}"
            )


def _envelope(events: Sequence[Event]) -> Envelope:
    """The envelope the run began with (the transcript takes the system prompt from the log itself)."""
    data: dict[str, Any] = events[0].payload.get("envelope") or {} if events else {}
    try:
        return Envelope.model_validate(data)
    except ValueError as e:
        raise InputError(f"the run's run.started event holds no valid envelope: {e}") from e


def _seqs(seqs: Sequence[int]) -> str:
    return ", ".join(str(s) for s in seqs) or "the envelope"
