"""What a known program does with its arguments: which words it reads, writes, deletes or runs.

This is the knowledge that turns ``cp a /etc/x`` into "writes /etc/x" so the gate can judge the
place, whatever rule allowed ``cp``. Most of it is data (the option tables in :mod:`.programs`);
the few programs whose arguments do not fit a table (``dd``'s ``of=``, ``tar``'s modes, ``find
-delete``, transfer tools) have a small function each. It is approximate in the safe direction:
unknown programs get only the gate's generic credential check on every argument.
"""

from __future__ import annotations

from tether import places
from tether.records import dataclass, field

from . import interp, programs
from .command import SimpleCommand, Word, operands
from .command import option_value as _option_value
from .knowledge import LINK_FOLLOWERS, RESPONSE_FILES, SPECS
from .programs import Role

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


@dataclass(frozen=True)
class Target:
    """A path a command reads or writes, and whether it recurses or deletes."""

    word: Word
    recursive: bool = False
    delete: bool = False
    follows: bool = False  # follows symbolic links under it (grep -R, tar -h, find -L)


@dataclass
class Effects:
    """What a command does to files: what it reads and writes, the scripts it runs, where it works."""

    reads: list[Target] = field(default_factory=list)  # file contents read (recursive: a whole tree)
    writes: list[Target] = field(default_factory=list)  # created, changed, moved away or deleted
    scripts: list[Word] = field(default_factory=list)  # files of code it runs (makefiles, sourced scripts)
    chdir: Word | None = None  # the directory it works in (git -C, make -C), when not the shell's
    env_dump: bool = False
    unpacks: list[Unpack] = field(default_factory=list)  # archives and patches it writes out (tar x, unzip, git apply)


@dataclass(frozen=True)
class Unpack:
    """An archive or patch written out under a directory: what it writes is known only by reading ``archive``
    (``-``: standard input; a word only known at run time: anything)."""

    archive: Word
    into: Word
    kind: str  # tar, zip, patch (git's: names from the top) or diff (patch(1)'s: from where it runs)
    strip: int = 0  # leading components each name loses (tar --strip-components N)
    renamed: bool = False  # names changed in a way the gate does not read (tar --transform, bsdtar -s): unknown
    prefix: str = ""  # put in front of each name (git apply --directory=DIR)


_FIND_FILTERS = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-regex", "-iregex", "-newer", "-mtime", "-mmin", "-empty", "-size", "-user"}
)


def effects(cmd: SimpleCommand) -> Effects:
    """The file effects of one simple command (redirections are handled by the gate)."""
    e = Effects()
    name = cmd.name
    special = _SPECIAL.get(name)
    if special is not None:
        special(cmd, e)
    else:
        spec = SPECS.get(name)
        if spec is not None:
            _from_table(cmd, spec, e)
    if name in _EXTRACTORS or (interp.is_python(name) and any(w.text[:2] == "-m" for w in cmd.args)):
        _extract(cmd, e)
    follow = LINK_FOLLOWERS.get(name)
    if follow is not None and _has_option(tar_args(list(cmd.args)) if name in ("tar", "bsdtar") else cmd.args, follow):
        e.reads = [Target(t.word, t.recursive, t.delete, True) for t in e.reads]
    if name in RESPONSE_FILES:  # gcc @FILE reads its options from FILE (and prints them in its errors)
        e.reads += [Target(Word(w.text[1:], w.static, w.prefix[1:])) for w in cmd.args if w.text[:1] == "@"]
    if name in ("env", "printenv", "set", "export", "declare", "typeset") and not _sets_something(name, cmd):
        e.env_dump = True
    return e


def _from_table(cmd: SimpleCommand, spec: programs.Spec, e: Effects) -> None:
    args = list(cmd.args)
    if cmd.name == "find":
        args = without_exec(args)
    parsed = programs.parse(spec, args)
    if spec.subcommands is not None:
        word, sub, rest = programs.subcommand(spec, parsed)
        e.chdir = next(iter(parsed.values(Role.CHDIR, spec)), None)
        if sub is None:
            return
        spec, parsed = sub, programs.parse(sub, rest)
        if cmd.name == "git" and word in ("apply", "am"):
            _git_patch(parsed, e)
    deep = parsed.recurses(spec)
    in_place = cmd.name == "sed" and any(
        n.startswith("--in-place") or (n[:2] != "--" and "i" in n) for n, _ in parsed.options
    )
    placed = False
    for w, role in programs.roles(spec, parsed):
        if role is Role.READ:
            e.reads.append(Target(w, deep))
        elif role is Role.WRITE:
            e.writes.append(Target(w, deep))
            placed = True
        elif role is Role.DELETE:
            e.writes.append(Target(w, deep, True))
        elif role is Role.SCRIPT:
            e.scripts.append(w)
        elif role is Role.CHDIR:
            e.chdir = w
    if spec.operands is Role.READ and parsed.values(Role.READ, spec) and parsed.has("--files0-from"):
        e.reads.append(Target(_ANYWHERE, True))  # sort's: the files the list names, any file (du's: only their size)
    if in_place:  # sed -i rewrites its input files
        e.writes += e.reads
        e.reads = []
    if spec.default_write is not None and not placed:
        e.writes.append(Target(Word.lit(spec.default_write)))
    if spec.default_read is not None and deep and not e.reads:
        e.reads.append(Target(Word.lit(spec.default_read), True))


def _git_patch(parsed: programs.Parsed, e: Effects) -> None:
    """``git apply`` / ``git am`` write the files their patches name (standard input without an operand), under the
    repository's top, each behind ``--directory``'s value; ``--check``, ``--stat``, ``--numstat`` and ``--summary``
    only report, unless ``--apply``."""
    if parsed.has("--check", "--stat", "--numstat", "--summary") and not parsed.has("--apply"):
        return
    into = e.chdir if e.chdir is not None else Word.lit(".")
    dirs = [v for n, v in parsed.options if n == "--directory" and v is not None]  # the last one counts
    renamed = bool(parsed.unresolved) or not all(v.static for v in dirs)
    prefix = dirs[-1].text.strip("/") if dirs else ""
    for w in parsed.operands or [Word.lit("-")]:
        moved = w.static and w.text != "-" and into.static and into.text != "."
        archive = Word.lit(places.join(into.text, w.text)) if moved else w
        e.unpacks.append(Unpack(archive, into, "patch", renamed=renamed, prefix=prefix))


#: Programs :mod:`.extractors` reads (imported only for them: most hook calls run none).
_EXTRACTORS = frozenset({"patch", "cpio", "7z", "7za", "7zr", "7zz"})


def _extract(cmd: SimpleCommand, e: Effects) -> None:
    from . import extractors

    found = extractors.found(cmd)
    e.reads += [Target(w, deep) for w, deep in found.reads]
    e.writes += [Target(w) for w in found.writes]
    e.unpacks += [Unpack(a, into, kind, renamed=renamed) for a, into, kind, renamed in found.unpacks]


def _has_option(args: Sequence[Word], names: frozenset[str]) -> bool:
    """Whether ``args`` holds one of ``names`` (``*``: always), a short one also inside a cluster (``-rL``)."""
    if "*" in names:
        return True
    shorts = {n[1] for n in names if len(n) == 2}
    for w in args:
        t = w.text
        if t == "--":
            return False
        if t in names or (t[:1] == "-" and t[1:2] != "-" and shorts & set(t[1:])):
            return True
    return False


def _jq(cmd: SimpleCommand, e: Effects) -> None:
    """jq's ``--rawfile NAME FILE`` and ``--slurpfile NAME FILE`` take two values: the second is a file read (the
    table can give an option one value only)."""
    _from_table(cmd, SPECS["jq"], e)
    args = cmd.args
    e.reads += [Target(args[i + 2]) for i, w in enumerate(args[:-2]) if w.text in ("--rawfile", "--slurpfile")]


def _unzip(cmd: SimpleCommand, e: Effects) -> None:
    """unzip writes its archive's members under ``-d DIR`` (or here), unless it only lists, tests or prints them."""
    spec = SPECS["unzip"]
    _from_table(cmd, spec, e)
    parsed = programs.parse(spec, list(cmd.args))
    if parsed.has("-l", "-t", "-v", "-z", "-p", "-c", "-Z") or not parsed.operands:
        return
    into = next(iter(parsed.values(Role.WRITE, spec)), Word.lit("."))
    e.unpacks.append(Unpack(parsed.operands[0], into, "zip"))


def without_exec(args: list[Word]) -> list[Word]:
    """find's ``-exec CMD ;`` words belong to CMD, which the shell analysis judges on its own."""
    out: list[Word] = []
    skipping = False
    for w in args:
        if skipping:
            skipping = w.text not in (";", "+")
        elif w.text in ("-exec", "-execdir", "-ok", "-okdir"):
            skipping = True
        else:
            out.append(w)
    return out


#: The name find -delete's target gives what its filters find under a root (any file at any depth).
FOUND = "_found_"


def _find(cmd: SimpleCommand, e: Effects) -> None:
    _from_table(cmd, SPECS["find"], e)
    texts = [w.text for w in cmd.args]
    if "-delete" in texts:
        roots = []
        for w in cmd.args:
            if w.text.startswith("-") or w.text in ("(", "!"):
                break
            roots.append(w)
        # find deletes what is *under* its roots; without a filter that is everything
        leaf = FOUND if set(texts) & _FIND_FILTERS else "*"
        for w in roots or [Word.lit(".")]:
            e.writes.append(Target(Word(f"{w.text.rstrip('/')}/{leaf}", w.static, w.prefix), True, True))


def _dd(cmd: SimpleCommand, e: Effects) -> None:
    for w in cmd.args:
        for key, into in (("of=", e.writes), ("if=", e.reads)):
            if w.text.startswith(key):
                into.append(Target(Word(w.text[3:], w.static, w.prefix[3:])))


def _transfer(cmd: SimpleCommand, e: Effects) -> None:
    """cp-like copies that may name remote places (``host:path``): only local words are places."""
    ops = operands(cmd, frozenset({"-e", "-P", "-i", "-o", "-F", "-l", "-S", "--rsh"}))
    ops = [w for w in ops if not _remote(w.text)]
    if len(ops) >= 2:
        e.writes.append(Target(ops[-1]))
        ops = ops[:-1]
    e.reads += [Target(w, True) for w in ops]


def _fetch(cmd: SimpleCommand, e: Effects) -> None:
    """curl and wget: the files their options name, read through their tables (``-sLo F``, ``--outp=F``)
    and, as a second net for spellings a table may lack, by the option names alone."""
    spec = SPECS[cmd.name]
    parsed = programs.parse(spec, list(cmd.args))
    writes = parsed.values(Role.WRITE, spec) + _option_value(cmd, ("-o", "--output", "-O", "--output-document"))
    writes += _option_value(cmd, ("-P", "--directory-prefix"))
    reads = parsed.values(Role.READ, spec)
    reads += _option_value(cmd, ("-T", "--upload-file", "-K", "--config", "--post-file"))
    e.writes += [Target(w) for w in dict.fromkeys(writes) if w.text != "-"]  # -O-: standard output
    e.reads += [Target(w) for w in dict.fromkeys(reads)]
    for w in cmd.args:
        at = w.text.find("@")
        if at >= 0 and (w.text.startswith("@") or "=@" in w.text):
            e.reads.append(Target(Word(w.text[at + 1 :], w.static, w.prefix[at + 1 :] if w.static else "")))


def _in_place(cmd: SimpleCommand, e: Effects) -> None:
    """``perl -i`` / ``ruby -i`` rewrite the files they are given."""
    texts = [w.text for w in cmd.args]
    if not any(t.startswith("-") and not t.startswith("--") and "i" in t for t in texts):
        return
    ops = operands(cmd, frozenset({"-e", "-E", "-I", "-M", "-m", "-r"}))
    inline = any(t.startswith("-") and ("e" in t or "E" in t) for t in texts)
    e.writes += [Target(w) for w in (ops if inline else ops[1:])]


def tar_args(args: list[Word]) -> list[Word]:
    """``tar czf x.tgz``: the old form bundles the first word's options without a dash."""
    if args and args[0].static and not args[0].text.startswith("-"):
        return [Word.lit("-" + args[0].text), *args[1:]]
    return args


#: tar's operation options, as the mode they select (abbreviations are resolved by the table first).
_TAR_MODES = {"-x": "x", "--extract": "x", "--get": "x", "-c": "c", "--create": "c", "-r": "r", "--append": "r"}
_TAR_MODES |= {"-u": "u", "--update": "u"}


def _tar(cmd: SimpleCommand, e: Effects) -> None:
    """tar reads its table like any program (every spelling of -f, -C, -T, -g …); what the archive and
    the operands are depends on the mode: extracting writes the directory, creating writes the archive."""
    spec = SPECS["tar"]
    args = tar_args(list(cmd.args))
    parsed = programs.parse(spec, args)
    modes = {_TAR_MODES[n] for n, _ in parsed.options if n in _TAR_MODES}
    archive = [v for n, v in parsed.options if n in ("-f", "--file") and v is not None]
    chdir = [v for n, v in parsed.options if n in ("-C", "--directory") and v is not None]
    e.reads += [Target(w) for w in parsed.values(Role.READ, spec)]
    e.writes += [Target(w) for w in parsed.values(Role.WRITE, spec)]
    if "x" in modes:
        e.writes += [Target(w) for w in chdir] or [Target(Word.lit("."))]
        e.reads += [Target(w) for w in archive]
        into = _under_chdir(spec, args, Word.lit(".")) if chdir else Word.lit(".")
        strip, renamed = _tar_renames(cmd.name, args, parsed)
        e.unpacks += [Unpack(w, into, "tar", strip, renamed) for w in archive[-1:] or [Word.lit("-")]]
    elif modes & {"c", "r", "u"}:
        e.writes += [Target(w) for w in archive if w.text != "-"]
        e.reads += [Target(_under_chdir(spec, args, w), True) for w in parsed.operands]
        if parsed.values(Role.READ, spec) and any(n in ("-T", "--files-from") for n, _ in parsed.options):
            e.reads.append(Target(_ANYWHERE, True))  # the files a list names: any file


#: A place only known at run time, with no known prefix: the gate takes it for any file of the workspace.
_ANYWHERE = Word("", False, "")


#: GNU tar's options that rename members as they are written (any unique abbreviation names them too).
_TAR_RENAMERS = ("--transform", "--xform", "--one-top-level")


def _tar_renames(name: str, args: list[Word], parsed: programs.Parsed) -> tuple[int, bool]:
    """How tar renames the members it writes: the components ``--strip-components N`` drops, and whether another
    option renames them in a way the gate does not read (``--transform``, ``--one-top-level``, bsdtar's ``-s``, which
    GNU tar's table reads as ``--same-order``; a count that is not a number, an argument known only at run time)."""
    unknown = [u.split("=")[0] for u in parsed.unknown]
    renamed = bool(parsed.unresolved) or any(len(u) > 3 and f.startswith(u) for u in unknown for f in _TAR_RENAMERS)
    if name == "bsdtar" and _has_option(args, frozenset({"-s"})):
        renamed = True
    strip = 0
    for n, v in parsed.options:
        if n == "--strip-components" and v is not None:
            if v.static and v.text.strip().isdigit():
                strip = int(v.text)
            else:
                renamed = True
    return strip, renamed


def _under_chdir(spec: programs.Spec, args: list[Word], operand: Word) -> Word:
    """tar's operand as the cwd sees it: each ``-C DIR`` before it moves tar (from the last one: ``-C a -C b``
    is ``a/b``), so ``tar cf - -C .. ws`` archives the workspace and ``-C secrets key.txt`` reads
    secrets/key.txt. Only the options before the operand count (GNU tar); a directory only known at run time
    makes the operand any file."""
    at = next((i for i, w in enumerate(args) if w is operand), len(args))
    before = programs.parse(spec, args[:at])
    here = "."
    for n, v in before.options:
        if n in ("-C", "--directory") and v is not None:
            if not v.static:
                return _ANYWHERE
            here = places.join(here, v.text)
    if here == "." or operand.text.startswith("/"):
        return operand
    if operand.static:
        return Word.lit(places.join(here, operand.text))
    return Word(places.join(here, operand.text), False, places.join(here, operand.prefix) + "/")


_SPECIAL: dict[str, Callable[[SimpleCommand, Effects], None]] = {
    "find": _find,
    "dd": _dd,
    "tar": _tar,
    "unzip": _unzip,
    "jq": _jq,
    "bsdtar": _tar,
    "rsync": _transfer,
    "scp": _transfer,
    "curl": _fetch,
    "wget": _fetch,
    "perl": _in_place,
    "ruby": _in_place,
}


def _sets_something(name: str, cmd: SimpleCommand) -> bool:
    texts = [w.text for w in cmd.args]
    if name in ("printenv", "set"):
        return bool(texts)
    if name in ("export", "declare", "typeset"):
        return (bool(texts) and not any(t in ("-p", "-x") for t in texts)) or any("=" in t for t in texts)
    return False


def _remote(text: str) -> bool:
    head = text.split("/", 1)[0]
    return (":" in head and not text.startswith(("/", ".", "~"))) or "://" in text
