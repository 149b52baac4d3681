"""Interpreters: where does the program they run come from?

``python3 x.py`` runs a file, ``python3 -c CODE`` runs inline code, ``curl … | python3`` runs
whatever arrives on stdin. The gate needs that distinction: a program that arrives on a pipe is
remote or computed code (DENY), inline shell code is parsed recursively, inline code of other
languages gets a conservative look (see ``profile.py``). How each language's command line names
its program is data (:data:`.knowledge.INTERPRETERS`); the shells and Python have their own
readers below because their option syntax differs.
"""

from __future__ import annotations

from tether.records import dataclass

from .knowledge import (
    INTERPRETERS,
    IPYTHON,
    PYTHON_PREFIXES,
    PYTHON_VALUE_FLAGS,
    SHELL_VALUE_FLAGS,
    SHELLS,
    Interpreter,
)

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

Kind: TypeAlias = "Literal['inline', 'script', 'module', 'stdin', 'none']"  # a string: no typing
_VERSION = frozenset({"--version", "-V", "--help", "-h", "-version", "-v"})


@dataclass(frozen=True, eq=False)
class Program:
    """``kind`` and the index in ``args`` of the code / script / module word (-1 if none)."""

    kind: Kind
    index: int = -1


def is_python(name: str) -> bool:
    r"""Whether ``name`` is a Python interpreter's: exactly what ``re.match`` of
    ``^(python|pypy)(\d+(\.\d+)*)?[a-z]?$|^ipython3?$`` answers (``$`` also before one final newline, ``\d`` any
    decimal digit), without compiling that pattern at import: ~1.1 M instructions of every cold hook call
    (``tests/policy/test_names_without_patterns.py`` holds the two to each other)."""
    if name.endswith("\n"):
        name = name[:-1]
    if name in IPYTHON:
        return True
    prefix = next((p for p in PYTHON_PREFIXES if name.startswith(p)), None)
    if prefix is None:
        return False
    version = name[len(prefix) :]
    if version and "a" <= version[-1] <= "z":
        version = version[:-1]
    return not version or all(part.isdecimal() for part in version.split("."))


def is_interpreter(name: str) -> bool:
    return name in SHELLS or name in INTERPRETERS or is_python(name)


def program(name: str, args: list[str]) -> Program:
    """Classify how interpreter ``name`` invoked with ``args`` (argv[1:]) gets its program."""
    if args and args[0] in _VERSION and len(args) == 1:
        return Program("none")
    if name in SHELLS:
        return _shell(args)
    if is_python(name):
        return _python(args)
    return _other(INTERPRETERS.get(name, Interpreter()), args)


def _code_at(i: int, args: list[str]) -> Program:
    """The code is the word at ``i``; without one the interpreter reads its program from stdin."""
    return Program("inline", i) if i < len(args) else Program("stdin")


def _other(spec: Interpreter, args: list[str]) -> Program:
    i, doubt = 0, False
    while i < len(args):
        a = args[i]
        if a == "--":
            i += 1
            break
        found = _word(spec, a, i, args)
        if isinstance(found, Program):
            return _inline_after(spec, found, args) if doubt else found
        doubt = doubt or (found == 1 and a.startswith("-") and "=" not in a and a not in spec.flags)
        i += found
    return Program("script", i) if i < len(args) else Program("stdin")


def _inline_after(spec: Interpreter, found: Program, args: list[str]) -> Program:
    """An option the table does not know came before the script: it may have taken the "script" as its
    value (``node --experimental-loader x.mjs -e CODE``). If an inline-code option follows, that code is
    what runs, and it is judged; fail closed rather than allow it as a script."""
    if found.kind != "script":
        return found
    for j in range(found.index + 1, len(args)):
        later = _word(spec, args[j], j, args)
        if isinstance(later, Program) and later.kind == "inline":
            return later
    return found


def _word(spec: Interpreter, a: str, i: int, args: list[str]) -> Program | int:
    """What the word ``a`` at ``i`` says: the program, or how many words to step over."""
    if a in spec.inline or a in spec.code_words:
        return _code_at(i + 1, args)
    if a.startswith("-") and not a.startswith("--") and spec.bundled & set(a[1:]):
        body = a[1:]  # bundled flags: -pe CODE, -lne CODE, -e'CODE'
        pos = max(body.find(c) for c in spec.bundled)
        return _code_at(i + 1, args) if pos == len(body) - 1 else Program("inline", i)
    if a in spec.script:
        return Program("script", i + 1) if i + 1 < len(args) else Program("stdin")
    if a in spec.skip_words:
        return 1
    if a == "-":
        return Program("stdin")
    if a.startswith("-"):
        return 2 if a in spec.values else 1
    return Program("script", i)


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
            return _code_at(i + 1, args)
        if a.startswith("-c"):
            return Program("inline", i)
        if a in ("--version", "-V", "--help", "-h", "-VV"):
            return Program("none")
        if a.startswith("-"):
            i += 2 if a in PYTHON_VALUE_FLAGS else 1
            continue
        return Program("script", i)
    return Program("stdin")


def _shell(args: list[str]) -> Program:
    i = 0
    inline = False
    while i < len(args):
        a = args[i]
        if a in ("--", "-"):  # a lone "-" ends a shell's options as "--" does (``sh -`` reads its commands from stdin)
            i += 1
            break
        if a in ("-s",):
            return Program("stdin")
        if a in SHELL_VALUE_FLAGS:
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
