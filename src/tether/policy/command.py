"""What the shell analysis produces: one program invocation and its words, as the program would get them.

These are the values every part of the gate reads (the option tables, the effects, the rules, the
profile); :mod:`.shell` makes them from a command string.
"""

from __future__ import annotations

from tether.memo import cached_property
from tether.records import dataclass


@dataclass(frozen=True)
class Word:
    """One argument as the program would receive it, as far as it is known beforehand.

    ``text`` is the best-effort value (quotes and escapes removed, known variables expanded,
    unknown parts left as written); ``prefix`` is the part known for sure (equal to ``text``
    when ``static``); ``inner`` lists the programs run inside substitutions in this word.
    """

    text: str
    static: bool = True
    prefix: str = ""
    inner: tuple[str, ...] = ()
    expanded: bool = False  # came from a variable, even if its value is known

    @staticmethod
    def lit(text: str) -> Word:
        return Word(text, True, text)


@dataclass(frozen=True)
class Redirect:
    """One redirection of a simple command: its operator, its target, a heredoc's body."""

    op: str
    target: Word | None  # None for fd duplication (2>&1) and heredocs
    body: str | None = None  # heredoc / here-string text when static
    body_dynamic: bool = False
    #: The words after its target that the parser reads as more targets and bash as the command's arguments
    #: (``rm 2>/dev/null -rf /`` is ``rm -rf /``): the shell analysis moves them into the command's argv.
    args: tuple[Word, ...] = ()

    @property
    def writes(self) -> bool:
        return self.target is not None and (">" in self.op) and not self.op.startswith("<<")

    @property
    def reads(self) -> bool:
        return self.target is not None and self.op in ("<", "<>")


@dataclass(frozen=True)
class SimpleCommand:
    """One program invocation with everything the shell does first already applied."""

    argv: tuple[Word, ...]
    redirects: tuple[Redirect, ...] = ()
    cwd: str | None = None  # a place as tether.places spells it
    piped: bool = False  # stdin comes from a pipe
    wrappers: tuple[str, ...] = ()
    origin: str = ""
    dynamic_tail: bool = False  # xargs appends arguments only known at run time
    env: tuple[tuple[str, Word], ...] = ()  # variables naming places code is loaded from (envvars.PATHS)
    computed: bool = False  # the command word itself was computed
    text: str = ""

    # ``name`` and ``args`` are read dozens of times per command by the gate's layers; a command never changes
    # (frozen; ``dataclasses.replace`` makes a new one), so each is worked out once, on first use.
    @cached_property
    def name(self) -> str:
        return command_name(self.argv[0].text) if self.argv else ""

    @cached_property
    def args(self) -> tuple[Word, ...]:
        return self.argv[1:]

    @property
    def words(self) -> list[str]:
        return [w.text for w in self.argv]

    @property
    def stdin_body(self) -> Redirect | None:
        return next((r for r in self.redirects if r.op.startswith("<<")), None)


def shell_tilde(text: str) -> str | None:
    """The prefix of a word that names one of the shell's own directories, not a home: ``~+`` (PWD), ``~-``
    (OLDPWD), ``~N``, ``~+N``, ``~-N`` (the directory stack); None for any other word."""
    head = text.split("/", 1)[0]
    if head in ("~+", "~-") or (head[:1] == "~" and head[1:].lstrip("+-").isdigit()):
        return head
    return None


def command_name(text: str) -> str:
    """``/usr/bin/rm`` → ``rm``. Escapes and quotes are already gone from ``text``."""
    return text.rsplit("/", 1)[-1] if "/" in text.rstrip("/") else text


def operands(cmd: SimpleCommand, value_flags: frozenset[str] = frozenset()) -> list[Word]:
    """The non-option words, skipping the values of ``value_flags`` (for programs without a table)."""
    out: list[Word] = []
    args = cmd.args
    i = 0
    dashdash = False
    while i < len(args):
        t = args[i].text
        if not dashdash and t == "--":
            dashdash = True
        elif not dashdash and t.startswith("-") and len(t) > 1:
            if t in value_flags:
                i += 1
        else:
            out.append(args[i])
        i += 1
    return out


def option_value(cmd: SimpleCommand, names: tuple[str, ...]) -> list[Word]:
    """The values given to any of ``names``, in order: ``-d DIR``, ``--dir DIR``, ``--dir=DIR`` and a short option's
    glued ``-dDIR``; for programs without a table, whose options the gate still has to read (patch, cpio)."""
    out: list[Word] = []
    args = cmd.args
    for i, w in enumerate(args):
        for n in names:
            if w.text == n and i + 1 < len(args):
                out.append(args[i + 1])
            elif n.startswith("--") and w.text.startswith(n + "="):
                out.append(Word(w.text[len(n) + 1 :], w.static, w.prefix[len(n) + 1 :]))
            elif not n.startswith("--") and w.text.startswith(n) and len(w.text) > len(n) and len(n) == 2:
                out.append(Word(w.text[2:], w.static, w.prefix[2:]))
    return out
