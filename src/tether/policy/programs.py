"""The shape of a program's option table, and reading a command line against it.

One :class:`Spec` per program (family) lists the options under which the program stays within
what the profile allows it for (reading, or working inside the workspace), which of them take a
value, what that value is (a file read or written, a directory to work in, plain text), what the
operands are, which options make it recursive, and which options run code. As in Codex's
execpolicy, it is an *allowlist*: an option the spec does not list, or an argument that cannot be
classified before running (``$X``, ``$(…)``), means the program is doing something the profile did
not vet, and the profile does not allow it (ASK). Options that run code are named, so a refusal
says why (``tar --checkpoint-action``, ``sort --compress-program``, ``git grep -O``).

The tables themselves are data in :mod:`.knowledge`. Option syntax in them: ``-a`` (no value),
``-n:`` (a value: ``-n5`` or ``-n 5``), ``--all``, ``--sort:`` (``--sort=x`` or ``--sort x``),
``--color=`` (an optional value, only as ``--color=x``).
GNU long options may be abbreviated (``--checkp``); an abbreviation counts as the option it
uniquely names, so abbreviating a code option does not hide it.
"""

from __future__ import annotations

import _thread
import re
from _collections_abc import Mapping  # collections.abc's, without the collections package
from enum import Enum

from tether.quickenum import Quick
from tether.records import dataclass, field, replace
from tether.typeless import TypeVar, overload

from .command import Word

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence


class Role(Enum, metaclass=Quick):
    READ = "read"  # file contents are read
    WRITE = "write"  # created or changed
    DELETE = "delete"  # removed
    NAME = "name"  # only its name or metadata is looked at
    TEXT = "text"  # not a path (pattern, number, message)
    CHDIR = "chdir"  # the directory the program works in
    SCRIPT = "script"  # a file of code it runs (a makefile, a sourced script): the workspace's or none


@dataclass(frozen=True, eq=False, repr=False)
class Spec:
    """A program's option table (the syntax is in the module docstring)."""

    flags: frozenset[str] = frozenset()  # options without a value
    values: Mapping[str, Role] = field(default_factory=dict)  # options with a value → what the value is
    optional: frozenset[str] = frozenset()  # long options with an optional ``=value``
    patterns: tuple[re.Pattern[str], ...] = ()  # families such as gcc's -O2, -Wall
    operands: Role = Role.READ
    first: Role | None = None  # the first operand, when it differs (grep's PATTERN, chmod's MODE) …
    first_unless: frozenset[str] = frozenset()  # … unless one of these options gave it (grep -e, sed -f)
    last: Role | None = None  # the last of two or more operands (cp's DEST)
    recursive: frozenset[str] = frozenset()  # options after which operands are whole trees ("*": always; "-d=x": -d x)
    default_write: str | None = None  # written when no operand or option names a place (unzip: ".")
    default_read: str | None = None  # read (as a tree) when recursive and no operand names a place (rg: ".")
    code: Mapping[str, str] = field(default_factory=dict)  # options that run code → what they run
    subcommands: Mapping[str, Spec] | None = None
    numeric: bool = False  # ``head -20``
    plus: bool = False  # ``+WORD`` is an option too (less's ``+cmd`` runs a command)
    inert: bool = False  # no argument can make it read, write or run anything: anything goes
    kind: str = "read"  # read: only reads; build: works inside the workspace
    longs: tuple[str, ...] = ()  # every long option, for resolving abbreviations


@dataclass(eq=False, repr=False)
class Parsed:
    """A command line read against a spec: its options, operands, unknown and code-running options."""

    options: list[tuple[str, Word | None]] = field(default_factory=list)
    operands: list[Word] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # options the spec does not list
    code: list[str] = field(default_factory=list)  # options that run code
    unresolved: list[Word] = field(default_factory=list)  # arguments only known at run time

    def has(self, *names: str) -> bool:
        return any(n in names for n, _ in self.options)

    def recurses(self, spec: Spec) -> bool:
        """Whether the operands are whole trees: an option of ``spec.recursive``, or one with the value written
        there (grep's ``-d recurse``, ``--directories=recurse``); a value only known at run time may be it."""
        if "*" in spec.recursive:
            return True
        for n, v in self.options:
            if n in spec.recursive:
                return True
            if v is None:
                continue
            unknown = not v.static and any(r.startswith(f"{n}=") for r in spec.recursive)
            if unknown or f"{n}={v.text}" in spec.recursive:
                return True
        return False

    def values(self, role: Role, spec: Spec) -> list[Word]:
        return [v for n, v in self.options if v is not None and spec.values.get(n) is role]


def spec(
    options: str = "",
    *,
    roles: Mapping[str, Role] | None = None,
    code: Mapping[str, str] | None = None,
    patterns: Sequence[str] = (),
    recursive: str = "",
    first_unless: str = "",
    **kw: object,
) -> Spec:
    """Build a spec from the option syntax above; ``roles`` gives the role of value options' values."""
    flags: set[str] = set()
    values: dict[str, Role] = {}
    optional: set[str] = set()
    for o in options.split():
        if o.endswith(":"):
            values[o[:-1]] = Role.TEXT
        elif o.endswith("="):
            optional.add(o[:-1])
        else:
            flags.add(o)
    for name, role in (roles or {}).items():
        values[name] = role
        flags.discard(name)
    codes: dict[str, str] = {}
    for name, what in (code or {}).items():
        if name.endswith(":"):
            name = name[:-1]
            values[name] = Role.TEXT
        codes[name.rstrip("=")] = what
    longs = tuple(sorted({o for o in (*flags, *values, *optional, *codes) if o.startswith("--")}))
    return Spec(
        longs=longs,
        flags=frozenset(flags),
        values=values,
        optional=frozenset(optional),
        patterns=tuple(re.compile(p) for p in patterns),
        recursive=frozenset(recursive.split()),
        first_unless=frozenset(first_unless.split()),
        code=codes,
        **kw,  # type: ignore[arg-type]
    )


class Later:
    """A spec made when first used: the tables of :mod:`.knowledge` are ~100 specs, and reading their option
    strings was ~20 M instructions of every cold hook call (most of a cold call's knowledge import), which looks
    at one or two of them. What a spec is made of is kept (a closure over :func:`spec`'s arguments) and made
    at the first :meth:`made`, once: under a lock, so two threads first using it at once get the same
    :class:`Spec` object, and nothing reads a spec half made. Its ``kind`` is known without making it (the
    profile's read-only and build sets need every kind, not every option)."""

    __slots__ = ("_make", "_spec", "kind")

    def __init__(self, make: Callable[[], Spec], kind: str) -> None:
        self._make: Callable[[], Spec] | None = make
        self._spec: Spec | None = None
        self.kind = kind

    @classmethod
    def known(cls, spec: Spec) -> Later:
        """A spec made already."""
        one = cls(lambda: spec, spec.kind)
        one.made()
        return one

    def made(self) -> Spec:
        made = self._spec
        if made is None:
            with _MAKING:  # re-entrant: a variant (:meth:`but`) makes its base inside
                made = self._spec
                if made is None:
                    assert self._make is not None
                    made = self._spec = self._make()
                    self._make = None  # what it was made of, no longer needed
        return made

    def but(self, **changes: object) -> Later:
        """This spec with ``changes`` (``dataclasses.replace``), made when first used too."""
        kind = changes.get("kind", self.kind)
        return Later(lambda: replace(self.made(), **changes), str(kind))  # type: ignore[arg-type]


_MAKING = _thread.RLock()
#: A spec's kind when :func:`spec` is not given one (the field's default).
_KIND: str = Spec.kind


def later(options: str = "", **kw: object) -> Later:
    """:func:`spec` with the same arguments, made when first used (:class:`Later`)."""
    return Later(lambda: spec(options, **kw), str(kw.get("kind", _KIND)))  # type: ignore[arg-type]


_T = TypeVar("_T")


class Specs(Mapping[str, Spec]):
    """Specs by name, each made when first looked up (:class:`Later`). Its names, and each one's kind
    (:meth:`kinds`), are known without making any spec; two names of one :class:`Later` are the same spec."""

    __slots__ = ("_later", "_made")

    def __init__(self, later: Mapping[str, Later]) -> None:
        self._later = dict(later)
        self._made: dict[str, Spec] = {}

    def __getitem__(self, name: str) -> Spec:
        made = self._made.get(name)
        if made is None:
            made = self._made[name] = self._later[name].made()  # the one spec its Later made
        return made

    @overload
    def get(self, name: str, /) -> Spec | None: ...
    @overload
    def get(self, name: str, default: Spec, /) -> Spec: ...
    @overload
    def get(self, name: str, default: _T, /) -> Spec | _T: ...
    def get(self, name: str, default: object = None, /) -> object:
        made = self._made.get(name)
        if made is None:
            one = self._later.get(name)
            if one is None:
                return default
            made = self._made[name] = one.made()
        return made

    def __contains__(self, name: object) -> bool:
        return name in self._later

    def __iter__(self) -> Iterator[str]:
        return iter(self._later)

    def __len__(self) -> int:
        return len(self._later)

    def kinds(self) -> Iterator[tuple[str, str]]:
        """Each name and its spec's kind, no spec made."""
        return ((name, one.kind) for name, one in self._later.items())


def _long_name(s: Spec, name: str) -> str:
    """The option a (possibly abbreviated) long option names; itself when none or several."""
    if name in s.flags or name in s.values or name in s.optional or name in s.code:
        return name
    hits = [o for o in s.longs if o.startswith(name)]
    return hits[0] if len(hits) == 1 else name


def parse(s: Spec, args: Sequence[Word]) -> Parsed:
    """Split ``args`` into options (checked against the spec) and operands."""
    out = Parsed()
    i, n, dashdash = 0, len(args), False
    while i < n:
        w = args[i]
        i += 1
        if _is_operand(s, w, dashdash):
            if not w.static and not w.prefix:
                out.unresolved.append(w)  # may turn out to be an option, or a subcommand
            out.operands.append(w)
            if s.subcommands is not None:
                break
        elif w.text == "--":
            dashdash = True
        else:
            i = _option(s, w, args, i, out)
    if s.subcommands is not None and i < n:
        out.operands += args[i:]  # everything after the subcommand is the subcommand's
    return out


def _is_operand(s: Spec, w: Word, dashdash: bool) -> bool:
    t = w.text
    if not w.static and not w.prefix:
        return True  # only known at run time: taken as an operand, and recorded as unresolved
    if s.plus and t.startswith("+") and not dashdash:
        return False  # less +cmd
    return dashdash or not t.startswith("-") or t == "-"


def _option(s: Spec, w: Word, args: Sequence[Word], i: int, out: Parsed) -> int:
    """Record the option word ``w`` (and its value); returns the index after what it consumed."""
    t = w.text
    if s.plus and t.startswith("+"):
        if any(p.fullmatch(t) for p in s.patterns):
            out.options.append((t, None))
        else:
            out.unknown.append(t)
    elif not w.static:
        out.unresolved.append(w)
    elif any(p.fullmatch(t) for p in s.patterns):
        out.options.append((t, None))
    elif t.startswith("--"):
        i = _long(s, w, args, i, out)
    else:
        i = _cluster(s, w, args, i, out)
    return i


def _long(s: Spec, w: Word, args: Sequence[Word], i: int, out: Parsed) -> int:
    """``--name``, ``--name=value``, ``--name value``, and unique abbreviations of them."""
    raw, eq, _ = w.text.partition("=")
    name = _long_name(s, raw)
    value: Word | None = None
    if name in s.values and not eq and i < len(args):
        value, i = args[i], i + 1
    elif eq:
        value = _tail(w, len(raw) + 1)
    if name in s.code:
        out.code.append(name)
    elif (name in s.flags and not eq) or name in s.optional or (name in s.values and value is not None):
        out.options.append((name, value))
    else:
        out.unknown.append(w.text)
    return i


def _cluster(s: Spec, w: Word, args: Sequence[Word], i: int, out: Parsed) -> int:
    """``-rnv``, ``-n5``, ``-n 5``, ``-20``: returns the index after what it consumed."""
    t = w.text
    if s.numeric and t[1:].isdigit():
        out.options.append(("-NUM", None))
        return i
    if len(t) > 2 and (t in s.flags or t in s.values or t in s.code):  # find's -name, zip's -TT
        value: Word | None = None
        if t in s.values and i < len(args):
            value, i = args[i], i + 1
        if t in s.code:
            out.code.append(t)
        elif t in s.flags or value is not None:
            out.options.append((t, value))
        else:
            out.unknown.append(t)
        return i
    for j in range(1, len(t)):
        opt = "-" + t[j]
        if opt in s.values:
            value = None
            if j + 1 < len(t):
                value = _tail(w, j + 1)
            elif i < len(args):
                value, i = args[i], i + 1
            if opt in s.code:
                out.code.append(opt)
            elif value is None:
                out.unknown.append(opt)
            else:
                out.options.append((opt, value))
            return i
        if opt in s.code:
            out.code.append(opt)
            return i
        if opt in s.flags:
            out.options.append((opt, None))
            continue
        out.unknown.append(t if j == 1 and len(t) > 2 else opt)
        return i
    return i


def _tail(w: Word, start: int) -> Word:
    if w.static:
        return Word(w.text[start:], True, w.text[start:])
    return Word(w.text[start:], False, w.prefix[start:], w.inner, w.expanded)


def in_place(parsed: Parsed) -> bool:
    """``sed -i`` / ``-i.bak`` / ``-ni`` / ``--in-place``: the operands are rewritten, not only read."""
    return any(n.startswith("--in") or (n[:2] != "--" and "i" in n) for n, _ in parsed.options)


def roles(s: Spec, parsed: Parsed) -> list[tuple[Word, Role]]:
    """Every operand and option value with what the program does with it."""
    ops = parsed.operands
    first = s.first if s.first is not None and not parsed.has(*s.first_unless) else None
    out: list[tuple[Word, Role]] = []
    for i, w in enumerate(ops):
        role = s.operands
        if i == 0 and first is not None:
            role = first
        elif i == len(ops) - 1 and len(ops) - (first is not None) >= 2 and s.last is not None:
            role = s.last
        out.append((w, role))
    out += [(v, s.values[n]) for n, v in parsed.options if v is not None and n in s.values]
    return out


def subcommand(s: Spec, parsed: Parsed) -> tuple[str, Spec | None, list[Word]]:
    """For a program with subcommands: the subcommand word, its spec (None if unknown) and its args."""
    if not parsed.operands:
        return "", None, []
    head = parsed.operands[0]
    rest = parsed.operands[1:]
    subs = s.subcommands or {}
    return head.text, (subs.get(head.text) if head.static else None), rest
