"""pathspec's gitignore matching of simple patterns, without importing pathspec.

Importing pathspec (34 modules with typing_extensions) and compiling a spec cost a cold hook call ~45 M
instructions, and every call that names a workspace file matches one: the risk rating's fixed patterns
(control/risk.py: ``*.lock``, ``.github/**``, ``*.toml`` …), an envelope's ``filesystem`` lists (policy/globs.py).
Nearly all of them are *simple*: path segments of letters, digits, ``.``, ``_``, ``-`` and ``*``, an optional
leading ``/`` (anchored) and trailing ``/`` (a directory). For those this module builds the regular expression
pathspec 1.x builds (``GitIgnoreSpecPattern`` for ``GitIgnoreSpec``, ``git=True``; ``GitIgnoreBasicPattern`` for
``PathSpec.from_lines("gitignore", …)``, ``git=False``: the same steps, copied) and matches it as pathspec does
(``re.search`` of the path with one leading ``/`` or ``./`` removed). With no negation among them, a path
matches the list when any pattern matches it, in both. Any other pattern (``!``, ``#``, ``?``, ``[…]``,
``\\``, spaces, ``//``, another character) returns None: the caller asks pathspec.
``tests/test_wildmatch.py`` holds every answer to pathspec's (hypothesis, both kinds).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterable

#: The characters of a simple pattern's segments.
_SIMPLE_CHARACTERS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._*-")


def simple(line: str) -> bool:
    """Is ``line`` one simple pattern: segments of :data:`_SIMPLE_CHARACTERS`, an optional leading and trailing
    slash? Exactly what ``re.fullmatch`` of ``/?[A-Za-z0-9._*-]+(?:/[A-Za-z0-9._*-]+)*/?`` answers, without compiling
    it at import (~0.9 M instructions of every cold hook call; ``tests/policy/test_names_without_patterns.py``)."""
    if line.startswith("/"):
        line = line[1:]
    if line.endswith("/"):
        line = line[:-1]
    return all(segment and _SIMPLE_CHARACTERS.issuperset(segment) for segment in line.split("/"))


def _segments(is_dir: bool, segs: list[str], git: bool) -> tuple[list[str] | None, str | None]:
    """pathspec's ``__normalize_segments`` for a simple pattern: the segments, or a whole-regex override."""
    if not segs[0]:
        del segs[0]
    elif (len(segs) == 1 or (len(segs) == 2 and not segs[1])) and segs[0] != "**":
        segs.insert(0, "**")
    if not segs[-1]:
        segs[-1] = "**"
    for i in range(len(segs) - 1, 0, -1):
        if segs[i - 1] == "**" and segs[i] == "**":
            del segs[i]
    dir_mark = "(?P<ps_d>/)" if git else "/"
    if segs == ["**"]:
        return None, dir_mark if is_dir else "."
    if segs == ["**", "*"]:
        return None, "."
    if segs == ["**", "*", "**"]:
        return None, dir_mark if (git and is_dir) else "/"
    return segs, None


def _segment_glob(seg: str) -> str:
    return "".join("[^/]*" if c == "*" else re.escape(c) for c in seg)


def _translate(is_dir: bool, segs: list[str], git: bool) -> str:
    """pathspec's ``__translate_segments`` for the characters of a simple pattern."""
    out: list[str] = []
    need_slash = False
    end = len(segs) - 1
    for i, seg in enumerate(segs):
        if seg == "**":
            if i == 0:
                out.append("^(?:.+/)?")
            elif i < end:
                out.append("(?:/.+)?")
                need_slash = True
            else:
                out.append("(?P<ps_d>/)" if git and is_dir else "/")
            continue
        if i == 0:
            out.append("^")
        if need_slash:
            out.append("/")
        out.append("[^/]+" if seg == "*" else _segment_glob(seg))
        if i == end:
            if git:
                out.append("(?:(?P<ps_d>/)|$)")
            else:
                out.append("/?$" if seg == "*" else "(?:/|$)")
        need_slash = True
    return "".join(out)


def regex(line: str, *, git: bool) -> str | None:
    """The regular expression pathspec builds for ``line``, or None when it is not a simple pattern."""
    if not simple(line):
        return None
    segs = line.split("/")
    is_dir = not segs[-1]
    kept, override = _segments(is_dir, segs, git)
    return override if kept is None else _translate(is_dir, kept, git)


class Matcher:
    """Does a path match any of the patterns (``match_file``, as pathspec's spec of them answers)?"""

    def __init__(self, expressions: Iterable[str]) -> None:
        self._searches = tuple(re.compile(e).search for e in expressions)

    def match_file(self, path: str) -> bool:
        if path.startswith("/"):
            path = path[1:]
        elif path.startswith("./"):
            path = path[2:]
        return any(search(path) is not None for search in self._searches)


def matcher(lines: Iterable[str], *, git: bool) -> Matcher | None:
    """A :class:`Matcher` of ``lines`` when every one is simple, else None (ask pathspec)."""
    expressions = []
    for line in lines:
        expression = regex(line, git=git)
        if expression is None:
            return None
        expressions.append(expression)
    return Matcher(expressions)
