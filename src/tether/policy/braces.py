"""Brace expansion as bash does it, before any other expansion: ``rm -rf {/,}`` runs ``rm -rf /``.

A word is a list of atoms: a one-character ``str`` is an unquoted, unescaped character bash may read as
brace syntax (``{``, ``,``, ``}``, ``..``); anything else (a quoted part, an escaped character, a
variable's value) is kept whole and never splits. :func:`expand` gives the words bash makes of it, in its
order, or None when they would be more than ``limit`` (the caller then treats the word as unknown).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Sequence

    Atom = object  # a one-character str (brace syntax may apply) or any other value, kept whole


class TooMany(Exception):
    """The expansion makes more words than the caller will look at."""


def expand(atoms: Sequence[Atom], limit: int) -> list[list[Atom]] | None:
    """The words ``atoms`` expands to (``a{b,c}d`` → ``abd``, ``acd``; ``{1..3}`` → 1, 2, 3; ``{a}`` and
    ``{a,b`` stay as written), or None when more than ``limit``, or when the word holds more than ``limit``
    braces (each would be a level of nesting to follow: the work a hook call does stays bounded)."""
    atoms = list(atoms)
    if sum(1 for a in atoms if a == "{") > limit:  # each expansion has a brace: bounds the depth and the work
        return None
    try:
        return _expand(atoms, limit)
    except TooMany:
        return None


def has_syntax(raw: str) -> bool:
    """Could ``raw`` (a word as written) hold a brace expansion at all? A cheap test before the real one."""
    return "{" in raw and "}" in raw and ("," in raw or ".." in raw)


def _expand(atoms: list[Atom], limit: int) -> list[list[Atom]]:
    start = 0
    while True:
        found = _first(atoms, start, limit)
        if found is None:
            return [atoms]
        i, j, alternatives = found
        if alternatives is not None:
            break
        start = i + 1
    pre, post = atoms[:i], atoms[j + 1 :]
    out: list[list[Atom]] = []
    for alt in alternatives:
        for rest in _expand([*alt, *post], limit):
            out.append([*pre, *rest])
            if len(out) > limit:
                raise TooMany
    return out


def _first(atoms: list[Atom], start: int, limit: int) -> tuple[int, int, list[list[Atom]] | None] | None:
    """The first ``{`` from ``start`` with its matching ``}``, and what it expands to (None: it is literal, as
    ``{}`` or ``{a}``); None when no ``{`` there has a match."""
    for i in range(start, len(atoms)):
        if atoms[i] != "{" or (i > 0 and atoms[i - 1] == "$"):
            continue
        depth, commas = 0, [i]
        for j in range(i + 1, len(atoms)):
            a = atoms[j]
            if a == "{":
                depth += 1
            elif a == "}" and depth:
                depth -= 1
            elif a == "}":
                inner = atoms[i + 1 : j]
                if len(commas) > 1:
                    bounds = [*commas, j]
                    return i, j, [atoms[bounds[k] + 1 : bounds[k + 1]] for k in range(len(bounds) - 1)]
                return i, j, _sequence(inner, limit)
            elif a == "," and not depth:
                commas.append(j)
    return None


def _sequence(inner: list[Atom], limit: int) -> list[list[Atom]] | None:
    """``{1..5}``, ``{01..10..3}``, ``{a..e}``, ``{z..a..2}``: the words of a sequence expression, or None when
    ``inner`` is not one (bash leaves it as written)."""
    if not all(isinstance(a, str) and len(a) == 1 for a in inner):
        return None
    parts = "".join(str(a) for a in inner).split("..")
    if len(parts) not in (2, 3) or (len(parts) == 3 and not _integer(parts[2])):
        return None
    step = (abs(int(parts[2])) or 1) if len(parts) == 3 else 1
    first, last = parts[0], parts[1]
    if _integer(first) and _integer(last):
        pad = any(p.lstrip("-+").startswith("0") and len(p.lstrip("-+")) > 1 for p in (first, last))
        width = max(len(first), len(last)) if pad else 0
        return [list(f"{n:0{width}d}") for n in _range(int(first), int(last), step, limit)]
    if len(first) == 1 and len(last) == 1 and first.isascii() and last.isascii() and first.isalpha() and last.isalpha():
        return [[chr(n)] for n in _range(ord(first), ord(last), step, limit)]
    return None


def _range(a: int, b: int, step: int, limit: int) -> range:
    if abs(b - a) // step >= limit:  # counted before a range is made: len() of a huge one overflows
        raise TooMany
    return range(a, b + 1, step) if a <= b else range(a, b - 1, -step)


def _integer(text: str) -> bool:
    digits = text[1:] if text[:1] in ("-", "+") else text
    return digits.isascii() and digits.isdigit()
