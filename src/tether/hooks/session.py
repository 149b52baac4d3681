"""One hook call, handled on the session's :class:`~tether.guard.Guard`: the hooks keep only what is theirs.

The guard (:mod:`tether.guard.session`) is the one place that opens a governed session's run, decides a tool
call, records its receipt, holds its budgets and ends it; the LangGraph, Agents SDK and MCP integrations use the
same. What is the hooks' own: the wire format (:mod:`.wire`), the agent's tool names as tether calls
(:mod:`.calls`), where the envelope and store are, and the stop — the required sensors and the test-integrity
checks (:mod:`.integrity`) against the baseline taken when the run was created.

Each agent session is one run, ``<agent>-<session id>``, in the project's store (``--db``, ``$TETHER_DB``: a
file or a ``postgresql://`` URL, else ``<workspace>/.tether/tether.db``). The workspace is fixed when the run
starts (the project directory the agent names, else its first ``cwd``); so is the envelope (``--envelope``,
``$TETHER_ENVELOPE``, else ``<workspace>/.tether/envelope.yaml``, else :func:`~tether.hooks.calls.hook_envelope`):
the guard refuses an envelope whose contract differs from the one the run began under.

* ``PreToolUse``: :meth:`Guard.check`. Claude Code asks its own user on an ASK (nothing is staged); a Codex
  ASK stages an approval that ``tether approve`` answers, and the identical call, retried, takes it once.
* ``PostToolUse`` / ``PostToolUseFailure``: :meth:`Guard.report`, the receipt of what the agent ran; for a
  call tether refused the agent, a ``hook.bypassed`` first.
* ``Stop``: the sensors and the test-integrity checks; when they do not accept, the stop is blocked with their
  reasons, at most :data:`MAX_STOP_BLOCKS` times in a row (then the agent may stop, and the user is told it
  stopped without evidence) — Claude Code's ``stop_hook_active`` alone would let the second stop through
  unchecked. A stop ends the run (:meth:`Guard.end`): COMPLETE when accepted, VERIFY_FAILED when let through
  without evidence. A ``SubagentStop`` is only recorded: a subagent's stop claims nothing to the user (its result goes
  to the main agent, which goes on), and the main ``Stop`` is judged on everything the session did, subagents' calls
  included; judged, it sent the session's failures to whatever subagent stopped and spent the main stop's refusals.
* ``SessionEnd`` ends a run still open (NEEDS_INPUT: no stop was accepted). Activity in a session whose run
  ended (a new prompt, a tool call) continues the run (``run.continued``), unless a budget ended it.
* every call, whatever its event, is first a ``hook.received``.
"""

from __future__ import annotations

import _thread
import os
import time

from tether import disk, jsonc, places, plain
from tether.canonical import content_hash, sha256_hex
from tether.envelope.schema import Envelope
from tether.events.anchor import Signer, key_file
from tether.events.backends import StoreSpec, is_url, local_dir, open_store
from tether.events.kinds_calls import HookReceived, RunStarted
from tether.events.payload import Payload
from tether.events.store import Event, EventStore
from tether.guard import log as guard_log
from tether.guard.envcache import Early, Validated, changeable, kept
from tether.guard.envcache import begin as begin_kept
from tether.guard.session import Answer, Asking, BudgetStop, Guard
from tether.policy.decision import Verdict
from tether.records import dataclass
from tether.state import WRITES
from tether.status import ActionStatus
from tether.told import refuses_asks, told
from tether.typeless import TypeVar, cast

from . import preimage
from .calls import MCP, Call, CallError, hook_envelope, tether_calls
from .wire import Outcome

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from tether.disk import StrPath
    from tether.events.kinds_baseline import SuiteBaseline
    from tether.events.kinds_hooks import HookInputChanged
    from tether.events.protocol import Store
    from tether.guard.checkpoint import Pending
    from tether.state import Action

T = TypeVar("T")
MAX_STOP_BLOCKS = 3
#: At most this many changed files a stop lists (``hook.stop``'s ``changed``, what the next session's start takes back
#: when it is let through unverified); past it none is listed, and every file that differs is taken back.
MAX_LISTED = 5000
BLOCKING = ("medium", "high")  # a finding of these severities refuses a stop, as it refuses a completion claim
PROMPT_CHARS = 4000  # of a prompt kept in hook.received
ENVELOPE_NAME = ".tether/envelope.yaml"  # in the workspace, as ``Path(".tether") / "envelope.yaml"`` spells it
DB_NAME = ".tether/tether.db"
#: Events that mean the session is active again after its run ended: they continue the run.
ACTIVITY = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure"})


@dataclass(frozen=True, eq=False, repr=False)
class Settings:
    """Where the hook finds its envelope and store; the client resolves them from its flags and environment."""

    agent: str
    envelope: StrPath | None = None
    db: StoreSpec | None = None  # a file, or a postgresql:// URL (a text backends.is_url says is one)
    project: StrPath | None = None  # $CLAUDE_PROJECT_DIR


#: The characters of a session id kept in its run's id as they are.
_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def run_id_for(agent: str, session_id: str) -> str:
    """The run of an agent's session: its id as it is when every character is :data:`_SAFE` (and it is not
    longer than 80), else its SHA-256. The filter is ``re.sub(r"[^A-Za-z0-9._-]", "", session_id)`` without
    compiling that pattern on every cold call (~0.6 M instructions; ``tests/policy/test_names_without_patterns.py``)."""
    safe = "".join(c for c in session_id if c in _SAFE)[:80]
    return f"{agent}-{safe if safe == session_id else sha256_hex(session_id)[:32]}"


#: What a resident process (the daemon) keeps between calls: open stores and the sessions' guards.
#: Keys carry what would make an entry stale (a database's inode; the digest of an envelope file's bytes).
_CACHE: dict[tuple[Any, ...], Any] = {}
_CACHE_LOCK = _thread.allocate_lock()
_CACHE_MAX = 256
#: The sessions a resident process (the daemon) answered, by their lock: their settings, where their latest call
#: came from (:data:`_WHERE` of it: what :func:`project_of` reads) and guard, kept after each reply
#: (:func:`checkpoint_later`) for :func:`checkpoint_left`, which opens no session anew. Cleared with the cache: no
#: guard is held here that the cache let go.
_ANSWERED: dict[_thread.LockType, tuple[Settings, dict[str, Any], Guard]] = {}
_WHERE = ("session_id", "cwd")
#: How long a session the daemon answered goes without a call before the daemon writes its fold checkpoint at its head
#: (:func:`checkpoint_quiet`), when ``guard.log.EVERY`` events or more were folded since its last. Between an agent's
#: calls are its tools' runs and its model's turns, seconds each, where a write (~20 ms late in a 1,000-call session,
#: under the session's lock) is in nobody's way; back to back (a Pre and the receipt of a quick command, milliseconds
#: apart) it would be, so the daemon writes only every ``RESIDENT_EVERY`` events there.
QUIET_S = 2.0
#: The sessions due a checkpoint once quiet, by their lock: when their latest call was answered (``time.monotonic``).
_QUIET: dict[_thread.LockType, float] = {}


def cached(key: tuple[Any, ...], make: Callable[[], T]) -> T:
    with _CACHE_LOCK:
        if key in _CACHE:
            return cast(T, _CACHE[key])
    value = make()
    if value is None:  # nothing to keep yet (a run not created): asked again next time
        return value
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHE_MAX:
            _CACHE.clear()  # rare (many projects); the stores it held are closed when collected
            _ANSWERED.clear()
            _QUIET.clear()
        return cast(T, _CACHE.setdefault(key, value))


def release() -> None:
    """Close every store this process keeps (:data:`_CACHE`), explicitly: a hook process that ends with
    ``os._exit`` (:func:`tether.hooks.entry.finish`) frees nothing at exit, so no finalizer would close them. A
    store that fails to close is passed over, as a finalizer's failure was: its writes were committed already."""
    with _CACHE_LOCK:
        stores = [value for key, value in _CACHE.items() if key[0] == "store"]
        _CACHE.clear()
        _ANSWERED.clear()
        _QUIET.clear()
    for store in stores:
        try:
            store.close()
        except Exception:  # as a finalizer's failure: nothing to do about it at the end
            continue


def project_of(settings: Settings, data: dict[str, Any]) -> str:
    """The session's project: the one the agent names (``$CLAUDE_PROJECT_DIR``); else, with a store named (``--db``,
    ``$TETHER_DB``), this call's ``cwd``, which only a session's first call uses (the run it creates there records
    its workspace, and every later call finds it in that store); else the one the session's first call pinned
    (:mod:`.pin`: that call's ``cwd``), never this call's, which the agent's ``cd`` moves, and with it the store."""
    if settings.project is not None:
        return disk.resolve(settings.project)
    if settings.db is not None:
        return disk.resolve(str(data["cwd"]))
    from .pin import pin_paths, pinned  # only a session that names no project: not on Claude Code's calls

    run_id = run_id_for(settings.agent, str(data["session_id"]))
    return cached(("pin", *pin_paths(run_id)), lambda: pinned(run_id, str(data["cwd"])))


def envelope_for(settings: Settings, workspace: str) -> tuple[str | None, bytes, tuple[Any, ...]]:
    """The envelope's file (see the module docstring for the order; None: the built-in envelope), its bytes as
    read (bounded: :func:`tether.envelope.source.read_bytes`; a missing or unreadable file raises as the loader
    would), and a key that changes when they do: their SHA-256, never the file's mtime and size, which an edit
    in the same clock tick (or put back with ``touch -d``) keeps. The guard is opened from these very bytes, so
    a guard kept under a key always governs with the envelope the key names."""
    path = None if settings.envelope is None else disk.text(settings.envelope)
    if path is None and disk.is_file(places.join(workspace, ENVELOPE_NAME)):
        path = places.join(workspace, ENVELOPE_NAME)
    if path is None:
        return None, b"", ("built-in",)
    from tether.envelope.source import read_bytes

    data = read_bytes(path)
    return path, data, (path, sha256_hex(data))


def governing(
    path: str | None, data: bytes, db: StoreSpec, store: Store, early: Early | None = None
) -> Envelope | Validated:
    """What the guard opens the session with: the envelope of ``path`` (None: the built-in one), parsed from
    ``data`` (its bytes, read by :func:`envelope_for`) and validated, or kept from an earlier process beside the
    database (guard/envcache.py: no YAML, no validator built; ``early``: its file read and its trial started by
    :func:`kept_early`); for a store without a folder (a URL), nothing is kept or read back."""
    folder = checkpoints_of(db)
    if folder is None:
        plain.unsure("a store without a folder keeps no envelope")
    if folder is None and path is None:
        return cached(("envelope",), hook_envelope)
    return kept(folder, path, hook_envelope, getattr(store, "signer", None), data=data, early=early)


def open_guard(settings: Settings, data: dict[str, Any]) -> Guard:
    """The session's guard: its run created (with the test baseline) on the first hook call, else found."""
    project = project_of(settings, data)
    db = settings.db or places.join(project, DB_NAME)
    session = str(data["session_id"])
    run_id = run_id_for(settings.agent, session)
    early = kept_early(settings, db, project, run_id)
    try:
        store, inode = _store(db, project)
        seen: list[Event] = []  # the run's run.started, when read here: the guard opens with it, not read again
        workspace = disk.text(
            cached(("workspace", str(db), inode, run_id), lambda: _recorded_workspace(store, run_id, seen)) or project
        )
        path, source, stamp = (
            early[1] if early is not None and workspace == project else envelope_for(settings, workspace)
        )
        asking = Asking.RETRY if settings.agent == "codex" else Asking.AGENT  # Claude Code asks its user itself

        def opened() -> Guard:
            folder = checkpoints_of(db)
            pending = begun(folder, run_id, store)  # its trial runs while the envelope is read and the log audited
            try:
                governs = governing(path, source, db, store, early[0] if early is not None else None)
                return Guard.open(
                    store,
                    governs,
                    session,
                    framework=settings.agent,
                    workspace=workspace,
                    task=f"{settings.agent} session {session}",
                    run_id=run_id,
                    begin=lambda ws: [take_baseline(store, ws, contract_of(governs))],
                    asking=asking,
                    strict=False,
                    restore=restorer(folder, pending),
                    start_event=seen[0] if seen else None,
                    since=None if pending is None else pending.mark(run_id, getattr(store, "signer", None)),
                )
            finally:
                if pending is not None:
                    pending.close()

        return cached(("guard", str(db), inode, run_id, stamp), opened)
    finally:
        if early is not None and early[0] is not None:
            early[0].close()


def kept_early(
    settings: Settings, db: StoreSpec, project: str, run_id: str
) -> tuple[Early | None, tuple[str | None, bytes, tuple[Any, ...]]] | None:
    """The session's kept envelope read and its trial forked (guard/envcache.py ``begin``) before the store is opened,
    so that the child reads it while this process opens the store and finds the session's workspace; with the
    envelope found as in the project (the workspace a run recorded is the project, but for a session begun
    elsewhere: then the trial is closed unused, and the envelope read again where the run began). None (nothing
    started) when this process holds the session's guard already (the daemon's later calls), or the store is a
    URL (no folder)."""
    folder = checkpoints_of(db)
    if folder is None or _holds_guard(str(db), run_id):
        return None
    try:
        found = envelope_for(settings, project)
    except Exception:  # the project's envelope, which a session begun elsewhere never reads: raised where it is read
        return None
    path, _, _ = found
    if not changeable(path):
        return None, found  # never kept nor read: validated on every call
    return begin_kept(folder, path, signed=disk.exists(key_file())), found


def _holds_guard(db: str, run_id: str) -> bool:
    with _CACHE_LOCK:
        return any(k[0] == "guard" and k[1] == db and k[3] == run_id for k in _CACHE)


def checkpoints_of(db: StoreSpec) -> str | None:
    """Where a session's fold checkpoints live: beside a database file (``<db>.folds/``, as ``Path`` spells it);
    none for a URL."""
    return None if is_url(db) else disk.text(db) + ".folds"


def begun(folder: str | None, run_id: str, store: Store) -> Pending | None:
    """The session's fold checkpoint read, and the trial of a body no key vouches for started, before the session is
    opened (guard/checkpoint.py ``begin``, imported only when there is a file: none yet in a session under
    ``guard.log.EVERY`` events, and the folder may hold only kept envelopes); None when there is none."""
    if folder is None or not disk.is_file(guard_log.path_for(folder, run_id)):
        return None
    from tether.guard.checkpoint import begin

    return begin(folder, run_id, getattr(store, "signer", None) is not None)


def restorer(folder: str | None, pending: Pending | None = None) -> Callable[[Guard, int], object] | None:
    """:meth:`Guard.open`'s ``restore``: load the session's fold checkpoint from ``folder`` (guard/checkpoint.py,
    imported only when there is a log to restore), from ``pending`` when :func:`begun` read it already."""
    if folder is None:
        return None

    def restore(guard: Guard, audited: int) -> bool:
        if pending is None and not disk.is_file(guard_log.path_for(folder, guard.run_id)):  # none yet: as load() finds,
            return False  # without importing pickle
        from tether.guard.checkpoint import load

        return load(guard, folder, audited, pending)

    return restore


def checkpoint(settings: Settings, data: dict[str, Any], guard: Guard, every: int | None = None) -> None:
    """Leave the session's folded state for the next process that opens it cold, once enough was folded since
    the last one (``every``: ``guard.log.EVERY`` events, the daemon's ``RESIDENT_EVERY``): guard/checkpoint.py,
    imported only then."""
    project = project_of(settings, data)
    folder = checkpoints_of(settings.db or places.join(project, DB_NAME))
    due = guard_log.EVERY if every is None else every
    if folder is None or len(guard.events) - guard.checkpointed < due or not guard_log.wants_fold():
        return  # a plain PreToolUse has no control fold to write: the session's next receipt or prompt writes it
    from tether.guard.checkpoint import save

    turn_of(guard)
    try:
        written = save(guard, folder)
    except plain.Unsure:  # a plain receipt met what only the full path vouches for: its answer stands, no checkpoint
        return
    if written is not None:
        guard.checkpointed = len(guard.events)


def _store(db: StoreSpec, project: str) -> tuple[Store, int | None]:
    """The session's store, kept between calls: a file (a database removed and made anew is opened anew, by its
    inode) or a PostgreSQL URL (its local files in the project's ``.tether/``)."""
    if is_url(db):
        spec = str(db)
        local = local_dir(spec, project)
        return cached(("store", spec), lambda: open_store(spec, signer=Signer.configured(), local=local)), None
    path = disk.text(db)
    inode = _inode(path)
    if inode is None:
        # A project's first call: the store makes the file and is kept under the inode it made. Kept under "none"
        # (as it was), the next call found an inode and opened the store, and the session's guard, a second time.
        made = EventStore.open(path, signer=Signer.configured())
        inode = _inode(path)
        return cached(("store", path, inode), lambda: made), inode
    return cached(("store", path, inode), lambda: EventStore.open(path, signer=Signer.configured())), inode


def _inode(path: str) -> int | None:
    try:
        return os.stat(path).st_ino
    except (FileNotFoundError, NotADirectoryError):
        return None


def take_baseline(store: Store, workspace: str, contract: str | None = None) -> Payload:
    """The test baseline a new session's run starts with (:func:`.integrity.take_baseline`, imported here: only
    a session's first call and a stop read the test surface, so a tool call does not import its parsers);
    ``contract``: the contract hash the new run records (:func:`contract_of`)."""
    from pathlib import Path

    from .integrity import take_baseline as take

    return take(store, Path(workspace), contract)


def contract_of(env: Envelope | Validated) -> str:
    """The contract hash a new run governed by ``env`` records (guard/session.py ``_opening``: the envelope's own,
    else the kept one's, else computed): an earlier session that ended verified under another contract vouches for
    nothing under this one (:mod:`.earlier`). Only a session's first call asks."""
    from tether.envelope.hashing import contract_hash

    if isinstance(env, Validated):
        return env.envelope.contract_hash or env.contract or contract_hash(env.envelope)
    return env.contract_hash or contract_hash(env)


def _recorded_workspace(store: Store, run_id: str, seen: list[Event] | None = None) -> str | None:
    """The workspace a session's run began in (a later ``cd`` of the agent does not move it); None (not kept
    by :func:`cached`, so asked again) while the run does not exist. ``seen``: where the ``run.started`` read
    is left for the opening of the guard in the same call (it holds the envelope: one parse of it fewer)."""
    try:
        if store.run(run_id).run_id != run_id:  # run() also accepts a prefix: only an exact hit counts
            return None
    except Exception:
        return None
    first = store.events(run_id, upto=0)  # a session's run begins with it: no walk of the whole log for the kind
    if not first or first[0].kind != RunStarted.KIND:  # a run that does not (another program's): the first one
        first = store.events(run_id, kinds={RunStarted.KIND})
    if first and seen is not None:
        seen.append(first[0])
    return str(first[0].payload.get("workspace", "")) if first else None


def escaped(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate (JSON may spell half of a UTF-16 pair, a pasted binary in a
    prompt, a tool's error) written as its backslash escape (``\\ud800`` for U+D800), so the event can be stored and
    the run read back. The fields the gate judges never get here with one (hooks/wire.py ``JUDGED``: refused)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


#: The fields of a hook call ``hook.received`` keeps (the rest is the call itself, or the agent's telemetry): what was
#: called, the prompt, how the session began or ended and on which model, whether a failure was the user's interrupt,
#: and which subagent acted (``agent_id``/``agent_type``: ``tether show`` names it before what it did).
KEPT = (
    "tool_name",
    "tool_use_id",
    "prompt",
    "source",
    "model",
    "reason",
    "is_interrupt",
    "stop_hook_active",
    "permission_mode",
    "turn_id",
    "agent_id",
    "agent_type",
)


def received(agent: str, data: dict[str, Any]) -> HookReceived:
    detail = {k: escaped(data[k]) if isinstance(data[k], str) else data[k] for k in KEPT if k in data}
    if isinstance(detail.get("prompt"), str):
        detail["prompt"] = detail["prompt"][:PROMPT_CHARS]
    return HookReceived(
        agent=agent,
        event=str(data["hook_event_name"]),
        session_id=str(data["session_id"]),
        cwd=str(data["cwd"]),
        detail=detail,
    )


def handle(settings: Settings, data: dict[str, Any], later: list[Callable[[], None]] | None = None) -> Outcome:
    """Answer one hook call (``data`` has passed :func:`tether.hooks.wire.parse`).

    Calls of one session are answered one at a time in a process (the daemon serves several at once), so
    each decision reads the log its predecessor wrote. The fold checkpoint (when one is due) is written before
    returning, or, given ``later`` (the daemon), left there as work to run once the reply is sent: the agent
    does not wait for it. The events the answer depends on are on disk before it returns either way.
    """
    lock = cached(("session", settings.agent, str(data["session_id"])), _thread.allocate_lock)
    with lock:
        out = _handle(settings, data)
        if later is None:
            checkpoint(settings, data, open_guard(settings, data))
        else:
            later.append(lambda: checkpoint_later(lock, settings, data))
        return out


def checkpoint_later(lock: _thread.LockType, settings: Settings, data: dict[str, Any]) -> None:
    """:func:`checkpoint` after the reply: under the session's lock, so the folded state it pickles is not moved
    by the session's next call meanwhile, and two of the daemon's writers of one session never overlap (the file
    itself is renamed into place whole: a crash leaves the old one or none). A checkpoint is a cache: a failure
    here is the next cold call's longer fold, nothing else."""
    try:
        with lock:
            guard = open_guard(settings, data)
            checkpoint(settings, data, guard, guard_log.RESIDENT_EVERY)
            where = {k: data[k] for k in _WHERE if k in data}  # not the call's input: a Write's may be 8 MiB
            with _CACHE_LOCK:
                _ANSWERED[lock] = (settings, where, guard)
                if len(guard.events) - guard.checkpointed >= guard_log.EVERY:
                    _QUIET[lock] = time.monotonic()
                else:
                    _QUIET.pop(lock, None)
    except Exception:
        pass


def quiet_due(quiet_s: float | None = None) -> float | None:
    """How long until the first session waiting for :func:`checkpoint_quiet` is due (0 or less: now), None when none
    waits."""
    with _CACHE_LOCK:
        first = min(_QUIET.values(), default=None)
    return None if first is None else first + (QUIET_S if quiet_s is None else quiet_s) - time.monotonic()


def checkpoint_quiet(quiet_s: float | None = None) -> None:
    """For a resident process (the daemon), between calls: each session it answered that has gone ``quiet_s`` seconds
    (:data:`QUIET_S`) without a call, with ``guard.log.EVERY`` events or more folded since its last checkpoint, gets
    one at its head, as at the daemon's end (:func:`checkpoint_left`). So a cold call while the daemon runs (one it
    declined, the first after it was killed) folds at most what came since the session's last quiet moment, not up to
    ``RESIDENT_EVERY`` events. A session whose lock is held (a call of it in flight) is passed over: that call's own
    work after its reply files it again. When the next is due: :func:`quiet_due`."""
    quiet = QUIET_S if quiet_s is None else quiet_s
    now = time.monotonic()
    with _CACHE_LOCK:
        due = [lock for lock, at in _QUIET.items() if now - at >= quiet]
        for lock in due:
            del _QUIET[lock]
        answered = [(lock, _ANSWERED[lock]) for lock in due if lock in _ANSWERED]
    for lock, (settings, where, guard) in answered:
        if lock.acquire(blocking=False):
            try:
                _at_head(settings, where, guard)
            finally:
                lock.release()


def _at_head(settings: Settings, where: dict[str, Any], guard: Guard) -> None:
    """The session's checkpoint (:func:`checkpoint`, when due) from the guard the resident process answered with, under
    the session's lock, when no other process wrote to the session since (a cold call: this state is behind its log
    then, and a checkpoint of it would replace a newer one). A checkpoint is a cache: whatever fails here is the next
    cold call's longer fold."""
    try:
        if guard.store.head(guard.run_id) == guard.events[-1].head:
            checkpoint(settings, where, guard)
    except Exception:
        pass


def checkpoint_left() -> None:
    """At a resident process's end (the daemon idle, told to stop or on SIGTERM, still running the code on disk): each
    session it answered gets its fold checkpoint at its head, when ``guard.log.EVERY`` events or more were folded since
    the last (as a cold call's receipt writes one). The daemon writes one only every ``RESIDENT_EVERY`` events (each
    write holds the session's lock, which its next call waits for), so the cold call after its end (the first after
    it idled out, which starts the next daemon) folded up to that many from the log, each read, parsed and audited
    (docs/hook-latency.md, "The daemon's last checkpoints"). Nobody waits for these: the daemon's socket is gone. A
    session another process wrote to since (a cold call, once the socket was gone) is left as it is: this state is
    behind its log, and a checkpoint of it would replace a newer one."""
    with _CACHE_LOCK:
        left = list(_ANSWERED.items())
        _ANSWERED.clear()
        _QUIET.clear()
    for lock, (settings, where, guard) in left:
        with lock:
            _at_head(settings, where, guard)


def _handle(settings: Settings, data: dict[str, Any]) -> Outcome:
    guard = open_guard(settings, data)
    event = str(data["hook_event_name"])
    head: list[Payload] = [received(settings.agent, data)]
    if event in ACTIVITY and guard.refresh().finished:
        from tether.kernel.approvals import whoami  # here: a session reopened is rare

        guard.reopen(whoami(), f"{event} in the {settings.agent} session after its run ended")
    if event == "PreToolUse":
        return pre_tool_use(guard, settings.agent, data, head)
    if event in ("PostToolUse", "PostToolUseFailure"):
        failed = event == "PostToolUseFailure"
        lead = [*head, *bypassed(guard, settings.agent, data)]  # whatever input it reports: a refused call ran
        if not changed_input(guard, settings.agent, data, lead, failed=failed):
            receipt(guard, settings.agent, data, lead, failed=failed, judged=True)
        return Outcome("PASS")
    if event == "Stop" and not guard.refresh().finished:
        return stop(guard, head, by=f"{settings.agent} {event}", running=in_flight(data))
    if event == "SessionEnd":
        said = escaped(str(data.get("reason") or "no reason given"))
        why = f"the {settings.agent} session ended ({said}) before a stop was accepted"
        guard.end("abandoned", why, by=f"{settings.agent} SessionEnd", lead=head)
        return Outcome("PASS")
    guard.record(head)
    return Outcome("PASS")


# -- PreToolUse ------------------------------------------------------------------------------------


def turn_of(guard: Guard) -> int:
    """Turns are the user's prompts: tool calls after the n-th prompt belong to turn n. Counted as the
    guard's log grows (``Guard.turns``, which a fold checkpoint keeps), not over the whole session on every call."""
    seen, turns = guard.turns
    events = guard.events
    for e in events[seen:]:
        turns += e.kind == HookReceived.KIND and e.payload.get("event") == "UserPromptSubmit"
    guard.turns = (len(events), turns)
    return turns


def pre_tool_use(guard: Guard, agent: str, data: dict[str, Any], head: Sequence[Payload]) -> Outcome:
    call_id = str(data.get("tool_use_id") or f"hook-{len(guard.events)}")
    try:
        calls = tether_calls(
            agent,
            str(data["tool_name"]),
            data["tool_input"],
            str(data["cwd"]),
            guard.root,
            guard.env.tool,
            data.get("transcript_path"),
        )
    except CallError as e:
        refused = guard.refuse(
            str(data["tool_name"]), data["tool_input"], "hook:malformed-call", str(e), call_id, lead=head
        )
        return _outcome(refused)
    turn = turn_of(guard)
    answers = [
        _check(guard, c, call_id if i == 0 else f"{call_id}#{i}", head if i == 0 else (), turn)
        for i, c in enumerate(calls)
    ]
    no_ask = refuses_asks(agent, data)  # an ASK is told as a refusal

    def unjudged() -> list[Payload]:
        ran = [b for b in (ran_unjudged(guard, no_ask, a, turn) for a in answers) if b is not None]
        writes = [str(c.args["path"]) for c, a in zip(calls, answers, strict=True) if _may_write(c, a)]
        if writes:  # read before the agent is answered: the before side of its undo (hooks/preimage.py)
            ran.append(preimage.take(guard, call_id, writes))
        return ran

    ran = guard.exact(unjudged)  # reads, and writes nothing: made again on the whole state when the part cannot answer
    if ran:
        guard.record(ran)
    deciding = max(
        range(len(answers)), key=lambda i: (Verdict.ALLOW, Verdict.ASK, Verdict.DENY).index(answers[i].verdict)
    )
    out = _outcome(answers[deciding], calls[deciding])
    return planned(unprompted(out, data), data) if agent == "claude-code" else out


def _may_write(call: Call, answer: Answer) -> bool:
    """A file tool's call that may run (ALLOW, or ASK: a person may let it), naming its file."""
    return call.tool in WRITES and answer.verdict is not Verdict.DENY and isinstance(call.args.get("path"), str)


def unprompted(outcome: Outcome, data: dict[str, Any]) -> Outcome:
    """A Claude Code ASK answered ``deny`` when the call's permission mode may run it unasked (:func:`.told.told`),
    naming the mode; as it was otherwise. The log keeps the gate's ASK."""
    said = told("claude-code", outcome.verdict, data)
    if said is None or said.answer != "deny":
        return outcome
    why = (
        f"{outcome.reason}; {said.why}. Approve it from a mode that prompts (default, acceptEdits, plan), or allow"
        " it in the envelope"
    )
    return Outcome("DENY", why, outcome.rule)


def planned(outcome: Outcome, data: dict[str, Any]) -> Outcome:
    """A Claude Code ALLOW in plan mode left to Claude Code (DEFER: no decision sent). A hook's ``allow`` skips Claude
    Code's permission flow, and in plan mode that flow is what holds the session to reading until the user approves
    the plan: tether's ALLOW of an edit would let it through. DENY and ASK are sent as ever; the log keeps the
    gate's ALLOW."""
    said = told("claude-code", outcome.verdict, data)
    if said is not None and said.answer == "no decision":
        return Outcome("DEFER", outcome.reason, outcome.rule)
    return outcome


def ran_unjudged(guard: Guard, no_ask: bool, answer: Answer, turn: int) -> Payload | None:
    """A ``hook.bypassed`` for a call whose receipt came before its proposal (judged under ``<id>~…``:
    guard/session.py ``_judged_after``) when the gate refuses it (``no_ask``: an ASK is answered as a refusal): it
    ran before tether could say no. A receipt whose input is not the proposal's: what ran is judged now, a
    ``hook.input_changed`` (:func:`ran_other`)."""
    base, judged = answer.call_id.rpartition("~")[0], guard.state.actions.get(answer.call_id)
    before = guard.state.actions.get(base) if base else None
    refused = Verdict.DENY, *((Verdict.ASK,) if no_ask else ())
    if before is None or judged is None or before.verdict is not None:
        return None
    if before.status not in (ActionStatus.COMPLETED, ActionStatus.FAILED):
        return None
    if before.args_hash != judged.args_hash:
        return ran_other(guard, before, turn)
    if answer.verdict not in refused:
        return None
    if any(e.kind == "hook.bypassed" and e.payload.get("call_id") == base for e in guard.events[before.seq :]):
        return None  # asked again (rare: only such a call gets here): flagged once
    from tether.events.kinds_hooks import HookBypassed  # a later kind module (events/payload.py LATER): rare

    verdict, rule, reason = answer.verdict.name, answer.rule, answer.reason
    return HookBypassed(call_id=base, tool=before.tool, verdict=verdict, rule=rule, reason=reason, event="PreToolUse")


def ran_other(guard: Guard, ran: Action, turn: int) -> Payload | None:
    """What ran, judged after it ran, when its receipt came first and the proposal that followed has another input
    (another hook's ``updatedInput``): the proposal's verdict is not one on what ran. Recorded as a
    ``hook.input_changed`` (the stop refuses while its verdict refuses), once a call."""
    from tether.events.kinds_hooks import HookInputChanged  # a later kind module (events/payload.py LATER): rare
    from tether.state import proposed_args  # whole: the fold keeps a write that completed without its text

    if any(
        e.kind == HookInputChanged.KIND and e.payload.get("call_id") == ran.call_id for e in guard.events[ran.seq :]
    ):
        return None
    answer = _check(guard, Call(ran.tool, proposed_args(guard.events, ran)), ran.call_id, (), turn)
    return HookInputChanged(
        call_id=ran.call_id,
        ran_as=answer.call_id,
        tool=ran.tool,
        verdict=answer.verdict.name,
        rule=answer.rule,
        reason=answer.reason,
        event="PreToolUse",
    )


def _check(guard: Guard, call: Call, call_id: str, lead: Sequence[Payload], turn: int) -> Answer:
    try:
        return guard.check(call.tool, call.args, call_id, lead=lead, turn=turn)
    except BudgetStop as spent:  # the run has ended BUDGET_STOP; the agent reads the refusal, naming the budget
        return spent.answer


def _outcome(a: Answer, call: Call | None = None) -> Outcome:
    """What the agent is told of ``a``; for an undeclared MCP tool (``call``: the one judged, :data:`.calls.MCP`),
    the reason names the tool the agent called (:func:`mcp_named`): the envelope's rule reason is the same for
    every such tool, and the user asked to approve it must see which one."""
    reason = a.reason
    if call is not None and call.tool == MCP and a.verdict is not Verdict.ALLOW:
        reason = f"{mcp_named(call.args.get('tool'))}: {reason}"
    return Outcome(a.verdict.name, reason, a.rule, approve=a.approval_id or "")


#: At most this many characters of an MCP tool's name are shown in a reason (each escaped if not printable ASCII).
MCP_NAME_CHARS = 200


def mcp_named(tool: object) -> str:
    """An MCP tool's name as a reason shows it: bounded to :data:`MCP_NAME_CHARS`, every character that is not
    printable ASCII (a newline, an escape sequence, a right-to-left mark) as its backslash escape, so a name cannot
    forge the rest of the line the user reads."""
    name = str(tool)
    shown = name[:MCP_NAME_CHARS].encode("unicode_escape").decode("ascii")
    return f"MCP tool '{shown}{'...' if len(name) > MCP_NAME_CHARS else ''}'"


# -- PostToolUse -----------------------------------------------------------------------------------


def bypassed(guard: Guard, agent: str, data: dict[str, Any]) -> list[Payload]:
    """A ``hook.bypassed`` when the agent reports running a call tether refused it: denied, or refused pending
    approval (Codex, which has no ask; Claude Code in a permission mode that does not prompt), whatever input the
    report carries. A second report of the call finds it
    completed, or (its input changed) already flagged: not flagged twice."""
    a = guard.state.actions.get(str(data.get("tool_use_id") or ""))
    if a is None or not (
        a.status is ActionStatus.DENIED or (a.status is ActionStatus.WAITING and _told_no(guard, agent, a))
    ):
        return []
    if any(e.kind == "hook.bypassed" and e.payload.get("call_id") == a.call_id for e in guard.events[a.seq :]):
        return []  # its receipt went under an id of its own (another input): the call stays refused, flagged once
    event = str(data["hook_event_name"])
    from tether.events.kinds_hooks import HookBypassed  # a later kind module (events/payload.py LATER): rare

    return [
        HookBypassed(
            call_id=a.call_id, tool=a.tool, verdict=a.verdict or "", rule=a.deciding_rule, reason=a.reason, event=event
        )
    ]


def _told_no(guard: Guard, agent: str, asked: Action) -> bool:
    """Whether the agent was told no of a call the gate asked about: always for Codex (which has no ask), for Claude
    Code when its proposal came in a permission mode that does not prompt (:func:`unprompted`)."""
    if agent == "codex":
        return True
    proposal = _proposal(guard.events, asked.call_id)
    return proposal is not None and refuses_asks(agent, proposal.payload.get("detail") or {})


def receipt(
    guard: Guard,
    agent: str,
    data: dict[str, Any],
    head: Sequence[Payload],
    *,
    failed: bool,
    call_id: str = "",
    call: Call | None = None,
    judged: bool = False,
) -> None:
    """The receipt of a call the agent ran (its proposal first, when tether never saw one). ``judged``: what ran is
    what tether judged under its id, so the files read when it was decided are the ones it wrote: its changes are
    recorded for undo (hooks/preimage.py)."""
    call_id = call_id or str(data.get("tool_use_id") or f"hook-{len(guard.events)}")
    call = call or ran_call(guard, agent, data, str(data["cwd"]))
    took = reported_seconds(data.get("duration_ms"))
    changes = None
    if judged and call.tool in WRITES:
        said = None if failed or agent != "claude-code" else preimage.told(data)
        changes = lambda: preimage.rollback(guard, call_id, said)  # noqa: E731 - read in the write, from the freshest log
    if failed:
        error = escaped(str(data.get("error") or data.get("error_message") or "the tool failed"))
        guard.report(call_id, call.tool, call.args, ok=False, error=error, lead=head, duration_s=took, changes=changes)
    else:
        text = jsonc.dumps(data.get("tool_response"), default=str)
        guard.report(call_id, call.tool, call.args, ok=True, output=text, lead=head, duration_s=took, changes=changes)


#: A tool's reported run time past this (a week) is no duration: not recorded.
MAX_REPORTED_MS = 7 * 24 * 3600 * 1000


def reported_seconds(ms: object) -> float | None:
    """The seconds a receipt's ``duration_ms`` says the tool ran (Claude Code sends it with a PostToolUse since 2026),
    or None when it says none that is one: missing, not a number (``True`` is none), negative, not finite, over a
    week. Before, every hook receipt said 0.00 s."""
    if isinstance(ms, bool) or not isinstance(ms, int | float) or not 0 <= ms <= MAX_REPORTED_MS:
        return None  # NaN fails the comparison; an infinity is over the bound
    return ms / 1000


def ran_call(guard: Guard, agent: str, data: dict[str, Any], cwd: str) -> Call:
    """The tether call of what a receipt says ran, its paths placed from ``cwd``."""
    return ran_calls(guard, agent, data, cwd)[0]


def ran_calls(guard: Guard, agent: str, data: dict[str, Any], cwd: str) -> list[Call]:
    """Every tether call of what a receipt says ran (a Codex patch is one per file), paths placed from ``cwd``."""
    try:
        tool, given, transcript = str(data["tool_name"]), data["tool_input"], data.get("transcript_path")
        return tether_calls(agent, tool, given, cwd, guard.root, guard.env.tool, transcript)
    except CallError:
        return [Call(str(data["tool_name"]), dict(data["tool_input"]))]


def _part(call_id: str, i: int) -> str:
    """The id :func:`pre_tool_use` judges the ``i``-th tether call of a hook call under."""
    return call_id if i == 0 else f"{call_id}#{i}"


def _as_judged(guard: Guard, call_id: str, calls: Sequence[Call]) -> bool:
    """Each call is the one judged under its part's id (a judged part that did not run is no change)."""
    for i, c in enumerate(calls):
        judged = guard.state.actions.get(_part(call_id, i))
        if judged is None or judged.verdict is None or not _same(c, judged.tool, judged.args_hash):
            return False
    return True


def changed_input(guard: Guard, agent: str, data: dict[str, Any], head: Sequence[Payload], *, failed: bool) -> bool:
    """A receipt whose input is not the one tether judged under its id; True when it was recorded here.

    Claude Code runs every matching PreToolUse hook, and one may answer ``updatedInput``, which replaces the
    tool's whole input before it runs (Codex has the same); tether judged the input it was given. Filed under the
    judged call, the receipt said the judged input ran, and the stop took its evidence (the files the edits wrote)
    from it. Each part of what ran that is not the one judged (a Codex patch judges a call per file) is proposed
    and judged now, under an id of its own (``<id>~...``, or ``<id>#i`` for a part never proposed), after a
    ``hook.input_changed`` naming it and the verdict, and the receipt is recorded under the first part's id; a stop
    is refused while such a verdict refuses. Only a call tether judged is compared: a receipt of a call never seen
    is recorded as ever.
    """
    call_id = str(data.get("tool_use_id") or "")
    judged = guard.state.actions.get(call_id) if call_id else None
    if judged is None or judged.verdict is None:
        return False
    calls = ran_calls(guard, agent, data, str(data["cwd"]))
    if _ran_as_judged(guard, agent, data, call_id, calls):
        return False
    from tether.events.kinds_hooks import HookInputChanged  # a later kind module (events/payload.py LATER): rare

    first = call_id + "~"
    earlier = [str(e.payload.get("ran_as")) for e in guard.events[judged.seq :] if e.kind == HookInputChanged.KIND]
    earlier = [r for r in earlier if r.startswith((first, call_id + "#"))]
    if earlier:  # reported again: a second receipt of what ran is not recorded (head is)
        target = next((r for r in earlier if r.startswith(first)), call_id)
        receipt(guard, agent, data, head, failed=failed, call_id=target, call=calls[0])
        return True
    lead, changes = _judged_now(guard, data, call_id, calls, head)
    target = next((ch.ran_as for ch in changes if ch.ran_as.startswith(first)), call_id)
    receipt(guard, agent, data, [*lead, *changes], failed=failed, call_id=target, call=calls[0])
    return True


def _ran_as_judged(guard: Guard, agent: str, data: dict[str, Any], call_id: str, calls: Sequence[Call]) -> bool:
    """What ran is what was judged: placed from the receipt's directory, or from the proposal's (a ``cd`` in the
    command itself moves the receipt's cwd)."""
    if _as_judged(guard, call_id, calls):
        return True
    cwd, then = str(data["cwd"]), _judged_cwd(guard.events, call_id)
    return then is not None and then != cwd and _as_judged(guard, call_id, ran_calls(guard, agent, data, then))


def _judged_now(
    guard: Guard, data: dict[str, Any], call_id: str, calls: Sequence[Call], head: Sequence[Payload]
) -> tuple[list[Payload], list[HookInputChanged]]:
    """Each part of what ran that is not the one judged under its id, proposed and judged now (``head`` written
    with the first judged): what of ``head`` is still to write, and a ``hook.input_changed`` for each part the
    guard took as a call of its own."""
    from tether.events.kinds_hooks import HookInputChanged

    turn, lead, changes = turn_of(guard), list(head), []
    for i, c in enumerate(calls):
        part = _part(call_id, i)
        was = guard.state.actions.get(part)
        if was is not None and was.verdict is not None and _same(c, was.tool, was.args_hash):
            continue
        answer = _check(guard, c, part, lead, turn)
        lead = []
        if was is not None and answer.call_id == part:  # the guard took it for the judged call
            continue
        changes.append(
            HookInputChanged(
                call_id=call_id,
                ran_as=answer.call_id,
                tool=c.tool,
                verdict=answer.verdict.name,
                rule=answer.rule,
                reason=answer.reason,
                event=str(data["hook_event_name"]),
            )
        )
    return lead, changes


def _same(call: Call, tool: str, args_hash: str) -> bool:
    try:
        return call.tool == tool and content_hash(call.args) == args_hash
    except (TypeError, ValueError):  # not JSON: not what was judged
        return False


def _judged_cwd(events: Sequence[Event], call_id: str) -> str | None:
    """The directory of the PreToolUse that proposed ``call_id``."""
    proposal = _proposal(events, call_id)
    return None if proposal is None else str(proposal.payload.get("cwd") or "") or None


def _proposal(events: Sequence[Event], call_id: str) -> Event | None:
    """The ``hook.received`` of the PreToolUse that proposed ``call_id``, newest first."""
    for e in reversed(events):
        proposing = e.kind == HookReceived.KIND and e.payload.get("event") == "PreToolUse"
        if proposing and e.payload.get("detail", {}).get("tool_use_id") == call_id:
            return e
    return None


# -- Stop --------------------------------------------------------------------------------------------


def blocks_in_row(events: Sequence[Event]) -> int:
    """Stops blocked since the last prompt or the last stop let through."""
    n = 0
    for e in reversed(events):
        if e.kind == "hook.stop":  # kinds_hooks.HookStop.KIND, a later kind module
            if not e.payload.get("blocked"):
                break
            n += 1
        elif e.kind == HookReceived.KIND and e.payload.get("event") == "UserPromptSubmit":
            break
    return n


def changed_files(guard: Guard) -> list[str]:
    """Workspace-relative paths the session's file tools wrote (calls that ran and succeeded)."""
    from pathlib import Path  # a stop's: not a tool call's

    out = set()
    for a in guard.state.actions.values():
        path = a.args.get("path")
        done = a.status is ActionStatus.COMPLETED and a.ok
        if done and a.tool in WRITES and isinstance(path, str):
            p = Path(path)
            inside = p.is_absolute() and p.resolve().is_relative_to(guard.workspace)
            out.add(str(p.resolve().relative_to(guard.workspace) if inside else p))
    return sorted(out)


def in_flight(data: dict[str, Any]) -> list[str]:
    """The background tasks Claude Code says are still running at a stop (its ``background_tasks``, v2.1.145+),
    each as its type and command (or description), shortened; anything but a list of objects is none."""
    tasks = data.get("background_tasks")
    out = []
    for task in tasks if isinstance(tasks, list) else ():
        if isinstance(task, dict):
            what = " ".join(str(task.get("command") or task.get("description") or task.get("id") or "?").split())
            out.append(escaped(f"{task.get('type') or 'task'}: {what[:80]}"))
    return out


def stop(guard: Guard, head: Sequence[Payload], *, by: str, running: Sequence[str] = ()) -> Outcome:
    """The required sensors and the test-integrity checks decide whether the agent may stop.

    A stop that is let through ends the run: COMPLETE when the evidence accepted it, VERIFY_FAILED when the agent
    stopped after :data:`MAX_STOP_BLOCKS` refusals in a row. ``running``: the background tasks still running
    (:func:`in_flight`); an accepted stop's reasons name them, since what they do after it is not its evidence.
    """
    from tether.events.kinds_hooks import HookStop  # a later kind module (events/payload.py LATER)

    # The whole log, whatever a call's open audited (from its fold checkpoint's head: Guard.open) or a daemon
    # folded since: a stop is judged on a log that holds from its first event (a rewrite raises LogCorrupt).
    guard.store.verify_run(guard.run_id)
    items, reasons, notes, listed, rule = checked(guard, head)
    if not reasons:
        if running:
            notes.append(
                f"{len(running)} background task(s) still running ({'; '.join(running[:5])}): what they do after"
                " this stop is not part of its evidence"
            )
        items.append(HookStop(blocked=False, accepted=True, reasons=notes))
        accepted = "the stop was accepted: " + ("; ".join(notes) or "the checks passed")
        guard.end("verified", accepted, by=by, lead=items)
        return Outcome("PASS")
    why = "; ".join(reasons)
    in_row = blocks_in_row(guard.events) + 1
    if in_row > MAX_STOP_BLOCKS:
        items.append(HookStop(blocked=False, accepted=False, reasons=reasons, blocks_in_row=in_row - 1, changed=listed))
        note = f"tether: the agent stopped without evidence after {MAX_STOP_BLOCKS} refused stops: {why}"
        guard.end("unverified", note.removeprefix("tether: "), by=by, lead=items)
        return Outcome("PASS", note=note)
    # and the control layer's view of the sensors' results: the agent's next calls are reviewed knowing which tests
    # fail (a write to one of them is refused: review/execution.py), not only after its next receipt
    guard.record([*items, HookStop(blocked=True, accepted=False, reasons=reasons, blocks_in_row=in_row)], observed=True)
    return Outcome("BLOCK", f"the required checks do not accept this stop: {why}. Fix it, then stop again.", rule)


def checked(guard: Guard, head: Sequence[Payload]) -> tuple[list[Payload], list[str], list[str], list[str] | None, str]:
    """What the stop's checks found: the events to record, the reasons that refuse it, the notes that do not, the
    files they found changed (None past :data:`MAX_LISTED`), and the rule a refusal names (``verify:required`` when
    a required sensor refuses). The files an earlier session's agent left (``tests.baseline``'s ``carried``) are
    checked as this session's."""
    from tether.verify.cascade import cascade_events, planned_sensors

    from .integrity import baseline_of, carried_here, findings, left_by, touched

    env = guard.env
    items: list[Payload] = list(head)
    reasons: list[str] = []
    notes = ["the envelope requires no sensor"]
    base = baseline_of(guard.events)
    carried = carried_here(guard.workspace, base)
    moved = touched(guard.workspace, guard.events)  # one walk: the sensors' files and the integrity checks' lines
    moved = sorted({*moved, *(rel for rel in carried if rel.endswith(".py"))})
    changed = sorted({*changed_files(guard), *moved, *carried})
    if any(required for _, required in planned_sensors(env)):
        results, reasons = sensors(guard, changed)
        items += cascade_events(results, env, trigger="stop", changed_files=changed) if results else []
        notes = []
    rule = "verify:required" if reasons else "verify:test-integrity"
    state = guard.refresh()
    found = findings(guard.store, env, guard.workspace, guard.events, list(state.actions.values()), moved)
    items += [f.to_payload() for f in found]
    reasons += [f.message for f in found if f.severity in BLOCKING]
    notes += [f.message for f in found if f.severity not in BLOCKING]
    if base is not None and base.carried:  # where the findings on those files come from
        (reasons if reasons else notes).append(
            f"{', '.join(base.carried[:10])}{' ...' if len(base.carried) > 10 else ''}: judged against the text"
            f" they had when session {base.carried_from} began ({left_by(base)})"
        )
    listed = sorted({*changed, *(f.file for f in found if f.check == "test_changed" and f.file)})
    return items, reasons, notes, listed if len(listed) <= MAX_LISTED else None, rule


def sensors(guard: Guard, changed: Sequence[str]) -> tuple[list[Any], list[str]]:
    """Run the cascade in the envelope's sandbox on ``changed`` (workspace-relative); a sandbox that cannot start
    is a reason not to stop."""
    from tether.errors import SandboxUnavailable
    from tether.sandbox.factory import make_sandbox
    from tether.verify.cascade import completion_verdict, run_cascade
    from tether.verify.changes import WorkspaceDiff

    env = guard.env
    environment = env.environment
    try:
        box = make_sandbox(
            environment.sandbox,
            guard.workspace,
            env_allow=environment.env_allow,
            deny=environment.filesystem.deny if environment.filesystem else (),
            secrets=[s.name for s in environment.secrets or ()],
        )
    except SandboxUnavailable as e:
        return [], [f"the sandbox cannot start: {e}"]
    from .integrity import baseline_of

    diff = WorkspaceDiff(False, "a hook session keeps no workspace snapshot")
    base = baseline_of(guard.events)  # its loader stamps: a .venv/bin tool written since is not run
    origin = _origin(guard, base, changed) if base is not None and (base.commit or base.dirty) else None
    by = time.monotonic() + STOP_SENSORS_S  # before the agent's hook timeout, which would let the stop through
    results = run_cascade(
        env, guard.workspace, changed, box, diff, blobs=guard.store, test_baseline=base, origin=origin, deadline=by
    )
    return results, completion_verdict(results, env)[1]


#: Seconds a stop's sensors may take in all: the hook's own timeout (``install.STOP_TIMEOUT_S``, 600) less a minute
#: for the integrity checks and the reply. Claude Code lets a stop through when its hook times out, so sensors
#: still running then (a test suite the agent made hang) would have let it through unchecked: they time out first
#: (an ERROR, which refuses the stop).
STOP_SENSORS_S = 540.0


def _origin(guard: Guard, base: SuiteBaseline, changed: Sequence[str]) -> Callable[[str], bytes | None]:
    """A file's text when the session began (:func:`.integrity.start_texts`: the user's uncommitted text kept then,
    else the commit's, :mod:`.origin`): what the sensors compare a file-wide directive (``# ruff: noqa``) with; a file
    not there (new, untracked, unreadable) is None, every line new. The first file asked for is read with the stop's
    ``changed`` files in one pass (the repository opened and its trees read once, not once a file and a sensor);
    each answer is kept for the sensors that ask again."""
    from .integrity import start_texts

    known: dict[str, bytes | None] = {}

    def blob(h: str) -> bytes | None:
        try:
            return guard.store.get_blob(h)
        except Exception:  # missing: that file counts whole
            return None

    def text(rel: str) -> bytes | None:
        if rel not in known:
            wanted = list(dict.fromkeys([rel, *(() if known else changed)]))
            found = start_texts(blob, guard.workspace, base, wanted)
            known.update((p, found.get(p)) for p in wanted)
        return known[rel]

    return text
