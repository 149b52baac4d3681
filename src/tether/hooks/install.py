"""``tether hook install|uninstall claude-code|codex [--project|--user|--managed [--lock] [--managed-dir DIR]]``.

Writes (or removes) tether's hooks in the agent's settings, keeping everything else in the file:

* Claude Code: ``<dir>/.claude/settings.json`` (``--project``, the default), ``~/.claude/settings.json``
  (``--user``; ``$CLAUDE_CONFIG_DIR/settings.json`` when that is set), or a drop-in of tether's own,
  ``<managed>/managed-settings.d/tether.json`` (``--managed``: the managed-settings layer no user or project
  setting overrides; ``<managed>`` is ``/etc/claude-code`` on Linux, ``/Library/Application Support/ClaudeCode``
  on macOS, or ``--managed-dir DIR``). ``--lock`` also writes ``allowManagedHooksOnly: true`` there. Events
  PreToolUse, PostToolUse, PostToolUseFailure (every tool), UserPromptSubmit, SessionStart, SessionEnd, Stop.
* Codex: ``<dir>/.codex/hooks.json``, ``~/.codex/hooks.json`` (``$CODEX_HOME/hooks.json`` when set), or
  (``--managed``) ``/etc/codex/hooks.json``, the hooks file of Codex's system layer, whose hooks Codex treats as
  managed. Events PreToolUse, PostToolUse, UserPromptSubmit, SessionStart, Stop. (``--lock`` is Codex's
  ``allow_managed_hooks_only = true`` in ``requirements.toml``, a TOML file tether does not edit: a usage error
  that says so.)

The command is the bash client (``<bash> …/tether/hooks/hook.sh <python> <agent>``: no interpreter start-up
when the daemon answers) where bash exists, else the Python launcher (``<python> -I -S …/tether/hooks/launch.py
<agent>``). Idempotent: a hook entry in either form, or ``tether hook <agent>`` (as earlier releases wrote it), is
replaced in place, never added twice; uninstall removes every such entry and nothing else.

A settings file that is not a JSON object (or whose ``hooks`` is malformed), or that is a symbolic link, is an
error naming the file, and is left untouched. The file is replaced atomically (a temporary file in the same
directory, then ``rename``), keeping its permissions; installers racing on one directory take turns (``flock``
on the directory). A managed install runs for every user of the machine, so it refuses a command any part of
which (interpreter, client, tether's package, envelope) other users could not read or run.

Each command ends in ``|| exit 2``: if tether cannot start at all (not installed, broken interpreter), the
agent reads exit 2 as "blocked", not as a hook that had nothing to say.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVENTS = {
    "claude-code": (
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "SessionStart",
        "SessionEnd",
        "Stop",
    ),
    "codex": ("PreToolUse", "PostToolUse", "UserPromptSubmit", "SessionStart", "Stop"),
}
TOOL_EVENTS = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
STOP_TIMEOUT_S = 600  # the required sensors run at a stop (a test suite)
TIMEOUT_S = 60
LAUNCHER = os.path.join("tether", "hooks", "launch.py")
CLIENT = os.path.join("tether", "hooks", "hook.sh")
SCOPES = ("project", "user", "managed")
#: tether's own file in Claude Code's managed drop-in directory (merged after ``managed-settings.json``).
DROP_IN = "tether.json"
LOCK_KEY = "allowManagedHooksOnly"
USAGE = (
    "usage: tether hook install {claude-code|codex} [--project|--user|--managed [--lock] [--managed-dir DIR]]"
    " [--envelope FILE] [--dir DIR]\n"
    "       tether hook uninstall {claude-code|codex} [--project|--user|--managed [--managed-dir DIR]] [--dir DIR]"
)


class InstallError(Exception):
    """Bad arguments (exit 2), a settings file tether will not rewrite (2), or one it cannot write (1)."""

    def __init__(self, message: str, exit: int = 2) -> None:
        super().__init__(message)
        self.exit = exit


def default_managed_dir(agent: str) -> Path:
    """Where the agent reads managed settings: Claude Code's documented system directories; Codex's system layer."""
    if agent == "codex":
        return Path("/etc/codex")
    return Path("/Library/Application Support/ClaudeCode") if sys.platform == "darwin" else Path("/etc/claude-code")


def settings_file(agent: str, scope: str, directory: Path, managed_dir: Path | None = None) -> Path:
    """The file a ``scope`` install writes. The user layer is where the agent keeps it: ``$CLAUDE_CONFIG_DIR``
    (Claude Code) or ``$CODEX_HOME`` (Codex) when set, else ``~/.claude`` / ``~/.codex``."""
    if scope == "managed":
        base = Path(os.path.abspath(managed_dir or default_managed_dir(agent)))  # judged from /, not the cwd
        return base / "managed-settings.d" / DROP_IN if agent == "claude-code" else base / "hooks.json"
    if scope == "user":
        home = os.environ.get("CLAUDE_CONFIG_DIR" if agent == "claude-code" else "CODEX_HOME")
        folder = Path(home) if home else Path.home() / (".claude" if agent == "claude-code" else ".codex")
        return folder / ("settings.json" if agent == "claude-code" else "hooks.json")
    return directory / (".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json")


def hook_command(agent: str, envelope: Path | None) -> str:
    """The bash client where bash exists (a call the daemon answers costs bash's start-up and a round trip, no
    Python), else :func:`launcher_command`. The client falls back to that same launcher, run by this
    interpreter, whenever the daemon cannot answer it."""
    path = os.environ.get("PATH", os.defpath).split(os.pathsep)
    bash = shutil.which("bash", path=os.pathsep.join(p for p in path if os.path.isabs(p)))  # never ./bash
    if not bash:
        return launcher_command(agent, envelope)
    client = Path(__file__).resolve().with_name("hook.sh")
    return _command([bash, str(client), sys.executable], agent, envelope)


def launcher_command(agent: str, envelope: Path | None) -> str:
    """This interpreter running the launcher bare (``-I -S``: no site, no ``PYTHON*`` variables), not the
    ``tether`` console script: a call the daemon answers then costs little more than ``python -c pass``."""
    launcher = Path(__file__).resolve().with_name("launch.py")
    return _command([sys.executable, "-I", "-S", str(launcher)], agent, envelope)


def _command(program: list[str], agent: str, envelope: Path | None) -> str:
    """``program AGENT [--envelope FILE] || exit 2``: if it cannot even start, the agent reads "blocked"."""
    options = ["--envelope", str(envelope.resolve())] if envelope else []
    return shlex.join([*program, agent, *options]) + " || exit 2"


def unrunnable(command: str) -> str | None:
    """Why the agent could not run ``command`` as written whatever is installed: a path in it that is not UTF-8
    (settings are UTF-8 JSON; the agent would run another, mangled path), an empty word (an embedded Python
    whose ``sys.executable`` is empty), not valid shell."""
    if not _utf8(command):
        shown = command.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        return f"{shown} names a path that is not valid UTF-8, which the agent's settings (UTF-8 JSON) cannot hold"
    try:
        words = shlex.split(command)
    except ValueError:
        return f"{command} is not valid shell"
    if "" in words:
        return f"{command} names an empty path (a Python that does not know its own, sys.executable empty)"
    return None


def ours(entry: Any, agent: str) -> bool:
    """A tether hook entry for ``agent``: ``…/tether hook AGENT …`` or ``python -m tether.cli.main hook AGENT …``
    (the console script, as earlier releases wrote it), ``…/tether/hooks/launch.py AGENT …`` or
    ``…/tether/hooks/hook.sh PYTHON AGENT …``. Judged on whole words: a user's hook that merely mentions
    ``hook AGENT`` or sits in a ``mytether/hooks/`` folder is not tether's, nor is a command that is not valid
    shell (tether never writes one)."""
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        return False
    try:
        words = shlex.split(entry["command"])
    except ValueError:
        return False
    return any(
        ((word == "hook" and i > 0 and _console_script(words[i - 1])) or is_script(word, LAUNCHER))
        and words[i + 1 : i + 2] == [agent]
        for i, word in enumerate(words)
    ) or any(is_script(word, CLIENT) and words[i + 2 : i + 3] == [agent] for i, word in enumerate(words))


def is_script(word: str, script: str) -> bool:
    """``word`` names tether's ``script`` (``…/tether/hooks/x``), path component by path component."""
    return word == script or word.endswith(os.sep + script)


def _console_script(word: str) -> bool:
    return os.path.basename(word) == "tether" or word in ("tether.cli.main", "tether.cli")


def groups_of(settings: dict[str, Any], path: Path) -> dict[str, Any]:
    """``settings["hooks"]`` checked: an object whose events are lists of objects each with a ``hooks`` list."""
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: field 'hooks' must be an object, got {type(hooks).__name__}; not changed")
    for event, groups in hooks.items():
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise InstallError(f"{path}: field 'hooks.{event}' must be a list of objects; not changed")
        if not all(isinstance(g.get("hooks"), list) for g in groups):
            raise InstallError(f"{path}: field 'hooks.{event}[].hooks' must be a list; not changed")
    return hooks


#: Events whose groups a matcher narrows (tool names; SessionStart's source): tether's entry must see them all.
MATCHED_EVENTS = (*TOOL_EVENTS, "SessionStart")
#: Matchers that select everything: none, empty, ``*`` (Claude Code's documented forms), the regex ``.*``.
MATCH_ALL = ("", "*", ".*")


def sees_all(group: dict[str, Any], event: str) -> bool:
    """Whether a hook in ``group`` runs on every call of ``event`` (its matcher, where the event has one, selects
    everything)."""
    return event not in MATCHED_EVENTS or group.get("matcher", "") in MATCH_ALL


def merged(settings: dict[str, Any], agent: str, command: str, path: Path) -> dict[str, Any]:
    """``settings`` with tether's hook, exactly once, on every event of ``agent``: the first earlier tether
    entry in a group that sees every call is replaced in place; every other tether entry (a second one, or one
    under a matcher that sees only some tools) is taken out, with a group that this emptied."""
    hooks = groups_of(settings, path)
    settings["hooks"] = hooks
    for event in EVENTS[agent]:
        groups = hooks.setdefault(event, [])
        entry = {"type": "command", "command": command, "timeout": STOP_TIMEOUT_S if event == "Stop" else TIMEOUT_S}
        found, kept_groups = False, []
        for group in groups:
            entries = []
            for e in group["hooks"]:
                if not ours(e, agent):
                    entries.append(e)
                elif not found and sees_all(group, event):
                    entries.append(entry)
                    found = True
            if entries or not group["hooks"]:
                kept_groups.append({**group, "hooks": entries})
        groups[:] = kept_groups
        if not found:
            group = {"hooks": [entry]}
            if event in TOOL_EVENTS and agent == "claude-code":
                group = {"matcher": "*", **group}
            groups.append(group)
    return settings


def removed(settings: dict[str, Any], agent: str, path: Path) -> int:
    """Take every tether entry of ``agent`` out of ``settings``; the number taken. A group (and an event, and
    ``hooks``) that this emptied goes too; one that was empty before stays as it was."""
    hooks = groups_of(settings, path)
    count = 0
    for event in list(hooks):
        kept_groups = []
        for group in hooks[event]:
            kept = [e for e in group["hooks"] if not ours(e, agent)]
            count += len(group["hooks"]) - len(kept)
            if kept or not group["hooks"]:
                kept_groups.append({**group, "hooks": kept})
        if kept_groups or not hooks[event]:
            hooks[event] = kept_groups
        else:
            del hooks[event]
    if count and not hooks and "hooks" in settings:
        del settings["hooks"]
    return count


#: A settings file larger than this is refused, not read (real ones are a few KiB).
MAX_SETTINGS_BYTES = 8 << 20


def read_text(path: Path) -> str:
    """``path``'s text, UTF-8, read without blocking: OSError for anything but a regular file (a FIFO would hang
    the reader, a device would never end) or for one over :data:`MAX_SETTINGS_BYTES`; ValueError for bytes
    that are not UTF-8."""
    return read_bytes(path).decode("utf-8")


def read_bytes(path: Path) -> bytes:
    """:func:`read_text`'s bytes."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"not a regular file ({stat.filemode(info.st_mode)})")
        data = f.read(MAX_SETTINGS_BYTES + 1)
    if len(data) > MAX_SETTINGS_BYTES:
        raise OSError(f"larger than {MAX_SETTINGS_BYTES >> 20} MiB")
    return data


def parse_json(text: str, rewrite: bool = True) -> Any:
    """Strict JSON as the agent reads it (``NaN``/``Infinity`` are not JSON; nesting too deep to parse is a
    ValueError). With ``rewrite`` (install, uninstall), also nothing tether could not write back the same: a
    duplicate key (the agent reads the last; rewriting would silently drop the other) or a number out of range
    (written back as ``Infinity``, which is not JSON)."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out and rewrite:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    def number(word: str) -> float:
        value = float(word)
        if rewrite and value in (float("inf"), float("-inf")):
            raise ValueError(f"number {word[:40]} out of range")
        return value

    def constant(word: str) -> Any:
        raise ValueError(f"{word} is not JSON")

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_float=number, parse_constant=constant)
    except RecursionError as e:
        raise ValueError("nested too deeply") from e


def there(path: Path) -> bool | str:
    """Whether ``path`` exists, or why that cannot be known (a directory above it this user may not search:
    neither "no file" nor a crash)."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return os.path.islink(path)  # a dangling link is there (and unreadable)
    except OSError as e:
        return f"cannot check it ({e.strerror})"
    return True


def read_settings(path: Path) -> tuple[dict[str, Any] | None, bytes | None]:
    """The JSON object in ``path`` and the bytes it was read from; (None, None) when there is no file.
    InstallError for a symbolic link (replacing it would turn the link into a plain file and detach whatever it
    pointed to), something that is not a regular file, or a file that is not a JSON object tether can write
    back whole (:func:`parse_json`)."""
    if path.is_symlink():
        raise InstallError(
            f"{path}: is a symbolic link (to {os.readlink(path)}); tether does not replace links: edit the"
            " target yourself, or replace the link with a plain file; not changed"
        )
    try:
        data = read_bytes(path)
        settings = parse_json(data.decode("utf-8") or "{}")
    except FileNotFoundError:
        return None, None
    except PermissionError as e:
        raise InstallError(f"{path}: cannot read it ({e.strerror}); {_as_root(path)}", exit=1) from e
    except OSError as e:
        raise InstallError(f"{path}: cannot read it ({e.strerror or e}); tether does not overwrite it") from e
    except ValueError as e:
        raise InstallError(f"{path}: not valid JSON ({e}); fix or remove it, tether does not overwrite it") from e
    if not isinstance(settings, dict):
        raise InstallError(f"{path}: expected a JSON object at the top, got {type(settings).__name__}; not changed")
    return settings, data


def _as_root(path: Path) -> str:
    return f"the owner of {path.parent} (root, for managed settings) must run it, e.g. with sudo"


def _fail(e: InstallError, verb: str, argv: list[str]) -> int:
    """Print the error (for a file that could not be written: the same command as root) and return its exit."""
    sys.stderr.write(f"error: {e}\n")
    if e.exit == 1:
        command = shlex.join(["sudo", sys.executable, "-m", "tether.cli.main", "hook", verb, *argv])
        sys.stderr.write(f"  {command}\n")
    return e.exit


@contextlib.contextmanager
def _directory(directory: Path) -> Iterator[int]:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """Installers on one directory take turns (an exclusive ``flock`` on the directory itself)."""
    with _directory(directory) as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield


def write_atomically(
    path: Path,
    settings: dict[str, Any] | None,
    mode: int = 0o644,
    strict: bool = False,
    expect: bytes | bool | None = False,  # False: whatever is there
    owner: tuple[int, int] | None = None,  # a new file's (uid, gid), when root writes it
) -> bool:
    """Replace ``path`` by ``settings`` as JSON (None: delete it), all or nothing, keeping its permissions and
    owner (``strict``, a file every user reads and none may change: without group or other write); the rename (or
    the deletion) is on disk when this returns. With ``expect`` (:func:`content` of the file as read):
    False, nothing written, when another program changed the file since (its edit would be lost)."""
    if settings is None:
        if expect is not False and content(path) != expect:
            return False
        path.unlink()
        _sync_directory(path.parent)
        return True
    text = json.dumps(settings, indent=2, allow_nan=False, ensure_ascii=False) + "\n"  # é stays é
    if not _utf8(text):  # a lone surrogate, as a \ud800 escape read it: written back escaped
        text = json.dumps(settings, indent=2, allow_nan=False) + "\n"
    old = path.stat() if path.exists() else None
    mode = (old.st_mode & 0o777 if old else mode) & (~0o022 if strict else 0o777)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            # By the descriptor, never the name: in a directory another user owns, the name could be swapped
            # for a link to /etc/shadow between two calls, and root would chmod or chown that instead.
            os.fchmod(fd, mode)
            keep = (old.st_uid, old.st_gid) if old else owner
            if keep and keep != (0, 0) and os.geteuid() == 0:
                os.fchown(fd, *keep)  # sudo in a developer's project: the file stays (or is made) theirs
            os.fsync(fd)
        if expect is not False and content(path) != expect:
            os.unlink(tmp)
            return False
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _sync_directory(path.parent)
    return True


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def content(path: Path) -> bytes | None:
    """What ``path`` holds (None: no file), to tell whether another program rewrote it since: by its bytes, not
    its times, which the kernel keeps in ticks of milliseconds (two saves in one tick look alike)."""
    try:
        return read_bytes(path)
    except FileNotFoundError:
        return None


def _sync_directory(directory: Path) -> None:
    with _directory(directory) as fd:
        os.fsync(fd)


def _command_paths(command: str) -> tuple[Path, list[tuple[Path, int]]] | str:
    """tether's package (the one the command's client or launcher sits in) and each absolute path ``command``
    names with the access every user needs (``0o5`` read and run, ``0o4`` read); or why it does not parse."""
    try:
        words = shlex.split(command.removesuffix(" || exit 2"))
    except ValueError:
        return f"the command {command!r} (not parseable)"
    script = next((w for w in words if is_script(w, CLIENT) or is_script(w, LAUNCHER)), None)
    package = Path(script).resolve().parent.parent if script else Path(__file__).resolve().parent.parent
    checks: list[tuple[Path, int]] = [(package.parent, 0o5), (package, 0o5)]
    for i, word in enumerate(words):
        if word.startswith("/"):
            executable = i == 0 or (i == 2 and is_script(words[1], CLIENT))
            checks.append((Path(word), 0o5 if executable else 0o4))
            venv = Path(word).parent.parent / "pyvenv.cfg"  # a venv's interpreter reads it at start-up
            if executable and venv.is_file():
                checks.append((venv, 0o4))
    return package, checks


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
    package, checks = found
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
    """Why others lack ``need`` (``0o5`` read and run, ``0o4`` read) on ``path`` itself, by its mode bits."""
    try:
        mode = path.stat().st_mode
    except OSError as e:
        return f"{path} ({e.strerror})"
    if mode & need != need:
        kind = "read and run" if need & 0o1 else "read"
        return f"{path} (mode {stat.filemode(mode)}: other users cannot {kind} it)"
    return None


def changeable_by_others(command: str) -> list[str]:
    """What in ``command`` a user other than root (or the one installing) could change, and so change what
    every user's agent runs: each path it names, every directory above one, and every file and directory of
    tether's package (:func:`changeable`)."""
    found = _command_paths(command)
    if isinstance(found, str):
        return [found]
    package, checks = found
    paths = [p for path, _ in checks for p in (path, Path(os.path.realpath(path)))]
    problems = [changeable(p) for p in dict.fromkeys(paths)]
    for root, dirs, files in os.walk(package):  # __pycache__ too: Python runs a .pyc planted there
        problems += [_writable(Path(root, name)) for name in [*dirs, *files]]
    return list(dict.fromkeys(p for p in problems if p))


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
    if info.st_uid not in (0, os.geteuid()):
        return f"{path} (owned by uid {info.st_uid}, who can change it)"
    others = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid != 0)
    if others and not (stat.S_ISDIR(info.st_mode) and info.st_mode & stat.S_ISVTX and not last):
        return f"{path} (mode {stat.filemode(info.st_mode)}: users other than its owner can change it)"
    return None


def _other_access(path: Path, need: int) -> str | None:
    for parent in reversed(path.parents):
        try:
            mode = parent.stat().st_mode
        except OSError:
            return f"{path} (its directory {parent} cannot be read)"
        if not mode & stat.S_IXOTH:
            return f"{path} (under {parent}, mode {stat.filemode(mode)}: other users cannot enter it)"
    return _other_bits(path, need)


@dataclass(frozen=True)
class Target:
    """One install or uninstall: the agent, the layer, where."""

    agent: str
    scope: str = "project"
    directory: Path | None = None
    managed_dir: Path | None = None

    @property
    def path(self) -> Path:
        """The settings file. InstallError for a project whose ``.claude`` / ``.codex`` is a link out of it: a
        project install would write (as whoever runs it, perhaps root) wherever a cloned repository points."""
        project = (self.directory or Path.cwd()).resolve()
        path = settings_file(self.agent, self.scope, project, self.managed_dir)
        real = os.path.realpath(path.parent)
        if self.scope == "project" and os.path.commonpath([real, project]) != str(project):
            raise InstallError(
                f"{path.parent} is a link out of the project (to {real}); tether does not follow it: edit the"
                " settings there yourself, or use --user / --managed; not changed"
            )
        return path


def _make_dirs(directory: Path, shared: bool) -> tuple[int, int] | None:
    """``mkdir -p``; with ``shared``, each directory made is ``0755`` whatever the umask (every user reads it).
    Otherwise, run as root in a directory a user owns (``sudo`` in a developer's project), what it makes is
    theirs, like the directory it is made in: their owner (uid, gid), returned for the file, or None."""
    missing = [d for d in (directory, *directory.parents) if not d.exists()]
    base = (directory, *directory.parents)[len(missing)].stat()
    owner = None if shared or os.geteuid() != 0 or base.st_uid == 0 else (base.st_uid, base.st_gid)
    for d in reversed(missing):
        d.mkdir(exist_ok=True)
        if shared:
            d.chmod(0o755)
        elif owner:
            os.chown(d, *owner, follow_symlinks=False)  # a link swapped in meanwhile is chowned, not its target
    return owner


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


def _check_managed(agent: str, command: str, path: Path) -> None:
    """A managed hook runs as every user: every user must be able to use what the command names and read the
    file, and no one but root (or the one installing) may change either. InstallError naming what is not so."""
    unusable, changed = unreadable_for_others(command), changeable_by_others(command)
    if unusable:
        raise InstallError(
            "a managed hook runs as every user of this machine, but other users cannot use "
            + "; ".join(unusable)
            + ". Install tether where every user can read and run it (e.g. a venv under /opt, chmod -R a+rX)"
            " and run the install with that interpreter; nothing was changed"
        )
    if changed:
        raise InstallError(
            "a managed hook runs as every user of this machine, so whoever can change what it runs runs code as"
            " all of them; but " + "; ".join(changed) + ". Install tether where only root can write it (e.g. a"
            " venv under /opt owned by root, chmod -R go-w) and run the install with that interpreter; nothing"
            " was changed"
        )
    blocked = shared_problem(path)
    if blocked:
        raise InstallError(
            f"other users' {agent} could not read {path}: {blocked}; let every user read it (chmod o+rx on the"
            " directories, o+r on the file) or choose another --managed-dir; nothing was changed"
        )
    loose = shared_changeable(path)
    if loose:
        raise InstallError(
            f"managed settings no user may override, but {loose}: a user could rewrite {path}; make it root's"
            " (chown root, chmod go-w) or choose another --managed-dir; nothing was changed"
        )


#: Read-change-write cycles tried when another program (the agent, an editor) rewrites the file meanwhile.
EDIT_ATTEMPTS = 5


def _edit(path: Path, change: Any, shared: bool = False) -> Any:
    """Under the directory's lock: read ``path``, apply ``change(settings) -> (new settings | None, result)``,
    write it atomically, unless the file changed since it was read (a writer that does not take tether's lock:
    the agent, an editor): then read and apply again, up to :data:`EDIT_ATTEMPTS` times, never writing over
    that edit. OS errors (a read-only directory, not root) are an InstallError naming the file.
    ``shared``: a file every user's agent reads (directories made ``0755``, a new file ``0644``)."""
    try:
        owner = _make_dirs(path.parent, shared)
        for _ in range(EDIT_ATTEMPTS):
            with _locked(path.parent):
                settings, before = read_settings(path)  # the edit is checked against the very bytes read
                settings, result = change(settings)
                if settings is False:
                    return result
                if write_atomically(path, settings, strict=shared, expect=before, owner=owner):
                    return result
    except PermissionError as e:
        raise InstallError(f"cannot write {path}: {e.strerror}; nothing was changed. {_as_root(path)}", exit=1) from e
    except OSError as e:
        raise InstallError(f"cannot write {path}: {e.strerror or e}; nothing was changed", exit=1) from e
    raise InstallError(
        f"{path} changed each of the {EDIT_ATTEMPTS} times tether read it (another program is writing it, and"
        " tether does not overwrite its edits); nothing was changed: run it again",
        exit=1,
    )


def install(
    agent: str,
    *,
    user: bool = False,
    directory: Path | None = None,
    envelope: Path | None = None,
    scope: str | None = None,
    managed_dir: Path | None = None,
    lock: bool = False,
) -> Path:
    """Write the hooks; the settings file written."""
    target = Target(agent, scope or ("user" if user else "project"), directory, managed_dir)
    if envelope is not None and not envelope.is_file():
        raise InstallError(f"--envelope {envelope}: no such file")
    if lock and (target.scope != "managed" or agent != "claude-code"):
        raise InstallError(
            "--lock: Codex's managed-hooks-only switch is `allow_managed_hooks_only = true` in"
            " /etc/codex/requirements.toml, which tether does not edit: add it there yourself"
            if agent == "codex"
            else "--lock only goes with --managed (allowManagedHooksOnly is read from managed settings only)"
        )
    command = hook_command(agent, envelope)
    problem = unrunnable(command)
    if problem:
        raise InstallError(f"{problem}: install tether where its path is plain UTF-8; nothing was changed")
    path = target.path
    if target.scope == "managed":
        _check_managed(agent, command, path)

    def change(settings: dict[str, Any] | None) -> tuple[dict[str, Any], None]:
        settings = merged(settings if settings is not None else {}, agent, command, path)
        if lock:
            settings[LOCK_KEY] = True
        return settings, None

    _edit(path, change, shared=target.scope == "managed")
    return path


def uninstall(
    agent: str, *, scope: str = "project", directory: Path | None = None, managed_dir: Path | None = None
) -> tuple[Path, int]:
    """Remove tether's hooks from one layer: the file and the number of entries removed (0: none were there).

    tether's managed drop-in is deleted when nothing but tether's hooks (and its ``allowManagedHooksOnly``)
    is left in it."""
    target = Target(agent, scope, directory, managed_dir)
    path = target.path
    found = there(path)
    if isinstance(found, str):
        raise InstallError(f"{path}: {found}; nothing was changed. {_as_root(path)}", exit=1)
    if not found:
        return path, 0
    drop_in = scope == "managed" and agent == "claude-code"

    def change(settings: dict[str, Any] | None) -> tuple[dict[str, Any] | bool | None, int]:
        if settings is None:
            return False, 0
        count = removed(settings, agent, path)
        if not count:
            return False, 0
        if drop_in:
            settings.pop(LOCK_KEY, None)
            if not settings:
                return None, count
        return settings, count

    count: int = _edit(path, change)
    return path, count


VALUED = {"--envelope": "envelope", "--dir": "directory", "--managed-dir": "managed_dir"}


def parse(argv: list[str]) -> tuple[str, dict[str, Any]]:
    """``AGENT [options]`` → the agent and keyword arguments for :func:`install`; InstallError on bad usage."""
    if not argv or argv[0] not in EVENTS:
        raise InstallError(USAGE)
    agent, rest = argv[0], argv[1:]
    kw: dict[str, Any] = {}
    scopes = []
    while rest:
        flag = rest.pop(0)
        if flag in ("--user", "--project", "--managed"):
            scopes.append(flag[2:])
        elif flag == "--lock":
            kw["lock"] = True
        elif flag in VALUED and rest:
            kw[VALUED[flag]] = Path(os.path.abspath(rest.pop(0)))
        else:
            raise InstallError(f"unknown or incomplete option {flag!r}\n{USAGE}")
    if len(set(scopes)) > 1:
        raise InstallError(f"choose one of --project, --user, --managed\n{USAGE}")
    kw["scope"] = scopes[0] if scopes else "project"
    if "managed_dir" in kw and kw["scope"] != "managed":
        raise InstallError(f"--managed-dir goes with --managed\n{USAGE}")
    return agent, kw


def main(argv: list[str]) -> int:
    """``tether hook install …``: 0 written; 2 bad arguments or a settings file left as it was; 1 a file that
    could not be written (not root)."""
    try:
        agent, kw = parse(argv)
        path = install(agent, **kw)
    except InstallError as e:
        return _fail(e, "install", argv)
    print(f"tether hooks for {agent} written to {path}")
    if kw["scope"] == "managed":
        print(f"every user's {agent} now runs: {hook_command(agent, kw.get('envelope'))}")
        print(
            f"check it with: tether hook status {agent}"
            + (f" --managed-dir {kw['managed_dir']}" if "managed_dir" in kw else "")
        )
    if agent == "codex":
        print("Codex releases that gate hooks need `[features]\\ncodex_hooks = true` in ~/.codex/config.toml.")
        if kw["scope"] != "managed":
            print("Codex runs a hook that is not managed only once you trust it: open /hooks in Codex and trust it.")
    return 0


def uninstall_main(argv: list[str]) -> int:
    """``tether hook uninstall …``: 0 removed or nothing to remove (said so); 2 bad arguments or a settings file
    left as it was; 1 a file that could not be written."""
    try:
        agent, kw = parse(argv)
        if kw.get("lock") or "envelope" in kw:
            raise InstallError(f"uninstall takes no --lock or --envelope\n{USAGE}")
        path, count = uninstall(agent, **kw)
    except InstallError as e:
        return _fail(e, "uninstall", argv)
    if count:
        print(f"removed {count} tether hook entr{'y' if count == 1 else 'ies'} for {agent} from {path}")
        if not path.exists():
            print(f"deleted {path} (tether's own drop-in)")
    else:
        print(f"tether's hooks for {agent} are not installed in {path}; nothing changed")
    return 0
