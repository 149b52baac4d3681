"""``tether hook status [claude-code|codex] [--dir DIR] [--managed-dir DIR] [--json]``: is tether governing?

For each settings layer the agent reads (Claude Code: managed — ``managed-settings.json`` and each drop-in of
``managed-settings.d/`` — user, project, project-local; Codex: managed ``/etc/codex/hooks.json``, user,
project), which events carry tether's hook, and whether each command written there runs now: its bash,
interpreter and client or launcher exist, the interpreter imports tether, and that tether is the code of the
one answering (version and a digest of the package's files: a venv moved or upgraded after the install is the
common rollout failure). Also: events missing, ``allowManagedHooksOnly`` / ``disableAllHooks`` (Claude Code)
and ``allow_managed_hooks_only`` (Codex's ``requirements.toml``) and what they mean for the hooks found, and
whether a daemon answers on this user's socket (a plain connect, as the daemon's own wake-up does: no new
protocol; none running is no problem, the first hook call starts one).

Exit 0: no problem; 1: problems, each named with its file and its fix; 2: usage.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import socket
import sys
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from .command import CLIENT, LAUNCHER, is_script, ours, unrunnable
from .import_roots import FIND_TETHER, ProbeError, ask
from .install import EVENTS, LOCK_KEY, default_managed_dir, groups_of, sees_all, settings_file
from .relay import socket_path
from .settings import InstallError, parse_json, read_bytes, read_text, there
from .trust import changeable, judged, shared_changeable, shared_problem, start_changeable

USAGE = "usage: tether hook status [claude-code|codex] [--dir DIR] [--managed-dir DIR] [--json]"


@dataclass
class Problem:
    file: str
    problem: str
    fix: str


@dataclass
class Command:
    command: str
    events: list[str]
    runnable: bool = False  # the interpreter was run and imported tether
    interpreter: str | None = None
    version: str | None = None
    package: str | None = None
    same_code: bool | None = None
    notes: list[str] = field(default_factory=list)
    init_table: str | None = None  # managed: tether.compiled's table beside the package's bytecode, if there
    init_table_state: str | None = None  # managed: "missing", "stale" (older than a module of the package), "current"


@dataclass
class Layer:
    layer: str
    file: str
    exists: bool = False
    link: str | None = None  # a symbolic link's target: read through; install and uninstall refuse to rewrite it
    error: str | None = None
    events: list[str] = field(default_factory=list)  # tether's hook runs on every call of each
    narrowed: list[str] = field(default_factory=list)  # tether's hook under a matcher that selects only some calls
    background: list[str] = field(default_factory=list)  # tether's hook marked async: its answer blocks nothing
    commands: list[Command] = field(default_factory=list)
    settings: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Answer:
    """Which tether a command's interpreter answers with, and what stands against it running that tether."""

    version: str | None
    package: str
    runnable: bool  # the interpreter was run and found tether
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def layers(agent: str, directory: Path, managed_dir: Path | None) -> list[Layer]:
    """The settings files ``agent`` reads, highest precedence first."""
    managed = managed_dir or default_managed_dir(agent)
    if agent == "codex":  # each layer's hooks.json, and [hooks] tables written inline in its TOML (when there)
        home = settings_file(agent, "user", directory).parent
        files = [("managed", managed / "hooks.json")]
        files += [("managed", managed / name) for name in ("config.toml", "requirements.toml")]
        files += [("project", directory / ".codex" / "config.toml"), ("user", home / "config.toml")]
        files = [(name, path) for name, path in files if path.suffix != ".toml" or there(path) is not False]
    else:
        files = [("managed", managed / "managed-settings.json"), *drop_in_files(agent, directory, managed)]
        files.append(("local", directory / ".claude" / "settings.local.json"))
    files += [
        ("project", settings_file(agent, "project", directory)),
        ("user", settings_file(agent, "user", directory)),
    ]
    order = ("managed", "local", "project", "user")
    return [read_layer(name, path, agent) for name, path in sorted(files, key=lambda f: order.index(f[0]))]


def drop_in_files(agent: str, directory: Path, managed: Path) -> list[tuple[str, Path]]:
    """Claude Code's managed drop-ins (merged after the base file, sorted by name, hidden ones skipped); where
    there is no drop-in directory, the file tether's install would write. A directory this user cannot list
    is itself the layer (read_layer names why)."""
    drop_ins = managed / "managed-settings.d"
    try:
        if not drop_ins.is_dir():
            return [("managed", settings_file(agent, "managed", directory, managed))]
        names = sorted(p.name for p in drop_ins.iterdir() if p.name.endswith(".json") and not p.name.startswith("."))
    except OSError:
        return [("managed", drop_ins)]
    return [("managed", drop_ins / name) for name in names]


def read_layer(name: str, path: Path, agent: str) -> Layer:
    found = there(path)
    layer = Layer(name, str(path), exists=found is not False, link=os.readlink(path) if os.path.islink(path) else None)
    if isinstance(found, str):
        layer.error = found
    if found is not True:
        return layer
    try:
        if path.suffix == ".toml":
            hooks = groups_of({"hooks": toml_hooks(path)}, path)
        else:
            settings = parse_json(read_text(path) or "{}", rewrite=False)
            if not isinstance(settings, dict):
                raise InstallError(f"expected a JSON object at the top, got {type(settings).__name__}")
            hooks = groups_of(settings, path)
            layer.settings = settings
    except (OSError, ValueError, RecursionError, InstallError) as e:
        layer.error = str(e)
        return layer
    commands: dict[str, list[str]] = {}
    for event, groups in hooks.items():
        for group in groups:
            for entry in group["hooks"]:
                if not ours(entry, agent):
                    continue
                commands.setdefault(str(entry.get("command", "")), []).append(event)
                if entry.get("async") not in (None, False):  # runs in the background: the event is not governed
                    layer.background.append(event)
                elif not sees_all(group, event):  # runs for some tools only: the event is not governed
                    layer.narrowed.append(f"{event} (matcher {group.get('matcher')!r})")
                elif event not in layer.events:
                    layer.events.append(event)
    layer.commands = [Command(c, e) for c, e in commands.items()]
    return layer


def toml_hooks(path: Path) -> dict[str, Any]:
    """The event lists of a Codex TOML file's ``[hooks]`` table (its other keys, ``state`` and ``managed_dir``,
    are no events)."""
    import tomllib

    hooks = tomllib.loads(read_text(path)).get("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"field 'hooks' must be a table, got {type(hooks).__name__}")
    return {event: groups for event, groups in hooks.items() if isinstance(groups, list)}


@cache
def fingerprint(package: str) -> str:
    """A digest of a tether package's code (every ``.py`` and ``.sh`` file, by relative path and content)."""
    digest = hashlib.sha256()
    root = Path(package)
    for path in sorted(root.rglob("*")):
        if path.suffix in (".py", ".sh") and path.is_file():
            try:
                data = read_bytes(path)  # bounded: a package planted in a project may hold a 100 GB "module"
            except OSError as e:
                data = f"unreadable: {e}".encode()
            digest.update(str(path.relative_to(root)).encode() + b"\0" + data + b"\0")
    return digest.hexdigest()[:16]


def this_tether() -> dict[str, str]:
    import tether

    package = os.path.dirname(os.path.abspath(tether.__file__))
    return {"version": tether.__version__, "package": package, "code": fingerprint(package)}


def probe(python: str) -> tuple[str, str] | str:
    """(version, package directory) of the tether the hook process of ``python`` finds on its path, or what went
    wrong: the interpreter run as a hook starts it (``-I -S``), ``site``'s directories added without running a
    ``.pth`` file's code or a ``sitecustomize`` (:data:`.import_roots.FIND_TETHER`), tether found there and its
    version read, not imported. So no code of the package, of its dependencies or of a ``.pth`` runs: ``sudo
    tether hook status`` must not run, as root, what another user could plant in an interpreter's
    site-packages. Only a program named like a Python interpreter is run (:func:`.import_roots.ask`)."""
    try:
        origin = ask(python, FIND_TETHER)
    except ProbeError as e:
        return f"{python} {e}"
    if not isinstance(origin, str):
        return f"{python} cannot import tether (ModuleNotFoundError: No module named 'tether')"
    package = os.path.dirname(origin)
    version = static_version(package)
    if version is None:
        return f"{python} finds tether at {package}, which has no __version__ to read"
    return version, package


def check_command(
    cmd: Command, layer: Layer, agent: str, me: dict[str, str], flag: str, project: Path
) -> list[Problem]:
    """Fill in what ``cmd`` runs; the problems that would make it fail or run other code than this tether's. What
    the command says as written is judged first (:func:`written_problems`, :func:`managed_problems`): only a
    command sound on its face has its interpreter asked (:func:`answering`), and only an answer is compared with
    this tether (:func:`code_problems`)."""
    reinstall = f"run `tether hook install {agent}{flag}` with the interpreter that should answer"
    parsed = parse_command(cmd.command)
    if isinstance(parsed, str):
        return [Problem(layer.file, parsed, reinstall)]
    words, script, python = parsed
    cmd.interpreter = python
    problems = [Problem(layer.file, p, reinstall) for p in written_problems(words, script, python)]
    if layer.layer == "managed":
        problems += managed_problems(cmd.command, layer.file, reinstall)
        if not problems:  # walked with the rest of the package: trusted as its .pyc files are
            cmd.init_table = init_table(Path(script).resolve().parent.parent)
            cmd.init_table_state = table_state(Path(script).resolve().parent.parent, cmd.init_table)
    if problems:
        return problems
    answer = answering(python, os.path.realpath(Path(script).parent.parent), layer, project)
    if isinstance(answer, str):
        return [Problem(layer.file, answer, reinstall)]
    cmd.version, cmd.package, cmd.runnable = answer.version, answer.package, answer.runnable
    cmd.notes += answer.notes
    cmd.same_code, stale = code_problems(answer, me)
    return [Problem(layer.file, p, reinstall) for p in (*answer.problems, *stale)]


def init_table(package: Path) -> str | None:
    """The table of ``__init__`` code (:mod:`tether.compiled`) beside ``package``'s bytecode, the newest if
    several Pythons wrote one; a managed install writes it as root (:func:`.install.warm_table`)."""
    from tether.compiled import FORMAT

    found = sorted((package / "__pycache__").glob(f"dataclass-code.*.v{FORMAT}.*.marshal"), key=_mtime)
    return str(found[-1]) if found else None


def table_state(package: Path, table: str | None) -> str:
    """``missing`` (no table: each cold call compiles every ``__init__``), ``stale`` (a module of ``package`` changed
    after the table was written, by an upgrade or an edit: the texts of its changed classes are compiled on each
    cold call, and only root can write the table of a managed install), or ``current``."""
    if table is None:
        return "missing"
    written = _mtime(Path(table))
    for folder, dirs, files in os.walk(package):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        if any(f.endswith(".py") and _mtime(Path(folder, f)) > written for f in files):
            return "stale"
    return "current"


#: The database a hook call opens when neither ``--db`` nor ``$TETHER_DB`` names one (hooks/session.py ``DB_NAME``).
DEFAULT_DB = Path(".tether") / "tether.db"


def cache_state(directory: Path) -> dict[str, Any]:
    """Where the project's hook calls keep their fold checkpoints and validated envelope (``<db>.folds/``) and
    whether this user can write there: ``writable``, ``unwritable`` (each cold call in a long session then folds the
    whole log and validates the envelope again), or ``none`` (a database URL keeps nothing)."""
    db = os.environ.get("TETHER_DB") or str(directory / DEFAULT_DB)
    if "://" in db:
        return {"folder": None, "state": "none", "why": "the database is a URL: nothing is kept beside it"}
    folder = Path(db + ".folds")
    there_now = folder
    while not there_now.exists() and there_now != there_now.parent:
        there_now = there_now.parent  # the nearest folder there is: where the missing ones would be made
    if not there_now.is_dir():
        why = f"{there_now} is not a directory"
    elif not os.access(there_now, os.W_OK | os.X_OK):
        why = f"{there_now} is not writable by this user (uid {os.geteuid()})"
    else:
        made = "" if folder.exists() else " (made at the first checkpoint)"
        return {"folder": str(folder), "state": "writable", "why": f"fold checkpoints and the envelope kept{made}"}
    return {
        "folder": str(folder),
        "state": "unwritable",
        "why": why + ": no fold checkpoint or kept envelope is written, so each cold call in a long session folds"
        " the whole log and validates the envelope again",
    }


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def written_problems(words: list[str], script: str, python: str) -> list[str]:
    """What makes the command fail, or run code before tether's, whoever runs it: a program or file of it that
    is not there (:func:`missing_files`), and the bash client run without ``-p``, which sources ``$BASH_ENV`` and
    takes functions from the agent's environment (an earlier release's command)."""
    problems = missing_files(words, script, python)
    if is_script(script, CLIENT) and words[1:2] != ["-p"]:
        problems.append(
            "tether's command runs bash without -p: a $BASH_ENV file or a function exported in the agent's"
            " environment runs before tether (an earlier release's command)"
        )
    return problems


def managed_problems(command: str, file: str, reinstall: str) -> list[Problem]:
    """A managed hook runs as every user (:func:`.trust.judged`): each part of ``command`` another user cannot
    use makes it fail for them, and each part a user other than root could change runs that user's code as all
    of them. Each has its own fix: where tether must be installed before ``reinstall``."""
    unusable, changed = judged(command)
    return [
        Problem(
            file,
            f"a managed hook runs as every user, but other users cannot use {p}",
            "install tether where every user can read and run it (e.g. under /opt, chmod -R a+rX), then " + reinstall,
        )
        for p in unusable
    ] + [
        Problem(
            file,
            f"a managed hook runs as every user, so whoever can change what it runs runs code as all of them: {p}",
            "install tether where only root can write it (e.g. under /opt owned by root, chmod -R go-w), then "
            + reinstall,
        )
        for p in changed
    ]


def answering(python: str, script_package: str, layer: Layer, project: Path) -> Answer | str:
    """Which tether ``python`` answers with, or why it cannot be asked. An interpreter status must not run
    (:func:`not_to_run`) is not asked: the tether its script belongs to is read instead, and said so. One that is
    run must import the tether its script belongs to: otherwise the client of one tether hands each call to the
    code of another."""
    untrusted = not_to_run(python, layer, project)
    if untrusted:
        note = f"{untrusted}: not run; the code check reads {script_package}"
        return Answer(static_version(script_package), script_package, runnable=False, notes=(note,))
    found = probe(python)
    if isinstance(found, str):
        return found
    version, package = found
    if os.path.realpath(package) == script_package:
        return Answer(version, package, runnable=True)
    mismatch = f"the command's script is tether's at {script_package} but {python} imports tether from {package}"
    return Answer(version, package, runnable=True, problems=(mismatch,))


def code_problems(answer: Answer, me: dict[str, str]) -> tuple[bool, list[str]]:
    """Whether ``answer`` is this tether (same version and the same code, by :func:`fingerprint`), and if not the
    problem: a venv upgraded or moved after the install runs other code than the one checking it."""
    same = answer.version == me["version"] and fingerprint(os.path.realpath(answer.package)) == me["code"]
    if same:
        return True, []
    return False, [
        f"the command runs tether {answer.version} from {answer.package}, not this tether"
        f" ({me['version']}, {me['package']}): stale after an upgrade or a move"
    ]


def not_to_run(python: str, layer: Layer, project: Path) -> str | None:
    """Why status must not run ``python``: it lies inside the project it checks (a project's settings are the
    project's to write, a cloned repository's files are its authors'), or a user other than root and the one
    running status could change it, or what it loads as it starts (its standard library, found without running
    it: :func:`.trust.start_changeable`): ``sudo tether hook status`` reading a developer's settings must not run
    the developer's program as root."""
    if (layer.layer in ("project", "local") or inside(layer.file, project)) and inside(python, project):
        return f"{python} is inside the project"  # (a user layer can lie in it too: CLAUDE_CONFIG_DIR=./x)
    loose = changeable(Path(python)) or changeable(Path(os.path.realpath(python)))
    if loose:
        return f"{python} is another user's to change ({loose})"
    started = start_changeable(python)  # its standard library runs before it can answer
    return f"{python} loads what is not known to be safe to run ({started})" if started else None


def parse_command(command: str) -> tuple[list[str], str, str] | str:
    """(words, the client or launcher, the interpreter) of a tether command, or why it is not one of those."""
    problem = unrunnable(command)
    if problem:
        return f"tether's command cannot run: {problem}"
    try:
        words = shlex.split(command.removesuffix(" || exit 2"))
    except ValueError:
        return f"tether's command {command!r} is not valid shell"
    script = next((w for w in words if is_script(w, CLIENT) or is_script(w, LAUNCHER)), None)
    if script is None:
        return f"tether's command {command!r} is an earlier release's console script"
    i = words.index(script)
    python = words[i + 1] if is_script(script, CLIENT) and len(words) > i + 1 else words[0]
    return words, script, python


def missing_files(words: list[str], script: str, python: str) -> list[str]:
    """The programs and files of the command that are not there (or not runnable); the envelope it names."""
    needed = [(words[0], True), (script, False), (python, True)]
    problems = []
    for path, executable in dict.fromkeys(needed):
        if not os.path.isabs(path):
            problems.append(f"{path} in tether's command is not an absolute path")
        elif not os.path.exists(path):
            problems.append(f"{path} in tether's command does not exist (a moved or deleted venv?)")
        elif not os.path.isfile(path):
            problems.append(f"{path} in tether's command is not a file")
        elif not os.access(path, os.X_OK if executable else os.R_OK):  # bash reads the client: it need not run
            problems.append(f"{path} in tether's command cannot be {'run' if executable else 'read'} by this user")
    if "--envelope" in words:
        envelope = words[words.index("--envelope") + 1 :][:1]
        if not envelope or not os.path.isfile(envelope[0]):
            problems.append(
                f"the envelope {envelope[0] if envelope else '(none)'} named in tether's command is missing"
            )
        elif not os.access(envelope[0], os.R_OK):
            problems.append(f"the envelope {envelope[0]} named in tether's command cannot be read by this user")
    return problems


def inside(path: str, directory: Path) -> bool:
    """``path`` (as written, or the file it resolves to) is within ``directory``."""
    root = os.path.realpath(directory)
    return any(os.path.commonpath([p, root]) == root for p in (os.path.abspath(path), os.path.realpath(path)))


def static_version(package: str) -> str | None:
    """``__version__`` as written in a tether package's ``__init__.py`` (read, not imported)."""
    try:
        text = read_text(Path(package, "__init__.py"))
    except (OSError, ValueError):
        return None
    found = re.search(r'^__version__ = "([^"]+)"', text, re.MULTILINE)
    return found.group(1) if found else None


def agent_report(
    agent: str, directory: Path, managed_dir: Path | None, me: dict[str, str]
) -> tuple[dict[str, Any], list[Problem]]:
    """What status says of ``agent``: each layer it reads and the problems found, in the order a reader fixes
    them: each file and the commands in it, then each layer's events, then what the agent's switches and
    several commands at once mean for the install as a whole."""
    found = layers(agent, directory, managed_dir)
    flags = install_flags(directory, managed_dir)
    problems: list[Problem] = []
    for layer in found:
        problems += file_problems(layer, agent)
        problems += unanswered_problems(layer)
        for cmd in layer.commands:
            problems += check_command(cmd, layer, agent, me, flags[layer.layer], directory)
    installed = [layer for layer in found if layer.commands]
    problems += missing_problems(agent, installed, flags)
    switches = managed_switches(agent, found, managed_dir)
    problems += switch_problems(agent, switches, installed, flags["managed"])
    problems += duplicate_problems(installed, switches)
    report = {
        "layers": [{k: v for k, v in asdict(layer).items() if k != "settings"} for layer in found],
        "installed": bool(installed),
        "missing_events": missing_events(agent, installed),
        **{k: v for k, v in switches.items() if k in ("managed_only", "disable_all", "user_disable")},
    }
    return report, problems


def install_flags(directory: Path, managed_dir: Path | None) -> dict[str, str]:
    """The options of ``tether hook install`` that write each layer: every fix names the command that mends the
    very file it is about (the local layer has none: install writes no local file; the plain command writes the
    project's)."""
    return {
        "managed": " --managed" + (f" --managed-dir {managed_dir}" if managed_dir else ""),
        "user": " --user",
        "project": f" --dir {directory}",
        "local": "",
    }


def file_problems(layer: Layer, agent: str) -> list[Problem]:
    """What is wrong with a settings file itself, whatever it holds: a managed file other users' agents cannot
    read (their agent cannot apply it) or a user could rewrite (then that user decides every user's hooks), and a
    file that could not be read (tether never rewrites what it cannot parse)."""
    problems = []
    shared = layer.layer == "managed" and layer.exists
    blocked = shared_problem(Path(layer.file)) if shared else None
    if blocked:
        problems.append(
            Problem(
                layer.file,
                f"other users' {agent} cannot read it: {blocked}",
                "chmod o+rx the directories, o+r the file",
            )
        )
    loose = shared_changeable(Path(layer.file)) if shared else None
    if loose:
        problems.append(
            Problem(layer.file, f"managed settings a user could rewrite: {loose}", "chown root, chmod go-w")
        )
    if layer.error:
        problems.append(
            Problem(layer.file, f"cannot read it: {layer.error}", "fix or remove the file; tether does not rewrite it")
        )
    return problems


def unanswered_problems(layer: Layer) -> list[Problem]:
    """tether's hook on an event it does not answer (:data:`tether.hooks.wire.EVENTS`): each call of it is refused
    with exit 2, which some events read as "stop" (Claude Code's PostToolBatch ends the agent's loop, WorktreeCreate
    fails). ``tether hook install`` writes only the events tether answers and leaves such an entry alone."""
    from .wire import EVENTS as ANSWERED

    stray = list(dict.fromkeys(e for c in layer.commands for e in c.events if e not in ANSWERED))
    return [
        Problem(
            layer.file,
            f"tether's hook is on {event}, an event it does not answer: it refuses every call (exit 2)",
            f"remove tether's entry from hooks.{event}",
        )
        for event in stray
    ]


def missing_events(agent: str, files: list[Layer]) -> list[str]:
    """The events of ``agent`` tether's hook covers in none of ``files`` (a call of such an event is ungoverned)."""
    return [e for e in EVENTS[agent] if all(e not in layer.events for layer in files)]


def missing_problems(agent: str, installed: list[Layer], flags: dict[str, str]) -> list[Problem]:
    """Each layer where tether is installed (its files together: Claude Code merges a managed base file and its
    drop-ins) that leaves events ungoverned, and which of those only a matcher narrows to some calls."""
    problems = []
    for name in dict.fromkeys(layer.layer for layer in installed):
        files = [layer for layer in installed if layer.layer == name]
        missing = missing_events(agent, files)
        if missing:
            narrowed = [n for layer in files for n in layer.narrowed if n.split(" ")[0] in missing]
            background = [e for layer in files for e in layer.background if e in missing]
            problems.append(
                Problem(
                    ", ".join(layer.file for layer in files),
                    f"tether's hook is missing on {', '.join(missing)}"
                    + (f" (only under a matcher that selects some calls: {', '.join(narrowed)})" if narrowed else "")
                    + (f" (marked async, so its answer blocks nothing: {', '.join(background)})" if background else ""),
                    f"run `tether hook install {agent}{flags[name]}`",
                )
            )
    return problems


def duplicate_problems(installed: list[Layer], switches: dict[str, Any]) -> list[Problem]:
    """More than one distinct tether command among the hooks that run (where only managed hooks run, only
    those): the agent runs every matching hook, so each call goes through each of them."""
    distinct = {
        cmd.command
        for layer in installed
        for cmd in layer.commands
        if not (switches.get("managed_only") and layer.layer != "managed")
    }
    if len(distinct) <= 1:
        return []
    return [
        Problem(
            ", ".join(layer.file for layer in installed),
            f"{len(distinct)} different tether commands run on each call (the agent runs every matching hook)",
            "keep one: `tether hook uninstall` the others",
        )
    ]


def switch_problems(agent: str, switches: dict[str, Any], installed: list[Layer], managed_flag: str) -> list[Problem]:
    """What the agent's hook switches mean for where tether is installed."""
    in_managed = any(layer.layer == "managed" for layer in installed)
    if not installed:
        return [
            Problem(
                "-",
                f"tether's hooks are not installed for {agent} in any layer",
                f"run `tether hook install {agent}` (--managed for every user of this machine)",
            )
        ]
    if switches.get("disable_all") and agent == "codex":
        return [
            Problem(
                switches["disable_all"],
                "its [features] sets hooks = false (or codex_hooks = false): Codex runs no hook, tether's neither",
                "remove that setting (or set hooks = true)",
            )
        ]
    if switches.get("disable_all"):
        return [
            Problem(
                switches["disable_all"],
                "managed settings set disableAllHooks: no hook runs, tether's neither",
                "remove disableAllHooks from the managed settings",
            )
        ]
    if switches.get("managed_only") and not in_managed:
        return [
            Problem(
                switches["managed_only"],
                "only managed hooks run, and tether's are in no managed layer",
                f"run `tether hook install {agent}{managed_flag}`",
            )
        ]
    if switches.get("user_disable") and not in_managed:
        return [
            Problem(
                switches["user_disable"],
                "it sets disableAllHooks: only managed hooks run, and tether's are in no managed layer",
                f"remove disableAllHooks there, or run `tether hook install {agent}{managed_flag}`",
            )
        ]
    return []


def managed_switches(agent: str, found: list[Layer], managed_dir: Path | None) -> dict[str, Any]:
    """Which file turns on "managed hooks only" or "no hooks at all" (None: nobody), as the agent merges them."""
    out: dict[str, Any] = {"managed_only": None, "disable_all": None}
    if agent == "claude-code":
        out["user_disable"] = None  # disableAllHooks outside managed settings: turns off all but managed hooks
        for layer in found:  # base first, then drop-ins by name: a later file's scalar wins
            if layer.layer == "managed":
                for key, name in ((LOCK_KEY, "managed_only"), ("disableAllHooks", "disable_all")):
                    if key in layer.settings:
                        out[name] = layer.file if layer.settings[key] is True else None
        for layer in reversed(found):  # user, project, local: the more specific file's scalar wins
            if layer.layer != "managed" and "disableAllHooks" in layer.settings:
                out["user_disable"] = layer.file if layer.settings["disableAllHooks"] is True else None
        return out
    import tomllib

    requirements = (managed_dir or default_managed_dir(agent)) / "requirements.toml"
    try:
        if tomllib.loads(read_text(requirements)).get("allow_managed_hooks_only") is True:
            out["managed_only"] = str(requirements)
    except (OSError, ValueError, RecursionError):
        pass  # no file; or one its layer reports as unreadable
    out["disable_all"] = codex_hooks_off(found, requirements)
    return out


def codex_hooks_off(found: list[Layer], requirements: Path) -> str | None:
    """The file whose ``[features]`` turns Codex's hooks off (``hooks = false``, or its older alias
    ``codex_hooks``), None when they run: ``requirements.toml`` forces it; else the most specific config.toml that
    sets it wins (project, user, then the system's). Codex has run hooks by default since they left their feature
    flag; a file that cannot be read is reported by its layer."""
    if _features_hooks(requirements) is False:
        return str(requirements)
    configs = {layer.layer: layer.file for layer in found if layer.file.endswith("config.toml")}
    for name in ("project", "user", "managed"):
        value = _features_hooks(Path(configs[name])) if name in configs else None
        if value is not None:
            return configs[name] if value is False else None
    return None


def _features_hooks(path: Path) -> bool | None:
    import tomllib

    try:
        features = tomllib.loads(read_text(path)).get("features")
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(features, dict):
        return None
    value = features.get("hooks", features.get("codex_hooks"))
    return value if isinstance(value, bool) else None


def daemon() -> dict[str, Any]:
    """Whether a daemon accepts connections on this user's socket (a bare connect, which the daemon reads as
    an empty request and closes)."""
    path = socket_path()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(1.0)
            s.connect(path)
        running = True
    except OSError:
        running = False
    return {"socket": path, "running": running}


def report(agents: list[str], directory: Path, managed_dir: Path | None) -> dict[str, Any]:
    me = this_tether()
    out: dict[str, Any] = {"tether": me, "agents": {}, "problems": []}
    problems: list[Problem] = []
    results = {agent: agent_report(agent, directory, managed_dir, me) for agent in agents}
    if len(agents) > 1 and any(r["installed"] for r, _ in results.values()):
        results = {agent: r for agent, r in results.items() if r[0]["installed"]}  # only the agents tether is in
    for agent, (agent_out, agent_problems) in results.items():
        out["agents"][agent] = agent_out
        problems += agent_problems
    out["cache"] = cache_state(directory)
    out["daemon"] = daemon()
    out["problems"] = [asdict(p) for p in problems]
    out["ok"] = not problems
    return out


def table_line(state: str | None, table: str | None) -> str:
    """How each state of a managed command's ``__init__`` code table reads (:func:`table_state`)."""
    if state == "current":
        return f"__init__ code table: {table}"
    if state == "stale":
        return (
            f"stale __init__ code table: {table} (older than a module of tether's: texts of changed classes are"
            " compiled on each cold call; re-run the install as root)"
        )
    return "no __init__ code table: each cold call compiles (re-run the install as root)"


def text(out: dict[str, Any]) -> str:
    me = out["tether"]
    lines = [f"tether {me['version']} at {me['package']} (code {me['code']})"]
    for agent, agent_out in out["agents"].items():
        lines.append(agent)
        for layer in agent_out["layers"]:
            if layer["error"]:
                state = "unreadable"
            elif not layer["exists"]:
                state = "no file"
            elif not layer["commands"]:
                state = "tether not installed"
            else:
                state = f"tether on {len(layer['events'])} events: {', '.join(layer['events'])}"
            if layer["narrowed"]:
                state += f"; only some calls of {', '.join(layer['narrowed'])}"
            if layer["background"]:
                state += f"; async, blocking nothing, on {', '.join(layer['background'])}"
            link = f" (a link to {layer['link']})" if layer["link"] else ""
            lines.append(f"  {layer['layer']:<8} {layer['file']}{link}: {state}")
            for cmd in layer["commands"]:
                if cmd["runnable"]:
                    verdict = f"runs tether {cmd['version']}" + ("" if cmd["same_code"] else ", other code")
                else:
                    verdict = "not run: " + cmd["notes"][0] if cmd["notes"] else "NOT RUNNABLE"
                lines.append(f"           {cmd['command']}  [{verdict}]")
                if layer["layer"] == "managed" and cmd["runnable"]:
                    lines.append("           " + table_line(cmd["init_table_state"], cmd["init_table"]))
        if agent_out.get("managed_only"):
            lines.append(f"  only managed hooks run (set in {agent_out['managed_only']})")
    cache = out["cache"]
    lines.append(f"cache: {cache['folder'] or 'none'}: {cache['state']}: {cache['why']}")
    d = out["daemon"]
    lines.append(
        f"daemon: {'running on ' + d['socket'] if d['running'] else 'not running (the first hook call starts one)'}"
    )
    for p in out["problems"]:
        lines += [f"problem: {p['file']}: {p['problem']}", f"  fix: {p['fix']}"]
    lines.append("ok" if out["ok"] else f"{len(out['problems'])} problem(s)")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    agents, rest, as_json, directory, managed_dir = list(EVENTS), list(argv), False, Path.cwd(), None
    if rest and rest[0] in EVENTS:
        agents = [rest.pop(0)]
    while rest:
        flag = rest.pop(0)
        if flag == "--json":
            as_json = True
        elif flag in ("--dir", "--managed-dir") and rest:
            value = Path(rest.pop(0)).resolve()
            directory, managed_dir = (value, managed_dir) if flag == "--dir" else (directory, value)
        else:
            sys.stderr.write(f"error: unknown or incomplete option {flag!r}\n{USAGE}\n")
            return 2
    if managed_dir is not None and len(agents) > 1:
        sys.stderr.write(f"error: --managed-dir needs the agent (their managed directories differ)\n{USAGE}\n")
        return 2
    out = report(agents, directory.resolve(), managed_dir)
    shown = json.dumps(out, indent=2) if as_json else text(out)
    print(shown.encode("utf-8", "backslashreplace").decode("utf-8"))  # a path that is not UTF-8, escaped
    return 0 if out["ok"] else 1
