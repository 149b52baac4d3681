"""The log a guard holds when it was restored from a fold checkpoint (guard/checkpoint.py): its tail in memory,
the rest read from the store only when something asks for it. Its own module so that the guard's session can
name it without importing the checkpoint's reader and writer (which import the session)."""

from __future__ import annotations

from _collections_abc import Sequence  # collections.abc's, without the collections package

from tether import disk, places, plain
from tether.canonical import sha256
from tether.events.chain import GENESIS
from tether.events.store import Event, contents_hash
from tether.typeless import overload

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    from tether.disk import StrPath

#: A fold checkpoint is written once this many events have been folded since the last one (or since opening).
#: Here, not in guard/checkpoint.py: a hook call that writes none decides so without importing the writer. Each cold
#: call folds the events after the checkpoint (up to this many, half on average; ~7 a tool call), and each write
#: costs a receipt ~20 ms in a 1,000-call session (docs/hook-latency.md, "Checkpoints every 64 events"): at 256
#: the fold was ~4 ms of an average late PreToolUse and ~8 of a receipt, at 64 ~1 and ~2, the writes ~2 ms more
#: a receipt on average, fewer events only more writes.
EVERY = 64
#: The same for the daemon, which answers from the folded state it keeps: its checkpoints serve only a cold call
#: after it (a restart, a call it could not answer), and each write, made after a reply, holds the session's lock
#: ~20 ms, which the session's next call waits for. Back-to-back worked calls through the daemon late in a 1,000-call
#: session (80 pairs, 15:27 UTC): the receipts' p95 3.4 ms when it wrote every 256 events, 17.3 every 64.
RESIDENT_EVERY = 256


def wants_fold() -> bool:
    """Whether this process reads a checkpoint's second part, the control layer's fold: every process but a plain one
    that has not imported the control layer's loop (``guard.session.load_observer``, which a hook imports up front for
    a receipt or a prompt): a plain PreToolUse, which decides from the run state without the control layer and writes
    no checkpoint. A plain receipt or prompt reads the fold (its view of the control layer folds the log), and so
    writes the checkpoint when one is due (hooks/session.py ``checkpoint``); the full path and the daemon read it and
    write them too. A process that skipped it and asks for a fold after all gets one made from the log (the control
    layer's ``folded``): slower, never wrong. The gate's part is about a third of the body (a worked 1,000-call
    session: 208 of 637 kB, as JSON by column). Here, not in guard/checkpoint.py, as :data:`EVERY`: a plain
    PreToolUse whose checkpoint is due learns that it writes none without importing the writer (~1.3 ms)."""
    import sys

    return not plain.active() or "tether.control.loop" in sys.modules


def path_for(folder: StrPath, run_id: str) -> str:
    """A session's fold checkpoint in ``folder`` (``str(Path(folder) / name)``). Here too: a hook call looks for one
    without the reader (the folder alone says nothing: it also holds the kept envelopes, guard/envcache.py)."""
    return places.join(disk.text(folder), f"{sha256(run_id.encode()).hexdigest()[:32]}.ckpt")


class Log(Sequence[Event]):
    """The guard's log when it was restored from a checkpoint: the events from the checkpoint's head on are in
    memory; the ones before it are read from the store only if something asks for them (a stop's checks, the
    closing), then kept. Its length is the whole log's."""

    def __init__(self, store: Any, run_id: str, base: int, tail: list[Event]) -> None:
        self._store, self._run_id, self._base, self._tail = store, run_id, base, tail

    def __len__(self) -> int:
        return self._base + len(self._tail)

    @overload
    def __getitem__(self, i: int) -> Event: ...
    @overload
    def __getitem__(self, i: slice) -> list[Event]: ...
    def __getitem__(self, i: int | slice) -> Event | list[Event]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step == 1 and start >= self._base:
                return self._tail[start - self._base : max(start, stop) - self._base]
            return self._whole()[i]
        n = len(self)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError("log index out of range")
        if j >= self._base:
            return self._tail[j - self._base]
        return self._whole()[j]

    def __iter__(self) -> Iterator[Event]:
        return iter(self._whole())

    def append(self, e: Event) -> None:
        self._tail.append(e)

    def _whole(self) -> list[Event]:
        if self._base:
            from tether.errors import LogCorrupt

            upto = self._tail[-1].seq
            whole = [e for e in self._store.events(self._run_id) if e.seq <= upto]
            if len(whole) != len(self) or [e.hash for e in whole[self._base :]] != [e.hash for e in self._tail]:
                raise LogCorrupt(self._run_id, self._base, "the log changed under the session's fold checkpoint")
            prev = GENESIS  # read apart from the audit: each row's contents chain to the verified head's hash
            for e in whole[: self._base + 1]:
                prev = contents_hash(e, prev)
            if prev != self._tail[0].hash:
                raise LogCorrupt(self._run_id, self._base, "an event before the fold checkpoint was rewritten")
            self._tail, self._base = whole, 0
        return self._tail
