"""Many shell globs matched against a path without compiling them into one regular expression.

The gate asks of every path it judges whether it is a credential or a shell start-up file: about 160 globs
(``~/.ssh/*``, ``/home/*/.aws/*``, ``/etc/shadow`` …). Compiled into one regular expression they cost ~10 ms
of ``re`` parsing per gate built, which a hook decided in a fresh process pays on every call. Nearly all of
them are literal paths or use only ``*``: those are matched with string operations (a set lookup, then
prefix, suffix and in-order segments), which is exactly ``fnmatch.fnmatchcase`` for such globs — ``*``
matches any run of characters, ``/`` and newlines included. The few with ``?`` or ``[…]`` are compiled as
``fnmatch`` would, on first use only.
"""

from __future__ import annotations

import fnmatch
import re

from tether import wildmatch
from tether.memo import cached_property

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


class GlobSet:
    """Does a string match any of ``globs`` (``fnmatch.fnmatchcase`` semantics, case-sensitive, whole string)?"""

    def __init__(self, globs: Iterable[str]) -> None:
        globs = tuple(globs)
        self.globs = globs
        exact: list[str] = []
        starred: list[tuple[str, ...]] = []
        other: list[str] = []
        for g in globs:  # one pass, each glob asked once: a gate is built at every cold hook call (~160 globs)
            if "?" in g or "[" in g:
                other.append(g)
            elif "*" in g:
                starred.append(tuple(g.split("*")))
            else:
                exact.append(g)
        self._exact = frozenset(exact)
        self._starred = tuple(starred)
        self._other = tuple(other)

    @cached_property
    def _other_re(self) -> re.Pattern[str] | None:
        return re.compile("|".join(fnmatch.translate(g) for g in self._other)) if self._other else None

    def match(self, s: str) -> bool:
        if s in self._exact or any(_star_match(parts, s) for parts in self._starred):
            return True
        return self._other_re is not None and self._other_re.match(s) is not None


def _star_match(parts: tuple[str, ...], s: str) -> bool:
    """``s`` matches the glob ``"*".join(parts)``: it starts with the first part, ends with the last, and holds
    the middle ones in order between them (taking each at its leftmost place never loses a match)."""
    first, last = parts[0], parts[-1]
    end = len(s) - len(last)
    if end < len(first) or not s.startswith(first) or not s.endswith(last):
        return False
    pos = len(first)
    for mid in parts[1:-1]:
        found = s.find(mid, pos, end)
        if found < 0:
            return False
        pos = found + len(mid)
    return True


class GitIgnoreSpec:
    """pathspec's ``GitIgnoreSpec`` of ``lines``, built at its first match: importing pathspec (34 modules with
    typing_extensions, ~20 ms of a cold hook call) and compiling the patterns is paid only by a call that matches
    a path against them, not by every process that builds a gate; and not even then when every pattern is simple
    (:mod:`tether.wildmatch` matches those as pathspec does). ``match_file`` is pathspec's. pathspec is
    imported with :mod:`tether.records`' maker standing in for ``dataclasses.dataclass`` (``standing_in``), as the
    hook's import of the deciding code did while it imported pathspec at the top: its dataclasses' methods are
    not compiled for the one match.

    ``broken`` (for a rule's single pattern): a pattern pathspec refuses matches nothing, as a spec of ``None``
    did when the rule compiled it at once; without it the error is raised at the first match, as pathspec raises it.
    """

    def __init__(self, lines: Iterable[str], *, broken: bool = False) -> None:
        self.lines = tuple(lines)
        self._broken = broken

    @cached_property
    def _spec(self) -> Any:
        simple = wildmatch.matcher(self.lines, git=True)  # pathspec's answers without pathspec (tether/wildmatch.py)
        if simple is not None:
            return simple
        from tether.records import standing_in

        with standing_in():
            import pathspec  # here: see the class's docstring

        if not self._broken:
            return pathspec.GitIgnoreSpec.from_lines(self.lines)
        try:
            return pathspec.GitIgnoreSpec.from_lines(self.lines)
        except Exception:  # pathspec raises several types for odd patterns
            return None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GitIgnoreSpec):
            return NotImplemented
        return (self.lines, self._broken) == (other.lines, other._broken)

    def __hash__(self) -> int:
        return hash((self.lines, self._broken))

    def __repr__(self) -> str:
        return f"GitIgnoreSpec({list(self.lines)!r})"

    def match_file(self, path: str) -> bool:
        spec = self._spec
        return spec is not None and bool(spec.match_file(path))
