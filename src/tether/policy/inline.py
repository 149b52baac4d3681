"""A conservative look at inline code (``python -c``, heredocs to python, ``perl -e`` …).

Inline code hides what runs from the shell analysis. Python is common enough in agent work
(``python -c 'import json,sys; …'``) that tether parses it with :mod:`ast` and allows it when
it is *tame*: no process, file, network or introspection capability is named. Anything else
is ASK. Code of any language that pairs a socket with a process/pty is a reverse shell (DENY).
"""

from __future__ import annotations

import re

from tether.memo import cache


@cache
def _reverse() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A socket, and a process or pty (compiled at first use: only inline code is looked at)."""
    return (
        re.compile(
            r"(socket|fsockopen|TCPSocket|/dev/tcp|Net::|IO::Socket|net\.connect|net\.Socket|new Socket)", re.IGNORECASE
        ),
        re.compile(r"(subprocess|pty|dup2|spawn|exec|system|popen|/bin/sh|/bin/bash|cmd\.exe|child_process)"),
    )


_RISKY_MODULES = frozenset(
    {
        "os",
        "subprocess",
        "shutil",
        "socket",
        "pty",
        "ctypes",
        "urllib",
        "http",
        "requests",
        "httpx",
        "aiohttp",
        "ftplib",
        "smtplib",
        "telnetlib",
        "pathlib",
        "io",
        "tempfile",
        "multiprocessing",
        "signal",
        "importlib",
        "builtins",
        "pickle",
        "marshal",
        "code",
        "codeop",
        "base64",
        "zlib",
        "asyncio",
        "webbrowser",
        "runpy",
        "pdb",
        "zipfile",
        "tarfile",
        "sqlite3",
        "mmap",
        "fcntl",
        "resource",
        "posix",
        "nt",
        "glob",
        "fileinput",
        "shelve",
        "dbm",
        "xmlrpc",
        "ssl",
        "select",
        "selectors",
        "threading",
        "concurrent",
        "gc",
        "inspect",
        "sys",
    }
)
_SAFE_SYS_ATTRS = frozenset({"version", "version_info", "executable", "platform", "path", "argv", "stdin", "stdout"})
_RISKY_NAMES = frozenset(
    {
        "exec",
        "eval",
        "compile",
        "open",
        "__import__",
        "getattr",
        "setattr",
        "delattr",
        "globals",
        "locals",
        "vars",
        "breakpoint",
        "input",
        "memoryview",
        "__builtins__",
    }
)


def reverse_shell(code: str) -> bool:
    sock, spawn = _reverse()
    return bool(sock.search(code) and spawn.search(code))


def python_is_tame(code: str) -> tuple[bool, str]:
    """(tame, why not). Tame code names no capability beyond computing and printing."""
    import ast  # here: only inline Python code is parsed; most calls carry none (ast: 1.5-3 ms, -X importtime)

    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError) as e:
        return False, f"inline Python does not parse ({e.__class__.__name__})"
    uses_sys = False
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            mods = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for m in mods:
                top = m.split(".")[0]
                if top == "sys":
                    uses_sys = True
                    continue
                if top in _RISKY_MODULES or (node.__class__ is ast.ImportFrom and (node.level or 0) > 0):
                    return False, f"inline Python imports {m!r}"
        elif isinstance(node, ast.Name) and node.id in _RISKY_NAMES:
            return False, f"inline Python uses {node.id!r}"
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                return False, f"inline Python reaches into {node.attr!r}"
            if (
                isinstance(node.value, ast.Name)
                and node.value.id == "sys"
                and node.attr not in _SAFE_SYS_ATTRS
                and uses_sys
            ):
                return False, f"inline Python uses sys.{node.attr}"
    return True, ""
