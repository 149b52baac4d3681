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

The command is :func:`tether.hooks.command.hook_command`'s. Idempotent: a hook entry in either form, or ``tether
hook <agent>`` (as earlier releases wrote it), is replaced in place, never added twice; uninstall removes every such
entry and nothing else.

A settings file that is not a JSON object (or whose ``hooks`` is malformed), or that is a symbolic link, is an
error naming the file, and is left untouched; it is read and replaced by :mod:`tether.hooks.settings`. A managed
install runs for every user of the machine, so it refuses a command any part of which other users could not
read or run, or could change (:mod:`tether.hooks.trust`).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .command import hook_command, ours, unrunnable
from .settings import InstallError, as_root, locked, read_settings, there, write_atomically
from .trust import judged, shared_changeable, shared_problem

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
#: tether's own file in Claude Code's managed drop-in directory (merged after ``managed-settings.json``).
DROP_IN = "tether.json"
LOCK_KEY = "allowManagedHooksOnly"
USAGE = (
    "usage: tether hook install {claude-code|codex} [--project|--user|--managed [--lock] [--managed-dir DIR]]"
    " [--envelope FILE] [--dir DIR]\n"
    "       tether hook uninstall {claude-code|codex} [--project|--user|--managed [--managed-dir DIR]] [--dir DIR]"
)


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


#: The directory holding tether's package, as the launcher appends it to the hook process's path.
PACKAGE_PARENT = Path(__file__).resolve().parent.parent.parent
#: What the warming interpreter runs after ``-I -S``: the launcher's path, then what :func:`.entry.main` does
#: before it decides in-process (``site``, no pydantic plugins, the deciding code with the gate); it prints where
#: :mod:`tether.compiled` keeps its table and the file it was imported from; the table is written at its exit.
WARM = """
import json, sys
sys.path.append(sys.argv[1])
from tether.hooks.entry import full_path, import_deciding_code, no_pydantic_plugins
full_path()
no_pydantic_plugins()
import_deciding_code()
from tether import compiled
print(json.dumps([compiled.location, compiled.__file__]))
"""
WARM_TIMEOUT_S = 120


def warm(python: str, package_parent: Path = PACKAGE_PARENT) -> tuple[Path | None, str]:
    """Run ``python`` as a hook starts it (``-I -S``, no environment, from an empty directory) to import the
    deciding code of the tether in ``package_parent`` once, so that :mod:`tether.compiled` writes its table of
    ``__init__`` code (as this user: root, for a managed install). The table, or None and why not.

    Under a umask of ``022`` whatever the installer's: the run also writes the bytecode (``__pycache__``
    directories, ``.pyc`` files) of every module it imports that had none, and under a umask of 0 every user could
    then plant a ``.pyc`` each other user's hook runs."""
    try:
        with tempfile.TemporaryDirectory(prefix="tether-warm-") as cwd:
            done = subprocess.run(
                [python, "-I", "-S", "-c", WARM, str(package_parent)],
                capture_output=True,
                text=True,
                timeout=WARM_TIMEOUT_S,
                check=False,
                cwd=cwd,
                env={},
                umask=0o022,
            )
    except (OSError, subprocess.SubprocessError) as e:
        return None, f"{python} did not run ({e})"
    if done.returncode != 0:
        return None, f"{python} failed ({(done.stderr.strip().splitlines() or ['no output'])[-1]})"
    try:
        location, module = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError, TypeError) as e:
        return None, f"{python} printed no answer ({e})"
    cache = package_parent / "tether" / "__pycache__"
    if not isinstance(module, str) or Path(module).parent != package_parent / "tether":
        return None, f"{python} imported tether from {module}, not from {package_parent}"
    if not isinstance(location, str) or Path(location).parent != cache:
        return None, f"{python} keeps no table beside tether's bytecode (its table: {location})"
    if not os.path.isfile(location):
        return None, f"{python} wrote no table at {location} (bytecode not written, or nothing new to keep)"
    return Path(location), ""


def warm_table(agent: str, envelope: Path | None) -> tuple[bool, str]:
    """During a managed install, once every check has passed and before the settings are written: warm
    :mod:`tether.compiled`'s table (:func:`warm`), then vouch for everything the hook imports again
    (:func:`.trust.judged`). This second walk is the check of what the warm-up wrote, which the first walk could
    not see: the table, and the bytecode of modules that had none (a package installed without it). A table it
    refuses is removed, and the install goes on without it (a hook call without the table costs what it did);
    anything else it refuses is an InstallError, and the settings are not written. Whether the table is there
    and trusted, and what to say."""
    command = hook_command(agent, envelope)
    table, why = warm(sys.executable)
    if table is None:
        return False, f"the __init__ code table was not written: {why}; each cold hook call compiles it"
    unusable, changed = judged(command)
    if not unusable and not changed:
        return True, f"the __init__ code table every user's hook process reads is in place, root's: {table}"
    others = [p for p in [*unusable, *changed] if not p.startswith(f"{table} (")]
    try:
        if len(others) < len(unusable) + len(changed):
            table.unlink()  # refused: never left where an earlier install's hook reads it
    except OSError as e:
        return False, f"{table} is not trusted ({'; '.join([*unusable, *changed])}) and not removed ({e})"
    if others:
        raise InstallError(
            "a managed hook runs as every user of this machine, but after tether imported its deciding code once"
            " (to keep the code of its __init__s, and the bytecode of modules that had none) "
            + "; ".join(others)
            + ". Make them root's and not writable by others (chmod -R go-w) and run the install again; the"
            " settings were not changed"
        )
    return False, f"the __init__ code table was removed: {'; '.join([*unusable, *changed])}"


def _fail(e: InstallError, verb: str, argv: list[str]) -> int:
    """Print the error (for a file that could not be written: the same command as root) and return its exit."""
    sys.stderr.write(f"error: {e}\n")
    if e.exit == 1:
        command = shlex.join(["sudo", sys.executable, "-m", "tether.cli.main", "hook", verb, *argv])
        sys.stderr.write(f"  {command}\n")
    return e.exit


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


def _check_managed(agent: str, command: str, path: Path) -> None:
    """A managed hook runs as every user: every user must be able to use what the command names and read the
    file, and no one but root (or the one installing) may change either. InstallError naming what is not so."""
    unusable, changed = judged(command)
    if unusable:
        raise InstallError(
            "a managed hook runs as every user of this machine, but other users cannot use "
            + "; ".join(unusable)
            + ". Install tether where every user can read and run it (e.g. a venv under /opt, chmod -R a+rX)"
            " and run the install with that interpreter; nothing was changed"
        )
    if changed:
        raise InstallError(
            "a managed hook runs as every user of this machine, so whoever can change what it runs (or anything"
            " its interpreter imports) runs code as all of them; but " + "; ".join(changed) + ". Install tether"
            " where only root can write it and everything it imports (e.g. a venv under /opt owned by root,"
            " chmod -R go-w) and run the install with that interpreter; nothing was changed"
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
            with locked(path.parent):
                settings, before = read_settings(path)  # the edit is checked against the very bytes read
                settings, result = change(settings)
                if settings is False:
                    return result
                if write_atomically(path, settings, strict=shared, expect=before, owner=owner):
                    return result
    except PermissionError as e:
        raise InstallError(f"cannot write {path}: {e.strerror}; nothing was changed. {as_root(path)}", exit=1) from e
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
    checked: Callable[[], object] | None = None,
) -> Path:
    """Write the hooks; the settings file written. ``checked``: called once every check has passed, before the
    settings are written (an InstallError from it writes nothing)."""
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
    if checked is not None:
        checked()

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
        raise InstallError(f"{path}: {found}; nothing was changed. {as_root(path)}", exit=1)
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
        warmed: list[tuple[bool, str]] = []

        def checked() -> None:  # a managed install warms the table once its checks passed, before writing
            if kw["scope"] == "managed":
                warmed.append(warm_table(agent, kw.get("envelope")))

        path = install(agent, **kw, checked=checked)
    except InstallError as e:
        return _fail(e, "install", argv)
    print(f"tether hooks for {agent} written to {path}")
    if kw["scope"] == "managed":
        print(f"every user's {agent} now runs: {hook_command(agent, kw.get('envelope'))}")
        print(
            f"check it with: tether hook status {agent}"
            + (f" --managed-dir {kw['managed_dir']}" if "managed_dir" in kw else "")
        )
        ((written, said),) = warmed
        if written:
            print(said)
        else:
            sys.stderr.write(f"warning: {said}\n")
        if "envelope" not in kw:
            sys.stderr.write(
                "note: no --envelope: what each call may do is then decided by $TETHER_ENVELOPE, else the"
                " project's own .tether/envelope.yaml (whoever writes the project, a cloned repository's authors"
                " too), else tether's built-in envelope; install with --envelope FILE (a file only root may"
                " change) for one policy every project runs under\n"
            )
    if agent == "codex":
        print(
            "Codex runs hooks unless `[features] hooks = false` (or the older `codex_hooks = false`) is set in"
            " ~/.codex/config.toml or /etc/codex/requirements.toml; releases before hooks were on by default need"
            " `codex_hooks = true` there."
        )
        print(
            "Codex's exec_command can keep a process open and type into it with write_stdin, which no hook sees"
            " (openai/codex#46372): `[features] unified_exec = false` in config.toml gives Codex its one-shot shell"
            " tool instead, each command judged."
        )
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
