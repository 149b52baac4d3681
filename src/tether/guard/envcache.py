"""Validated envelopes kept beside the database: a cold hook call neither parses YAML nor builds a validator.

The envelope models are declared ``defer_build``, so the first validation in a process builds the envelope's
pydantic validator (~48 M instructions, ~9 ms), and a hook process that is not the daemon does that on every
call: once for its envelope (a file's YAML parsed and validated, or the built-in one made in code) and once
for the envelope its session's run recorded. A **kept envelope** is what that validation made, written by the
call that paid for it, in a file beside the fold checkpoints (``<db>.folds/<hash of the source>.env``), and read
back by the next process instead: unpickled, not validated (docs/hook-latency.md, "The validated envelope, kept").

What it is keyed by, each checked on every read (any difference is a miss: the source validated as without it):

- **the source**: the SHA-256 of the envelope file's bytes as read (the very bytes that would be parsed, never
  its mtime or size), and whether they are JSON or YAML (by suffix, as the loader decides); for the built-in
  envelope (``hooks/calls.py``), the code that builds it;
- **the code**: the modules of tether that wrote it, each by its size and mtime, and their folders by theirs
  (:func:`.cachefile.code_made`: a module the reader runs that the writer had not imported made nothing here),
  pydantic's and pydantic-core's versions, Python's, and the YAML parser's module (its size and mtime:
  :func:`_stamp`);
- **the format** (:data:`VERSION`), and the file's own name (the source's path, or "built-in").

What it is trusted for, and by whom:

- **It decides nothing the validation would not.** It is written only when the validated envelope survives its
  own round trip: validating its JSON dump gives an equal model with the same contract hash (what the guard
  governs with is the envelope its run recorded, validated from that dump). It holds that dump beside the
  model; the contract hash and the dump's digest are computed from it at each read, and the model read back must
  be that dump exactly (:func:`_state`: a pickle restores any state it is given), so the guard's checks keep
  their meaning: a run whose recorded envelope is not this dump is validated from the log as before, and its
  contract is compared with this one's (a differing one is refused, as always).
- **It is no easier to forge than the log.** When the store signs anchors (a key from ``tether key init``),
  it is signed with that key and one without a valid signature is ignored. Either way it is read only from a
  folder and a file owned by this user (or root) that no one else may write (the file opened inside the folder
  checked, by its descriptor: a folder swapped after its check is not read from).
- **It stands in only for a source this user could change.** A kept envelope is this user's file; it may
  replace the validation of an envelope file only when this user may write that file or its directory (and so
  could change the policy anyway). An envelope only others may change, such as a managed install's
  ``--envelope`` (root's, the install checks), is validated on every call, never kept or read. The built-in
  envelope is the default any hook's environment or project may replace, so it is kept.
- **Reading it runs no code of the file's choosing.** The header holds the envelope's JSON dump, the body the pickle
  of the model. A plain process (tether/plain.py) reads only the dump: it validates it with the plain records, as
  it validates every event it reads, and takes the model only when its state is the dump exactly (:func:`_state`);
  JSON holds no object shared or named, so that read costs what its bytes do (a header of at most
  :data:`MAX_DUMP`), needs no trial and imports no ``_pickle``. A pydantic process reads the pickle (validating
  the dump would build the validator the file saves) by an unpickler that finds only the envelope schema's own classes
  (pydantic models and enums of ``tether.envelope.schema``) and ``set``, ``frozenset``; any other global fails
  the read, and so does a body that alters what it names (a class's attribute, an enum member's value or class:
  :func:`.cachefile.unpickler`). It imports ``_pickle`` (the C unpickler), not ``pickle``.

A torn, truncated, malformed, foreign, unsigned-when-a-key-exists or otherwise doubtful file is ignored: the
source is validated as without it. Written atomically (a temporary file in the folder, renamed into place):
two writers at once each rename a whole file, and either is valid.
"""

from __future__ import annotations

import os
import sys

from tether import disk, jsonc, places, plain
from tether.canonical import content_hash, sha256
from tether.envelope.hashing import contract_hash
from tether.envelope.schema import Envelope
from tether.records import dataclass

from .cachefile import TMP_PREFIX as TMP_PREFIX  # the checkpoints': either writer sweeps a killed one's temporary
from .cachefile import (
    Trial,
    code_made,
    has_sources,
    model_class,
    parts,
    read_own,
    runs_code,
    seal,
    sealed,
    tried,
    unpickler,
    write_own,
)

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from tether.disk import StrPath
    from tether.events.anchor import Signer

#: The format; a file of another version is ignored. 2: the header holds the envelope's dump (``dump``). 3: its
#: ``code`` names the modules that wrote it (``cachefile.code_made``), not a stamp of every module.
VERSION = 3
MAGIC = b"tether-envelope-kept\n"
#: Larger files are not read (an envelope is kilobytes; a source is at most a megabyte).
MAX_BYTES = 8 * 1024 * 1024
#: A plain process reads no dump from a larger header (the built-in envelope's is ~5 KB): the full path reads the file.
MAX_DUMP = 2 * 1024 * 1024
#: A body no store key vouches for is first read in a forked child (:func:`.cachefile.tried`): the seconds that
#: may take there, and the memory beyond what the process maps (a kept envelope's body is ~5 KB).
TRIAL_S = 2.0
TRIAL_ALLOWANCE = 256 << 20
SUFFIX = ".env"
BUILT_IN = "built-in"


@dataclass(frozen=True, eq=False, repr=False)
class Validated:
    """An envelope as validation makes it, with what the guard would otherwise derive from it by serializing it
    (which builds the same validator): its contract hash, its JSON dump (a new run records it) and that dump's
    digest (a run whose recorded envelope has it governs with this very envelope)."""

    envelope: Envelope
    contract: str
    dump: dict[str, Any]
    dumped: str  # content_hash(dump); "" when the envelope does not survive its round trip: not kept
    path: str | None  # the file it came from (resolved); None for the built-in envelope
    kept: bool = False  # read from a kept file (else validated by this process)


def validated(envelope: Envelope, path: StrPath | None) -> Validated:
    """The envelope as the guard governs with it: validated again from its own JSON dump, as a run's recorded
    envelope is. When that round trip changes it (or its contract), the envelope itself, not to be kept."""
    path = None if path is None else disk.text(path)
    dump = envelope.model_dump(mode="json")
    again = Envelope.model_validate(dump)
    contract = contract_hash(envelope)
    if again != envelope or again.model_dump(mode="json") != dump or contract_hash(again) != contract:
        return Validated(envelope, contract, dump, "", path)
    return Validated(again, contract, dump, content_hash(dump), path)


# ---- the key ----------------------------------------------------------------------------------------------


def _versions() -> str:
    """The libraries that made the kept envelope, by their files, without importing them: a plain hook process
    (tether/plain.py) reads the kept file without pydantic, and a hit parses no YAML."""
    import _imp

    compiled = tuple(f"_pydantic_core{suffix}" for suffix in _imp.extension_suffixes())
    return (
        f"pydantic {_stamp('pydantic', ('version.py',))}; pydantic-core {_stamp('pydantic_core', compiled)}; "
        f"python {sys.hexversion:x}; yaml {_stamp('yaml', ('__init__.py',))}"
    )


def _stamp(package: str, names: tuple[str, ...]) -> str:
    """The first of ``names`` that is a file of ``package`` (``yaml/__init__.py``, pydantic-core's compiled module by
    the suffixes import tries, in its order), in the first folder on the path that has one, as ``import`` would find
    it: by its size and mtime (another PyYAML might read the same bytes otherwise, another pydantic validate them
    otherwise). "" when there is none to stat (then made by the same nothing on both sides). Each name is stat'ed,
    not found by listing the folder: pydantic-core's folder also holds a folder named as its module (its type
    hints), which a listing took for the module."""
    import stat

    for entry in sys.path:
        for name in names:
            path = os.path.join(entry or ".", package, name)
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                return f"{os.path.join(entry, package, name)} {st.st_size} {st.st_mtime_ns}"
    return ""


def key_of(source: str, digest: str) -> dict[str, Any]:
    """What decides the validated envelope besides the code (the header's ``code``, :func:`.cachefile.runs_code`):
    the source's kind and digest, these libraries."""
    return {"version": VERSION, "libraries": _versions(), "source": source, "digest": digest}


def file_for(folder: StrPath, path: StrPath | None) -> str:
    """The kept file of ``path`` in ``folder`` (``str(Path(folder) / name)``), named by the digest of its text."""
    name = BUILT_IN if path is None else disk.text(path)
    return places.join(disk.text(folder), f"{sha256(name.encode()).hexdigest()[:32]}{SUFFIX}")


def changeable(path: StrPath | None) -> bool:
    """May this user change the source (so that a file of theirs may stand in for its validation)? The file or
    its directory writable by this user; the built-in envelope always (see the module docstring)."""
    if path is None:
        return True
    effective = os.access in os.supports_effective_ids
    place = disk.text(path)
    up = places.parent(place)
    return os.access(place, os.W_OK, effective_ids=effective) or os.access(up, os.W_OK, effective_ids=effective)


# ---- reading ------------------------------------------------------------------------------------------------


class Early:
    """A kept envelope's file as :func:`begin` read it (``raw``; ``ident``: its inode, size and mtime), and the trial
    of its body (:func:`.cachefile.tried`), started then, when no store key will vouch for it. :func:`load` reads
    only these bytes, so a file swapped after the read is neither what is unpickled nor what was tried. Whoever
    makes one closes it (``try``/``finally``): a child whose verdict was not asked for is killed and reaped then."""

    def __init__(self, folder: str, path: str | None, raw: bytes, ident: tuple[int, ...], trial: Trial | None) -> None:
        self.folder, self.path, self.raw, self.ident, self.trial = folder, path, raw, ident, trial

    def close(self) -> None:
        if self.trial is not None:
            self.trial.close()


def begin(folder: StrPath, path: StrPath | None, signed: bool) -> Early | None:
    """Read the kept envelope of ``path`` (None: the built-in one) and, unless a store key will vouch for it
    (``signed``), fork the trial of its body at once: the child reads it while this process opens the store and
    finds the session (a cold PreToolUse waited ~7 ms for a trial forked only when the envelope was needed). A
    file whose body is not the one its header names is not tried (:func:`load` ignores it anyway); nor is the key
    checked here (the code stamp is taken meanwhile): :func:`load` checks everything before it uses the trial's
    verdict. None when there is no file to read."""
    real = None if path is None else disk.resolve(path)
    read = _file(folder, real)
    if read is None:
        return None
    raw, ident = read
    if plain.active():  # reads the dump, not the pickle: nothing to try (:func:`_from_dump`)
        return Early(disk.text(folder), real, raw, ident, None)
    body = None if signed else _body(raw)
    _reader()
    trial = None if body is None else Trial(lambda: _tried(body), TRIAL_S, TRIAL_ALLOWANCE)
    return Early(disk.text(folder), real, raw, ident, trial)


def _body(raw: bytes) -> memoryview | None:
    """The body of a kept file whose header names its digest, else None (also for a header nested past json's depth,
    whose ``RecursionError`` refused the call: every call of the session, until the file was removed)."""
    try:
        found = parts(raw, MAGIC, MAX_BYTES)
    except (ValueError, RecursionError):
        return None
    if found is None or sha256(found[1]).hexdigest() != found[0].get("body_sha256"):
        return None
    return found[1]


def load(
    folder: StrPath, path: StrPath | None, key: dict[str, Any], signer: Signer | None, early: Early | None = None
) -> Validated | None:
    """The kept envelope of ``path`` (None: the built-in one) under ``key``, or None on any doubt. ``early``: the
    file as :func:`begin` read it, its trial already running (used when it is this file; else it is read now).
    A file whose body failed its trial is removed (if it is still the file read), as a failed fold checkpoint is:
    the validation that follows the miss writes it again, but not when its envelope is not kept, and every call
    would try it again until its deadline."""
    path = None if path is None else disk.text(path)  # the resolved file's text, as kept() hands it
    if early is not None and early.folder == disk.text(folder) and early.path == path:
        raw, ident, trial = early.raw, early.ident, early.trial
    else:
        read = _file(folder, path)
        if read is None:
            return None
        (raw, ident), trial = read, None
    failed: list[bool] = []
    try:
        return _restore(raw, path, key, signer, trial, failed)
    except Exception:  # malformed, forged, another code's: validated as without it
        return None
    finally:
        if failed:
            _discard(file_for(folder, path), ident)


def _file(folder: StrPath, path: str | None) -> tuple[bytes, tuple[int, ...]] | None:
    """The kept file of ``path`` in ``folder`` (its bytes, and its inode, size and mtime), read only from a folder and
    a file of this user's alone (:func:`.cachefile.read_own`); None when there is none to read, or on any doubt."""
    found = read_own(folder, places.name(file_for(folder, path)), MAX_BYTES)
    if found is None:
        return None
    raw, st = found
    return raw, (st.st_ino, st.st_size, st.st_mtime_ns)


def _discard(target: str, ident: tuple[int, ...]) -> None:
    """Remove the kept file whose body failed its trial, if it is still the one read. Never in a plain process
    (tether/plain.py): its trial's child reads plain records, which may doubt a body pydantic reads; the call goes
    to the full path, which tries the body itself (as guard/checkpoint.py ``Pending.discard``)."""
    if plain.active():
        return
    try:
        st = os.stat(target, follow_symlinks=False)
        if (st.st_ino, st.st_size, st.st_mtime_ns) == ident:
            os.unlink(target)
    except OSError:
        pass


def _restore(
    raw: bytes, path: str | None, key: dict[str, Any], signer: Signer | None, trial: Trial | None, failed: list[bool]
) -> Validated | None:
    found = parts(raw, MAGIC, MAX_BYTES)
    if found is None or not _vouched(*found, path, key, signer):
        return None
    if plain.active():
        return _from_dump(found[0].get("dump"), path) if len(raw) - len(found[1]) <= MAX_DUMP else None
    body = found[1]
    if signer is None:  # nothing vouches for the body: read here only if its read ended well where it did no harm
        ok = trial.verdict() if trial is not None else tried(lambda: _tried(body), TRIAL_S, TRIAL_ALLOWANCE)
        if not ok:
            failed.append(True)
            return None
    read = _read(body, checked=signer is None)
    if read is None:
        return None
    envelope, dump = read
    # derived from the dump, as from the model (contract_hash takes either): nothing the header could misstate
    return Validated(envelope, contract_hash(dump), dump, content_hash(dump), path, kept=True)


def _from_dump(dump: object, path: str | None) -> Validated | None:
    """The kept envelope as a plain process reads it: the dump its header holds (read by ``_json``'s C scanner with
    the header, at json's nesting depth) validated by the plain records, taken only when the model's state is the
    dump exactly (what the pickle's reader checks too), else None (a miss: the call goes to the full path). A dump
    the plain records cannot vouch for raises :class:`tether.plain.Unsure` (the full path's). No trial is forked
    for it (~4 ms of CPU a call: the child's, and the pages its fork made this process copy): the dump is JSON, a
    tree without shared objects of at most :data:`MAX_DUMP` bytes, whose reading costs what its bytes do, where
    a pickle that names only the schema's classes can still cost without bound."""
    if not isinstance(dump, dict):
        return None
    envelope = Envelope.model_validate(dump)
    if type(envelope) is not Envelope or not _same(_state(envelope), dump):
        return None
    return Validated(envelope, contract_hash(dump), dump, content_hash(dump), path, kept=True)


def _tried(body: memoryview) -> None:
    """The trial's check, in the forked child: ``body`` read, its envelope's state checked against its dump; raises
    when it is not a kept envelope whose state is its dump. A body that passes reads the same here (deterministic:
    the child is this process, forked), so :func:`_restore` does not walk its state again (:func:`_read`)."""
    if _read(body) is None:
        raise ValueError("a kept envelope whose model is not its dump")


def _read(body: bytes | memoryview, checked: bool = False) -> tuple[Envelope, dict[str, Any]] | None:
    """The envelope and its dump in ``body``, when the envelope's state is its dump; None when not. ``checked``:
    these very bytes passed :func:`_tried` (the state compared with the dump in the trial's child): not compared
    again (3.6 M instructions for the built-in envelope, the trial's wait now overlapping the call's start)."""
    obj = _unpickle(body)
    envelope, dump = obj.get("envelope"), obj.get("dump")
    if type(envelope) is not Envelope or not isinstance(dump, dict):
        return None
    return (envelope, dump) if checked or _same(_state(envelope), dump) else None


def _state(value: Any) -> Any:
    """What ``model_dump(mode="json")`` gives for a model validation made, read from its state without pydantic's
    serializer (building it costs what the kept file saves). A pickle restores a model's state as written: any
    state validation never makes (an attribute beside the fields or one missing, pydantic's extra or private
    state set, a tuple, set or bytes, a class that is not the schema's) raises. The schema's fields are JSON
    values, lists, mappings, enums and models only, none excluded, aliased or serialized otherwise. The two bases
    are looked up once for the walk (``BaseModel`` is a lazy name of tether.plain: ~200 lookups an envelope)."""
    import enum

    from tether.plain import BaseModel

    return _walk(value, enum.Enum, BaseModel)


def _walk(value: Any, members: type, models: type) -> Any:
    """:func:`_state` of ``value``, ``members`` and ``models`` the enum and model bases."""
    kind = type(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is list:
        return [_walk(v, members, models) for v in value]
    if kind is dict:
        if any(type(k) is not str for k in value):
            raise ValueError("a kept envelope's mapping has a key that is not a string")
        return {k: _walk(v, members, models) for k, v in value.items()}
    if isinstance(value, members):
        return _walk(value.value, members, models)  # type: ignore[attr-defined]
    if isinstance(value, models):
        fields = kind.model_fields
        state = object.__getattribute__(value, "__dict__")
        extra = object.__getattribute__(value, "__pydantic_extra__")
        private = object.__getattribute__(value, "__pydantic_private__")
        if set(state) != set(fields) or extra or private:
            raise ValueError(f"a kept envelope's {kind.__name__} holds state validation does not make")
        return {name: _walk(state[name], members, models) for name in fields}
    raise ValueError(f"a kept envelope may not hold a {kind.__name__}")


def _same(state: Any, dump: Any) -> bool:
    """The model's state is its dump, value for value and type for type (``1``, ``1.0`` and ``True`` are equal in
    Python, never in a validated model's dump)."""
    return jsonc.dumps(state, sort_keys=True) == jsonc.dumps(dump, sort_keys=True)


def _vouched(
    header: dict[str, Any], body: memoryview, path: str | None, key: dict[str, Any], signer: Signer | None
) -> bool:
    """The header is this key's (format, code, libraries, source, digest), names this file's source, the body is
    the one it names, and under an anchor key it is signed with that key (a forged signature raises)."""
    if any(header.get(k) != v for k, v in key.items()) or not runs_code(header.get("code")):
        return False
    if header.get("kind") != "envelope" or header.get("path") != (BUILT_IN if path is None else str(path)):
        return False
    if sha256(body).hexdigest() != header.get("body_sha256"):
        return False
    return sealed(header, signer)


def _unpickle(body: bytes | memoryview) -> dict[str, Any]:
    """The body, through the restricted C unpickler (:func:`.cachefile.unpickler`) that finds only the envelope
    schema's models and enums, and ``set``, ``frozenset`` (:func:`_allowed`)."""
    import io

    obj = _reader()(io.BytesIO(body)).load()
    if not isinstance(obj, dict):
        raise ValueError("a kept envelope's body is a mapping")
    return obj


_READER: list[type[Any]] = []


def _reader() -> type[Any]:
    """The reader's class, made at the first read (a process that reads no kept envelope never makes it), or before a
    trial's fork (:func:`begin`): the child of a threaded process (the daemon) imports nothing."""
    if not _READER:
        _READER.append(unpickler(_allowed, "a kept envelope"))
    return _READER[0]


def _allowed(module: str, name: str) -> object:
    """What a kept envelope's body may name: ``set``, ``frozenset``, and the envelope schema's own models and enums
    (defined in ``tether.envelope.schema``, not re-exported there)."""
    if module == "builtins" and name in ("set", "frozenset"):
        return set if name == "set" else frozenset
    from tether.envelope import schema

    return model_class(schema, name) if module == schema.__name__ else None


# ---- writing ------------------------------------------------------------------------------------------------


def save(folder: StrPath, v: Validated, key: dict[str, Any], signer: Signer | None) -> str | None:
    """Keep ``v`` under ``key``, atomically; None when it is not to be kept (it does not survive its round trip, no
    modules to name as its code: ``code_made``, an unpicklable value) or cannot be (an I/O failure, a folder that is
    not this user's alone). Never raises for those: it is a cache."""
    code = code_made()  # after the validation: every module it imported
    if not v.dumped or code is None or contract_hash(v.dump) != v.contract:
        return None
    import pickle

    try:
        pickled = pickle.dumps({"envelope": v.envelope, "dump": v.dump}, protocol=5)
        back = _unpickle(pickled)  # what a reader will find, or nothing is kept
        if back.get("envelope") != v.envelope or back.get("dump") != v.dump or not _same(_state(v.envelope), v.dump):
            return None  # a reader would not take it: never kept (else written again by every call)
    except Exception:
        return None
    header: dict[str, Any] = {
        **key,
        "code": code,
        "kind": "envelope",
        "path": BUILT_IN if v.path is None else str(v.path),
        "dump": v.dump,
        "body_sha256": sha256(pickled).hexdigest(),
    }
    seal(header, signer)
    return write_own(
        folder, file_for(folder, v.path), MAGIC + jsonc.dumps(header, sort_keys=True).encode() + b"\n" + pickled
    )


# ---- the one entry --------------------------------------------------------------------------------------------


def kept(
    folder: StrPath | None,
    path: StrPath | None,
    built_in: Callable[[], Envelope],
    signer: Signer | None = None,
    *,
    data: bytes | None = None,
    early: Early | None = None,
) -> Validated:
    """The envelope of ``path`` (None: ``built_in()``), validated, from its kept file when there is a valid one,
    else validated here and kept for the next process (``folder`` None: neither read nor kept). ``data``: the
    file's bytes already read by the caller (:func:`tether.envelope.source.read_bytes`), which are then what is
    hashed and parsed; else they are read here. The file's own errors (missing, too large, not UTF-8, invalid)
    are raised as :func:`tether.envelope.load.load_envelope` raises them. ``early``: the kept file as :func:`begin`
    read it, its trial started (the caller closes it)."""
    real = None if path is None else disk.resolve(path)
    if real is not None and data is None:
        from tether.envelope.source import read_bytes

        data = read_bytes(real)  # what is hashed is what is parsed
    data = data or b""
    use = folder is not None and has_sources() and changeable(real)
    key: dict[str, Any] = {}
    if use and folder is not None:
        source = BUILT_IN if real is None else ("json" if _suffix(real) == ".json" else "yaml")
        key = key_of(source, "" if real is None else sha256(data).hexdigest())
        found = load(folder, real, key, signer, early)
        if found is not None:
            return found
    plain.unsure("no kept envelope to read: it is validated (with pydantic)")
    if real is None:
        v = validated(built_in(), None)
    else:
        from pathlib import Path  # the envelope parsed (with pydantic): not a kept envelope's call

        from tether.envelope.load import envelope_of

        v = validated(envelope_of(data, Path(real)), real)
    if use and folder is not None:
        save(folder, v, key, signer)
    return v


def _suffix(path: str) -> str:
    """``Path(path).suffix`` of a ``place``: its name's last ``.`` on, where that is neither first nor last."""
    name = places.name(path)
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""
