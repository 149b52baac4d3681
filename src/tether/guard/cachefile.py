"""What the cache files beside a database share: which code wrote them, their seal, how they are written.

A fold checkpoint (:mod:`.checkpoint`) pickles tether's classes and a kept envelope (:mod:`.envcache`) is what this
code's validation made of its source, so each is read only by the code that wrote it: the header names the modules
that did (:func:`code_made`), and a reader checks each (:func:`runs_code`); the daemon's stamp of every module
(:func:`code_stamp`) says when it no longer runs the code on disk. Each is
a JSON header line and a body the header names by digest; under an anchor key the header is signed with it
(:func:`seal`, :func:`sealed`). Each is written to a temporary file in the folder and renamed into place
(:func:`write_own`), and a writer killed mid-write leaves a temporary the next writer's :func:`sweep` removes.
"""

from __future__ import annotations

import os
import sys
from _operator import attrgetter, is_  # operator's very functions, without the Python module
from types import FunctionType

from tether import disk, jsonc, places
from tether.canonical import sha256
from tether.keptcode import LOADED
from tether.scoped import suppress
from tether.typeless import TypeVar

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from tether.disk import StrPath
    from tether.events.anchor import Signer

P = TypeVar("P", bound="StrPath")

#: A cache file being written; a process killed mid-write leaves one (:func:`sweep` removes it later).
TMP_PREFIX = ".ckpt-"
#: A temporary file this old is a dead writer's: a write takes milliseconds, and no writer reopens its file.
STALE_S = 600.0


def code_stamp_now(root: StrPath | None = None) -> str:
    """The relative path, size and mtime of every module of tether, hashed. "" when the modules are not files
    to stat (an installation without sources): then nothing that needs a stamp is written or read.

    Walked with ``os.scandir`` (a quarter of what ``Path.rglob`` cost: ~1 ms for ~270 modules), ``__pycache__``
    skipped; the rows are hashed in one piece (the same digest as row by row), and a name is asked whether it is a
    directory only when it does not end in ``.py``."""
    here = __file__
    top = root if root is not None else os.path.dirname(os.path.dirname(os.path.realpath(here)))
    rows = [f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n" for rel, st in _module_files(top)]
    rows.sort()
    return sha256("".join(rows).encode()).hexdigest() if rows and here.endswith(".py") else ""


def _module_files(top: StrPath) -> Iterator[tuple[str, os.stat_result]]:
    """Each module under ``top``: its path from there, and its stat."""
    stack = [""]
    while stack:
        rel = stack.pop()
        prefix = f"{rel}/" if rel else ""
        with os.scandir(os.path.join(top, rel) if rel else top) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".py") and not entry.is_dir(follow_symlinks=False):
                    yield prefix + name, entry.stat()
                elif name != "__pycache__" and entry.is_dir(follow_symlinks=False):
                    stack.append(prefix + name)


_STAMP: list[str] = []


def code_stamp() -> str:
    """:func:`code_stamp_now`, once per process."""
    if not _STAMP:
        _STAMP.append(code_stamp_now())
    return _STAMP[0]


#: The most modules (and folders) a cache file's :func:`code_made` may name: tether has ~320; more is not one of ours.
MAX_MADE = 4096
#: Each module file of tether as this process first stat'ed it: ``(size, mtime_ns)``, ``None`` when there was none.
_SEEN: dict[str, tuple[int, int] | None] = {}


def _stat(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


def _seen(path: str) -> tuple[int, int] | None:
    """The module file ``path``'s size and mtime as this process first found them: the code it loaded (as the table
    of the modules' code checked them, when it gave it: ``keptcode.LOADED``; a daemon's those of its start,
    :func:`first_seen`, not a tree pulled over it since)."""
    if path not in _SEEN:
        _SEEN[path] = LOADED.get(path) or _stat(path)
    return _SEEN[path]


def has_sources() -> bool:
    """Whether tether's modules are source files (:func:`code_made` can name them): else no cache file is kept."""
    return _package() is not None


def _package() -> str | None:
    """The folder of tether's package as its modules' ``__file__`` name it; None when they are not source files (an
    installation without them): then nothing that needs :func:`code_made` is written or read."""
    top = sys.modules.get("tether")
    file = getattr(top, "__file__", None)
    if not isinstance(file, str) or not file.endswith(".py") or not __file__.endswith(".py"):
        return None
    return os.path.dirname(file)


def code_made() -> dict[str, Any] | None:
    """The code that makes what this process writes now: each module of tether it has imported, by name, with its
    file in the package and that file's size and mtime (ns) when this process first saw it, and the folders holding
    them with their mtimes now (a folder's mtime sees a module added beside one, or a package made to shadow it).
    Asked at each write, so a module imported since is in it. None when a module of tether is not a source file of
    the package (nothing is then kept).

    A reader takes the file only when :func:`runs_code` finds every one as it was: a module the reader runs and the
    writer did not import made nothing the file holds, so it is not asked. That is the code stamp of every module
    (:func:`code_stamp`: ~320 ``stat`` calls and 33 listings, ~1.5 ms on every cold call) narrowed to the code that
    wrote (docs/hook-latency.md, "The code that wrote it")."""
    root = _package()
    if root is None:
        return None
    modules: dict[str, list[Any]] = {}
    folders: dict[str, int] = {}
    for name, module in list(sys.modules.items()):
        file = getattr(module, "__file__", None) if name == "tether" or name.startswith("tether.") else None
        if file is None:  # not tether's; a namespace, or a module made in memory (a test's, the relay's loading)
            continue
        if not isinstance(file, str) or not file.endswith(".py") or not file.startswith(root + "/"):
            return None
        rel, seen = file[len(root) + 1 :], _seen(file)
        parent = rel.rpartition("/")[0]
        if parent not in folders:
            folder = _stat(os.path.dirname(file))
            if folder is None:
                return None
            folders[parent] = folder[1]
        if seen is None:
            return None
        modules[name] = [rel, *seen]
    return {"modules": modules, "folders": folders} if modules else None


def runs_code(made: object) -> bool:
    """Whether ``made`` (a :func:`code_made` from a cache file's header) names code this process runs: every module
    in it the file it was then, as this process finds that file (:func:`_seen`), and every folder as it is now; a
    module this process imported too, from that very file. Anything else is False: no package of source files here,
    a value of another shape, a path that leaves the package, more than :data:`MAX_MADE` names. The answers for the
    last few values asked are kept: a checkpoint's header is asked when the file is read, before the log's audit and
    before its body is used (the same object: one read, milliseconds apart), a kept envelope's between."""
    kept = _CHECKED.get(id(made))
    if kept is not None and kept[0] is made:
        return kept[1]
    answer = _runs_code(made)
    if len(_CHECKED) >= 4:
        _CHECKED.clear()
    _CHECKED[id(made)] = (made, answer)
    return answer


#: The last values :func:`runs_code` was asked of, by id (each held, so that no other object takes its id while it
#: is here), and its answers.
_CHECKED: dict[int, tuple[object, bool]] = {}


def _runs_code(made: object) -> bool:
    root = _package()
    if root is None or not isinstance(made, dict) or len(made) != 2:
        return False
    modules, folders = made.get("modules"), made.get("folders")
    if not isinstance(modules, dict) or not isinstance(folders, dict) or not modules:
        return False
    if len(modules) + len(folders) > MAX_MADE:
        return False
    seen, imported = _SEEN, sys.modules
    for name, row in modules.items():
        if type(row) is not list or len(row) != 3:
            return False
        rel, size, mtime = row
        if type(rel) is not str or type(size) is not int or type(mtime) is not int:
            return False
        path = f"{root}/{rel}"
        if path in seen:  # a path this process found for a module (every one is below the package)
            found = seen[path]
        elif _inside(rel, ".py"):
            found = _seen(path)
        else:
            return False
        if found is None or found[0] != size or found[1] != mtime:
            return False
        module = imported.get(name)
        if module is not None and getattr(module, "__file__", None) != path:
            return False
    for rel, mtime in folders.items():
        if type(rel) is not str or (rel and not _inside(rel)) or type(mtime) is not int:
            return False
        now = _stat(f"{root}/{rel}" if rel else root)
        if now is None or now[1] != mtime:
            return False
    return True


def _inside(rel: str, suffix: str = "") -> bool:
    """``rel`` a relative path below the package ending in ``suffix``: no empty, ``.`` or ``..`` part (nor a leading
    or trailing ``/``), no NUL."""
    within = f"/{rel}/"
    return (
        rel.endswith(suffix) and "\0" not in rel and "//" not in within and "/./" not in within and "/../" not in within
    )


def first_seen() -> None:
    """Stat every module of tether now, as :func:`code_made` would later: the daemon, at its start, so that what it
    writes hours later names the code it runs, not a tree pulled over it since."""
    root = _package()
    if root is None:
        return
    for rel, st in _module_files(root):
        _SEEN.setdefault(f"{root}/{rel}", (st.st_size, st.st_mtime_ns))


def parts(raw: bytes, magic: bytes, limit: int) -> tuple[dict[str, Any], memoryview] | None:
    """A cache file's header and body (``magic``, a JSON object on one line, the body), or None when it is not one
    (another file, truncated before its body, larger than ``limit``). Malformed JSON raises. The body is a view of
    ``raw``, not a copy: a copy of a 1,000-call session's 730 kB fold checkpoint body cost a cold call ~0.4 ms, most
    of it touching fresh memory (a partition of all but the magic once copied it twice)."""
    if len(raw) > limit or not raw.startswith(magic):
        return None
    end = raw.find(b"\n", len(magic))
    if end < 0:
        return None
    header = jsonc.loads(raw[len(magic) : end])
    return (header, memoryview(raw)[end + 1 :]) if isinstance(header, dict) else None


def header_bytes(header: dict[str, Any]) -> bytes:
    """What a header's signature signs: the header without it."""
    return jsonc.dumps({k: v for k, v in header.items() if k != "sig"}, sort_keys=True).encode()


def seal(header: dict[str, Any], signer: Signer | None) -> dict[str, Any]:
    """``header`` signed with the store's anchor key, when it has one (base64 imported only then, as in
    :func:`sealed`: a store without a key does without it)."""
    if signer is not None:
        import base64

        header["key_id"] = signer.key.key_id
        header["sig"] = base64.b64encode(signer._private.sign(header_bytes(header))).decode()
    return header


def sealed(header: dict[str, Any], signer: Signer | None) -> bool:
    """Under an anchor key, ``header`` is signed with that key (a forged signature raises); without one, true."""
    if signer is None:
        return True
    import base64

    sig = header.get("sig")
    if header.get("key_id") != signer.key.key_id or not isinstance(sig, str):
        return False
    signer.key.public.verify(base64.b64decode(sig, validate=True), header_bytes(header))  # raises if forged
    return True


def own(st: os.stat_result) -> bool:
    """Owned by this user or root, and writable by no one else: what a cache file and its folder must be to be read
    (a fold checkpoint and a kept envelope are the state a session is governed from)."""
    return st.st_uid in (os.geteuid(), 0) and not st.st_mode & 0o022


def read_own(folder: StrPath, name: str, max_bytes: int) -> tuple[bytes, os.stat_result] | None:
    """The file ``name`` in ``folder`` (its bytes, at most ``max_bytes + 1``, and its stat), read only from a folder and
    a file of this user's alone (:func:`own`), a regular file of at most ``max_bytes``; None when there is none to
    read, or on any doubt. The file is opened inside the very folder checked (its descriptor), never by its path
    again: a folder renamed and replaced (by a link, by one others may write) between the check and the open is not
    read from, and a link in the folder is not followed."""
    import stat

    try:
        dir_fd = os.open(disk.text(folder), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not own(os.fstat(dir_fd)):
            return None
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not own(st) or st.st_size > max_bytes:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(max_bytes + 1), st
    except OSError:
        return None
    finally:
        os.close(fd)


def write_own(folder: StrPath, target: P, data: bytes) -> P | None:
    """``data`` as ``target`` (a name in ``folder``), whole or not at all, into a folder of this user's alone (made
    ``0700`` if missing; :func:`own`), or nothing: a reader (:func:`read_own`) would ignore the file, and one others
    may write must not get it either. As :func:`read_own` reads, the folder is opened once without following a link
    and checked, and the file is written inside that very folder (its descriptor): a folder renamed and replaced by a
    link to another between the check and the write does not get the session's state. A temporary file, renamed
    into place, so a reader sees the old file or the new one; None on an I/O failure (these files are caches; the
    log is the truth)."""
    try:
        disk.mkdir(folder, mode=0o700, parents=True, exist_ok=True)
        dir_fd = os.open(disk.text(folder), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not own(os.fstat(dir_fd)):
            return None
        sweep(dir_fd)
        _write_in(dir_fd, places.name(disk.text(target)), data)
    except OSError:
        return None
    finally:
        os.close(dir_fd)
    return target


def _write_in(dir_fd: int, name: str, data: bytes) -> None:
    """``data`` as ``name`` in the folder ``dir_fd``: a new temporary (``0600``, never an existing name or a link),
    renamed over ``name``; the temporary removed if anything fails."""
    tmp = TMP_PREFIX + os.urandom(8).hex()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def sweep(folder: StrPath | int, now: float | None = None) -> None:
    """Remove what writers killed mid-write left in ``folder`` (a path, or an open folder's descriptor): a SIGKILL
    skips their clean-up, each up to a fold's size, one per kill, which nothing else would ever delete. A live
    writer's file is young, so it stays."""
    import time

    cutoff = (time.time() if now is None else now) - STALE_S
    at = folder if isinstance(folder, int) else None
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(TMP_PREFIX) and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    os.unlink(entry.name if at is not None else entry.path, dir_fd=at)
    except OSError:  # a file another sweep removed first, a folder gone: the next write sweeps again
        pass


# ---- reading a body ---------------------------------------------------------------------------------------


def unpickler(allowed: Callable[[str, str], object], what: str) -> type[Any]:
    """The unpickler class of a cache file's body: the C one (``_pickle``: ``pickle``, and what it imports, is not
    loaded for a read), whose ``find_class`` gives only what ``allowed(module, name)`` returns and refuses
    (``UnpicklingError``, naming ``what``) every global it returns None for. The one maker of the checkpoints' and
    the kept envelopes' readers: each passes its own allowlist, and neither can name a function to call.

    A global handed out is a shared object, and pickle's ``BUILD`` sets attributes on whatever it is given: a class
    named (``BUILD`` of ``(None, {...})``: ``setattr`` on the class, e.g. an enum's ``_value2member_map_``), or an
    enum's member that calling its class returns (its ``_value_``, its ``__class__``). So each load notes the state of
    what it hands out (:func:`_noted`) and, however it ends, puts back any change and refuses the body
    (``UnpicklingError``): a body can alter nothing of the process that reads it."""
    import _pickle

    def find_class(self: Any, module: str, name: str) -> object:
        found = allowed(module, name)
        if found is None:
            raise _pickle.UnpicklingError(f"{what} may not name {module}.{name}")
        if id(found) not in self._noted:
            self._noted[id(found)] = _noted(found)
        return found

    def load(self: Any) -> object:
        self._noted = {}
        try:
            obj = _pickle.Unpickler.load(self)
        finally:
            altered = [_put_back(noted) for noted in self._noted.values()]
        if any(altered):
            raise _pickle.UnpicklingError(f"{what} may not alter a class or member it names")
        return obj

    return type(
        "Restricted", (_pickle.Unpickler,), {"find_class": find_class, "load": load, "__doc__": unpickler.__doc__}
    )


_Noted = list[tuple[object, type, dict[str, object], tuple[object, ...]]]


def _noted(found: object) -> _Noted:
    """The state of ``found`` a ``BUILD`` could change: its attributes, its class, a class's bases, a function's
    defaults; for an enum, also each member's."""
    import enum

    objs = [found, *found] if isinstance(found, enum.EnumType) else [found]
    return [(o, type(o), dict(getattr(o, "__dict__", ())), _beside(o)) for o in objs]


#: What ``setattr`` changes of a class outside its ``__dict__``: its bases (its method order), its names (what pickle
#: writes it as, what error messages and schemas call it). Asked only of a class whose type is not immutable (a
#: static type's names are new strings each time asked; nothing can set them).
_TYPE_BESIDE = ("__bases__", "__name__", "__qualname__")
#: What ``setattr`` changes of a function outside its ``__dict__``: its defaults, code, names, module (pickle
#: imports a function's ``__module__`` to write it: a checkpoint written later would import what a body named),
#: docstring and annotations.
_FUNCTION_BESIDE = (
    "__defaults__",
    "__kwdefaults__",
    "__code__",
    "__name__",
    "__qualname__",
    "__module__",
    "__doc__",
    "__annotations__",
    *(("__type_params__",) if hasattr(FunctionType, "__type_params__") else ()),
)
_IMMUTABLE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE


_TYPE_GET = attrgetter(*_TYPE_BESIDE)
_FUNCTION_GET = attrgetter(*_FUNCTION_BESIDE)


def _beside_names(obj: Any) -> tuple[str, ...]:
    if isinstance(obj, type):
        return ("__bases__",) if obj.__flags__ & _IMMUTABLE else _TYPE_BESIDE
    return _FUNCTION_BESIDE if type(obj) is FunctionType else ()


def _beside(obj: Any) -> tuple[object, ...]:
    """What ``setattr`` may change of ``obj`` outside its ``__dict__`` that could matter (:data:`_TYPE_BESIDE`,
    :data:`_FUNCTION_BESIDE`); the same objects each time asked, compared by identity (``attrgetter``: in C)."""
    if isinstance(obj, type):
        return (obj.__bases__,) if obj.__flags__ & _IMMUTABLE else _TYPE_GET(obj)
    return _FUNCTION_GET(obj) if type(obj) is FunctionType else ()


def _put_back(noted: _Noted) -> bool:
    """Whether any noted object was changed; each changed one restored as noted."""
    altered = False
    for obj, kind, attrs, beside in noted:
        if not _unchanged(obj, kind, attrs, beside):
            altered = True
            _restore(obj, kind, attrs, beside)
    return altered


def _unchanged(obj: object, kind: type, attrs: dict[str, object], beside: tuple[object, ...]) -> bool:
    """Compared by identity, in C (``operator.is_``): nothing of the body's (an ``__eq__``) is called, and a class's
    ~50 attributes cost little (a cold hook call reads one kept envelope)."""
    if type(obj) is not kind or not all(map(is_, _beside(obj), beside)):
        return False
    now = getattr(obj, "__dict__", {})
    return now.keys() == attrs.keys() and all(map(is_, now.values(), attrs.values()))


def _restore(obj: Any, kind: type, attrs: dict[str, object], beside: tuple[Any, ...]) -> None:
    if type(obj) is not kind:
        obj.__class__ = kind
    for name, value in zip(_beside_names(obj), beside, strict=True):  # a class's bases first: its layout
        if getattr(obj, name) is not value:
            setattr(obj, name, value)
    if isinstance(obj, type):
        for k in [k for k in vars(obj) if k not in attrs]:
            delattr(obj, k)
        for k, v in attrs.items():
            if vars(obj).get(k) is not v:
                setattr(obj, k, v)
        return
    obj.__dict__.clear()
    obj.__dict__.update(attrs)


def model_class(module: object, name: str) -> type | None:
    """The class ``name`` that ``module`` itself defines, when it is a pydantic model (or its plain stand-in,
    tether/plain.py) or an enum: what a body may name of a module of tether's (no dotted name, nothing re-exported)."""
    import enum

    obj = getattr(module, name, None) if "." not in name else None
    if not isinstance(obj, type) or obj.__module__ != getattr(module, "__name__", None):
        return None
    from tether.plain import BaseModel

    return obj if issubclass(obj, BaseModel | enum.Enum) else None


# ---- the trial of a body nothing vouches for ----------------------------------------------------------------


def tried(check: Callable[[], object], seconds: float, allowance: int) -> bool:
    """Whether ``check()`` (the load of a cache file's body no key vouches for, and what its reader checks of it)
    returns without raising in a forked child within ``seconds``, its address space limited to what this process
    maps plus ``allowance`` bytes, without dying. A pickle that names only allowed classes can still cost without
    bound (a memory bomb, a tuple nested so deep that hashing it overflows the C stack, a graph of shared tuples
    whose hash never ends); none of that shows before it runs, nor can be stopped in this process once it runs.
    So it runs in a child first; the caller then does the same (deterministic: the child is this process, forked).
    Where the trial cannot be made or bounded (no ``fork``, no ``/proc/self/statm``), False: a miss."""
    trial = Trial(check, seconds, allowance)
    try:
        return trial.verdict()
    finally:
        trial.close()


class Trial:
    """:func:`tried` in two halves: the child forked now, its verdict asked for later, so that this process does other
    work meanwhile (a fold checkpoint's trial runs while the log is audited: guard/checkpoint.py ``begin``).
    ``seconds`` count from the fork's return. Whoever makes one closes it (``try``/``finally``): a child whose
    verdict was not asked for is killed and reaped then, never left running nor a zombie."""

    def __init__(self, check: Callable[[], object], seconds: float, allowance: int) -> None:
        import resource  # noqa: F401 — here, not in the child: a fork of a threaded process (the daemon) imports nothing
        import select  # noqa: F401
        import time

        self._status: int | None = None
        self.deadline = 0.0
        try:
            self.pid: int | None = os.fork()
        except OSError:
            self.pid, self._status = None, -1
            return
        if self.pid == 0:  # the child: bounded, silent, and it leaves only by _exit (no atexit, no finalisers)
            code = 3
            try:
                code = _trial(check, allowance, seconds)
            finally:
                os._exit(code)
        self.deadline = time.monotonic() + seconds  # from the fork: it may wait for locks other threads hold

    def verdict(self) -> bool:
        """Whether the child ended well by the deadline (waited for until then; killed and reaped if not)."""
        if self._status is None:
            import time

            self._reap(_ended(self.pid or 0, max(0.0, self.deadline - time.monotonic())))
        return self._status == 0

    def close(self) -> None:
        """The child killed (unless it ended) and reaped, when its verdict was not asked for."""
        if self._status is None:
            self._reap(False)

    def _reap(self, ended: bool) -> None:
        """Whatever stopped the wait (an interrupt too), the child never outlives it, nor stays a zombie."""
        from _signal import SIGKILL  # type: ignore[import-not-found]  # C, loaded at start-up; signal.py makes 3 enums

        pid = self.pid or 0
        try:
            if not ended:
                os.kill(pid, SIGKILL)
            _, status = os.waitpid(pid, 0)
        except OSError:
            status = -1
        self._status = status


def _trial(check: Callable[[], object], allowance: int, seconds: float) -> int:
    """In the forked child: 0 when ``check()`` returns within the memory allowance; 1 when it raises; 2 when the
    limits cannot be set. Its CPU time is limited too, a little past the parent's deadline (``seconds``): the parent
    kills it at the deadline, but a parent killed first (a hook process the agent stopped) would leave a hostile
    body's endless hash running, orphaned, for good. It leaves no core file when it dies of the body."""
    import gc
    import resource

    gc.disable()  # the parent's garbage is not the child's to finalise (a finaliser may remove a file)
    try:
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # a fault handler's dump, a MemoryError's message: not the hook's to print; and the
            os.dup2(null, fd)  # hook's pipes closed here, so that its end is seen when it ends, whatever the child does
        with open("/proc/self/statm", "rb") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + allowance, mapped + allowance))
        cpu, hard = int(seconds) + 2, resource.getrlimit(resource.RLIMIT_CPU)[1]  # SIGXCPU, then SIGKILL a second on
        hard = cpu + 1 if hard == resource.RLIM_INFINITY else min(hard, cpu + 1)  # never above a limit given already
        resource.setrlimit(resource.RLIMIT_CPU, (min(cpu, hard), hard))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (OSError, ValueError):
        return 2
    try:
        check()
    except Exception:
        return 1
    return 0


def _ended(pid: int, timeout: float) -> bool:
    """Whether the child ``pid`` ended within ``timeout`` seconds (reaped by the caller)."""
    import select

    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):  # no pidfd: poll
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
            time.sleep(0.005)
        return False
    try:
        waiting = select.poll()  # not select.select: it refuses a descriptor numbered 1,024 or more
        waiting.register(fd, select.POLLIN)
        return bool(waiting.poll(timeout * 1000))
    finally:
        os.close(fd)
