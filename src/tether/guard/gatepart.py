"""The gate's part of a fold checkpoint as JSON: what a cold PreToolUse reads of it, with nothing to try first.

A checkpoint's body was two pickles, and a pickle nothing vouches for is loaded first in a forked child
(guard/checkpoint.py ``tried``): a hostile one (a tuple nested deep enough to overflow the C stack when hashed, a
graph of shared tuples whose hash never ends) can do harm no load in this process could stop. That trial was the
longer path of a cold call late in a long session (its fork to its verdict ~13 ms for 1,000 calls, then the same
load again here, ~4.6 ms). JSON cannot hold either hazard: it has no tuples (a list is not hashable, an object's
keys are strings) and no shared references (every value is a tree), ``_json``'s scanner counts its nesting against
the recursion limit (``RecursionError``, not a crash), and what it builds is a small multiple of its bytes
(:data:`UNTRIED_BYTES` bounds that; a larger part is parsed in the trial's child first). So the run state's calls
are written as JSON: one row per :class:`~tether.state.Action`, each held once however many indexes name it
(``actions``, ``same_calls``, ``calls_by``, ``_live``: the same objects again when read), the rows by column (a
column whose values repeat, a status or a rule, as its runs: :func:`_columns`), the run state's other
fields as JSON when they are exactly JSON (read back equal, of the same types), and the provenance index's values.
What is not (a refusal's payload model, a stop's fact, a value in a tuple) is handed back to be pickled beside it
and tried as before: a session that has one pays the trial for it alone (a few hundred bytes, not the calls). The
JSON is a head (the other fields, the provenance index, and the part of the calls a plain PreToolUse restores:
:func:`_part`, guard/partial.py) and, after a newline, the calls and their indexes: that reader parses the head alone.

Every index is written as the rows it names and checked against what the fold keeps (``actions`` and ``_live``
by call id, ``same_calls`` by tool and argument hash, ``_filed`` the inverse of ``calls_by``): a state whose
indexes do not hold that is not written here (:func:`encode` returns None and the whole part is pickled). ``_filed``
and ``_keys`` are made again from ``calls_by``: lookups that ``RunState._file`` reads by key, which nothing iterates
(``_keys`` keeps a key whose calls all moved on; read back, it has those of ``calls_by``).
"""

from __future__ import annotations

from _operator import attrgetter, itemgetter  # operator's very functions, without the Python module
from itertools import chain, compress, islice, repeat

from tether import jsonc
from tether.clock import datetime
from tether.guard.partial import HASH_CHARS, Bulk, Partial
from tether.policy.provenance import Source, ValueKind
from tether.state import Action, RunState, Usage
from tether.status import ActionStatus, ClaimStatus, ControlState, RunStatus

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

#: A JSON part larger than this is parsed in the trial's child first (guard/checkpoint.py): what ``_json`` builds is
#: at most ~23 times its bytes (a list of empty lists, or of empty objects: 8 MiB of either built 182-186 MB,
#: measured), so this holds an unchecked parse to ~95 MB, under what the trial's child itself may map
#: (``checkpoint.TRIAL_FLOOR``, 128 MiB); the calls' runs are bounded alike (:data:`CALL_BYTES`). A 1,000-call
#: session's part is ~210 kB: this is ~20,000 calls.
UNTRIED_BYTES = 4 << 20

#: How many of the latest calls a checkpoint's part holds (:func:`_part`), besides those still in flight: a command
#: made again is most often one of the latest, and one the part holds is answered without the whole state (one it left
#: out makes the state whole: ~6 ms late in a 1,000-call session). At least 1: the run state's "is this the latest
#: call" reads the last (guard/partial.py ``Partial.last``). ~200 bytes of JSON a call.
RECENT = 64

#: An :class:`~tether.state.Action`'s fields in the order its constructor takes them: a row is ``Action(*row)``.
FIELDS: tuple[str, ...] = Action.__slots__
_STATUS, _TAINTS = FIELDS.index("status"), FIELDS.index("taints")
_FIELDS_OF = attrgetter(*FIELDS)  # an action's fields in that order, as a tuple
#: The run state's fields written as the rows above, not as values.
INDEXES = frozenset({"actions", "same_calls", "calls_by", "_filed", "_keys", "_live"})
#: The types of the values a column's run may repeat (:func:`_columns`): read back as immutable objects the calls may
#: share. Not a float (``-0.0 == 0.0``: the run would read it back as the first), nor a dict or a list.
_RUNS = frozenset({str, int, bool, type(None)})
#: The bytes of JSON a call takes at the least, for this reader: a part naming more calls than its bytes over this is
#: refused before a run is expanded. A call :func:`encode` writes takes its arguments, result and taints, which never
#: run (``{},{},[],``), its id and its seq (``"toolu_…",12,``: an agent's call id is ~30 characters) and most often its
#: args hash (71); without this bound, a part of calls with empty ids and every other field in one run (14 bytes a
#: call) built ~38 times its bytes (154 MB from 4 MiB, measured), past what :data:`UNTRIED_BYTES` allows; at 24 bytes
#: a call, 25 times (99 MB), about what a parse alone may build.
CALL_BYTES = 24


def encode(
    state: RunState, known: dict[Any, Any], user: set[Any], since: int, turns: int
) -> tuple[bytes, dict[str, Any]] | None:
    """The gate's part as JSON, and what it cannot hold (the run state's fields by name, the provenance index's
    ``known`` and ``user`` when not of their usual types): pickled beside it. None when the calls cannot be written
    as rows (a value that is not exactly JSON in one, an index that is not what the fold keeps)."""
    whole, index = _rows(state)
    if whole is None:
        return None
    left: dict[str, Any] = {}
    fields: dict[str, Any] = {}
    blank = RunState()
    for name, value in vars(state).items():
        if name in INDEXES:
            continue
        default = getattr(blank, name, _NOT_JSON)
        if default is _NOT_JSON:
            return None  # not a field of the run state: the whole part is pickled, as it is
        if type(value) is type(default) and value == default:
            continue  # read back as the default
        coded = _field(name, value)
        if coded is _NOT_JSON:
            left[name] = value
        else:
            fields[name] = coded
    head: dict[str, Any] = {"fields": fields, "since": since, "turns": turns, "part": _part(state, whole)}
    provenance = _provenance(known, user)
    if provenance is None:
        left["known"], left["user"] = known, user
    else:
        head.update(provenance)
    doc = {"calls": _columns(whole.rows), **index}
    return _dumps(head) + b"\n" + _dumps(doc), left


def _dumps(doc: dict[str, Any]) -> bytes:
    """JSON without a newline (none of its strings holds one unescaped): the head and the calls are split at it."""
    return jsonc.dumps(doc, separators=(",", ":")).encode()


class Gate:
    """What :func:`decode` read: the run state, the provenance index's ``known`` and ``user`` (None when they were
    pickled beside it), where its unsearched texts begin, and the turn count. The fields :func:`encode` left to be
    pickled are the run state's defaults until the caller sets them."""

    __slots__ = ("known", "since", "state", "turns", "user")

    def __init__(self, state: RunState, known: Any, user: Any, since: int, turns: int) -> None:
        self.state, self.known, self.user, self.since, self.turns = state, known, user, since, turns


def decode(raw: bytes | memoryview, part: bool = False) -> Gate:
    """The gate's part from its JSON (ASCII, as :func:`encode` writes it; a view of the checkpoint's body, read
    without a copy): its head, then the calls. ``part``: the run state's calls restored in part when the head names
    a part (guard/partial.py; the calls' text is not parsed), else whole. Raises on anything malformed
    (``ValueError``, ``TypeError``, ``KeyError``, ``IndexError``, ``RecursionError``...): the checkpoint is a miss."""
    text = bytes(raw)
    cut = text.index(b"\n")  # ValueError when there is none
    view = memoryview(text)
    doc = _object(view[:cut])
    state = RunState()
    names = vars(state)
    for name, value in doc["fields"].items():
        if name not in names or name in INDEXES:
            raise ValueError(f"a checkpoint's gate part names no field of the run state: {name!r}")
        setattr(state, name, _value(name, value))
    if part and doc["part"] is not None:
        _restore_part(state, doc["part"], cut)
    else:
        _restore_calls(state, _object(view[cut + 1 :]), len(text) - cut - 1)
    since, turns = doc["since"], doc["turns"]
    if type(since) is not int or type(turns) is not int:
        raise ValueError("a checkpoint's gate part whose since or turns is not an integer")
    if "known" not in doc:
        return Gate(state, None, None, since, turns)
    sources = [Source(int(seq), str(tool), bool(untrusted)) for seq, tool, untrusted in doc["sources"]]
    known = {(ValueKind(kind), str(value)): sources[i] for kind, value, i in doc["known"]}
    user = {(ValueKind(kind), str(value)) for kind, value in doc["user"]}
    return Gate(state, known, user, since, turns)


def _restore_calls(state: RunState, doc: dict[str, Any], size: int) -> None:
    """The run state's calls and their indexes, whole."""
    table = _calls(doc["calls"], size)
    state.actions = {a.call_id: a for a in map(table.__getitem__, doc["actions"])}
    state._live = {a.call_id: a for a in map(table.__getitem__, doc["live"])}
    state.same_calls = _same(doc["same"], table.__getitem__)
    keys, filed, by = state._keys, state._filed, state.calls_by
    for status, tool, idx in doc["by"]:
        key = (_STATUSES[status], str(tool))
        keys[key] = key
        bucket = by[key] = {}
        for a in map(table.__getitem__, idx):
            bucket[a.call_id] = a
            filed[a.call_id] = key


def _restore_part(state: RunState, part: dict[str, Any], size: int) -> None:
    """The part of the run state's calls the head names (:func:`_part`), each index a
    :class:`~tether.guard.partial.Partial` of it, knowing the keys it left out."""
    table = _calls(part["calls"], size)
    left, ids, hashes = part["left"], part["ids"], part["hashes"]
    if type(left) is not list or len(left) != 3 or not all(type(n) is int and n >= 0 for n in left):
        raise ValueError("a checkpoint's part whose counts left out are not three counts")
    if type(ids) is not list or type(hashes) is not list or not all(type(k) is str for k in (*ids, *hashes)):
        raise ValueError("a checkpoint's part whose keys left out are not strings")
    bulk = Bulk(frozenset(ids), frozenset(hashes))
    actions = {a.call_id: a for a in map(table.__getitem__, part["actions"])}
    state.actions = Partial(actions, bulk, left[0], last=True)
    state._live = {a.call_id: a for a in map(table.__getitem__, part["live"])}
    if not state._live.keys() <= actions.keys() or (left[0] and not actions) or not bulk.ids.isdisjoint(actions):
        raise ValueError("a checkpoint's part that does not hold the calls a step may be about, or the last one")
    state.same_calls = Partial(_same(part["same"], table.__getitem__), bulk, left[1])
    keys, by = state._keys, state.calls_by
    filed: dict[str, tuple[ActionStatus, str]] = {}
    for status, tool, idx, out in part["by"]:
        key = (_STATUSES[status], str(tool))
        if type(out) is not int or out < 0 or key in keys:
            raise ValueError("a checkpoint's part whose buckets are not counted, or named twice")
        keys[key] = key
        bucket = {}
        for a in map(table.__getitem__, idx):
            if a.call_id not in actions or actions[a.call_id] is not a:
                raise ValueError("a checkpoint's part that files a call it does not hold")
            bucket[a.call_id] = a
            filed[a.call_id] = key
        by[key] = Partial(bucket, bulk, out) if out else bucket
    state._filed = Partial(filed, bulk, left[2])


def _object(text: memoryview) -> dict[str, Any]:
    doc = jsonc.loads(str(text, "utf-8"))
    if type(doc) is not dict:
        raise ValueError("a checkpoint's gate part that is not a JSON object")
    return doc


# ---- writing ---------------------------------------------------------------------------------------------


_NOT_JSON = object()


def _rows(state: RunState) -> tuple[_Rows | None, dict[str, Any]]:
    """Each action the state's indexes hold, once, as a row (the indexer that made them), and each index as the rows
    it names; (None, {}) when an action is not exactly JSON or an index is not what the fold keeps."""
    idx = _Rows()
    try:
        actions = [idx(a) for k, a in state.actions.items() if k == a.call_id or _fail()]
        live = [idx(a) for k, a in state._live.items() if k == a.call_id or _fail()]
        same = [
            [idx(a) for a in calls if k == (a.tool, a.args_hash) or _fail()] for k, calls in state.same_calls.items()
        ]
        by: list[list[Any]] = []
        filed: dict[str, Any] = {}
        for (status, tool), bucket in state.calls_by.items():
            if type(status) is not ActionStatus or type(tool) is not str:
                return None, {}
            by.append([status.value, tool, [idx(a) for k, a in bucket.items() if k == a.call_id or _fail()]])
            filed.update(dict.fromkeys(bucket, (status, tool)))
    except ValueError:
        return None, {}
    if filed != state._filed or any(not calls for calls in same):
        return None, {}
    return idx, {"actions": actions, "live": live, "same": same, "by": by}


class _Rows:
    """Each action once as a row (:func:`_row`), by the object: called with one, the number of its row. ``made``: the
    indexer of the whole calls, whose row of an action is taken as it is, not made and checked again (the part's)."""

    __slots__ = ("at", "made", "rows")

    def __init__(self, made: _Rows | None = None) -> None:
        self.at: dict[int, int] = {}
        self.rows: list[list[Any]] = []
        self.made = made

    def __call__(self, a: Any) -> int:
        n = self.at.get(id(a))
        if n is None:
            n = self.at[id(a)] = len(self.rows)
            made = self.made
            if made is not None and id(a) in made.at:
                self.rows.append(made.rows[made.at[id(a)]])
            else:
                self.rows.append(_row(a))
        return n


def _row(a: Any) -> list[Any]:
    """An action as its row of exact JSON values; ValueError when it is not one."""
    if type(a) is not Action:
        raise ValueError
    row = list(_FIELDS_OF(a))
    taints = row[_TAINTS]
    if type(row[_STATUS]) is not ActionStatus or type(taints) is not tuple:
        raise ValueError
    row[_STATUS], row[_TAINTS] = row[_STATUS].value, list(taints)
    if not _exact(row):
        raise ValueError
    return row


def _part(state: RunState, whole: _Rows) -> dict[str, Any] | None:
    """The part of the calls a cold PreToolUse restores (guard/partial.py): the calls a step may still be about, the
    :data:`RECENT` latest proposed, and every call with the tool and arguments of one of them (so that ``same_calls``
    holds each key's calls all or none); each index as those rows, how many entries each leaves out (``actions``,
    ``same_calls``, ``_filed``; a bucket's own), and the keys it leaves out (the call ids; the argument hashes cut to
    ``partial.HASH_CHARS``). Only :func:`_rows`' state is written (its indexes are what the fold keeps); None when
    one of these calls is filed unlike the fold keeps them, or when the part would hold most of the calls."""
    held = {id(a): a for a in state._live.values()}
    for a in islice(reversed(state.actions.values()), max(RECENT, 1)):
        held[id(a)] = a
    same = [calls for calls in state.same_calls.values() if any(id(a) in held for a in calls)]
    held.update((id(a), a) for calls in same for a in calls)
    ids = {k for k, a in state.actions.items() if id(a) in held}
    if not state._live.keys() <= ids:
        return None
    if 2 * len(held) > len(state.actions):
        return None  # most calls are in flight, or the session is young: the part would be the whole, and slower
    idx = _Rows(whole)
    actions = [idx(a) for k, a in state.actions.items() if k in ids]
    by: list[list[Any]] = []
    for (status, tool), bucket in state.calls_by.items():
        mine = [a for k, a in bucket.items() if k in ids]
        if any(state.actions.get(a.call_id) is not a for a in mine) or any(
            id(a) in held for k, a in bucket.items() if k not in ids
        ):
            return None
        by.append([status.value, tool, [idx(a) for a in mine], len(bucket) - len(mine)])
    filed = sum(1 for k in state._filed if k in ids)
    live = [idx(a) for a in state._live.values()]
    groups = [[idx(a) for a in calls] for calls in same]
    left = [len(state.actions) - len(actions), len(state.same_calls) - len(same), len(state._filed) - filed]
    out = sorted(set(state.actions).union(state._filed).difference(ids))
    kept = {id(calls) for calls in same}
    cut = sorted({h[:HASH_CHARS] for (_, h), calls in state.same_calls.items() if id(calls) not in kept})
    return {
        "calls": _columns(idx.rows),
        "actions": actions,
        "live": live,
        "same": groups,
        "by": by,
        "left": left,
        "ids": out,
        "hashes": cut,
    }


def _fail() -> bool:
    raise ValueError


def _columns(rows: list[list[Any]]) -> list[Any]:
    """The calls' rows as one column a field (:data:`FIELDS`), each the list of its values or, when its values repeat
    (a status, a verdict, a rule, an empty error), its runs: ``{"v": [values], "n": [counts]}``, when that is under
    half as long. Only a value JSON reads as a shared immutable one (:data:`_RUNS`) repeats in a run: every call keeps
    a dict or a list of its own."""
    columns: list[Any] = []
    for values in zip(*rows, strict=True) if rows else [[] for _ in FIELDS]:
        kept: list[Any] = []
        counts: list[int] = []
        for v in values:
            if kept and type(v) in _RUNS and type(kept[-1]) is type(v) and kept[-1] == v:
                counts[-1] += 1
            else:
                kept.append(v)
                counts.append(1)
        columns.append({"v": kept, "n": counts} if 2 * len(kept) < len(values) else list(values))
    return columns


def _field(name: str, value: Any) -> Any:
    """A run state field's value as JSON (by its codec, :data:`_CODECS`, if it has one), or :data:`_NOT_JSON`."""
    codec = _CODECS.get(name)
    if codec is not None:
        return codec[0](value)
    return value if _exact(value) else _NOT_JSON


def _enum(kind: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    return (lambda v: v.value if type(v) is kind else _NOT_JSON), kind


def _used(value: Any) -> Any:
    used = [value.turns, value.tokens, value.usd, value.tool_calls, value.wall_s] if type(value) is Usage else None
    return used if used is not None and _exact(used) else _NOT_JSON


def _since(value: Any) -> Any:
    exact = type(value) is datetime and datetime.fromisoformat(value.isoformat()) == value
    return value.isoformat() if exact else _NOT_JSON


def _settled(value: Any) -> Any:
    return sorted(value) if type(value) is set and all(type(v) is str for v in value) else _NOT_JSON


def _claims(value: Any) -> Any:
    exact = type(value) is dict and all(type(k) is str and type(v) is ClaimStatus for k, v in value.items())
    return {k: v.value for k, v in value.items()} if exact else _NOT_JSON


#: The run state's fields of types JSON does not hold, each written as JSON and read back as its type: (to JSON, or
#: :data:`_NOT_JSON` when the value is not of the field's usual type; from JSON).
_CODECS: dict[str, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    "status": _enum(RunStatus),
    "control": _enum(ControlState),
    "used": (_used, lambda v: Usage(*v)),
    "_active_since": (_since, datetime.fromisoformat),
    "settled": (_settled, set),
    "claims": (_claims, lambda v: {str(k): ClaimStatus(c) for k, c in v.items()}),
}


def _exact(value: Any) -> bool:
    """Whether ``value`` reads back from JSON equal and of the same types: strings, integers, floats, booleans and None,
    in lists and in dicts keyed by strings."""
    t = type(value)
    if t is str or t is int or t is float or t is bool or value is None:
        return True
    if t is list:
        return all(map(_exact, value))
    if t is dict:
        return all(type(k) is str for k in value) and all(map(_exact, value.values()))
    return False


def _provenance(known: dict[Any, Any], user: set[Any]) -> dict[str, Any] | None:
    """The provenance index's values as rows (each source once), or None when one is not of its usual types."""
    at: dict[int, int] = {}
    sources: list[list[Any]] = []
    rows: list[list[Any]] = []
    for key, source in known.items():
        if not _kind_key(key) or type(source) is not Source:
            return None
        n = at.get(id(source))
        if n is None:
            if type(source.seq) is not int or type(source.tool) is not str or type(source.untrusted) is not bool:
                return None
            n = at[id(source)] = len(sources)
            sources.append([source.seq, source.tool, source.untrusted])
        rows.append([key[0].value, key[1], n])
    if type(user) is not set or not all(map(_kind_key, user)):
        return None
    return {"sources": sources, "known": rows, "user": [[k.value, v] for k, v in user]}


def _kind_key(key: Any) -> bool:
    return type(key) is tuple and len(key) == 2 and type(key[0]) is ValueKind and type(key[1]) is str


# ---- reading ---------------------------------------------------------------------------------------------


#: A call's status by its value: a dict's lookup, where calling the enum runs ``EnumType.__call__`` in Python (~0.6
#: ms for 1,000 calls). An unknown value is a ``KeyError``, an unhashable one a ``TypeError``: a miss either way.
_STATUSES: dict[object, ActionStatus] = {s.value: s for s in ActionStatus}


def _calls(columns: Any, size: int) -> list[Action]:
    """The calls from their columns (:func:`_columns`): ``Action(*row)`` for each row, made by ``map`` over the
    columns, the runs expanded by ``repeat`` (no loop in Python a call). ``size``: the JSON's bytes, which bound how
    many calls it may name (:data:`CALL_BYTES`)."""
    if type(columns) is not list or len(columns) != len(FIELDS) or type(columns[0]) is not list:
        raise ValueError("a checkpoint's calls that are not a column a field, the call ids listed")
    n = len(columns[0])
    if n * CALL_BYTES > size:
        raise ValueError("a checkpoint's gate part naming more calls than its bytes hold")
    values = [column if type(column) is list else _expanded(column, n) for column in columns]
    if any(len(column) != n for column in values):
        raise ValueError("a checkpoint's call columns of other lengths")
    made: list[Iterable[Any]] = list(values)
    made[_STATUS] = map(_STATUSES.__getitem__, values[_STATUS])
    made[_TAINTS] = map(tuple, values[_TAINTS])
    return list(map(Action, *made))


_FIRST, _SAME_KEY = itemgetter(0), attrgetter("tool", "args_hash")


def _same(groups: list[list[int]], row: Callable[[int], Action]) -> dict[tuple[str, str], tuple[Action, ...]]:
    """``same_calls`` from its groups of rows: each group's calls as one tuple, keyed by the first's tool and argument
    hash. Nearly every group is one call (an identical call proposed again is the exception), and those are made by
    ``zip`` and ``map`` (no loop in Python a call); the others one by one. Made group by group, this index was ~0.4-0.6
    ms of a 1,000-call session's decode, ~0.3 now. An empty group raises (``IndexError``)."""
    calls: list[tuple[Action, ...]] = list(zip(map(row, map(_FIRST, groups))))  # each group as its first call alone
    for i in compress(range(len(groups)), map((1).__lt__, map(len, groups))):  # the groups of more than one
        calls[i] = tuple(map(row, groups[i]))
    return dict(zip(map(_SAME_KEY, map(_FIRST, calls)), calls, strict=True))


def _expanded(column: Any, n: int) -> list[Any]:
    """A column's runs as its ``n`` values; raises when they are not runs (:func:`_columns`) of ``n`` values in all,
    or when a value that is not a shared immutable one repeats."""
    if type(column) is not dict or column.keys() != {"v", "n"}:
        raise ValueError("a checkpoint's call column that is neither values nor runs")
    values, counts = column["v"], column["n"]
    if type(values) is not list or type(counts) is not list or len(values) != len(counts):
        raise ValueError("a checkpoint's call column whose runs do not pair")
    if not all(type(k) is int and k > 0 for k in counts) or sum(counts) != n:
        raise ValueError("a checkpoint's call column whose runs do not count the calls")
    if any(k > 1 and type(v) not in _RUNS for v, k in zip(values, counts, strict=True)):
        raise ValueError("a checkpoint's call column repeating a value calls may not share")
    return list(chain.from_iterable(map(repeat, values, counts)))


def _value(name: str, value: Any) -> Any:
    codec = _CODECS.get(name)
    return value if codec is None else codec[1](value)
