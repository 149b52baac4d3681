"""A run's log read a page at a time: what a long run's few whole-history readers use instead of a list.

A run's log is numbered without gaps from seq 0 (a fork's starting with its parent's prefix), so a page is
a range of seqs and the log's length is its head's seq + 1. :func:`stream` yields the events of a range in
pages of :data:`PAGE` seqs; :class:`PagedLog` is the whole log as a :class:`~collections.abc.Sequence` that
reads the store on every pass (an index reads the page it falls in, kept until an index falls outside it: the
written log never changes), holding at most one page: a consumer written for a list
(``for e in log``, ``reversed(log)``, ``log[-1]``, ``len(log)``) reads the same events without the list.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

from tether.errors import InputError

from .store import Event

if TYPE_CHECKING:
    from .protocol import Store

#: Seqs per page: 512 events of a few KiB each, read in one query.
PAGE = 512


def stream(
    store: Store,
    run_id: str,
    *,
    after: int = -1,
    upto: int | None = None,
    kinds: Collection[str] | None = None,
    page: int | None = None,
) -> Iterator[Event]:
    """The run's events after seq ``after`` up to seq ``upto`` (the head's when None), of ``kinds``, oldest first,
    read ``page`` seqs (:data:`PAGE`: None) at a time; none for a run that does not exist."""
    page = PAGE if page is None else page
    if page < 1:
        raise InputError(f"a page holds at least one seq, not {page}")
    last = upto
    if last is None:
        try:
            last = store.head(run_id)[0]
        except InputError:  # no such run (yet): no events, as ``store.events`` says
            return
    lo = after
    while lo < last:
        hi = min(lo + page, last)
        yield from store.events(run_id, after=lo, upto=hi, kinds=kinds)
        lo = hi


def stream_back(store: Store, run_id: str, *, upto: int, page: int | None = None) -> Iterator[Event]:
    """The run's events from seq ``upto`` back to seq 0, newest first, ``page`` seqs at a time."""
    page = PAGE if page is None else page
    if page < 1:
        raise InputError(f"a page holds at least one seq, not {page}")
    hi = upto
    while hi >= 0:
        lo = max(hi - page, -1)
        yield from reversed(store.events(run_id, after=lo, upto=hi))
        hi = lo


class PagedLog(Sequence[Event]):
    """A run's whole log as it stands, read from the store on each use: the written events up to seq
    ``written()[0]``, then the staged ones (``written()[1]``, not yet in the store, numbered on from it).

    ``written`` is asked again on every pass, so a view kept while its run appends sees the new events, as a
    list kept current would. One pass must not span an append (every consumer reads, then appends).
    """

    def __init__(
        self, store: Store, run_id: str, written: Callable[[], tuple[int, Sequence[Event]]], page: int | None = None
    ) -> None:
        self.store, self.run_id, self.written, self.page = store, run_id, written, page
        self._held: tuple[int, list[Event]] = (0, [])  # the page the last index fell in: (its first seq, events)

    def __len__(self) -> int:
        upto, staged = self.written()
        return upto + 1 + len(staged)

    def __iter__(self) -> Iterator[Event]:
        upto, staged = self.written()
        yield from stream(self.store, self.run_id, upto=upto, page=self.page)
        yield from staged

    def __reversed__(self) -> Iterator[Event]:
        upto, staged = self.written()
        yield from reversed(staged)
        yield from stream_back(self.store, self.run_id, upto=upto, page=self.page)

    def only(self, kinds: Collection[str]) -> Iterable[Event]:
        """The log's events of ``kinds`` (each pass a query of those kinds, a page at a time, then the staged ones
        of those kinds): a reader of a few kinds parses no event of another."""
        return _Only(self, frozenset(kinds))

    @overload
    def __getitem__(self, i: int) -> Event: ...

    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...

    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        upto, staged = self.written()
        n = upto + 1 + len(staged)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                return self[start:stop][::step] if step > 0 else list(reversed(self[stop + 1 : start + 1]))[::-step]
            if start >= stop:
                return []
            head = list(stream(self.store, self.run_id, after=start - 1, upto=min(stop - 1, upto), page=self.page))
            return head + list(staged[max(start - upto - 1, 0) : max(stop - upto - 1, 0)])
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"log index {i} out of range (the log holds {n} events)")
        if j > upto:
            return staged[j - upto - 1]
        first, held = self._held
        if not first <= j < first + len(held):  # one page held: a scan by index reads a page per page, not per event
            size = PAGE if self.page is None else self.page
            first = j - j % size
            held = self.store.events(self.run_id, after=first - 1, upto=min(first + size - 1, upto))
            self._held = (first, held)
        return held[j - first]


class _Only:
    """:meth:`PagedLog.only`: re-iterable, each pass current like the log's own."""

    def __init__(self, log: PagedLog, kinds: frozenset[str]) -> None:
        self.log, self.kinds = log, kinds

    def __iter__(self) -> Iterator[Event]:
        log = self.log
        upto, staged = log.written()
        yield from stream(log.store, log.run_id, upto=upto, kinds=self.kinds, page=log.page)
        yield from (e for e in staged if e.kind in self.kinds)


__all__ = ["PAGE", "PagedLog", "stream", "stream_back"]
