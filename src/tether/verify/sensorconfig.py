"""The files that decide what a lint or type sensor reports, and which of them the run changed.

The lint and types sensors run the project's own ruff/mypy/pyright with the project's configuration, on
the final files and again on their baseline versions ("only what the run introduced"). Both runs read
the configuration as it is *now*, so an agent that changes it — ruff's ``exclude`` or ``lint.ignore =
["ALL"]``, a ``ruff.toml`` of its own beside the sources (ruff uses the nearest one), mypy's
``ignore_errors``, a ``[mypy-pkg.*]`` section — turns the sensor off for both, and the comparison finds
nothing new. A sensor whose configuration the run changed therefore fails, naming the file: the agent
reverts it, or a human changes the configuration.

The source files configure them too: ``# ruff: noqa`` (or ``# flake8: noqa``) on a line of its own exempts the
whole file from ruff, ``# mypy: ignore-errors`` (any ``# mypy:`` line is inline configuration) and a lone
``# type: ignore`` line silence mypy, ``# pyright: basic`` or ``# pyright: reportX=false`` pyright. Since the
baseline check reads the baseline file, which lacks the line, "introduced only" still worked in principle, but
ruff and mypy report nothing for the final file: an unused import and a type error COMPLETEd. A changed file that
has more such lines than its baseline version (:func:`suppressed`) fails the sensor like a changed configuration.

Configuration is compared as data (``tomllib``, ``configparser``, bytes for whole files), never executed;
for ``pyproject.toml`` and ``setup.cfg`` only the tool's own part counts, so other edits to them pass. A
file that no longer parses counts as changed.
"""

from __future__ import annotations

import configparser
import re
import tomllib
from collections.abc import Callable, Iterable
from pathlib import PurePosixPath
from typing import Any

#: Files the tool reads whole as its configuration.
WHOLE: dict[str, frozenset[str]] = {
    "ruff": frozenset({"ruff.toml", ".ruff.toml"}),
    "mypy": frozenset({"mypy.ini", ".mypy.ini"}),
    "pyright": frozenset({"pyrightconfig.json"}),
}
#: ``pyproject.toml``'s ``[tool.X]`` table of each tool; ``setup.cfg``'s sections (``[mypy]``, ``[mypy-pkg.*]``).
PYPROJECT_TABLE = {"ruff": "ruff", "mypy": "mypy", "pyright": "pyright"}
SETUP_CFG_SECTION = {"mypy": "mypy"}

_UNPARSEABLE = "<unparseable>"
Read = Callable[[str], bytes | None]


def _settings(tool: str, name: str, data: bytes | None) -> Any:
    """What ``data`` (a file called ``name``) configures for ``tool``: None for nothing, ``_UNPARSEABLE``."""
    if data is None:
        return None
    if name in WHOLE[tool]:
        return data
    try:
        text = data.decode("utf-8")
        if name == "pyproject.toml":
            return tomllib.loads(text).get("tool", {}).get(PYPROJECT_TABLE[tool])
        cp = configparser.ConfigParser(interpolation=None)
        cp.read_string(text)
        prefix = SETUP_CFG_SECTION.get(tool)
        ours = [s for s in cp.sections() if prefix is not None and (s == prefix or s.startswith(prefix + "-"))]
        return {s: dict(cp.items(s)) for s in ours} or None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, configparser.Error, AttributeError):
        return _UNPARSEABLE


def is_config(tool: str, path: str) -> bool:
    name = PurePosixPath(path).name
    return name in WHOLE[tool] or name == "pyproject.toml" or (name == "setup.cfg" and tool in SETUP_CFG_SECTION)


def changed(tool: str, paths: Iterable[str], before: Read, after: Read) -> list[str]:
    """The paths among ``paths`` (the run's changed files) whose configuration of ``tool`` differs between
    ``before`` (the baseline's bytes, None when the file did not exist) and ``after`` (the workspace's)."""
    out = []
    for path in sorted(set(paths)):
        if not is_config(tool, path):
            continue
        name = PurePosixPath(path).name
        old, new = _settings(tool, name, before(path)), _settings(tool, name, after(path))
        if old != new or old == _UNPARSEABLE:
            out.append(path)
    return out


#: A line of a source file that configures the tool for the whole file.
FILE_WIDE: dict[str, re.Pattern[bytes]] = {
    "ruff": re.compile(rb"^[ \t]*#[ \t]*(?:ruff|flake8)[ \t]*:[ \t]*noqa\b", re.IGNORECASE | re.MULTILINE),
    "mypy": re.compile(rb"^[ \t]*#[ \t]*(?:mypy[ \t]*:|type[ \t]*:[ \t]*ignore\b)", re.MULTILINE),
    "pyright": re.compile(rb"^[ \t]*#[ \t]*(?:pyright[ \t]*:|type[ \t]*:[ \t]*ignore\b)", re.MULTILINE),
}


def suppressed(tool: str, paths: Iterable[str], before: Read, after: Read) -> list[str]:
    """The Python files among ``paths`` with more file-wide ``tool`` directives now than in ``before`` (None: the
    file did not exist, so every one counts): each silences the tool for the whole file, final and baseline."""
    pattern = FILE_WIDE[tool]
    out = []
    for path in sorted(set(paths)):
        if not path.endswith(".py"):
            continue
        new = after(path)
        if new is None:
            continue
        old = before(path)
        if len(pattern.findall(new)) > (len(pattern.findall(old)) if old is not None else 0):
            out.append(path)
    return out
