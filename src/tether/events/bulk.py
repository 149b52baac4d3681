"""A pause of Python's cyclic garbage collector while a log is read or folded in bulk.

Reading a run builds one event and one payload model per row, and a fold keeps most of them; every
700 new container objects the collector walks the young ones and, as they pile up, the whole heap —
work that finds nothing, since none of these objects form cycles that die. Measured on a 21,000-event
run (``benchmarks/eventlog.py``), the collector took over half of a read-and-fold. While a bulk read or
fold runs, collection waits; it resumes (and catches up) when the last one ends. Nested and concurrent
pauses are counted, and a collector the program switched off itself stays off.
"""

from __future__ import annotations

import _thread
import gc

from tether.scoped import contextmanager

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator

_lock = _thread.allocate_lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
