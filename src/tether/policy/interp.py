"""Interpreters: where does the program they run come from?

``python3 x.py`` runs a file, ``python3 -c CODE`` runs inline code, ``curl … | python3`` runs
whatever arrives on stdin. The gate needs that distinction: a program that arrives on a pipe is
remote or computed code (DENY), inline shell code is parsed recursively, inline code of other
languages gets a conservative look (see ``profile.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "rbash", "yash"})
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$|^ipython3?$")
_OTHERS = frozenset(
    {
        "perl",
        "ruby",
        "irb",
        "node",
        "nodejs",
        "bun",
        "deno",
        "php",
        "lua",
        "luajit",
        "Rscript",
        "R",
        "osascript",
        "pwsh",
        "powershell",
        "tclsh",
        "wish",
        "expect",
        "julia",
        "groovy",
        "jshell",
        "guile",
        "racket",
        "ts-node",
        "tsx",
    }
)

Kind = Literal["inline", "script", "module", "stdin", "none"]


@dataclass(frozen=True)
class Program:
    """``kind`` and the index in ``args`` of the code / script / module word (-1 if none)."""

    kind: Kind
    index: int = -1


def is_python(name: str) -> bool:
    return bool(_PYTHON.match(name))


def is_interpreter(name: str) -> bool:
    return name in SHELLS or name in _OTHERS or is_python(name)


_INLINE_FLAGS: dict[str, tuple[str, ...]] = {
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "irb": ("-e",),
    "node": ("-e", "--eval", "-p", "--print"),
    "nodejs": ("-e", "--eval", "-p", "--print"),
    "bun": ("-e", "--eval", "-p", "--print"),
    "ts-node": ("-e", "--eval", "-p", "--print"),
    "tsx": ("-e", "--eval", "-p", "--print"),
    "php": ("-r",),
    "lua": ("-e",),
    "luajit": ("-e",),
    "Rscript": ("-e",),
    "R": ("-e",),
    "osascript": ("-e",),
    "pwsh": ("-c", "-command", "-Command", "-EncodedCommand", "-enc", "-e"),
    "powershell": ("-c", "-command", "-Command", "-EncodedCommand", "-enc", "-e"),
    "expect": ("-c",),
    "julia": ("-e", "--eval"),
    "groovy": ("-e",),
    "guile": ("-c",),
    "racket": ("-e",),
}
_VALUE_FLAGS: dict[str, frozenset[str]] = {
    "python": frozenset({"-W", "-X", "-Q"}),
    "shell": frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}),
    "perl": frozenset({"-I", "-M", "-m"}),
    "ruby": frozenset({"-I", "-r"}),
    "node": frozenset({"-r", "--require", "--import", "--loader", "--input-type"}),
    "php": frozenset({"-c", "-d", "-z"}),
    "lua": frozenset({"-l"}),
}
_VERSION = frozenset({"--version", "-V", "--help", "-h", "-version", "-v"})


def program(name: str, args: list[str]) -> Program:
    """Classify how interpreter ``name`` invoked with ``args`` (argv[1:]) gets its program."""
    if args and args[0] in _VERSION and len(args) == 1:
        return Program("none")
    if name in SHELLS:
        return _shell(args)
    if is_python(name):
        return _python(args)
    family = "node" if name in ("node", "nodejs", "bun", "ts-node", "tsx") else name
    inline = _INLINE_FLAGS.get(name, ())
    values = _VALUE_FLAGS.get(family, frozenset())
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in inline:
            return Program("inline", i + 1) if i + 1 < len(args) else Program("stdin")
        if family in ("perl", "ruby") and a.startswith("-") and not a.startswith("--"):
            # bundled flags: -pe CODE, -lne CODE, -e'CODE'
            body = a[1:]
            if "e" in body or "E" in body:
                pos = max(body.find("e"), body.find("E"))
                if pos == len(body) - 1:
                    return Program("inline", i + 1) if i + 1 < len(args) else Program("stdin")
                return Program("inline", i)
        if name == "php" and a == "-f":
            return Program("script", i + 1) if i + 1 < len(args) else Program("stdin")
        if name == "deno" and a in ("eval",):
            return Program("inline", i + 1)
        if name in ("deno", "bun") and a in ("run", "test", "x"):
            i += 1
            continue
        if a == "-":
            return Program("stdin")
        if a.startswith("-"):
            i += 2 if a in values else 1
            continue
        return Program("script", i)
    if i < len(args):
        return Program("script", i)
    return Program("stdin")


def _python(args: list[str]) -> Program:
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-":
            return Program("stdin")
        if a == "-m":
            return Program("module", i + 1) if i + 1 < len(args) else Program("none")
        if a.startswith("-m") and not a.startswith("--"):
            return Program("module", i)
        if a == "-c" or (a.startswith("-") and not a.startswith("--") and a.endswith("c") and "=" not in a):
            return Program("inline", i + 1) if i + 1 < len(args) else Program("stdin")
        if a.startswith("-c"):
            return Program("inline", i)
        if a in ("--version", "-V", "--help", "-h", "-VV"):
            return Program("none")
        if a.startswith("-"):
            i += 2 if a in _VALUE_FLAGS["python"] else 1
            continue
        return Program("script", i)
    return Program("stdin")


def _shell(args: list[str]) -> Program:
    i = 0
    inline = False
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        if a in ("-s",):
            return Program("stdin")
        if a in _VALUE_FLAGS["shell"]:
            i += 2
            continue
        if a.startswith("-") and len(a) > 1 and not a.startswith("--"):
            if "c" in a[1:]:
                inline = True
            if "s" in a[1:]:
                return Program("stdin")
            i += 1
            continue
        if a.startswith(("--", "+")):
            i += 1
            continue
        break
    if i < len(args):
        return Program("inline" if inline else "script", i)
    return Program("stdin")
