"""The command tether's hook entries run, and how tether recognises its own entries.

The command is the bash client (``<bash> …/tether/hooks/hook.sh <python> <agent>``: no interpreter start-up
when the daemon answers) where bash exists, else the Python launcher (``<python> -I -S …/tether/hooks/launch.py
<agent>``). Each ends in ``|| exit 2``: if tether cannot start at all (not installed, broken interpreter), the
agent reads exit 2 as "blocked", not as a hook that had nothing to say.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Any

LAUNCHER = os.path.join("tether", "hooks", "launch.py")
CLIENT = os.path.join("tether", "hooks", "hook.sh")


def hook_command(agent: str, envelope: Path | None) -> str:
    """The bash client where bash exists (a call the daemon answers costs bash's start-up and a round trip, no
    Python), else :func:`launcher_command`. The client falls back to that same launcher, run by this
    interpreter, whenever the daemon cannot answer it. Bash runs ``-p``: no ``$BASH_ENV`` file sourced, no
    function from the environment (an exported ``printf`` would replace the builtin), as the interpreter runs
    ``-I``: what the command runs is the files it names, whatever the agent's environment holds."""
    path = os.environ.get("PATH", os.defpath).split(os.pathsep)
    bash = shutil.which("bash", path=os.pathsep.join(p for p in path if os.path.isabs(p)))  # never ./bash
    if not bash:
        return launcher_command(agent, envelope)
    client = Path(__file__).resolve().with_name("hook.sh")
    return _command([bash, "-p", str(client), sys.executable], agent, envelope)


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
    if not utf8(command):
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
        ((word == "hook" and i > 0 and console_script(words[i - 1])) or is_script(word, LAUNCHER))
        and words[i + 1 : i + 2] == [agent]
        for i, word in enumerate(words)
    ) or any(is_script(word, CLIENT) and words[i + 2 : i + 3] == [agent] for i, word in enumerate(words))


def is_script(word: str, script: str) -> bool:
    """``word`` names tether's ``script`` (``…/tether/hooks/x``), path component by path component."""
    return word == script or word.endswith(os.sep + script)


def console_script(word: str) -> bool:
    return os.path.basename(word) == "tether" or word in ("tether.cli.main", "tether.cli")


def utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
