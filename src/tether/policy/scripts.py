"""Which workspace shell script a command runs, and its text: so that a deny rule reaches into script files.

``sh deploy.sh``, ``bash -e ./deploy.sh``, ``./deploy.sh`` (a ``#!`` naming a shell, or none), ``source deploy.sh``
and ``. deploy.sh`` run the commands written in the file. The coding profile lets a command run a workspace
script, so without this a command a deny rule forbids could run by being written into a file first — a
skill's script, or one the agent wrote. The gate judges the file's text like the command line it is
(:meth:`tether.policy.gate.Gate.decide`). Only shell scripts are read; a Python or other script's effects
are not analysed here (the sandbox contains them). A script that does not exist yet is judged by what
runs it; one too large or not text to check is an ASK.
"""

from __future__ import annotations

from tether import disk

from . import interp
from .command import SimpleCommand
from .knowledge import SHELLS
from .paths import PathPolicy

MAX_SCRIPT_BYTES = 64 * 1024
SOURCES = frozenset({"source", "."})
#: Programs that change a file's mode, owner or times, never its text (``touch`` makes an empty one).
KEEPS_TEXT = frozenset({"chmod", "chown", "chgrp", "touch", "mkdir"})


class Unreadable(Exception):
    """A script that exists but cannot be judged (too large, binary): the reason is the message."""


def script_of(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """The workspace file holding shell code that ``cmd`` runs, if any (outside the workspace: the profile asks)."""
    path = named_script(cmd, paths)
    if path is None or not disk.is_file(path):
        return None
    if cmd.name not in SHELLS | SOURCES:  # named as the command (./x): shell code only if it reads as such
        return path if _runs_as_shell(path) else None
    return path


def named_script(cmd: SimpleCommand, paths: PathPolicy) -> str | None:
    """The workspace path ``cmd`` runs as a script (``sh x.sh``, ``. x.sh``, ``./x``), whether or not a file is
    there now: a command before it in the same line may write it."""
    if not cmd.argv or cmd.computed:
        return None
    name, args = cmd.name, [w.text for w in cmd.args]
    word = None
    if name in SHELLS:
        prog = interp.program(name, args)
        word = cmd.args[prog.index] if prog.kind == "script" else None
    elif name in SOURCES and cmd.args:
        word = cmd.args[0]
    elif "/" in cmd.argv[0].text:
        word = cmd.argv[0]
    if word is None or not word.static:
        return None
    path = paths.resolve(word.text, cmd.cwd)
    return None if path is None or paths.relative(path) is None else path


def _runs_as_shell(path: str) -> bool:
    """Does executing ``path`` run it as shell code: a ``#!`` naming a shell, or text with no ``#!`` at all
    (which the calling shell runs itself)? A binary (a NUL in its first bytes) or another interpreter: no."""
    try:
        with open(path, "rb") as fh:
            first = fh.read(256)
    except OSError:
        return False
    if b"\x00" in first:
        return False
    if not first.startswith(b"#!"):
        return True
    words = first[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if words and words[0].endswith("/env"):
        words = [w for w in words[1:] if not w.startswith("-")]
    return bool(words) and words[0].rsplit("/", 1)[-1] in SHELLS


def script_text(path: str) -> str:
    """The script's text; raises :class:`Unreadable` when it is too large or not text to judge."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_SCRIPT_BYTES + 1)
    if len(data) > MAX_SCRIPT_BYTES:
        raise Unreadable(f"the script {path} is larger than {MAX_SCRIPT_BYTES} bytes, too large to check")
    if b"\x00" in data:
        raise Unreadable(f"the script {path} is not text")
    return data.decode("utf-8", "surrogateescape")
