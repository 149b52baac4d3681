"""The files programs that write out archives and patches outside the option tables touch: patch(1), cpio, 7-Zip,
``python -m tarfile`` / ``python -m zipfile``. Imported by :mod:`.effects` only when one of them runs, so a hook
call that runs none does not load this code.
"""

from __future__ import annotations

from tether import places

from .command import SimpleCommand, Word, operands
from .command import option_value as _option_value

#: A word only known at run time: any file.
ANYWHERE = Word("", False, "")


class Found:
    """What one command reads (a word, whether a whole tree), writes, and writes out (archive, directory, kind,
    whether its names are renamed in a way not read: :class:`.effects.Unpack`'s fields)."""

    def __init__(self) -> None:
        self.reads: list[tuple[Word, bool]] = []
        self.writes: list[Word] = []
        self.unpacks: list[tuple[Word, Word, str, bool]] = []


def found(cmd: SimpleCommand) -> Found:
    """What ``cmd`` (one of the programs of this module) reads, writes and writes out."""
    e = Found()
    if cmd.name == "patch":
        _patch(cmd, e)
    elif cmd.name == "cpio":
        _cpio(cmd, e)
    elif cmd.name.startswith("7z"):
        _seven_zip(cmd, e)
    else:
        _python_archiver(cmd, e)
    return e


#: patch(1)'s options that take a value, and those that put a backup copy of a patched file elsewhere.
_PATCH_VALUES = frozenset(
    ("-p", "-d", "-i", "-o", "-r", "-B", "-Y", "-z", "-V", "-D", "-F", "-g", "--strip", "--input")
)
_PATCH_BACKUPS = ("-B", "--prefix", "-Y", "--basename-prefix", "-z", "--suffix")


def _patch(cmd: SimpleCommand, e: Found) -> None:
    """patch(1) writes the files its patch (standard input, ``-i FILE`` or a second operand) names, from ``-d DIR``
    (where it moves first: the other names are from there), or the one file a first operand names; ``-o`` and
    ``-r`` name files it writes; a backup prefix or suffix may put a copy of a patched file anywhere (unknown)."""
    into = [Word.lit("."), *_option_value(cmd, ("-d", "--directory"))][-1]

    def moved(w: Word) -> Word:
        return Word.lit(places.join(into.text, w.text)) if w.static and into.static and w.text != "-" else w

    ops = [moved(w) for w in operands(cmd, _PATCH_VALUES)]
    inputs = [moved(w) for w in _option_value(cmd, ("-i", "--input"))] + ops[1:2]
    e.reads += [(w, False) for w in inputs]
    if any(w.text == "--dry-run" for w in cmd.args):
        return
    e.writes += ops[:1]
    outputs = _option_value(cmd, ("-o", "--output", "-r", "--reject-file"))
    e.writes += [moved(w) for w in outputs if w.text != "-"]
    renamed = bool(_option_value(cmd, _PATCH_BACKUPS)) or not into.static
    e.unpacks.append((inputs[-1] if inputs else Word.lit("-"), into, "diff", renamed))


def _cpio(cmd: SimpleCommand, e: Found) -> None:
    """cpio's copy-in (``-i``) writes an archive's members under ``-D DIR`` (or here), from standard input or
    ``-F``/``-I FILE``; copy-out (``-o``) and pass-through (``-p DIR``) read the files named on standard input, any
    file, and pass-through writes them under DIR. The gate does not read cpio archives: their names are unknown."""
    long, short = _long_short(cmd)
    values = {n: _option_value(cmd, (n,)) for n in ("-D", "--directory", "-F", "--file", "-I", "-O")}
    into = (values["-D"] + values["--directory"] + [Word.lit(".")])[0]
    if ("i" in short or "--extract" in long) and not ("t" in short or "--list" in long):  # -it only lists
        archive = (values["-F"] + values["--file"] + values["-I"] + [Word.lit("-")])[0]
        e.unpacks.append((archive, into, "cpio", False))
    if short & {"o", "p"} or long & {"--create", "--pass-through"}:
        e.reads.append((ANYWHERE, True))
        e.writes += values["-F"] + values["--file"] + values["-O"]
    if "p" in short or "--pass-through" in long:
        e.unpacks += [(Word.lit("-"), w, "cpio", False) for w in operands(cmd, _CPIO_VALUES)[:1]]


_CPIO_VALUES = frozenset(("-D", "-F", "-I", "-O", "-H", "-E", "-M", "-R", "--directory", "--file", "--format"))


def _seven_zip(cmd: SimpleCommand, e: Found) -> None:
    """7-Zip: ``x``/``e ARCHIVE`` write its members under ``-oDIR`` (names the gate does not read: unknown), ``a``/``u
    ARCHIVE FILES`` read the files (whole trees) into it, an ``@list`` or ``-i@list`` any file."""
    ops = [w for w in cmd.args if not w.text.startswith("-")]
    verb = ops[0].text if ops else ""
    if verb in ("x", "e") and len(ops) > 1:
        out = [Word(w.text[2:], w.static, w.prefix[2:]) for w in cmd.args if w.text.startswith("-o")]
        e.unpacks.append((ops[1], [*out, Word.lit(".")][0], "7z", False))
    elif verb in ("a", "u") and len(ops) > 1:
        e.writes.append(ops[1])
        e.reads += [(w, True) for w in ops[2:] if not w.text.startswith("@")]
    if any("@" in w.text[:3] for w in cmd.args[1:]):
        e.reads.append((ANYWHERE, True))


def _long_short(cmd: SimpleCommand) -> tuple[set[str], set[str]]:
    """A command's long options (without ``=value``) and the letters of its short ones."""
    long = {w.text.split("=", 1)[0] for w in cmd.args if w.text.startswith("--")}
    short = {c for w in cmd.args if w.text[:1] == "-" and w.text[1:2] not in ("-", "") for c in w.text[1:]}
    return long, short


def _python_module(cmd: SimpleCommand) -> tuple[str, list[Word]]:
    """The module ``python [OPTIONS] -m MOD ARGS`` runs and its arguments ("" when it runs something else)."""
    args = list(cmd.args)
    valued = False  # the word is the value of -X or -W
    for i, w in enumerate(args):
        if valued:
            valued = False
        elif w.text == "-m" and i + 1 < len(args):
            return args[i + 1].text, args[i + 2 :]
        elif w.text.startswith("-m"):
            return w.text[2:], args[i + 1 :]
        elif not w.text.startswith("-") or w.text in ("-c", "-") or w.text.startswith("-c"):
            break
        valued = w.text in ("-X", "-W")
    return "", []


def _python_archiver(cmd: SimpleCommand, e: Found) -> None:
    """``python -m tarfile`` and ``python -m zipfile`` are tar and unzip: ``-e ARCHIVE [DIR]`` writes the archive's
    names under DIR, ``-c NAME FILE…`` reads the files into NAME (argparse: any ``--e…``/``--c…`` abbreviation, a
    value glued to ``-e``, the flag ``-v`` before it)."""
    mod, args = _python_module(cmd)
    kind = {"tarfile": "tar", "zipfile": "zip"}.get(mod)
    if kind is None:
        return
    for i, w in enumerate(args):
        t = w.text
        mode = "e" if t.startswith(("-e", "--e", "-ve")) else "c" if t.startswith(("-c", "--c", "-vc")) else ""
        if not mode:
            continue
        glued = t[t.index(mode) + 1 :] if not t.startswith("--") else t.partition("=")[2]
        values = [Word(glued, w.static, w.prefix)] if glued else []
        for v in args[i + 1 :]:
            if v.text.startswith("-"):
                break
            values.append(v)
        if mode == "e":
            into = values[1] if len(values) > 1 else Word.lit(".")
            e.unpacks.append((values[0] if values else ANYWHERE, into, kind, False))
        else:
            e.writes += values[:1]
            e.reads += [(v, True) for v in values[1:]]
