"""The run state's calls restored in part: what a cold PreToolUse late in a long session reads of them.

A fold checkpoint holds every call of the session, and making them again is most of what a late cold call adds to an
early one (a 1,000-call session: its JSON parsed, 1,000 calls made and filed in four indexes, ~3-4 ms), while the
decision reads a handful of them by key: the call's own id, the calls with its tool and arguments, how many calls
are in each status. So a checkpoint also names a *part* (guard/gatepart.py ``_part``): the calls a step may still be
about (``_live``), the latest ones proposed, and every call with the tool and arguments of one of them; and how many
the part leaves out of each index, and their keys. A PreToolUse restores only that part, each index as a
:class:`Partial`, and the calls' whole text stays unparsed.

A :class:`Partial` answers only what it can answer exactly as the whole index would: a key it holds; a key that is
none of those it left out (a new call id, a new command: :class:`Bulk`); its length (what it holds and the count it
left out); the last key it holds when that is the whole index's last. Anything else (iterating, comparing, copying,
pickling, printing, a key it left out) raises :class:`Incomplete`, which the guard meets by making the state whole
(guard/session.py ``Guard.exact``: the checkpoint's calls decoded whole from the same bytes and the events after its
head folded again) and asking again: what may raise it reads and writes nothing before it is done (a decision is
built before its events are written; their fold makes the state whole itself). A :class:`Partial` never answers what
the whole index would not.
"""

from __future__ import annotations

from tether.plainrecord import Unsure

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any, NoReturn


class Incomplete(Unsure):
    """A :class:`Partial` was asked what only the whole index can answer. An :class:`~tether.plain.Unsure` (a
    ``BaseException``): no ``except Exception`` takes it for an ordinary failure, and where nothing makes the state
    whole the hook runs the call again on the full path, or refuses it once it wrote (hooks/entry.py)."""


class Bulk:
    """What a part leaves out, by key: the call ids of the entries it left out of ``actions``, ``_filed`` and the
    buckets of ``calls_by``, and the argument hashes of the ``same_calls`` keys it left out, each cut to
    :data:`HASH_CHARS` (guard/gatepart.py ``_part``): whether a key may be among them. A hash cut short may be another
    call's: that only costs the whole state."""

    __slots__ = ("hashes", "ids")

    def __init__(self, ids: frozenset[str] = frozenset(), hashes: frozenset[str] = frozenset()) -> None:
        self.ids, self.hashes = ids, hashes

    def holds(self, key: object) -> bool:
        """Whether the whole index may hold ``key``, left out of the part: a call id, or ``same_calls``' (tool,
        argument hash). A key of another type is not among those: it may."""
        if type(key) is str:
            return key in self.ids
        if type(key) is tuple and len(key) == 2 and type(key[0]) is str and type(key[1]) is str:
            return key[1][:HASH_CHARS] in self.hashes
        return True


#: How much of an argument hash a part names of the ``same_calls`` keys it leaves out: ``sha256:`` and 16 hex digits.
HASH_CHARS = 23


def _whole(*_: Any, **__: Any) -> NoReturn:
    raise Incomplete("a run state restored in part was asked what only the whole state answers")


class Partial(dict):  # type: ignore[type-arg]
    """An index of the run state restored in part (the module's docstring): what it holds, ``left`` entries left out
    of it (their keys in ``bulk``), and whether the last key it holds is the whole index's (``last``).

    A dict, so that the run state's own code reads it as it reads the whole one; every method of a dict that is not
    answered exactly here raises :class:`Incomplete` (``tests/guard/test_partial.py`` holds each of dict's names to
    one or the other, so a method a later Python adds fails the test until it is)."""

    __slots__ = ("bulk", "last", "left")

    def __init__(self, held: dict[Any, Any], bulk: Bulk, left: int, last: bool = False) -> None:
        dict.__init__(self, held)
        self.bulk, self.left, self.last = bulk, left, last

    def _doubt(self, key: object) -> None:
        if self.bulk.holds(key):
            raise Incomplete(f"a key a run state restored in part may have left out: {key!r}"[:200])

    def __missing__(self, key: object) -> NoReturn:
        self._doubt(key)
        raise KeyError(key)

    def get(self, key: object, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        self._doubt(key)
        return default

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        self._doubt(key)
        return False

    def __setitem__(self, key: object, value: Any) -> None:
        if not dict.__contains__(self, key):
            self._doubt(key)
        dict.__setitem__(self, key, value)

    def setdefault(self, key: object, default: Any = None) -> Any:
        if not dict.__contains__(self, key):
            self._doubt(key)
            dict.__setitem__(self, key, default)
        return dict.__getitem__(self, key)

    def pop(self, key: object, *default: Any) -> Any:
        if not dict.__contains__(self, key):
            self._doubt(key)
        self.last = False  # what was the last key may be gone: the whole index's next is not known here
        return dict.pop(self, key, *default)

    def __delitem__(self, key: object) -> None:
        if not dict.__contains__(self, key):
            self._doubt(key)
        self.last = False
        dict.__delitem__(self, key)

    def __len__(self) -> int:
        return dict.__len__(self) + self.left

    def __reversed__(self) -> Iterator[Any]:
        """The last key alone (``next(reversed(index))``, the run state's "is this the latest call"), when it is the
        whole index's; a second one is not known here."""
        if not self.last or not dict.__len__(self):
            _whole()
        return _last_only(dict.__reversed__(self))

    __iter__ = keys = values = items = popitem = copy = clear = update = _whole
    __eq__ = __ne__ = __or__ = __ror__ = __ior__ = __repr__ = _whole
    __reduce__ = __reduce_ex__ = __getstate__ = _whole
    fromkeys = classmethod(_whole)


def _last_only(keys: Iterator[Any]) -> Iterator[Any]:
    yield next(keys)
    _whole()
