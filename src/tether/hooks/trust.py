"""Who may use, and who may change, what a managed hook runs: a managed hook runs as every user of the machine,
so every user must be able to read and run each part of its command, and no user but root (or the one
installing) may change any of it — the paths it names, every directory above one, everything the hook process
imports (:mod:`tether.hooks.import_roots`) — nor the managed settings file. "Change" is by owner, mode bits and
POSIX ACLs (:mod:`tether.hooks.acl`)."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from . import acl
from .command import CLIENT, LAUNCHER, is_script
from .import_roots import import_roots, loaded_roots, loose_under, shown
from .settings import read_text
from .startup import start_roots


def _command_paths(command: str) -> tuple[Path, list[tuple[Path, int]], str] | str:
    """tether's package (the one the command's client or launcher sits in), each absolute path ``command``
    names with the access every user needs (``0o5`` read and run, ``0o4`` read), and its interpreter; or why it
    does not parse. A venv interpreter's ``pyvenv.cfg`` (beside it or a directory up: read at its start-up) and
    the ``home`` it names (where its standard library is found) count as named."""
    try:
        words = shlex.split(command.removesuffix(" || exit 2"))
    except ValueError:
        return f"the command {command!r} (not parseable)"
    if not words:
        return f"the command {command!r} (empty)"
    script = next((w for w in words if is_script(w, CLIENT) or is_script(w, LAUNCHER)), None)
    package = Path(script).resolve().parent.parent if script else Path(__file__).resolve().parent.parent
    client = next((i for i, w in enumerate(words) if is_script(w, CLIENT)), None)
    python = words[client + 1] if client is not None and client + 1 < len(words) else words[0]
    checks: list[tuple[Path, int]] = [(package.parent, 0o5), (package, 0o5)]
    for i, word in enumerate(words):
        if word.startswith("/"):
            executable = i == 0 or word == python
            checks.append((Path(word), 0o5 if executable else 0o4))
            if executable:
                checks += venv_files(Path(word))
    return package, checks, python


def venv_files(python: Path) -> list[tuple[Path, int]]:
    """The ``pyvenv.cfg`` files a venv's ``python`` reads at start-up and the ``home`` directory each names, with
    the access others need: both of ``pyvenv.cfg`` a directory up and ``bin/pyvenv.cfg``, for the interpreter's
    path calculation (``getpath``) reads the one a directory up first and ``site`` the one beside it first."""
    found: list[tuple[Path, int]] = []
    for cfg in (python.parent.parent / "pyvenv.cfg", python.parent / "pyvenv.cfg"):
        if not cfg.is_file():
            continue
        found.append((cfg, 0o4))
        try:
            lines = read_text(cfg).splitlines()
        except (OSError, ValueError):
            continue  # named by the read check, which cannot read it either
        homes = [v.strip() for k, _, v in (line.partition("=") for line in lines) if k.strip().lower() == "home"]
        found += [(Path(h), 0o5) for h in homes[-1:] if os.path.isabs(h)]
    return found


def unreadable_for_others(command: str) -> list[str]:
    """What in ``command`` a user other than its files' owners could not use: an interpreter, a client, bash or
    an envelope under a directory they cannot enter (``/root/…``), a file they cannot read or run, tether's
    package (the interpreter imports it) not readable. Judged by the "other" permission bits, the path as
    written and the file it resolves to (a venv's ``python`` links to its base interpreter). The package is the
    one the command's client or launcher sits in, every module in it too (pip under umask 077 writes them
    ``0600``)."""
    found = _command_paths(command)
    if isinstance(found, str):
        return [found]
    package, checks, _ = found
    problems: list[str | None] = []
    for path, need in checks:
        problems += [_other_access(p, need) for p in dict.fromkeys([path, Path(os.path.realpath(path))])]
    if not any(problems):
        inside: list[str | None] = []
        for root, dirs, files in os.walk(package):
            inside += [_other_bits(Path(root, d), 0o5) for d in dirs]
            inside += [_other_bits(Path(root, f), 0o4) for f in files]
        found_inside = [p for p in inside if p]
        problems += found_inside[:3] + ([f"{len(found_inside) - 3} more in {package}"] if len(found_inside) > 3 else [])
    return list(dict.fromkeys(p for p in problems if p))


def _other_bits(path: Path, need: int) -> str | None:
    """Why others lack ``need`` (``0o5`` read and run, ``0o4`` read) on ``path`` itself, by its mode bits and by
    its ACL (a named user or group entry without it keeps that user or group out, whatever the other bits)."""
    try:
        mode = path.stat().st_mode
        denied = acl.refused(acl.read(path), need)
    except OSError as e:
        return f"{path} ({e.strerror})"
    except acl.AclError as e:
        return f"{path} ({e}: who can use it is unknown)"
    kind = "read and run" if need & 0o1 else "read"
    if mode & need != need:
        return f"{path} (mode {stat.filemode(mode)}: other users cannot {kind} it)"
    if denied:
        return f"{path} (its ACL keeps {', '.join(denied)} from being able to {kind} it)"
    return None


def changeable_by_others(command: str) -> list[str]:
    """What in ``command`` a user other than root (or the one installing) could change (:func:`judged`)."""
    return judged(command)[1]


def judged(command: str) -> tuple[list[str], list[str]]:
    """(what other users could not use, what a user other than root or the one installing could change) in
    ``command``: :func:`unreadable_for_others`, then each path it names and every directory above one
    (:func:`changeable`), then everything the hook process imports (:mod:`tether.hooks.import_roots`: tether's
    package, its dependencies, ``.pth`` files, the standard library; ``__pycache__`` too: Python runs a ``.pyc``
    planted there), walked once for both: an entry others could change, and one they could not read (a
    directory they could not enter: ``pip`` under a umask of ``077`` writes ``0600``, and every other user's
    hook would fail; by its mode bits and by its ACL, a named entry that denies read, read once for both). The
    interpreter is asked for its import roots only once nothing it names could be
    changed, nor what it loads before it can answer (:mod:`tether.hooks.startup`: its standard library)."""
    unusable = unreadable_for_others(command)
    found = _command_paths(command)
    if isinstance(found, str):
        return unusable, [found]
    package, checks, python = found
    paths = [p for path, _ in checks for p in (path, Path(os.path.realpath(path)))]
    problems = list(dict.fromkeys(p for p in map(changeable, dict.fromkeys(paths)) if p))
    if problems:
        return unusable, problems
    closed: list[str] = []

    def judge(path: Path, info: os.stat_result) -> str | None:
        need = 0o5 if stat.S_ISDIR(info.st_mode) else 0o4
        if info.st_mode & need != need:
            closed.append(f"{path} (mode {stat.filemode(info.st_mode)}: other users cannot read it)")
        try:  # one read of its ACL, for both: a named entry that denies read, one that grants write
            access = acl.read(path)
        except acl.AclError as e:
            return f"{path} ({e}: who can change it is unknown)"
        denied = acl.refused(access, need)
        if denied:
            closed.append(f"{path} (its ACL keeps {', '.join(denied)} from being able to read it)")
        return _loose(path, info, access=access)

    first = start_roots(python)  # what the interpreter loads before it can answer: judged before it runs
    if isinstance(first, str):
        return unusable, [first]
    problems = loose_under(first, judge, changeable)
    if problems:
        return list(dict.fromkeys([*unusable, *shown(closed)])), problems
    roots = import_roots(python, package.parent, first.walk)
    if isinstance(roots, str):
        return unusable, [roots]
    problems = loose_under(roots, judge, changeable)
    if not problems:  # the .pth code is root's now: what it adds to the path, walked too
        more = loaded_roots(python, [*first.walk, *roots.walk])
        problems = [more] if isinstance(more, str) else loose_under(more, judge, changeable)
    return list(dict.fromkeys([*unusable, *shown(closed)])), problems


def start_changeable(python: str) -> str | None:
    """Why running ``python`` could run what a user other than root (or the one running this) wrote before it
    runs a line of the caller's: its standard library, its prefix's ``lib`` (:mod:`tether.hooks.startup`) could be
    changed, or cannot be found without running it; None when neither."""
    first = start_roots(python)
    if isinstance(first, str):
        return first
    problems = loose_under(first, _loose, changeable)
    return f"{python} (what it loads as it starts: {'; '.join(problems)})" if problems else None


def changeable(path: Path) -> str | None:
    """Why a user other than root (or the one running this) could replace or edit ``path``: it, or a directory
    above it, is owned by another user or writable by group (but root's) or others. A sticky directory (``/tmp``)
    lets others write only their own entries: it is fine above an entry owned right."""
    for p in [*reversed(path.parents), path]:
        problem = _writable(p, last=p == path)
        if problem:
            return problem if p == path else f"{path} (under {problem})"
    return None


def _writable(path: Path, last: bool = True) -> str | None:
    try:
        info = path.stat()
    except OSError:
        return None  # what cannot be read is the read check's to name
    return _loose(path, info, last)


def _loose(path: Path, info: os.stat_result, last: bool = True, access: list[acl.Entry] | None = None) -> str | None:
    """Why a user other than root (or the one running this) could change ``path`` itself, by its ``info`` and
    its ACL (:mod:`tether.hooks.acl`; ``access``, when the caller read it already; a directory's default ACL too
    when it is the entry judged, not one above it: what is made in it later, an upgrade's files, takes that
    ACL)."""
    if info.st_uid not in (0, os.geteuid()):
        return f"{path} (owned by uid {info.st_uid}, who can change it)"
    sticky_above = stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX and not last
    others = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != 0)
    if others and not sticky_above:
        return f"{path} (mode {stat.filemode(info.st_mode)}: users other than its owner can change it)"
    if sticky_above:
        return None  # (others write only their own entries in it: its ACL, too, bounded by the sticky bit)
    trusted = (0, os.geteuid())
    try:
        if access is None and acl.needs_reading(info.st_mode):
            access = acl.read(path)
        granted = acl.writers(access, trusted, (0,)) if access is not None else []
        made = acl.default_writers(acl.read(path, acl.DEFAULT), trusted, (0,)) if stat.S_ISDIR(info.st_mode) else []
    except acl.AclError as e:
        return f"{path} ({e}: who can change it is unknown)"
    if granted:
        return f"{path} (its ACL lets {', '.join(granted)} change it)"
    if made:
        return f"{path} (its default ACL lets {', '.join(made)} change what is made in it)"
    return None


def _other_access(path: Path, need: int) -> str | None:
    for parent in reversed(path.parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            return f"{path} (its directory {parent} cannot be read)"
        if not mode & stat.S_IXOTH:
            return f"{path} (under {parent}, mode {stat.filemode(mode)}: other users cannot enter it)"
        problem = _other_bits(parent, 0o1)
        if problem:
            return f"{path} (under {problem})"
    return _other_bits(path, need)


def shared_problem(path: Path) -> str | None:
    """Why another user could not read ``path`` (its existing directories must let others in, an existing
    file must be readable by them); None when nothing stands in the way."""
    existing = next((d for d in (path.parent, *path.parent.parents) if os.path.exists(d)), Path("/"))
    problem = _other_access(existing, 0o1)
    if problem is None and os.path.exists(path):  # (False where a directory above cannot be searched)
        problem = _other_access(path, 0o4)
    return problem


def shared_changeable(path: Path) -> str | None:
    """Why a user other than root (or the one installing) could change what ``path`` says: its nearest existing
    directory or the file itself is theirs to write (:func:`changeable`)."""
    existing = next((d for d in (path.parent, *path.parent.parents) if os.path.exists(d)), Path("/"))
    paths = [existing, Path(os.path.realpath(existing))] + ([path] if os.path.exists(path) else [])
    return next((p for p in map(changeable, paths) if p), None)  # a linked directory: where it leads, too
