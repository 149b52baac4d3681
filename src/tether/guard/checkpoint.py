"""Fold checkpoints: a process that opens a long session loads the guard's folded state instead of refolding.

A cold hook call (no daemon) in a session of 1,000 tool calls used to parse and fold every event of the log
three times over (the run state, the control layer's fold, the provenance index). A checkpoint is that folded
state at a head ``(seq, hash)`` of the log, kept in a file of its own beside the database
(``<db>.folds/<run id>.ckpt``); a later process that finds a valid one folds only the events after it.

What a checkpoint is trusted for, and what it is not (docs/hook-latency.md, "A cold call in a long session"):

- **It stands for the log's audit up to its head, and only there.** :meth:`Guard.open` runs ``verify_run`` from the
  checkpoint's head (:meth:`Pending.mark`: every later hash recomputed, the row at the head holding the head's hash,
  the run's head against the runs table, every signed anchor from there on) before the body is used; when the
  checkpoint is then not used (any doubt below), the whole log is verified as without one. What that leaves to
  others: a row before the head edited in place, its stored hash kept, decides nothing (the fold is the
  checkpoint's) and is found by the whole log's audit every stop runs (hooks/session.py ``stop``), by ``tether
  log verify`` and by the console (docs/hook-latency.md, "The log from the checkpoint's head").
- **It is taken over exactly that log.** It names the head it was taken at and the run's first event; it is
  used only when the verified log has that run, that first event, and the row at its seq has its hash (the
  hash chains every event before it), when the session's envelope has its contract hash, and when the code
  that wrote it is this code. A log whose head is behind it, a rewritten log, a checkpoint of another run,
  session or database, of another version or code, a torn or malformed file: each is ignored and the whole
  log is folded, as without one.
- **It is no easier to forge than the log.** When the store signs anchors (a key from ``tether key init``),
  a checkpoint is signed with the same key and one without a valid signature is ignored. Without a key the
  log itself can be rewritten consistently by whoever can write the database, and the checkpoint beside it
  is as trusted as the log.
- **Reading it runs no code of the file's choosing.** The gate's part is JSON (guard/gatepart.py); what is
  pickled is read by an unpickler that finds only tether's own data classes (dataclasses, pydantic models, enums,
  the folds' classes) and a few plain standard types; any other global fails the read, and the checkpoint is
  ignored.
- **What reading it may cost is bounded.** A file over :data:`MAX_BYTES` is not read (its size checked first);
  a pickled part no store key vouches for is loaded first in a forked child with a memory limit and a deadline
  (:func:`tried`; started before the log's audit, :func:`begin`), and a body whose load there did not end well is
  ignored: a hostile pickle (a memory bomb, a tuple nested deep enough to overflow the C stack when hashed, a graph
  of tuples whose hash never ends) is a miss, never a hang or a crash of this process. JSON can hold none of
  those, and is read untried up to ``gatepart.UNTRIED_BYTES``.

- **A process reads what it uses, and only that is tried.** The body is three parts: the gate's part (the run
  state, the provenance index, the turn count) as JSON, what of it JSON cannot hold pickled (most sessions: nothing),
  then the control layer's fold, pickled without its run state (the gate's, to the same head: a reader that reads the
  fold gives it the gate's part decoded once more, so the state is neither pickled, tried nor loaded twice). A plain
  PreToolUse (:func:`wants_fold`) reads the first two only, and never parses the fold's bytes unless its review
  asks for the fold (a write's): late in a session it forks no trial at all; every other process reads all three,
  each held to the verified log's head.

Written atomically (a temporary file in the same directory, then ``rename``): a crash leaves the old file or
the new one, never a mix; a torn body fails its CRC-32 (:func:`intact`) and is ignored. Two processes writing at
once each rename a whole file: the last rename wins, and either file is valid for the head it names.
"""

from __future__ import annotations

import binascii
import enum
import functools
import io
import itertools
import os
import types

from tether import places, plain
from tether.canonical import sha256_hex
from tether.events.payload import REGISTRY
from tether.events.store import Event
from tether.scoped import suppress
from tether.state import RunState

from . import cachefile, gatepart
from .cachefile import STALE_S as STALE_S
from .cachefile import TMP_PREFIX as TMP_PREFIX
from .cachefile import code_made, parts, read_own, runs_code, seal, sealed, write_own
from .cachefile import sweep as sweep
from .log import Log, path_for, wants_fold
from .partial import Partial

TYPE_CHECKING = False  # not typing's: a cold hook call that reads a checkpoint does not import typing either
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from tether.disk import StrPath
    from tether.events.anchor import Signer

    from .session import Guard

#: The checkpoint format; a file of another version is ignored. 2: the body is two pickles, the gate's part (the run
#: state, the provenance index, the turn count) then the control layer's fold, so that a process that does not use the
#: fold (a plain PreToolUse) loads, and tries, only the first (:func:`wants_fold`); 1 pickled them in one. 3: the
#: gate's part names where the texts its provenance index has not searched begin (``since``: ``Provenance.kept``).
#: 4: the body's check is its CRC-32, and its SHA-256 only under an anchor key (:func:`intact`). 5: the gate's part is
#: JSON (guard/gatepart.py), what JSON cannot hold of it pickled beside it, their sizes in the header's ``parts``.
#: 6: the gate's calls by column, a column's repeated values as runs (``gatepart._columns``). 7: the header's ``code``
#: names the modules that wrote it (``cachefile.code_made``), not a stamp of every module. 8: the gate's part is a head
#: (the run state's other fields, the provenance index, the part of the calls a PreToolUse restores: guard/partial.py)
#: and, after a newline, the calls whole. 9: the fold holds no run state of its own: a reader gives it the gate's.
VERSION = 9
MAGIC = b"tether-fold-checkpoint\n"
#: Whether a plain PreToolUse restores the run state's calls in part (guard/partial.py); every other reader restores
#: them whole, as it does when this is False (tests/hooks/test_partial_state.py compares the two).
PART = True
#: Larger files are not read, their size checked before (a session of 1,000 tool calls, 4,383 events, has a body of
#: 571 KB: ~130 bytes an event; the cap is ~500,000 events).
MAX_BYTES = 64 * 1024 * 1024
#: A body no store key vouches for is first loaded in a forked child (:func:`tried`): the seconds it may take there
#: (:data:`TRIAL_S`, and :data:`TRIAL_S_PER_MB` more a MB of the body: a 21 MB one of real folded state took 5.9 s on
#: a loaded machine), and the memory, beyond what the process already maps: :data:`TRIAL_FLOOR`, or
#: :data:`TRIAL_PER_BYTE` times the body's size if more (a body of nested lists builds ~70 bytes per byte).
TRIAL_S = 2.0
TRIAL_S_PER_MB = 0.5
TRIAL_FLOOR = 128 << 20
TRIAL_PER_BYTE = 16
#: What the trial's child then accepts of the loaded graph (:func:`_walkable`): containers and objects nested at most
#: :data:`TRIAL_DEPTH` deep (the pickler that wrote a checkpoint stops at the interpreter's recursion limit, ~1,000),
#: and a graph whose every walk (a hash, an equality, a repr), shared nodes visited each time met, meets at most
#: :data:`TRIAL_NODES` of them, or :data:`TRIAL_PER_BYTE` times the body's size if more.
TRIAL_DEPTH = 4096
TRIAL_NODES = 1 << 20

_STD: dict[tuple[str, str], Any] = {}


def _std() -> dict[tuple[str, str], Any]:
    """The standard types a body may name, by the module and name pickle writes them as. datetime's from its C part
    (``_datetime``: the very classes ``datetime`` hands out, without the Python module, as tether.clock takes them)."""
    if not _STD:
        import builtins
        import collections
        import copyreg

        try:
            datetime = __import__("_datetime")
        except ImportError:  # pragma: no cover - an interpreter without the C part
            datetime = __import__("datetime")
        for module, held, names in (
            ("datetime", datetime, ("datetime", "date", "time", "timedelta", "timezone")),
            ("collections", collections, ("OrderedDict", "deque", "Counter", "defaultdict")),
        ):
            for name in names:
                _STD[(module, name)] = getattr(held, name)
        for name in ("set", "frozenset", "bytearray", "complex", "slice", "object"):
            _STD[("builtins", name)] = getattr(builtins, name)
        _STD[("copyreg", "_reconstructor")] = copyreg._reconstructor  # type: ignore[attr-defined]
    return _STD


def _event(run_id: str, seq: int, ts: str, kind: str, payload: dict[str, Any], prev_hash: str, hash_: str) -> Event:
    return Event(run_id, seq, ts, kind, payload, prev_hash, hash_)


def _reduce_event(e: Event) -> tuple[Any, ...]:
    return _event, (e.run_id, e.seq, e.ts, e.kind, e.payload, e.prev_hash, e.hash)


#: The folds' own classes (plain classes, not dataclasses): made by ``__new__`` and given their ``__dict__``.
_FOLD_CLASSES = frozenset(
    {
        ("tether.control.fold", "RunFold"),
        ("tether.control.fold", "_Window"),
        ("tether.control.fold", "_Derivation"),
        ("tether.control.planning", "PlanFold"),
        ("tether.control.diagnostics", "FailureCounts"),
        ("tether.control.diagnostics", "Flips"),
        ("tether.control.hypotheses", "HypothesisFold"),
        ("tether.control.receipts", "IntentCalls"),
    }
)


#: Where the payload kinds' modules are: one that the event registry imports only when it meets one of its kinds (a
#: belief, which the control layer's fold keeps, of a session whose Reads gave some) is imported when a body names a
#: class of it. Before, such a body failed its trial in a cold receipt, was removed, and the whole log was folded.
_KINDS = "tether.events."


def _data_class(module: str, name: str) -> Any:
    """A class of tether's whose instances are data, from a module already imported (a checkpoint imports nothing
    but a payload kinds' module the event registry would import for one of its kinds: :data:`_KINDS`), or None: a
    model or an enum the module defines (:func:`.cachefile.model_class`), a dataclass, or one of the folds' classes."""
    import sys

    if not (module == "tether" or module.startswith("tether.")) or "." in name:
        return None
    if module not in sys.modules and module.startswith(_KINDS):  # a payload kind's module the registry imports later
        REGISTRY.import_later(module[len(_KINDS) :])
    if module not in sys.modules:
        return None
    found = cachefile.model_class(sys.modules[module], name)
    if found is not None:
        return found
    obj = getattr(sys.modules[module], name, None)
    if not isinstance(obj, type) or obj.__module__ != module:
        return None
    return obj if _is_dataclass(obj) or (module, name) in _FOLD_CLASSES else None


def _is_dataclass(cls: type) -> bool:
    """``dataclasses.is_dataclass`` of a class (it has ``__dataclass_fields__``), asked of the dictionaries of its
    method order, as a class's attribute is found, without reading the attribute: on a class tether.records made,
    reading it makes the standard fields, which imports ``dataclasses`` (and ``inspect``, ``ast``, ``dis``,
    ``tokenize``: ~8 ms of a cold call that reads a checkpoint). A metaclass's attribute of that name, which
    ``hasattr`` would also find, is not taken: a class accepted here is one ``is_dataclass`` accepts."""
    return any("__dataclass_fields__" in vars(c) for c in cls.__mro__)


def _allowed(module: str, name: str) -> Any:
    """What a checkpoint's body may name: the standard types of ``_std``, the event maker, tether's data classes."""
    std = _std().get((module, name))
    if std is not None:
        return std
    if module == __name__ and name == "_event":
        return _event
    return _data_class(module, name)


#: The unpickler that finds only what :func:`_allowed` gives (:func:`.cachefile.unpickler`): a checkpoint's body cannot
#: name a function to call. Made on first use (:func:`_load`): a call that reads only a body's JSON imports no
#: ``_pickle`` (~0.45 ms).
_UNPICKLER: list[type[Any]] = []


def _load(stream: io.BytesIO) -> Any:
    """The next pickle in ``stream``, by the restricted unpickler."""
    if not _UNPICKLER:
        _UNPICKLER.append(cachefile.unpickler(_allowed, "a fold checkpoint"))
    return _UNPICKLER[0](stream).load()


# ---- writing and reading ----------------------------------------------------------------------------------


def save(guard: Guard, folder: StrPath) -> str | None:
    """Write the guard's folded state at its head, atomically; None when there is nothing to checkpoint (a log
    whose folds are not all at its head, an empty one). Never raises for an I/O failure: a checkpoint is a
    cache, and the log is the truth."""
    events = guard.events
    genesis = guard.genesis or (events[0].hash if isinstance(events, list) and events and events[0].seq == 0 else "")
    if not len(events) or not genesis:
        return None
    made = _body(guard)
    code = code_made()  # after the body: every module its making imported
    if made is None or code is None:
        return None
    sizes, body = made
    header = _header(guard, genesis, code, body)
    header["parts"] = sizes
    seal(header, getattr(guard.store, "signer", None))
    import json  # the writer's alone: a reader parses the header with tether.jsonc

    return write_own(
        folder, path_for(folder, guard.run_id), MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body
    )


def _body(guard: Guard) -> tuple[list[int], bytes] | None:
    """The body, and the sizes of its first two parts (the header's ``parts``), or None when a fold is not at the log's
    head or something will not pickle. Three parts, each whole on its own (they share no object): the gate's part
    (the run state, the provenance index, the turn count) as JSON (guard/gatepart.py), what of it JSON cannot hold
    pickled (empty when nothing; the whole gate's part when its calls cannot be written as JSON), then the control
    layer's fold pickled."""
    import copy

    from tether.control.fold import folded

    events = guard.events
    head = events[-1]
    fold = folded(events)  # the control layer's fold and the provenance index, brought to the head
    prov = guard.indexed()
    turns = guard.turns
    if fold.n != len(events) or fold.head_hash != head.hash or head.seq != len(events) - 1:
        return None
    if prov.fed != len(events) or guard.state.last_seq != head.seq or turns[0] != len(events):
        return None
    if fold.state.last_seq != head.seq or fold.state.head_hash != head.hash:
        return None
    fold_copy = copy.copy(fold)
    fold_copy._rated = None  # a cache holding the envelope: rebuilt on use
    # derive() in progress: a cache, rebuilt on use to the same payloads. They are models, which a plain receipt does
    # not write: a session whose Reads gave beliefs had its checkpoint written again only by a call on the full path
    fold_copy._derivation = None
    # The fold's run state is the gate's (each folds the same events, to this head): not pickled a second time, it
    # was ~85 % of the fold's bytes late in a session, and the trial's and the load's time went with them. A reader
    # gives the fold the gate's part decoded once more (:func:`_fold`); so does the fold's view of the calls.
    fold_copy.state = None  # type: ignore[assignment]  # the reader's to give
    fold_copy.lv = copy.copy(fold.lv)
    fold_copy.lv.proposals = None
    known, user, since = prov.kept()
    try:
        encoded = gatepart.encode(guard.state, known, user, since, turns[1])
        if encoded is None:
            text, left = b"", {"state": guard.state, "known": known, "user": user, "since": since, "turns": turns[1]}
        else:
            text, left = encoded
        pickled = _pickled(left)
        body = text + pickled + _pickled({"fold": fold_copy})
    except Exception:  # something unpicklable, or nested past the recursion limit: no checkpoint, the fold is right
        return None
    return [len(text), len(pickled)], body


def _pickled(part: dict[str, Any]) -> bytes:
    """A part of the body pickled (b"" for an empty one), tether's events by :func:`_reduce_event`; raises for what
    will not pickle, or what a plain process may not write (:func:`_plain_records`)."""
    if not part:
        return b""
    import copyreg
    import pickle  # the writer's alone: a reader unpickles with _pickle (cachefile.unpickler)

    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=5)
    p.dispatch_table = {**copyreg.dispatch_table, **_plain_records(), Event: _reduce_event}
    p.dump(part)
    return buf.getvalue()


def _plain_records() -> dict[type, Any]:
    """In a plain process (tether/plain.py), every plain record class mapped to a reducer that refuses it; elsewhere
    nothing. A plain receipt writes the session's checkpoint (hooks/session.py ``checkpoint``) for the full path and
    the daemon to read, and a body of tether's dataclasses, enums and folds loads the same from either kind of process
    (``tests/hooks/test_plain_checkpoint.py`` compares what each loads to). A plain record stands for a pydantic
    model and pickles in its state format, but whether its state is exactly what pydantic would have made is the full
    path's to vouch for: a body that holds one is not written here (the session's next call on the full path does)."""
    if not plain.active():
        return {}
    from tether.plainrecord import BaseModel

    made: dict[type, Any] = {}
    kinds = [BaseModel]
    while kinds:
        kind = kinds.pop()
        made[kind] = _refuse
        kinds.extend(kind.__subclasses__())
    return made


def _refuse(obj: object) -> Any:
    raise ValueError(f"a plain record ({type(obj).__qualname__}) in a fold checkpoint's body")


def _header(guard: Guard, genesis: str, code: dict[str, Any], body: bytes) -> dict[str, Any]:
    """What a reader checks before the body: this format and code, the run, the log's head, the session."""
    head = guard.events[-1]
    return {
        "version": VERSION,
        "code": code,
        "run_id": guard.run_id,
        "genesis": genesis,
        "seq": head.seq,
        "hash": head.hash,
        "events": len(guard.events),
        "contract": guard.contract,
        "asking": guard.asking.value,
        **digests(body, getattr(guard.store, "signer", None) is not None),
    }


def digests(body: bytes, signed: bool) -> dict[str, Any]:
    """What the header says of its body: its CRC-32, and under an anchor key (``signed``) its SHA-256 too."""
    said: dict[str, Any] = {"body_crc32": binascii.crc32(body)}
    if signed:
        said["body_sha256"] = sha256_hex(body)
    return said


def intact(header: dict[str, Any], body: bytes | memoryview, signed: bool) -> bool:
    """Whether ``body`` is the one ``header`` names. Without a key the check is for a torn or damaged file, and a
    CRC-32 finds one (all but one in 2**32 of random damage): whoever could forge the file could write any digest
    in it, as they could rewrite the log's hashes (the module's docstring). A SHA-256 there cost a cold call
    ~3.8 ms, of it ~3.3 to load OpenSSL's libcrypto that nothing else of a plain PreToolUse loads; the CRC-32 of a
    1,000-call session's 816 kB body takes ~0.2 ms. Under a key the signed header binds the body by its SHA-256."""
    if header.get("body_crc32") != binascii.crc32(body):
        return False
    return not signed or sha256_hex(body) == header.get("body_sha256")


def load(guard: Guard, folder: StrPath, audited: int, pending: Pending | None = None) -> bool:
    """Restore ``guard`` (fresh from :meth:`Guard.open`, its log verified: ``audited`` events) from its
    checkpoint, then fold what came after. False, with the guard untouched, on any doubt. ``pending``: the file as
    :func:`begin` read it before the audit, its body's trial already running (else it is read, and tried, now)."""
    if pending is None:
        pending = begin(folder, guard.run_id, getattr(guard.store, "signer", None) is not None)
        try:
            return load(guard, folder, audited, pending)
        finally:
            pending.close()
    if pending.raw is None:
        return False
    from tether.policy.provenance import Provenance  # before the body: it pickles the index's sources

    try:
        restored = _restore(guard, pending, audited)
    except Exception:  # malformed, forged, another code's: the whole fold, as without a checkpoint
        return False
    if restored is None:
        if pending.failed:
            pending.discard(path_for(folder, guard.run_id))
        return False
    state, fold, fold_later, known, user, since, turns, whole, tail = restored
    base = tail[0].seq
    guard.events = Log(guard.store, guard.run_id, base, [tail[0]])
    guard.state = state
    later = _unsearched(guard, since, base) if since >= 0 else None
    guard._provenance = Provenance(guard.env).resume(known, user, since, base + 1, later)
    guard.turns = (base + 1, turns)
    guard.checkpointed = base + 1
    if fold is not None:
        from tether.control.fold import _FOLDS

        _FOLDS[guard.run_id] = fold
    elif fold_later is not None:  # not read (wants_fold): read, and tried, if the control layer asks (a write's review)
        from tether.control.deferred import LATER

        signed = getattr(guard.store, "signer", None) is not None
        LATER[guard.run_id] = lambda: fold_later(signed)
    guard.whole = whole
    guard._folded(tail[1:])
    return True


class Pending:
    """A session's checkpoint file as :func:`begin` read it (``raw``: None when it was not read: missing, over
    :data:`MAX_BYTES`), and the trial of its body when nothing else vouches for it, started then. :func:`load` reads
    only these bytes: a file swapped after the read is not what is loaded, nor what was tried."""

    def __init__(
        self,
        raw: bytes | None,
        trial: cachefile.Trial | None = None,
        ident: tuple[int, ...] = (),
        fold: bool = True,
        checked: tuple[dict[str, Any], memoryview] | None = None,
    ) -> None:
        self.raw, self.trial, self.ident = raw, trial, ident
        self.fold = fold  # the body's second part, the control layer's fold, is read (and was tried) too
        #: ``raw``'s header and body as :func:`begin` parsed them, the body the one the header names (:func:`intact`):
        #: not parsed nor checked again. The same bytes: ``raw`` is never replaced.
        self.checked = checked
        self.failed = False  # its trial ran and did not end well
        #: Nothing of what this process reads of the body needs a trial (guard/gatepart.py): set by :func:`begin`.
        self.untried = False

    def tried(self) -> bool:
        """Whether the trial (:func:`tried`) of the body ended well: waited for now, if it is still running; true
        when nothing this process reads of it needs one (:attr:`untried`)."""
        if self.untried:
            return True
        ok = self.trial is not None and self.trial.verdict()
        self.failed = self.trial is not None and not ok
        return ok

    def mark(self, run_id: str, signer: Signer | None) -> tuple[int, str] | None:
        """The head ``(seq, hash)`` this checkpoint was taken at, for ``Guard.open`` to audit the log from
        (``verify_run``'s ``since``), when the file is this code's checkpoint of ``run_id``, its body the one its
        header names, and under an anchor key signed with it; else None (the whole log is audited).

        Why a checkpoint may stand for the log before its head: it is written only from a guard's fold, and a guard
        folds only events its open audited or that chain after them (``Guard._fold``), so its writer verified the
        chain up to that head. Without a key, whoever could forge the file could as well rewrite the log and its
        hashes, which the whole log's audit does not detect either; with a key, neither can be forged. Only the
        header is read here: the body is not loaded (its trial, when nothing vouches for it, runs apart)."""
        found = self.checked
        if found is None and self.raw is not None:
            try:
                found = parts(self.raw, MAGIC, MAX_BYTES)
            except (ValueError, RecursionError):
                return None
        if found is None:
            return None
        header, body = found
        if header.get("version") != VERSION or header.get("run_id") != run_id or not runs_code(header.get("code")):
            return None
        if self.checked is None and not intact(header, body, signer is not None):
            return None
        seq, head = header.get("seq"), header.get("hash")
        if type(seq) is not int or seq < 0 or header.get("events") != seq + 1 or type(head) is not str:
            return None
        try:
            if not sealed(header, signer):
                return None
        except Exception:  # a forged signature: not vouched for (its load ignores the file too)
            return None
        self.checked = found  # parsed and its digest checked: not again by load
        return seq, head

    def discard(self, path: str) -> None:
        """Remove the file whose body failed its trial, if it is still the one read (its inode, size and time):
        left there, every later cold call of the session would try it again and wait for its deadline (up to
        ~34 s for a body of :data:`MAX_BYTES`) until the next checkpoint replaced it, and a session under
        ``guard.log.EVERY`` events writes none. A checkpoint is a cache: losing one costs a fold, nothing else.
        Never in a plain process (tether/plain.py): its trial's child loads plain records, which may doubt a body
        pydantic loads; the call goes to the full path, which tries the body itself (redteam5)."""
        plain.unsure("a checkpoint that failed a plain trial: the full path tries it, and removes it if it fails")
        with suppress(OSError):
            st = os.stat(path)
            if (st.st_ino, st.st_size, st.st_mtime_ns) == self.ident:
                os.unlink(path)

    def close(self) -> None:
        """The trial's child, if its verdict was not asked for, killed and reaped (:meth:`.cachefile.Trial.close`)."""
        if self.trial is not None:
            self.trial.close()


def begin(folder: StrPath, run_id: str, signed: bool) -> Pending:
    """Read the session's checkpoint and, when no store key will vouch for it (``signed``: the store has one), start
    the trial of its body in a forked child (:func:`tried`) at once: the child loads and walks it while this process
    audits the log (``Guard.open`` runs ``verify_run`` before the body is used), and :func:`load` waits for its
    verdict only then (a cold call in a session of 1,000 tool calls waited ~35 ms for it after the audit). A body
    whose header is not this code's checkpoint of this run, or that is not the body its header names
    (:func:`intact`), is not tried: :func:`load` ignores either. The caller closes what it gets
    (``try``/``finally``), used or not."""
    read = read_own(folder, places.name(path_for(folder, run_id)), MAX_BYTES)  # a file another user could write: a miss
    if read is None:
        return Pending(None)  # none, too large (not read at all), or not this user's alone
    raw, st = read
    ident = (st.st_ino, st.st_size, st.st_mtime_ns)
    fold = wants_fold()
    _classes_imported(fold)
    if signed:
        return Pending(raw, fold=fold)
    try:
        found = parts(raw, MAGIC, MAX_BYTES)
    except (ValueError, RecursionError):  # a header nested past json's depth too: not tried, and load ignores it
        return Pending(raw, fold=fold)
    if found is None:
        return Pending(raw, fold=fold)
    header, body = found
    if header.get("version") != VERSION or header.get("run_id") != run_id or not runs_code(header.get("code")):
        return Pending(raw, fold=fold)
    split = _split(header, body)
    if not intact(header, body, False) or split is None:
        return Pending(raw, fold=fold)
    text, left, rest = split
    pickles = [part for part in (left, rest if fold else b"") if part]
    large = text if len(text) > gatepart.UNTRIED_BYTES else b""
    if not pickles and not large:  # only JSON to read, of a size it may be read at: nothing to try
        pending = Pending(raw, None, ident, fold, found)
        pending.untried = True
        return pending
    trial = cachefile.Trial(lambda: _trial_parts(large, pickles), trial_seconds(body), trial_allowance(body))
    return Pending(raw, trial, ident, fold, found)


def _split(header: dict[str, Any], body: memoryview) -> tuple[memoryview, memoryview, memoryview] | None:
    """The body's three parts (:func:`_body`) by the header's ``parts``, or None when they do not fit it: views of
    the body, none copied (a plain PreToolUse does not read the fold: ~460 kB; its JSON is decoded from the view)."""
    sizes = header.get("parts")
    if type(sizes) is not list or len(sizes) != 2 or any(type(n) is not int or n < 0 for n in sizes):
        return None
    a, b = sizes
    return (body[:a], body[a : a + b], body[a + b :]) if a + b <= len(body) else None


def _classes_imported(fold: bool = True) -> None:
    """Import the modules whose classes a body names beyond what deciding imports: the control layer's folds (a
    PreToolUse decides without them, ``guard.session.load_observer``) and the provenance index's sources. The
    unpickler finds only classes already imported (a checkpoint imports nothing), and so does the trial's child,
    forked before the session is opened (the fork of a threaded process, the daemon, imports nothing): without
    them, every checkpoint failed its trial in a cold PreToolUse, was removed, and the call folded the whole log.
    ``fold``: the body's fold is read (:func:`wants_fold`); else only the provenance index's module is needed."""
    for module in sorted({m for m, _ in _FOLD_CLASSES if fold} | {"tether.policy.provenance"}):
        __import__(module)  # importlib.import_module's import, without the importlib package


def _vouched(guard: Guard, header: dict[str, Any], body: memoryview, digested: bool = False) -> bool:
    """The header is this format's, this code's, this session's (run, contract, asking mode), the body is the one
    it names (``digested``: checked already, by :func:`begin`), and under an anchor key it is signed with that key (a
    forged signature raises)."""
    if header.get("version") != VERSION or not runs_code(header.get("code")):
        return False
    if header.get("run_id") != guard.run_id or header.get("contract") != guard.contract:
        return False
    if header.get("asking") != guard.asking.value:
        return False
    if not digested and not intact(header, body, getattr(guard.store, "signer", None) is not None):
        return False
    return sealed(header, getattr(guard.store, "signer", None))


def _restore(guard: Guard, pending: Pending, audited: int) -> tuple[Any, ...] | None:
    found = pending.checked or parts(pending.raw or b"", MAGIC, MAX_BYTES)
    if found is None or not _vouched(guard, *found, digested=pending.checked is not None):
        return None
    header, body = found
    seq, events = header.get("seq"), header.get("events")
    if not isinstance(seq, int) or isinstance(seq, bool) or events != seq + 1 or seq < 0:
        return None
    if audited < seq + 1 or not guard.genesis or header.get("genesis") != guard.genesis:
        return None  # the verified log is behind the checkpoint, or is another log
    tail = guard.store.events(guard.run_id, after=seq - 1)
    if not tail or tail[0].seq != seq or tail[0].hash != header.get("hash"):
        return None  # the log at the checkpoint's seq is not the one it was taken over
    if any(b.seq != a.seq + 1 or b.prev_hash != a.hash for a, b in itertools.pairwise(tail)):
        return None
    split = _split(header, body)
    if split is None:
        return None
    text = split[0]
    # The JSON needs no trial under its bound (guard/gatepart.py): read while the pickled parts' trial runs
    part = PART and not pending.fold  # a plain PreToolUse (it reads no control fold)
    untried = bool(text) and len(text) <= gatepart.UNTRIED_BYTES
    read = gatepart.decode(text, part) if untried else None
    fold_read = gatepart.decode(text) if pending.fold and untried else None  # the fold's state: the gate's, its own
    if getattr(guard.store, "signer", None) is None and not pending.tried():
        return None  # nothing vouches for the body, and its load did not end well where it could do no harm
    obj = _gate(text, split[1], read)
    if obj is None:
        return None
    fold = (
        _fold(io.BytesIO(split[2]), seq + 1, tail[0].hash, _gate_state(text, split[1], seq, tail[0].hash, fold_read))
        if pending.fold
        else None
    )
    state = obj.get("state")
    if not isinstance(state, RunState) or state.last_seq != seq or state.head_hash != tail[0].hash:
        return None
    if pending.fold and fold is None:
        return None
    known, user, since, turns = obj.get("known"), obj.get("user"), obj.get("since"), obj.get("turns")
    if not isinstance(known, dict) or not isinstance(user, set) or not isinstance(turns, int):
        return None
    if type(since) is not int or not -1 <= since <= seq:
        return None
    fold_later = None
    if not pending.fold and split[2]:  # the fold's part, not read: read if the control layer asks for it
        fold_later = functools.partial(_later_fold, text, split[1], split[2], seq, tail[0].hash)
    whole = _whole(text, split[1], seq, tail[0].hash) if isinstance(state.actions, Partial) else None
    return state, fold, fold_later, known, user, since, turns, whole, tail


def _gate_state(
    text: memoryview, left: memoryview, seq: int, head: str, read: gatepart.Gate | None = None
) -> RunState | None:
    """The gate part's run state decoded (again) from its bytes, whole (``read``: its JSON read already), when it is
    the state at the head ``(seq, head)``; None when it does not decode (a calls' text malformed: a part was read from
    the head alone) or is not."""
    try:
        obj = _gate(text, left, read)
    except Exception:
        return None
    state = None if obj is None else obj.get("state")
    if not isinstance(state, RunState) or state.last_seq != seq or state.head_hash != head:
        return None
    return state


def _whole(text: memoryview, left: memoryview, seq: int, head: str) -> Callable[[Sequence[Event]], RunState]:
    """What makes a run state restored in part whole (``Guard.whole``): its calls decoded whole from the same bytes,
    then the events the guard holds after the checkpoint's head folded again."""

    def whole(events: Sequence[Event]) -> RunState:
        state = _gate_state(text, left, seq, head)
        if state is None:
            return RunState.from_events(events)  # the whole log, read and checked against the head held (Log)
        for e in events[seq + 1 :]:
            state.apply(e)
        return state

    return whole


def _gate(text: memoryview, left: memoryview, read: gatepart.Gate | None = None) -> dict[str, Any] | None:
    """The gate's part: read from its JSON (guard/gatepart.py; ``read``: read already), what was pickled beside it set
    on the run state; or, when there is no JSON, the whole part as it was pickled. None when the pickled part is not
    what was written."""
    extra = _load(io.BytesIO(left)) if left else {}
    if type(extra) is not dict:
        return None
    if not text:
        return extra
    read = read or gatepart.decode(text)
    names = vars(read.state)
    for name, value in extra.items():
        if name not in ("known", "user"):
            if name not in names or name in gatepart.INDEXES:
                return None
            setattr(read.state, name, value)
    known = read.known if read.known is not None else extra.get("known")
    user = read.user if read.user is not None else extra.get("user")
    return {"state": read.state, "known": known, "user": user, "since": read.since, "turns": read.turns}


def _unsearched(guard: Guard, since: int, upto: int) -> Callable[[], list[Event]]:
    """What reads the events from ``since`` to ``upto`` (the checkpoint's head) whose texts its provenance index did
    not search (``Provenance.kept``), once the index is first needed (an untrusted output came): read from the log
    audited whole first, each held to what the audit verified. The log before the head then decides something (a
    value's first appearance), so it is audited as a Stop audits it; a row rewritten there is :class:`LogCorrupt`."""
    from tether.errors import LogCorrupt
    from tether.events.store import unverified
    from tether.policy.provenance import SOURCE_KINDS

    store, run_id = guard.store, guard.run_id

    def read() -> list[Event]:
        audit = store.verify_run(run_id)
        events = store.events(run_id, after=since - 1, upto=upto, kinds=SOURCE_KINDS)
        bad = unverified(events, audit.hashes)
        if bad is not None:
            raise LogCorrupt(run_id, bad, "an event was rewritten between the log's audit and its read")
        return events

    return read


def _later_fold(text: memoryview, left: memoryview, rest: memoryview, seq: int, head: str, signed: bool) -> Any:
    """The control layer's fold from ``rest``, the body's last part, which the checkpoint's load did not read, its run
    state the gate's (``text``, ``left``) decoded again: tried first as the whole body is (:func:`trying`), unless the
    store's key vouched for the body, and decoded while the child tries. None on any doubt: the control layer folds
    the log instead."""
    _classes_imported(True)
    trial = None if signed else trying(rest)
    try:
        state = _gate_state(text, left, seq, head)  # JSON, and a pickled part tried when the session was opened
        if trial is not None and not trial.verdict():
            return None
        return _fold(io.BytesIO(rest), seq + 1, head, state)
    except Exception:
        return None
    finally:
        if trial is not None:
            trial.close()


def _fold(stream: io.BytesIO, n: int, head: str, state: RunState | None) -> Any:
    """The body's last pickle, the control layer's fold, read from ``stream``, given ``state`` as its run state (the
    gate's part decoded again: the writer left the fold's own out, :func:`_body`); None unless it is a fold of the
    ``n`` events up to ``head`` that holds no run state of its own, nor its view of the calls."""
    from tether.control.fold import RunFold
    from tether.control.receipts import LogView

    obj = _load(stream)
    fold = obj.get("fold") if isinstance(obj, dict) else None
    if not isinstance(fold, RunFold) or fold.n != n or fold.head_hash != head or state is None:
        return None
    lv = vars(fold).get("lv")
    if vars(fold).get("state", 0) is not None or not isinstance(lv, LogView) or lv.proposals is not None:
        return None
    fold.state, lv.proposals = state, state.actions
    return fold


# ---- the trial of a body nothing vouches for ----------------------------------------------------------------


def tried(body: bytes | memoryview) -> bool:
    """Whether ``body`` loads (by this module's unpickler), and what it loads can be walked (:func:`_walkable`), in a
    forked child (:func:`.cachefile.tried`) within :data:`TRIAL_S` seconds and its memory allowance, without dying.
    Without a store key, whoever can write the folder beside the database can forge a checkpoint, digest and all,
    and a pickle that only names allowed classes can still cost without bound: ~70 bytes of memory per byte of
    nested lists, a tuple nested so deep that hashing it as a dict key overflows the C stack (the interpreter dies
    of SIGSEGV), a graph of shared tuples whose hash visits 2**depth of them. None of that can be seen without
    running it, nor stopped in this process once it runs: so it runs in a child first, and this process loads the
    same bytes only after the child's did end well (a load is deterministic: the child is this process, forked).
    Where the trial cannot be made or bounded, False: a miss, the whole log folded, as without a checkpoint."""
    return cachefile.tried(lambda: _trial(body), trial_seconds(body), trial_allowance(body))


def trying(body: bytes | memoryview) -> cachefile.Trial:
    """:func:`tried`'s trial of ``body``, started: its child forked now, this process works meanwhile, then asks for
    the verdict (``Trial.verdict``) and closes it (``try``/``finally``)."""
    return cachefile.Trial(lambda: _trial(body), trial_seconds(body), trial_allowance(body))


def trial_seconds(body: bytes | memoryview) -> float:
    """The trial's deadline: :data:`TRIAL_S`, and :data:`TRIAL_S_PER_MB` more for each MB of the body, so that a
    legitimate body of any size under :data:`MAX_BYTES` is tried to its end (a fixed 2 s killed the trial of bodies
    from ~20 MB: the session then folded its whole log at every cold call), while a hostile one still ends by it."""
    return TRIAL_S + TRIAL_S_PER_MB * len(body) / 1e6


def trial_allowance(body: bytes | memoryview) -> int:
    """The memory the trial's child may map beyond the process: :data:`TRIAL_FLOOR`, or :data:`TRIAL_PER_BYTE`
    times the body's size if more."""
    return max(TRIAL_FLOOR, TRIAL_PER_BYTE * len(body))


def _trial_parts(text: bytes | memoryview, pickles: list[bytes | memoryview]) -> None:
    """In the forked child: the gate's JSON read (``text``: given when it is over ``gatepart.UNTRIED_BYTES``), and
    each pickled part loaded and walked (:func:`_trial`)."""
    if text:
        gatepart.decode(text)
    for part in pickles:
        _trial(part)


def _trial(body: bytes | memoryview) -> None:
    """In the forked child: load ``body``'s pickle and walk it; raises when a walk is not bounded. What is not read is
    not tried: a process that does not read the fold never parses its bytes (:func:`begin`)."""
    loaded = _load(io.BytesIO(body))
    if not _walkable(loaded, TRIAL_DEPTH, max(TRIAL_NODES, TRIAL_PER_BYTE * len(body))):
        raise ValueError("a fold checkpoint's body that no walk of it is bounded")


_LEAVES = (str, bytes, bytearray, int, float, complex, type(None), enum.Enum, type, types.FunctionType)


class _Leafy(dict[type, bool]):
    """Whether a type's instances are leaves (:data:`_LEAVES`), asked once a type in a walk: by the object's own type,
    not by ``isinstance``, which also asks ``__class__`` (~1 µs an object of a tether class, most of the walk's cost
    before)."""

    def __init__(self) -> None:
        super().__init__()
        self.known: set[type] = set()  # the leaf types met so far: see _walkable

    def __missing__(self, t: type) -> bool:
        self[t] = leaf = issubclass(t, _LEAVES)
        if leaf:
            self.known.add(t)
        return leaf


def _walkable(root: Any, depth: int, nodes: int) -> bool:
    """Whether every walk of ``root`` is bounded: nested at most ``depth`` deep, and at most ``nodes`` met when a
    node shared by several holders is met once for each (counted bottom-up, each node once: linear in the graph).
    A load that ends well is not enough: a tuple nested 300,000 deep, or a graph of shared tuples, loads in a
    blink and as a dict's value is never hashed by the load, but the first hash of it in this process would
    overflow the C stack, or never end."""
    import gc

    sizes: dict[int, int] = {}
    path = {id(root)}
    leafy = _Leafy()
    known = leafy.known
    referents = gc.get_referents
    stack: list[list[Any]] = [_frame(root, leafy, referents)]
    while stack:
        top = stack[-1]
        count = top[2]
        if count > nodes:
            return False
        for kid in top[1]:  # no leaves: _frame counted them
            k = id(kid)
            if k in path:  # a cycle's way back: met once
                count += 1
            elif k in sizes:
                count += sizes[k]
            elif len(stack) >= depth:
                return False
            elif type(kid) is dict and known.issuperset(map(type, kid)) and known.issuperset(map(type, kid.values())):
                sizes[k] = size = 1 + 2 * len(kid)  # leaves only, of types met: counted as _frame would, no frame
                count += size
            elif type(kid) is tuple and known.issuperset(map(type, kid)):
                sizes[k] = size = 1 + len(kid)
                count += size
            else:
                path.add(k)
                stack.append(_frame(kid, leafy, referents))
                break
            if count > nodes:
                return False
        else:
            stack.pop()
            path.discard(id(top[0]))
            sizes[id(top[0])] = count
            if stack:
                stack[-1][2] += count
            continue
        top[2] = count
    return True


def _frame(obj: Any, leafy: _Leafy, referents: Any) -> list[Any]:
    """``[obj, what it holds that is not a leaf, what it counts so far]``: itself and its leaves, each met once.
    What it holds: a container's items (a dict's keys and values), an object's attributes and slots."""
    if type(obj) is dict:  # exactly: a subclass's iteration could be its own
        inner = [k for k in obj if not leafy[type(k)]]
        inner += [v for v in obj.values() if not leafy[type(v)]]
        return [obj, iter(inner), 1 + 2 * len(obj) - len(inner)]
    kids = obj if type(obj) in (list, tuple, set, frozenset) else referents(obj)
    inner = [k for k in kids if not leafy[type(k)]]
    return [obj, iter(inner), 1 + len(kids) - len(inner)]
