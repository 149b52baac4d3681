"""``tether hook install claude-code|codex [--project|--user] [--envelope FILE] [--dir DIR]``.

Writes tether's hooks into the agent's settings, keeping everything else in the file:

* Claude Code: ``<dir>/.claude/settings.json`` (``--project``, the default) or ``~/.claude/settings.json``
  (``--user``); events PreToolUse, PostToolUse, PostToolUseFailure (every tool), UserPromptSubmit,
  SessionStart, SessionEnd, Stop.
* Codex: ``<dir>/.codex/hooks.json`` or ``~/.codex/hooks.json``; events PreToolUse, PostToolUse,
  UserPromptSubmit, SessionStart, Stop. (Codex releases that still gate hooks behind ``[features]
  codex_hooks = true`` in config.toml need that line too; the command says so.)

The command is the bash client (``<bash> …/tether/hooks/hook.sh <python> <agent>``: no interpreter start-up
when the daemon answers) where bash exists, else the Python launcher (``<python> -I -S …/tether/hooks/launch.py
<agent>``). Idempotent: a hook entry in either form, or ``tether hook <agent>`` (as earlier releases wrote it), is
replaced in place, never added twice.
A settings file that is not a JSON object (or whose ``hooks`` is malformed) is an error naming the file and
the field, and is left untouched. The file is replaced atomically, keeping its permissions.

Each command ends in ``|| exit 2``: if tether cannot start at all (not installed, broken interpreter), the
agent reads exit 2 as "blocked", not as a hook that had nothing to say.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import shutil
import sys
import tempfile
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


class InstallError(Exception):
    """Bad arguments or a settings file tether will not rewrite."""


def settings_file(agent: str, user: bool, directory: Path) -> Path:
    base = Path.home() if user else directory
    return base / (".claude/settings.json" if agent == "claude-code" else ".codex/hooks.json")


def hook_command(agent: str, envelope: Path | None) -> str:
    """The bash client where bash exists (a call the daemon answers costs bash's start-up and a round trip, no
    Python), else :func:`launcher_command`. The client falls back to that same launcher, run by this
    interpreter, whenever the daemon cannot answer it."""
    bash = shutil.which("bash")
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


def ours(entry: Any, agent: str) -> bool:
    """A tether hook entry for ``agent``: ``… hook AGENT …`` (the console script, as earlier releases wrote
    it), ``… tether/hooks/launch.py AGENT …`` or ``… tether/hooks/hook.sh PYTHON AGENT …``."""
    if not isinstance(entry, dict):
        return False
    command = str(entry.get("command", ""))
    try:
        words = shlex.split(command)
    except ValueError:
        return f"hook {agent}" in command
    return any(
        (word == "hook" or word.endswith(LAUNCHER)) and after == agent for word, after in itertools.pairwise(words)
    ) or any(word.endswith(CLIENT) and words[i + 2 : i + 3] == [agent] for i, word in enumerate(words))


def merged(settings: dict[str, Any], agent: str, command: str, path: Path) -> dict[str, Any]:
    """``settings`` with tether's hook on every event of ``agent`` (replacing an earlier tether entry)."""
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: field 'hooks' must be an object, got {type(hooks).__name__}; not changed")
    for event in EVENTS[agent]:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise InstallError(f"{path}: field 'hooks.{event}' must be a list of objects; not changed")
        entry = {"type": "command", "command": command, "timeout": STOP_TIMEOUT_S if event == "Stop" else TIMEOUT_S}
        found = False
        for group in groups:
            entries = group.get("hooks")
            if not isinstance(entries, list):
                raise InstallError(f"{path}: field 'hooks.{event}[].hooks' must be a list; not changed")
            for i, e in enumerate(entries):
                if ours(e, agent):
                    entries[i], found = entry, True
        if not found:
            group = {"hooks": [entry]}
            if event in TOOL_EVENTS and agent == "claude-code":
                group = {"matcher": "*", **group}
            groups.append(group)
    return settings


def install(agent: str, *, user: bool = False, directory: Path | None = None, envelope: Path | None = None) -> Path:
    """Write the hooks; the settings file written."""
    path = settings_file(agent, user, (directory or Path.cwd()).resolve())
    settings: Any = {}
    if path.exists():
        try:
            settings = json.loads(path.read_text() or "{}")
        except (OSError, ValueError) as e:
            raise InstallError(f"{path}: not valid JSON ({e}); fix or remove it, tether does not overwrite it") from e
        if not isinstance(settings, dict):
            raise InstallError(f"{path}: expected a JSON object at the top, got {type(settings).__name__}; not changed")
    if envelope is not None and not envelope.is_file():
        raise InstallError(f"--envelope {envelope}: no such file")
    text = json.dumps(merged(settings, agent, hook_command(agent, envelope), path), indent=2) + "\n"
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def main(argv: list[str]) -> int:
    """The command line: 0 written, 2 bad arguments or a settings file left as it was."""
    try:
        if not argv or argv[0] not in EVENTS:
            raise InstallError(
                f"usage: tether hook install {{{'|'.join(EVENTS)}}} [--project|--user] [--envelope FILE] [--dir DIR]"
            )
        agent, rest, user, directory, envelope = argv[0], argv[1:], False, None, None
        while rest:
            flag = rest.pop(0)
            if flag in ("--user", "--project"):
                user = flag == "--user"
            elif flag in ("--envelope", "--dir") and rest:
                value = Path(rest.pop(0))
                directory, envelope = (value, envelope) if flag == "--dir" else (directory, value)
            else:
                raise InstallError(f"unknown or incomplete option {flag!r}")
        path = install(agent, user=user, directory=directory, envelope=envelope)
    except InstallError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    print(f"tether hooks for {agent} written to {path}")
    if agent == "codex":
        print("Codex releases that gate hooks need `[features]\\ncodex_hooks = true` in ~/.codex/config.toml.")
    return 0
