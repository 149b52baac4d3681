"""Where a hook session's project is when the agent does not name it: the first call's ``cwd``, pinned.

The project is ``$CLAUDE_PROJECT_DIR``, else the session's first hook call's ``cwd`` (docs/hooks.md), and the store
(``<project>/.tether/tether.db``) and the envelope are found from it. Taken from each call's ``cwd``, both moved with
the agent's ``cd``: the next call opened another directory's store and began a second run of the session there,
that directory its workspace and its ``.tether/envelope.yaml`` its envelope, so a write the first workspace's gate
denied was allowed. So the first call of a session that names no project writes its project to
``$XDG_STATE_HOME/tether/hook-sessions/<run id>`` (``~/.local/state`` without it; the user's, and outside any
workspace the gate lets the agent write), made whole by a hard link so that two first calls at once agree on the one
that landed, and every later call reads it. A pin that cannot be read or written refuses the call: a session never
falls back to wherever the agent stands. Imported only by a call that names no project (a Claude Code call, which
names it in ``$CLAUDE_PROJECT_DIR``, never loads it).

Pins are pruned (:func:`prune`, when the daemon starts: no call waits then, and none pays for it): a pin not read for
:data:`IDLE_S` is not a live session's. A call that reads its pin refreshes the pin's time once it is half that
old (one ``fstat`` a call, and a ``futimens`` once in fifteen days), so a live session's pin is never the one dropped.
"""

from __future__ import annotations

import errno
import os
import stat
import time

from tether import disk, places
from tether.errors import RuntimeFailure
from tether.scoped import suppress

#: A pin longer than this is not one (a path is at most PATH_MAX, 4096, on Linux).
MAX_PIN = 64 * 1024
#: A pin its session has not read for this long is dropped (:func:`prune`).
IDLE_S = 30 * 86400.0


def pin_paths(run_id: str) -> list[str]:
    """Where the session's pin may be, in the order read and tried: ``$XDG_STATE_HOME/tether/hook-sessions``
    (``~/.local/state`` without it), else, for a user without a home it can write, the daemon's private directory
    (hooks/relay.py ``socket_path``: the user's alone, 0700; emptied at a reboot, after which the session's next call
    pins again)."""
    name = run_id
    out = []
    try:
        state = os.environ.get("XDG_STATE_HOME") or places.join(disk.home(), ".local/state")
        out.append(places.join(disk.text(state), f"tether/hook-sessions/{name}"))
    except RuntimeError:  # no home directory
        pass
    from .relay import dirname, socket_path

    out.append(places.join(dirname(socket_path()) or ".", f"hook-sessions/{name}"))
    return out


def peek(run_id: str) -> str | None:
    """The session's pinned project, or None when it has none yet (or it cannot be read: :func:`pinned` says why)."""
    try:
        return _find(pin_paths(run_id))
    except (OSError, RuntimeFailure):
        return None


def pinned(run_id: str, cwd: str) -> str:
    """The session's project: pinned already, else ``cwd`` resolved and pinned now (unless another call pinned one
    first: then that one). :class:`RuntimeFailure` naming the file when a pin cannot be read, or none written."""
    paths = pin_paths(run_id)
    try:
        found = _find(paths)
        if found is not None:
            return found
        project = disk.resolve(cwd)
    except (OSError, RuntimeError) as e:  # a pin that is a link; a symlink loop in cwd
        raise RuntimeFailure(f"the hook session's project cannot be pinned: {e}") from e
    failed = []
    for path in paths:
        try:
            if path == paths[-1] and not _private(path):
                raise PermissionError(f"{places.parent(places.parent(path))} is not this user's alone")
            return _write(path, project)
        except OSError as e:
            failed.append(str(e))
    raise RuntimeFailure(
        f"the hook session's project cannot be pinned ({'; '.join(failed)}); name it with $CLAUDE_PROJECT_DIR or --db"
    )


def _private(path: str) -> bool:
    """The daemon's directory (two levels above a pin in it) made 0700, or found to be this user's alone."""
    from .relay import private_dir

    return private_dir(places.parent(path))


def _find(paths: list[str]) -> str | None:
    for path in paths:
        found = _read(path)
        if found is not None:
            return found
    return None


#: A pin that is not there (nor could be: a folder on the way is missing, or closed to this user).
ABSENT = (errno.ENOENT, errno.ENOTDIR, errno.EACCES)


def _read(path: str) -> str | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        if e.errno in ABSENT:
            return None
        raise
    try:
        data = os.read(fd, MAX_PIN + 1)
        _refresh(fd)
    finally:
        os.close(fd)
    text = os.fsdecode(data)
    if len(data) > MAX_PIN or not text.startswith("/") or "\0" in text:
        raise RuntimeFailure(f"{path} does not hold a pinned project (an absolute path); remove it to pin anew")
    return text


def _write(path: str, project: str) -> str:
    os.makedirs(places.parent(path), mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            data = os.fsencode(project)
            while data:
                data = data[os.write(fd, data) :]
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # the pin appears whole, and only once: a second first call finds it
        except FileExistsError:
            found = _read(path)
            if found is None:
                raise
            return found
        return project
    finally:
        os.unlink(tmp)


def _refresh(fd: int) -> None:
    """The session is live: its pin's time made now once it is half :data:`IDLE_S` old (so :func:`prune` leaves
    it). A pin that cannot be touched (a read-only folder) cannot be pruned either."""
    try:
        if time.time() - os.fstat(fd).st_mtime > IDLE_S / 2:
            os.utime(fd)
    except OSError:
        pass


def prune(now: float | None = None) -> int:
    """Drop the pins (and a first call's leftover ``.tmp``) not read for :data:`IDLE_S`; how many went. Only this
    user's regular files in a folder that is not a link: a link, another user's file, anything else is left.

    Each is renamed aside first and its time read again there: a session's call that refreshed it between the look
    and the rename (:func:`_refresh`) put it back (a link, so a pin a first call wrote meanwhile stands)."""
    when = time.time() if now is None else now
    gone = 0
    for path in pin_paths("-"):
        try:
            folder = os.open(places.parent(path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # none, or a link
        try:
            gone += sum(_drop(folder, name, when) for name in os.listdir(folder) if _idle(folder, name, when))
        finally:
            os.close(folder)
    return gone


def _idle(folder: int, name: str, now: float) -> bool:
    try:
        st = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid() and now - st.st_mtime > IDLE_S


def _drop(folder: int, name: str, now: float) -> int:
    aside = f".{name}.{os.getpid()}.pruned"  # a run id never starts with a dot: no pin is named so
    try:
        os.rename(name, aside, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        return 0
    try:
        if not _idle(folder, aside, now):  # refreshed meanwhile: put back, unless a first call pinned anew
            with suppress(OSError):
                os.link(aside, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            return 0
        return 1
    finally:
        os.unlink(aside, dir_fd=folder)
