"""Shell analysis: from a command string to the simple commands it would really run.

A real parser (tree-sitter-bash) turns the string into a tree; the walker below flattens it
into :class:`SimpleCommand` values, each the *effective* argv after seeing through everything a
shell or a wrapper does before the program starts:

* lists, pipelines, subshells, groups, ``if``/``for``/``while``/``case`` bodies, functions;
* command and process substitution, backticks, ``eval``, ``bash|sh -c STRING`` (recursively),
  heredocs and here-strings fed to a shell, ``trap``/``alias``/``watch``/``su -c`` strings,
  ``xargs CMD``, ``find -exec/-execdir/-ok CMD``;
* wrappers and prefixes: ``env``, ``command``, ``builtin``, ``exec``, ``nohup``, ``timeout``,
  ``nice``, ``time``, ``sudo``, ``doas``, ``stdbuf``, ``setsid``, ``ionice``, ``flock`` …,
  ``VAR=value``, absolute paths (``/bin/rm``), quoting and escapes (``\\rm``, ``r''m``, ``"rm"``,
  ``$'\\x72m'``), brace expansion (``{/,}`` is ``/``: :mod:`.braces`).

Words keep whether they are *static* (known before running). ``$HOME`` is known (``~``); a
variable assigned a literal earlier in the same string is known; anything else is not.
``cd`` is followed so relative paths resolve against the right directory.

Structural findings that no rule can allow away are reported here with ``shell:*`` ids: an
unparseable string (ASK), a computed command word (ASK), code that is computed at run time
(ASK) or fetched/decoded (DENY ``shell:remote-code``), a program piped into an interpreter
(DENY ``shell:pipe-to-interpreter``), nesting too deep to follow (ASK).
"""

from __future__ import annotations

import codecs
import os
import re
from _collections_abc import Callable  # collections.abc's, without the collections package

from tether import places
from tether.memo import cache
from tether.records import dataclass, field, replace
from tether.scoped import contextmanager

from . import braces, envvars, grammar, interp, programs
from .command import Redirect, SimpleCommand, Word, command_name, shell_tilde
from .decision import Finding, Layer, Verdict
from .knowledge import (
    BWRAP_ARITY,
    DECODERS,
    FETCHERS,
    FROM_DATA,
    PARALLEL,
    PARALLEL_SOURCES,
    RUNNER_OPTIONS,
    RUNNERS,
    SETS_VARIABLES,
    SHELLS,
    SPECIAL_BUILTINS,
    SPECS,
    WRAPPER_OPTIONS,
    WRAPPER_POSITIONALS,
    WRAPPERS,
)
from .paths import PROTECTED_NAMES
from .programs import Spec

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import Any

MAX_DEPTH = 8  # shells inside shells (bash -c, eval, functions)
MAX_NESTING = 48  # syntax nesting: $( $( … ) ), ( ( … ) ), quoting
MAX_NODES = 20_000
MAX_COMMANDS = 2000
MAX_INPUT = 256 * 1024

_PARSER = grammar.parser()


@dataclass(eq=False, repr=False)
class Analysis:
    """What the shell walker found in a command line: its simple commands, findings and notes."""

    commands: list[SimpleCommand] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    #: ``cd`` targets etc. the analysis could not follow.
    notes: list[str] = field(default_factory=list)
    #: The variables the code may give a value, ``*`` for any; the functions and aliases it defines. What a sourced
    #: script leaves the shell that sources it (policy/shellgate.py ``_script``).
    sets: set[str] = field(default_factory=set)
    defines: set[str] = field(default_factory=set)

    def hard(self, rule_id: str, verdict: Verdict, reason: str) -> None:
        f = Finding.of(Layer.HARD, rule_id, verdict, reason)
        if f not in self.findings:
            self.findings.append(f)

    @property
    def names(self) -> set[str]:
        return {c.name for c in self.commands}


# -- words ----------------------------------------------------------------------------------


def _unescape_unquoted(s: str) -> str:
    """A line continuation removed, then each backslash and the character after it (any) replaced by that
    character, left to right: what ``re.sub(r"\\\\(.)", r"\\1", s, flags=re.DOTALL)`` gives, without compiling it at
    import (~0.4 M instructions of every cold hook call; ``tests/policy/test_names_without_patterns.py``)."""
    s = s.replace("\\\n", "")
    if "\\" not in s:
        return s
    out: list[str] = []
    i = 0
    while (j := s.find("\\", i)) != -1 and j + 1 < len(s):
        out += (s[i:j], s[j + 1])
        i = j + 2
    out.append(s[i:])
    return "".join(out)


def _unescape_double(s: str) -> str:
    s = s.replace("\\\n", "")
    return re.sub(r'\\([$`"\\])', r"\1", s)


#: The words whose unquoted text bash brace-expands (a quoted string never is), and how many words of one
#: expansion are judged: more, and the word is unknown (asks), never allowed unseen.
_BRACE_WORDS = frozenset({"word", "concatenation", "brace_expression"})
MAX_BRACE_WORDS = 64


def _unquoted_atoms(raw: str) -> list[object]:
    """An unquoted word's characters for :mod:`.braces`: each one as itself, an escaped one (``\\,``) as a
    :class:`Word` brace syntax never applies to, a line continuation dropped."""
    raw = raw.replace("\\\n", "")
    out: list[object] = []
    i = 0
    while i < len(raw):
        if raw[i] == "\\" and i + 1 < len(raw):
            out.append(Word.lit(raw[i + 1]))
            i += 2
        else:
            out.append(raw[i])
            i += 1
    return out


def _joined(atoms: list[object]) -> Word:
    """One word made of parts (a word's quoted and unquoted pieces, a brace expansion's characters): known as far
    as its parts are, left to right."""
    text, static, prefix, expanded = "", True, "", False
    inner: list[str] = []
    for a in atoms:
        part = a if isinstance(a, Word) else Word.lit(str(a))
        text += part.text
        inner.extend(part.inner)
        expanded = expanded or part.expanded
        if static:
            prefix += part.text if part.static else part.prefix
        static = static and part.static
    return Word(text, static, text if static else prefix, tuple(inner), expanded)


def _ansi_c(s: str) -> str:
    body = s[2:-1]
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return body


@dataclass(eq=False, repr=False)
class _Session:
    """What every walker of one analysis shares: the output, the budget, the functions being run."""

    out: Analysis
    calling: set[tuple[str, str]] = field(default_factory=set)  # (name, body) of each function being run
    nodes: int = 0
    level: int = 0
    #: Every name the script may have given a value that is not a plain literal — one known only at run time, or one
    #: with an expansion in it (None: any name, after ``declare -n``). Where such a name has no value known here,
    #: arithmetic may run what it holds; any other name holds a plain literal or the environment's value.
    unsafe: set[str] | None = field(default_factory=set)
    integers: set[str] = field(default_factory=set)  # declared ``-i``: every assignment of one is arithmetic
    tables: set[str] = field(default_factory=set)  # declared ``-A``: a subscript of one is a key, not arithmetic


@dataclass(eq=False, repr=False)
class _State:
    """What a walker knows at one point of the script: where it is, and what its variables hold. A subshell ends
    with the state it began with; where the script may take one of several paths (an ``if``, a ``case``, the right
    side of ``&&``, a loop's body), each path begins with the same state and what they end with is merged: a value
    two paths leave differently is known on neither (:meth:`_Walker.branches`)."""

    cwd: str | None
    oldpwd: str | None
    stack: list[str | None]
    cd_unsure: bool
    errexit: bool
    vars: dict[str, str]
    env: dict[str, Word]
    exported: set[str]
    functions: dict[str, str | None]


def _merged(states: list[_State]) -> _State:
    """The state after one of ``states``' paths, whichever ran: what they agree on is known, the rest unknown. ``IFS``
    and ``CDPATH`` assigned on any path stay named (:meth:`_Walker.forget`); a code variable or an export on any path
    stays, as the strictest reading."""
    first, rest = states[0], states[1:]
    same = all(s.cwd == first.cwd for s in rest)
    known = {k: v for k, v in first.vars.items() if all(s.vars.get(k) == v for s in rest)}
    for marker in ("IFS", "CDPATH"):
        if len({s.vars.get(marker) for s in states} - {None}) and marker not in known:
            known[marker] = ""
    env: dict[str, Word] = {}
    for s in states:
        for k, w in s.env.items():
            env[k] = w if env.get(k, w) == w else Word(w.text, False)
    stacks = {len(s.stack) for s in states}
    return _State(
        cwd=first.cwd if same else None,
        oldpwd=first.oldpwd if all(s.oldpwd == first.oldpwd for s in rest) else None,
        stack=first.stack if all(s.stack == first.stack for s in rest) else [None] * max(stacks),
        cd_unsure=any(s.cd_unsure for s in states),
        errexit=all(s.errexit for s in states),
        vars=known,
        env=env,
        exported=set().union(*(s.exported for s in states)),
        functions={
            k: first.functions.get(k) if all(s.functions.get(k, 0) == first.functions.get(k, 1) for s in rest) else None
            for k in {k for s in states for k in s.functions}
        },
    )


#: Nodes after which a compound statement leaves the working directory unknown if it changed it.
_CONTROL = frozenset(
    {"if_statement", "while_statement", "until_statement", "for_statement", "c_style_for_statement", "case_statement"}
)
#: Variables the shell itself gives values (``read`` with no name: REPLY; ``getopts``: OPTARG; ``[[ =~ ]]``:
#: BASH_REMATCH; ``mapfile``: MAPFILE): one assigned earlier in the text is not known to hold that value still.
_SHELL_SETS = frozenset({"REPLY", "OPTARG", "OPTIND", "BASH_REMATCH", "MAPFILE", "COPROC", "BASH_ARGV", "RANDOM"})
_LOOPS = frozenset({"while_statement", "until_statement", "for_statement", "c_style_for_statement"})
#: A name in arithmetic: not a number's digits (``0x1f``, ``16#ff``). Patterns here are compiled at their first use
#: (``re``'s cache), not at import: a cold hook call pays for none it does not need.
_ARITH_NAME = r"(?<![\w#])[A-Za-z_]\w*"
#: A command substitution (not ``$((``): its output would be evaluated.
_SUBSTITUTION = r"\$\((?!\()|`"
#: ``[[ A OP B ]]`` operators that evaluate both sides as arithmetic.
_ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})
#: ``declare -a 'X=( … )'``: a quoted array assignment with an expansion in it, which ``declare`` expands again.
_QUOTED_ARRAY = r"""(?s)['"]?[A-Za-z_]\w*\+?=['"]?\((?=.*[$`])"""
#: Wrappers after which a name is still looked up as a shell function; any other (``command``, ``env``, ``exec``,
#: ``xargs``, ``find -exec`` …) runs the program of that name, whatever function bears it.
_SHELL_WRAPPERS = frozenset({"time", "then", "do", "!"})
#: What the shell sets from data (``read`` with no name: REPLY), never the environment's.
_FROM_DATA_SETS = _SHELL_SETS - {"RANDOM", "OPTIND"}


class _Walker:
    """Walks one parse tree. Recursion (``bash -c``) makes a child walker sharing the session.

    The working directory is tracked as the shell would change it: ``cd``/``pushd``/``popd`` (with a
    directory stack and ``cd -``), undone at the end of subshells, pipeline parts, substitutions and
    background jobs. Where it could be one of several places (a ``cd`` that may fail before ``;``, a
    ``cd`` inside a branch or loop), it becomes unknown (``None``) and so do the paths that depend on it.
    """

    def __init__(
        self,
        src: bytes,
        session: _Session,
        cwd: str | None,
        depth: int,
        vars_: dict[str, str],
        functions: dict[str, str | None] | None = None,
    ) -> None:
        self.src = src
        self.session = session
        self.out = session.out
        self.cwd = cwd
        self.oldpwd: str | None = None
        self.stack: list[str | None] = []
        self.cd_unsure = False  # the last cd may have failed, leaving the directory where it was
        self.errexit = False  # `set -e`: a failed cd ends the script
        self.depth = depth
        self.vars = vars_
        #: The shell functions defined here: name -> body, None where one path may have defined it and another not
        #: (or another body). Code run in this shell shares the dict; a new shell process starts with none.
        self.functions: dict[str, str | None] = {} if functions is None else functions
        self.exported: set[str] = set()  # names ``export`` (or ``declare -x``) gave to programs this shell starts
        self.env: dict[str, Word] = {}  # code-relevant variables assigned earlier (see envvars)
        #: The commands a heredoc's line goes on with, to walk once the command they follow is (:meth:`heredoc`).
        self.after: list[tuple[str, Any]] = []

    # -- entry -------------------------------------------------------------------------------

    def run(self) -> None:
        tree = _PARSER.parse(self.src)
        root = tree.root_node
        if root.has_error:
            self.out.hard("shell:unparseable", Verdict.ASK, "the command does not parse as shell; it cannot be checked")
        self.walk(root)

    def text(self, node: Any) -> str:
        return str(self.src[node.start_byte : node.end_byte].decode("utf-8", "replace"))

    def walk(self, node: Any, piped: bool = False, redirects: tuple[Redirect, ...] = ()) -> None:
        """Walk one node within the session's budget of nesting, nodes and commands."""
        s = self.session
        s.nodes += 1
        s.level += 1
        try:
            if s.level > MAX_NESTING:
                self.out.hard("shell:too-deep", Verdict.ASK, f"shell nested more than {MAX_NESTING} levels deep")
            elif s.nodes > MAX_NODES or len(self.out.commands) > MAX_COMMANDS:
                self.out.hard("shell:too-complex", Verdict.ASK, "too many commands to analyse")
            else:
                self.node(node, piped, redirects)
        finally:
            s.level -= 1

    def node(self, node: Any, piped: bool, redirects: tuple[Redirect, ...]) -> None:
        t = node.type
        if t == "ERROR" or node.is_missing:
            self.out.hard("shell:unparseable", Verdict.ASK, f"unparseable shell near {self.text(node)[:40]!r}")
        if t == "command":
            self.command(node, piped, redirects)
        elif t == "pipeline":
            parts = [c for c in node.named_children if c.type != "comment"]
            for i, child in enumerate(parts):
                with self.subshell():  # every part of a pipeline runs in a subshell
                    self.walk(child, piped or i > 0, redirects if i == len(parts) - 1 else ())
        elif t == "list":
            self.and_or(node, piped, redirects)
        elif t == "redirected_statement":
            self.redirected(node, piped, redirects)
        elif t in ("subshell", "command_substitution", "process_substitution"):
            with self.subshell():
                self.sequence(node)
        elif t == "function_definition":
            self.function(node)
        elif t == "variable_assignment":
            self.assignment(node, persist=True)
        elif t == "declaration_command":
            self.declaration(node, piped, redirects)
        elif t in _LOOPS:
            self.loop(node, piped)
        elif t == "if_statement":
            self.if_chain(node.children[1:], piped)
        elif t == "case_statement":
            self.case(node, piped)
        elif t == "comment":
            return
        else:
            self.other(node, piped)

    def redirected(self, node: Any, piped: bool, redirects: tuple[Redirect, ...]) -> None:
        body = node.child_by_field_name("body")
        mark = len(self.after)
        nodes = [*node.children_by_field_name("redirect")]
        nodes += [c for c in node.named_children if c.type.endswith("_redirect") and c != body]
        once = {(c.start_byte, c.end_byte): c for c in nodes}.values()
        reds = tuple(dict.fromkeys(r for c in once for r in self.redirects_of(c)))
        if body is None:
            self.emit_redirects(reds)
        elif body.type in ("command", "pipeline", "redirected_statement", "list"):
            self.walk(body, piped, redirects + reds)  # the redirection belongs to the last command
        else:
            self.emit_redirects(reds)
            self.walk(body, piped)
        self.walk_after(mark)

    def other(self, node: Any, piped: bool) -> None:
        """Any other statement: its parts in turn. ``unset X`` leaves X empty, which is not the value it had (its
        words are walked after: ``unset $(cmd)``); arithmetic may assign any name it holds."""
        if node.type == "unset_command":
            rest = self.text(node).split(None, 1)[1:]
            dynamic = any(c in "".join(rest) for c in "$`\\\"'")
            self.forget(None if dynamic else _names([Word.lit(w) for w in rest]))
            self.unset_functions(" ".join(rest).split(), dynamic)
        arithmetic = node.type == "c_style_for_statement" or (node.children and node.children[0].type == "((")
        head = [c for c in node.children if c.type not in ("do_group", "compound_statement")] if arithmetic else []
        if arithmetic:
            self.arithmetic(" ".join(self.text(c) for c in head), "((…))")
        elif node.type == "unary_expression" and _in_double_brackets(node):
            op = node.child_by_field_name("operator")
            if op is not None and self.text(op) == "-v":  # ``[[ -v A[X] ]]``, ``[[ -v $N ]]``: a name, its subscript
                operand = [self.text(c) for c in node.named_children if c != op]
                self.arithmetic(" ".join(operand), "[[ -v … ]]")
        elif node.type == "binary_expression":
            op = node.child_by_field_name("operator")
            if op is not None and self.text(op) in _ARITH_TESTS and _in_double_brackets(node):
                sides = (node.child_by_field_name("left"), node.child_by_field_name("right"))
                self.arithmetic(" ".join(self.text(c) for c in sides if c is not None), f"[[ … {self.text(op)} … ]]")
        self.sequence(node, piped if node.type == "negated_command" else False)
        if arithmetic:  # ``((IFS=1))``, ``for ((X=0; …))``: any name in the arithmetic may now be another value
            self.forget(_names([Word.lit(self.text(c)) for c in head]), numbers=True)

    def unset_functions(self, words: list[str], dynamic: bool) -> None:
        """``unset -f F`` removes the function F; ``unset F`` removes a variable F if there is one, else the function:
        which, and with a computed name whose, is not known here."""
        flags = "".join(w[1:] for w in words if w.startswith("-"))
        if "v" in flags and "f" not in flags:
            return
        for name in list(self.functions) if dynamic else [w for w in words if not w.startswith("-")]:
            if name in self.functions and "f" in flags and not dynamic:
                del self.functions[name]
            elif name in self.functions:
                self.functions[name] = None

    def sequence(self, node: Any, piped: bool = False) -> None:
        """The statements of ``node``, one after another."""
        self.statements(node.children, piped)

    def statements(self, children: Sequence[Any], piped: bool = False) -> None:
        """Statements one after another; a ``cd`` that may have failed leaves the directory unknown."""
        for i, c in enumerate(children):
            if not (c.is_named or c.type == "ERROR"):
                continue
            start = self.cwd
            background = i + 1 < len(children) and children[i + 1].type == "&"
            if background:
                with self.subshell():
                    self.walk(c, piped)
                continue
            self.walk(c, piped)
            if self.cwd != start and (self.cd_unsure or c.type in _CONTROL):
                self.cwd = None
            self.cd_unsure = False

    def loop(self, node: Any, piped: bool) -> None:
        """A loop, whose body runs any number of times: walked once, and where that changed the state (a ``cd``, a
        variable), again from what the rounds so far may have left; after it, what no round or every round left."""
        start = self.state()
        once = self.for_loop if node.type == "for_statement" else lambda n: self.other(n, piped)
        once(node)
        first = self.state()
        if (first.cwd, first.vars, first.env, first.functions) != (start.cwd, start.vars, start.env, start.functions):
            self.restore(_merged([start, first]))  # the next round starts where this one ended, or the loop's start
            once(node)
        self.restore(_merged([start, first, self.state()]))

    def if_chain(self, parts: Sequence[Any], piped: bool) -> None:
        """``if``'s condition, then its body or what follows it: each ``elif`` a condition and a body in turn, the
        ``else`` a body, and with neither nothing more. ``parts``: the children after ``if`` (or ``elif``)."""
        then = next((i for i, c in enumerate(parts) if c.type == "then"), len(parts))
        body_end = next((i for i, c in enumerate(parts) if c.type in ("elif_clause", "else_clause", "fi")), len(parts))
        self.statements(parts[:then], piped)  # the condition runs whichever way it goes
        rest = [c for c in parts[body_end:] if c.type in ("elif_clause", "else_clause")]

        def otherwise() -> None:
            if rest and rest[0].type == "elif_clause":
                self.if_chain([*rest[0].children[1:], *rest[1:]], piped)
            elif rest:
                self.statements(rest[0].children[1:], piped)

        self.branches([lambda: self.statements(parts[then + 1 : body_end], piped), otherwise], may_skip=False)

    def case(self, node: Any, piped: bool) -> None:
        """``case``: its word, every pattern (each may be expanded), then one item's body or none. With ``;&`` or
        ``;;&`` a body goes on into the next ones: the bodies are walked again from what the first round left."""
        items = [c for c in node.named_children if c.type == "case_item"]
        for c in node.named_children:
            if c.type != "case_item":
                self.walk(c, piped)
        for item in items:
            for pattern in item.children_by_field_name("value"):
                self.walk(pattern, piped)
        patterns = {(p.start_byte, p.end_byte) for item in items for p in item.children_by_field_name("value")}
        bodies = [[c for c in item.children if (c.start_byte, c.end_byte) not in patterns] for item in items]
        paths = [lambda body=body: self.statements(body, piped) for body in bodies]
        self.branches(paths, may_skip=True)
        if any(item.child_by_field_name("fallthrough") is not None for item in items):
            self.branches(paths, may_skip=True)

    def and_or(self, node: Any, piped: bool, redirects: tuple[Redirect, ...]) -> None:
        """``a && b``, ``a || b``: the right side runs only after the left succeeded / failed."""
        parts = [c for c in node.children if c.is_named and c.type != "comment"]
        ops = [c.type for c in node.children if not c.is_named]
        if len(parts) != 2 or not ops:
            self.sequence(node, piped)
            return
        left, right = parts
        start = self.cwd
        self.walk(left, piped)
        after_left = self.cwd
        if ops[0] == "||" and after_left != start:
            self.cwd = None  # the left side failed somewhere: before or after its cd
        self.cd_unsure = False
        before_right = self.state()
        self.walk(right, piped, redirects)
        # the right side may not run: its assignments are known only where it would leave them as they were
        merged = _merged([before_right, self.state()])
        self.vars, self.env, self.exported = merged.vars, merged.env, merged.exported
        self.functions.clear()  # in place, as restore does: ``false && rm() { :; }`` leaves rm unknown
        self.functions.update(merged.functions)
        if ops[0] == "||" and right.type == "command" and self.text(right).split()[:1] in (["exit"], ["return"]):
            self.cwd = after_left  # `cd x || exit`: past this point the cd succeeded
        elif self.cwd != start:
            self.cd_unsure = True

    @contextmanager
    def subshell(self) -> Iterator[None]:
        """Code run in a subshell (``( … )``, a pipeline's part, ``$( … )``, a job in the background): its ``cd`` and
        its assignments end with it. ``X=/; (X=src); rm -rf $X`` removes ``/``."""
        saved = self.state()
        try:
            yield
        finally:
            self.restore(saved)

    def state(self) -> _State:
        return _State(
            self.cwd,
            self.oldpwd,
            list(self.stack),
            self.cd_unsure,
            self.errexit,
            dict(self.vars),
            dict(self.env),
            set(self.exported),
            dict(self.functions),
        )

    def restore(self, state: _State) -> None:
        self.cwd, self.oldpwd, self.stack, self.cd_unsure = state.cwd, state.oldpwd, list(state.stack), state.cd_unsure
        self.errexit, self.vars, self.env, self.exported = (
            state.errexit,
            dict(state.vars),
            dict(state.env),
            set(state.exported),
        )
        self.functions.clear()  # in place: code run in this shell (eval, a body) shares the dict
        self.functions.update(state.functions)

    def branches(self, paths: Sequence[Callable[[], None]], may_skip: bool) -> None:
        """One of ``paths`` runs (or, ``may_skip``, none): each is walked from the state here, and the state after is
        what they all leave (:func:`_merged`). Walked one after another from wherever the last ended, ``if c; then
        X=/; else X=src; fi; rm -rf $X`` was ``rm -rf src``, and ``X=/; true || X=src; rm -rf $X`` too."""
        start = self.state()
        ends = [start] if may_skip else []
        for path in paths:
            self.restore(start)
            path()
            ends.append(self.state())
        self.restore(_merged(ends) if ends else start)

    # -- words -------------------------------------------------------------------------------

    def word(self, node: Any) -> Word:
        t = node.type
        raw = self.text(node)
        if t in ("word", "number"):
            v = _unescape_unquoted(raw)
            return Word(v, True, v)
        if t == "raw_string":
            return Word.lit(raw[1:-1])
        if t == "ansi_c_string":
            return Word.lit(_ansi_c(raw))
        if t in ("string", "translated_string", "concatenation"):
            return self.concat(node, quoted=t != "concatenation")
        if t == "string_content":
            return Word.lit(_unescape_double(raw))
        if t in ("simple_expansion", "expansion"):
            return self.expansion(node)
        if t in ("command_substitution", "process_substitution"):
            before = len(self.out.commands)
            self.walk(node)
            inner = tuple(c.name for c in self.out.commands[before:])
            return Word(raw, False, "", inner)
        if t == "command_name":
            return self.word(node.named_children[0]) if node.named_children else Word.lit(raw)
        # arithmetic, brace expressions, anything else: walk for substitutions, value unknown
        if t == "arithmetic_expansion":
            self.arithmetic(raw, repr(raw[:40]))
            # ``$((IFS=1))`` assigns: any name in it may now be another value (a number)
            self.forget(_names([Word.lit(raw)]), numbers=True)
        before = len(self.out.commands)
        for c in node.named_children:
            self.walk(c)
        inner = tuple(c.name for c in self.out.commands[before:])
        static = t == "brace_expression" and not inner
        return Word(raw, static, raw if static else "", inner)

    def brace_words(self, node: Any) -> list[Word]:
        """The words bash's brace expansion makes of one unquoted word (``{/,}`` → ``/`` and an empty word;
        ``/etc/{shadow,x}``): each judged as the program gets it. More than :data:`MAX_BRACE_WORDS`: one word
        whose value is unknown from its first brace on."""
        atoms: list[object] = []
        pos = node.start_byte
        for child in node.children if node.type == "concatenation" else [node]:
            if child.start_byte > pos:  # literal text between parts, as concat reads it
                atoms += _unquoted_atoms(self.src[pos : child.start_byte].decode("utf-8", "replace"))
            pos = max(pos, child.end_byte)
            if child.type in ("word", "brace_expression", "number"):
                atoms += _unquoted_atoms(self.text(child))
            elif child.is_named:
                atoms.append(self.word(child))
        if pos < node.end_byte:
            atoms += _unquoted_atoms(self.src[pos : node.end_byte].decode("utf-8", "replace"))
        found = braces.expand(atoms, MAX_BRACE_WORDS)
        if found is None:
            cut = atoms.index("{")
            known = _joined(atoms[:cut])
            return [Word(known.text + _joined(atoms[cut:]).text, False, known.prefix, known.inner, known.expanded)]
        return [_joined(each) for each in found if each]  # an empty unquoted word is dropped, as bash drops it

    def concat(self, node: Any, quoted: bool) -> Word:
        parts: list[object] = []
        pos = node.start_byte + (1 if quoted and self.src[node.start_byte : node.start_byte + 1] in (b'"',) else 0)
        if quoted and self.src[node.start_byte : node.start_byte + 2] == b'$"':
            pos = node.start_byte + 2
        end = node.end_byte - (1 if quoted else 0)
        for child in node.children:
            if child.start_byte > pos:  # literal text between parts (inside double quotes)
                gap = self.src[pos : child.start_byte].decode("utf-8", "replace")
                parts.append(Word.lit(_unescape_double(gap) if quoted else _unescape_unquoted(gap)))
            if not child.is_named:
                pos = max(pos, child.end_byte)
                continue
            parts.append(self.word(child))
            pos = child.end_byte
        if pos < end:
            gap = self.src[pos:end].decode("utf-8", "replace")
            parts.append(Word.lit(_unescape_double(gap) if quoted else _unescape_unquoted(gap)))
        return _joined(parts)

    def expansion(self, node: Any) -> Word:
        raw = self.text(node)
        names = [c for c in node.named_children if c.type in ("variable_name", "special_variable_name")]
        # ``${X}`` only: ``${!X}`` (the variable X names), ``${#X}`` (a length), ``${!X*}`` carry their operator as a
        # bare token beside the one name, and none of them is X's value
        simple = node.type == "simple_expansion" or (
            len(names) == 1 and [self.text(c) for c in node.children] == ["${", self.text(names[0]), "}"]
        )
        if names and simple:
            name = self.text(names[0])
            if name == "HOME":
                return Word("~", True, "~", (), True)
            if name in self.vars and "IFS" not in self.vars and name not in _SHELL_SETS:
                value = self.vars[name]
                return Word(value, True, value, (), True)
        self.evaluated(node, names)
        if names and any(self.text(c) in ("=", ":=") for c in node.children if not c.is_named):
            self.forget([self.text(names[0])])  # ``${X:=/}`` assigns X where it was unset (or empty)
        before = len(self.out.commands)
        for c in node.named_children:
            if c.type not in ("variable_name", "special_variable_name"):
                self.walk(c)
        inner = tuple(c.name for c in self.out.commands[before:])
        return Word(raw, False, "", inner)

    def evaluated(self, node: Any, names: list[Any]) -> None:
        """What a ``${…}`` evaluates: a subscript (``${A[X]}``, not a ``-A`` table's key), an offset and a length
        (``${S:X:1}``) as arithmetic; ``${!X}`` uses X's value as a name (``a[$(…)]`` too); ``${X@P}`` expands X's value
        as a prompt, running its command substitutions."""
        ops = [self.text(c) for c in node.children if not c.is_named]
        for c in node.named_children:
            index = c.child_by_field_name("index") if c.type == "subscript" else None
            table = c.child_by_field_name("name") if c.type == "subscript" else None
            keyed = table is not None and self.text(table) in self.session.tables
            if index is not None and self.text(index) not in ("@", "*") and not keyed:
                self.arithmetic(self.text(index), f"the subscript of {self.text(node)[:40]!r}")
        if ":" in ops:
            rest = self.text(node)[self.text(node).index(":") + 1 : -1]
            self.arithmetic(rest, f"the offset of {self.text(node)[:40]!r}")
        named = [self.text(n) for n in names]
        prompt = "P" in ops and "@" in ops
        if named and ((ops[:2] == ["${", "!"] and not {"*", "@"} & set(ops[2:])) or prompt):
            why = self.held(named, set())
            if why:
                what = "a prompt" if prompt else "a name"
                self.out.hard("shell:dynamic-code", Verdict.ASK, f"{self.text(node)[:40]!r} reads {why} as {what}")

    def arithmetic(self, text: str, what: str) -> None:
        """Bash evaluates ``text`` as arithmetic. A name in it stands for its value, evaluated in turn, and an array
        subscript there runs the command substitution it holds: ``x='a[$(rm -rf ~)]'; echo $((x))`` removes the
        home directory, and so does ``$(( $(echo 'a[$(rm -rf ~)]') ))``. ASK unless no command's output is evaluated
        and every name holds a value known here with no expansion in it, or one the script only ever gave a plain
        literal or a number (:meth:`given`), or the environment's."""
        why = (
            "a command substitution"
            if re.search(_SUBSTITUTION, text)
            else self.held(re.findall(_ARITH_NAME, text), set())
        )
        if why:
            self.out.hard(
                "shell:dynamic-code", Verdict.ASK, f"{what} evaluates {why} as code (an array subscript runs commands)"
            )

    def held(self, names: Sequence[str], seen: set[str]) -> str | None:
        """Why a value one of ``names`` holds may run code when bash evaluates it, or None: a value known here with an
        expansion or a backquote in it (the names in any other value are evaluated too), or one set at run time."""
        for name in names:
            if name in seen:
                continue
            seen.add(name)
            value = self.vars.get(name) if name not in _SHELL_SETS else None
            if value is not None:
                if "$" in value or "`" in value:
                    return f"{name}={value[:60]!r}"
                found = self.held(re.findall(_ARITH_NAME, value), seen)
                if found:
                    return found
            elif self.session.unsafe is None or name in self.session.unsafe or name in _FROM_DATA_SETS:
                return f"{name} (set at run time)"
        return None

    def given(self, names: Sequence[str] | None, values: Sequence[Word] = ()) -> None:
        """``names`` (None: any) may hold one of ``values`` from now on, or (none given) a value known only at run
        time: marked :attr:`_Session.unsafe` unless each is a plain literal (no expansion: arithmetic cannot run it)."""
        inert = bool(values) and all(v.static and "$" not in v.text and "`" not in v.text for v in values)
        self.out.sets.update(["*"] if names is None else names)
        if names is None:
            self.session.unsafe = None
        elif self.session.unsafe is not None and not inert:
            self.session.unsafe.update(names)

    def forget(self, names: Sequence[str] | None, numbers: bool = False) -> None:
        """The variables ``names`` (None: every one) now have values known only at run time (``numbers``: arithmetic
        gave them, ``let`` or ``((X=…))``). ``IFS`` and ``CDPATH`` stay named, as any assignment of them leaves them:
        words are then not split as known, ``cd`` not placed."""
        self.given(names, [Word.lit("0")] if numbers else ())
        for n in self.vars.copy() if names is None else names:
            if n in ("IFS", "CDPATH"):
                self.vars[n] = ""
            else:
                self.vars.pop(n, None)
        if names is None:
            self.vars.update(IFS="", CDPATH="")

    # -- statements --------------------------------------------------------------------------

    def redirects_of(self, node: Any) -> list[Redirect]:
        """A redirection node's redirections: itself, and for a heredoc (:meth:`heredoc`) what its line goes on with."""
        if node.type == "heredoc_redirect":
            return self.heredoc(node)
        return [self.redirect(node)]

    def heredoc(self, node: Any) -> list[Redirect]:
        """A heredoc, and what the grammar nests in it from the rest of its line (``cat <<'EOF' > f``): more
        redirections, the command's arguments (in the heredoc's ``args``), and the commands after ``|``, ``&&`` or
        ``||``, kept in :attr:`after` to walk once the command is. Before, all of that was dropped: ``cat <<'EOF' >
        .tether/envelope.yaml`` and ``cat <<EOF && rm -rf /`` were a bare ``cat``. Anything else there asks."""
        first = self.redirect(node)
        arguments = node.children_by_field_name("argument")
        args = tuple(w for c in arguments for w in self.arguments(c))
        more: list[Redirect] = []
        op = ""
        for c in node.children:
            if not c.is_named:
                op = self.text(c)
            elif c.type.endswith("_redirect"):
                more += self.redirects_of(c)
            elif c.type in ("pipeline", "command", "list", "redirected_statement", "subshell", "compound_statement"):
                lead = c.children[0] if c.type == "pipeline" and c.children else None
                self.after.append((self.text(lead) if lead is not None and not lead.is_named else op, c))
            elif c.type not in ("heredoc_start", "heredoc_body", "heredoc_end") and c not in arguments:
                self.out.hard("shell:unparseable", Verdict.ASK, f"{c.type} on a heredoc's line is not judged")
        return [replace(first, args=args) if args else first, *more]

    def walk_after(self, mark: int) -> None:
        """The commands a heredoc's line goes on with (:meth:`heredoc`), now that the command they follow is walked:
        after ``|`` each part in a subshell, fed by a pipe; after ``&&`` or ``||`` in this shell."""
        pending, self.after[mark:] = self.after[mark:], []
        for op, node in pending:
            if op in ("|", "|&"):
                with self.subshell():
                    self.walk(node, True)
            else:
                start = self.cwd
                self.walk(node)
                self.cd_unsure = self.cd_unsure or self.cwd != start

    def redirect(self, node: Any) -> Redirect:
        ops = [self.text(c) for c in node.children if not c.is_named]
        op = "".join(ops) or ">"
        if node.type == "heredoc_redirect":
            body = next((c for c in node.named_children if c.type == "heredoc_body"), None)
            start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
            quoted = start is not None and self.text(start)[:1] in ("'", '"')
            dynamic = False
            if body is not None:
                before = len(self.out.commands)
                for c in body.named_children:
                    self.walk(c)
                dynamic = not quoted and (len(self.out.commands) > before or "$" in self.text(body))
            return Redirect("<<", None, self.text(body) if body is not None else "", dynamic)
        if node.type == "herestring_redirect":
            target = self.word(node.named_children[-1]) if node.named_children else Word.lit("")
            return Redirect("<<<", None, target.text if target.static else None, not target.static)
        dests = node.children_by_field_name("destination")
        dest = dests[0] if dests else None
        if dest is None:
            named = [c for c in node.named_children if c.type != "file_descriptor"]
            dest = named[-1] if named else None
        if dest is None:
            return Redirect(op, None)
        # a redirection takes one word; the parser reads the words after it as more (``rm 2>/dev/null -rf /``)
        args = tuple(w for c in dests[1:] for w in self.arguments(c))
        if op in (">&", "<&", ">&-", "<&-") and (dest.type == "number" or self.text(dest) == "-"):
            return Redirect(op, None, args=args)
        return Redirect(op, self.word(dest), args=args)

    def emit_redirects(self, reds: tuple[Redirect, ...]) -> None:
        """Redirections with no simple command of their own: of a compound command, a function, nothing at all."""
        if any(r.args for r in reds):  # bash: a syntax error, or (no command before) the words are the command
            words = " ".join(w.text for r in reds for w in r.args)
            why = f"words after a redirection that no command takes: {words!r}"
            self.out.hard("shell:unparseable", Verdict.ASK, why)
            reds = tuple(replace(r, args=()) for r in reds)
        if reds:
            self.out.commands.append(SimpleCommand((), reds, self.cwd, text="(redirection)"))

    def assignment(self, node: Any, persist: bool) -> tuple[str, Word]:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        name = self.text(name_node) if name_node is not None else ""
        value = self.word(value_node) if value_node is not None else Word.lit("")
        if name_node is not None and name_node.type == "subscript":  # ``A[X]=1``: X is evaluated, as in ``${A[X]}``
            self.evaluated(node, [])
        if name.split("[", 1)[0] in self.session.integers:  # declared -i: the value is arithmetic
            if value.static:
                self.arithmetic(value.text, f"{name}= (an integer)")
            else:
                self.out.hard(
                    "shell:dynamic-code", Verdict.ASK, f"{name}, an integer, is given a value known at run time"
                )
        if persist:  # a number, whatever an arithmetic expansion's value is: ``n=$((n-1))`` in a loop
            numeric = value_node is not None and value_node.type == "arithmetic_expansion"
            self.given([name.split("[", 1)[0]], [Word.lit("0") if numeric else value])
        if persist and "[" in name:  # ``X[0]=/``: ``$X`` is ``${X[0]}``, now another value
            self.forget([name.split("[", 1)[0]])
            return name, value
        if persist and name:
            self.env_assigned(name, value)
            if value.static:
                self.vars[name] = value.text
            else:
                self.vars.pop(name, None)
        return name, value

    def env_assigned(self, name: str, value: Word, env: dict[str, Word] | None = None) -> None:
        """Judge an assignment of a variable that can make programs run code (see :mod:`.envvars`).

        ``env`` is the environment of one command (``A=1 cmd``, ``env A=1 cmd``); without it the
        assignment holds for the rest of the string (``export A=1; cmd``).
        """
        found = envvars.kind(name)
        held = None if found is envvars.EnvKind.CODE else _protected_in(value.text)  # GIT_DIR=.git: asked below
        if held is not None:
            why = f"{name}= names {held!r}, in version control, tether's log or a hook directory, which programs write"
            self.out.hard("path:protected", Verdict.DENY, why)
        if found is envvars.EnvKind.CODE:
            self.out.hard("shell:env-code", Verdict.ASK, f"{name}= makes programs load code or configuration")
            if name.startswith("GIT_"):  # git's index, directory or work tree moved: the gate's rewrites read it
                (self.env if env is None else env)[name] = value
        elif found is envvars.EnvKind.COMMAND:
            self.out.hard("shell:env-code", Verdict.ASK, f"{name}= names a program that programs start")
            holder = SimpleCommand((Word.lit(name),), (), self.cwd, piped=True)
            if value.static:
                if value.text.strip():  # it is started with data on its standard input
                    self.recurse(": | " + envvars.command_text(name, value.text), holder, f"{name}=", process=True)
            else:
                self.dynamic_code(holder, f"{name}= (a command programs start)", [value])
        elif found is envvars.EnvKind.PATHS:
            (self.env if env is None else env)[name] = value

    def declaration(self, node: Any, piped: bool, redirects: tuple[Redirect, ...]) -> None:
        words: list[Word] = []
        flags = ""
        for c in node.children:
            if c.type == "variable_name" and envvars.kind(self.text(c)) is not envvars.EnvKind.PLAIN:
                self.out.hard("shell:env-code", Verdict.ASK, f"{self.text(c)} is exported with a value set elsewhere")
            if c.type == "word" and re.fullmatch(r"-[a-zA-Z]+", self.text(c)):
                flags += self.text(c)[1:]
            named = c.child_by_field_name("name") if c.type == "variable_assignment" else c
            if named is not None and named.type == "variable_name" and "i" in flags:  # ``declare -i N``
                self.session.integers.add(self.text(named))
            if named is not None and named.type == "variable_name" and "A" in flags:  # ``local -A T=…``
                self.session.tables.add(self.text(named))
            if c.type in ("string", "raw_string", "concatenation") and re.match(_QUOTED_ARRAY, self.text(c)):
                what = f"{words[0].text if words else 'declare'} reads {self.text(c)[:40]!r}"
                self.out.hard("shell:dynamic-code", Verdict.ASK, f"{what}, a quoted array assignment, as shell code")
            if c.type == "variable_assignment" and "n" in flags:  # ``declare -n R='a[$(…)]'``: each $R runs it
                target = c.child_by_field_name("value")
                self.arithmetic(self.text(target) if target is not None else "", f"the name reference {self.text(c)!r}")
            if c.type == "variable_assignment":
                name, value = self.assignment(c, persist=True)
                words.append(Word(f"{name}={value.text}", value.static, f"{name}={value.prefix}", value.inner))
            elif c.is_named:
                words.append(self.word(c))
            else:
                words.append(Word.lit(self.text(c)))
        if any(re.fullmatch(r"[-+][a-zA-Z]*[ni][a-zA-Z]*", w.text) for w in words[1:] if w.static):
            self.forget(None)  # ``declare -n X=HOME``: X is another name for HOME; ``-i``: assigning X evaluates code
        if words and (words[0].text == "export" or any(re.fullmatch(r"-[a-zA-Z]*x[a-zA-Z]*", w.text) for w in words)):
            named = (c.child_by_field_name("name") if c.type == "variable_assignment" else c for c in node.children)
            self.exported |= {self.text(n) for n in named if n is not None and n.type == "variable_name"}
        words += [w for r in redirects for w in r.args]  # ``export 2>/dev/null X=1 Y``: Y is declared too
        redirects = tuple(replace(r, args=()) if r.args else r for r in redirects)
        self.emit(SimpleCommand(tuple(words), redirects, self.cwd, piped, text=self.text(node)))

    def for_loop(self, node: Any) -> None:
        var = node.child_by_field_name("variable")
        values: list[Word] = []
        for v in node.children_by_field_name("value"):
            b = braces.has_syntax(self.text(v)) and v.type in _BRACE_WORDS
            values += self.brace_words(v) if b else [self.word(v)]
        if var is not None:
            name = self.text(var)
            self.given([name], values)
            # one literal value: the variable is known; several: unknown (judged as computed)
            if len(values) == 1 and values[0].static:
                self.vars[name] = values[0].text
            else:
                self.vars.pop(name, None)
        body = node.child_by_field_name("body")
        if body is not None:
            self.walk(body)

    def function(self, node: Any) -> None:
        """Remember the body; it is judged where the function is called, in the caller's directory."""
        name_node = node.child_by_field_name("name")
        name = self.text(name_node) if name_node is not None else ""
        body = node.child_by_field_name("body")
        self.functions[name] = self.text(body) if body is not None else ""
        self.out.defines.add(name)
        if name == "command_not_found_handle":  # bash runs it for any command it does not find: judged as if called
            self.call(SimpleCommand((Word.lit(name),), (), self.cwd, piped=True, text=name), name)  # in a subshell
        mark = len(self.after)
        for r in node.children_by_field_name("redirect"):
            self.emit_redirects(tuple(self.redirects_of(r)))
        self.walk_after(mark)

    def call(self, cmd: SimpleCommand, name: str) -> None:
        body = self.functions[name]
        if body is None:  # a function on some paths only, or of other bodies: the program and every body may run
            self.emit(cmd)
            why = f"whether {name!r} runs a shell function here, and which, depends on the path the script took"
            self.out.hard("shell:dynamic-code", Verdict.ASK, why)
            return
        self.emit_redirects(cmd.redirects)  # the call runs the body (judged below), not a program
        calling = self.session.calling
        running = (name, body)  # a body that redefines its own name then calls it runs the new body: no recursion
        if running in calling:
            if cmd.piped or "&" in body:
                self.out.hard("coding:deny-fork-bomb", Verdict.DENY, f"function {name!r} spawns itself (fork bomb)")
            else:
                self.out.hard("shell:recursive-function", Verdict.ASK, f"function {name!r} calls itself")
            return
        calling.add(running)
        try:
            child = self.recurse(body, cmd, f"function {name}")
        finally:
            calling.discard(running)
        if child is not None and not cmd.piped:  # a body runs in this shell: its cd and assignments stay
            self.adopt(child, exact=False)

    def adopt(self, child: _Walker, exact: bool) -> None:
        """What code run in this shell leaves: its directory, and its variables — as they are after ``eval``; after a
        function's body, each it changed is unknown (``local`` ones end with the call, and the reading keeps no
        scopes)."""
        self.cwd, self.oldpwd, self.stack = child.cwd, child.oldpwd, child.stack
        self.cd_unsure = self.cd_unsure or child.cd_unsure
        self.exported |= child.exported
        if exact:
            self.vars = child.vars
            return
        changed = {n for n in set(self.vars) | set(child.vars) if self.vars.get(n) != child.vars.get(n)}
        self.forget([n for n in changed if not n.isdigit()])

    def command(self, node: Any, piped: bool, redirects: tuple[Redirect, ...]) -> None:
        words: list[Word] = []
        reds = list(redirects)
        mark = len(self.after)
        env = dict(self.env)
        prefix: dict[str, Word] = {}
        for c in node.named_children:
            if c.type == "variable_assignment":
                name, value = self.assignment(c, persist=False)
                self.env_assigned(name, value, env=env)
                prefix[name] = value
            elif c.type.endswith("_redirect"):
                for r in self.redirects_of(c):
                    words += r.args
                    reds.append(replace(r, args=()) if r.args else r)
            elif c.type == "comment":
                continue
            else:
                words += self.arguments(c)
        for i, r in enumerate(reds[: len(redirects)]):  # the statement's, after the command's words in its text
            if r.args:
                words += r.args
                reds[i] = replace(r, args=())
        cmd = SimpleCommand(tuple(words), tuple(reds), self.cwd, piped, text=self.text(node), env=tuple(env.items()))
        if prefix:
            self.prefixed(cmd, prefix)
        else:
            self.expand(cmd)
        self.walk_after(mark)

    def arguments(self, node: Any) -> list[Word]:
        """The words one argument gives the command: braces expanded, an unquoted expansion of a known value split."""
        if braces.has_syntax(self.text(node)) and node.type in _BRACE_WORDS:
            return self.brace_words(node)
        w = self.word(node)
        split = w.text.split()
        if w.expanded and w.static and node.type in ("simple_expansion", "expansion") and split != [w.text]:
            return [Word(x, True, x, (), True) for x in split]  # unquoted: split into words
        return [w]

    def prefixed(self, cmd: SimpleCommand, prefix: dict[str, Word]) -> None:
        """``X=/ eval 'rm -rf $X'``, ``X=/ sh -c …``, ``X=/ f``: what the command runs sees the values before it
        (its own words were expanded with the old ones). After a special builtin (POSIX shells keep the assignment), a
        function or no command at all, each is unknown; after any other command, as it was."""
        before = {n: self.vars.get(n) for n in prefix}
        for n, v in prefix.items():
            self.given([n], [v])
        exported = set(self.exported)
        self.exported |= set(prefix)  # given to the command's environment
        for n, v in prefix.items():
            if v.static:
                self.vars[n] = v.text
            else:
                self.forget([n])
        self.expand(cmd)
        self.exported = exported | (self.exported - set(prefix))
        head = command_name(cmd.argv[0].text) if cmd.argv else ""
        if not head or head in SPECIAL_BUILTINS or head in self.functions:
            self.forget(list(prefix))
            return
        for n, old in before.items():
            if old is None:
                self.vars.pop(n, None)
            else:
                self.vars[n] = old

    # -- seeing through ----------------------------------------------------------------------

    def emit(self, cmd: SimpleCommand) -> None:
        self.out.commands.append(cmd)

    def recurse(
        self, code: str, cmd: SimpleCommand, origin: str, positional: Sequence[Word] = (), process: bool = False
    ) -> _Walker | None:
        """Walk ``code`` as run by ``cmd``; the child walker, whose state after it :meth:`eval_` keeps. A shell's
        ``-c`` code is given the words after it as ``$0``, ``$1``, … (``positional``: :func:`_positional`). A new
        ``process`` (``sh -c``) knows only the variables exported to it: ``X=safe; sh -c 'rm -rf $X/'`` is
        ``rm -rf /``."""
        if self.depth >= MAX_DEPTH:
            self.out.hard("shell:too-deep", Verdict.ASK, "shell nested too deeply to analyse")
            return None
        given = {k: v for k, v in self.vars.items() if not process or k in self.exported or k == "CDPATH"}
        known = {k: v for k, v in given.items() if not k.isdigit()} | _positional(code, positional)
        functions = None if process else self.functions  # a new shell has none (but exported ones: judged unshadowed)
        child = _Walker(
            code.encode("utf-8", "surrogateescape"), self.session, cmd.cwd, self.depth + 1, known, functions
        )
        child.env, child.exported = dict(cmd.env), set(self.exported)
        before = len(self.out.commands)
        child.run()
        for i in range(before, len(self.out.commands)):
            c = self.out.commands[i]
            self.out.commands[i] = replace(
                c,
                origin=c.origin or origin,
                wrappers=cmd.wrappers + c.wrappers,
                piped=c.piped or (cmd.piped and c is self.out.commands[before]),
            )
        return child

    def dynamic_code(self, cmd: SimpleCommand, what: str, words: list[Word]) -> None:
        inner = {n for w in words for n in w.inner}
        if cmd.dynamic_tail or cmd.piped or any(w.expanded for w in words):
            inner |= self.out.names  # the code arrives through a pipe or variable: look at what produced it
        if inner & (FETCHERS | DECODERS):
            self.out.hard("shell:remote-code", Verdict.DENY, f"{what} runs code fetched or decoded at run time")
        else:
            self.out.hard("shell:dynamic-code", Verdict.ASK, f"{what} runs code only known at run time")

    def expand(self, cmd: SimpleCommand) -> None:
        """Judge one simple command: a program, or something that runs other commands (a wrapper,
        ``eval``, ``xargs``, an interpreter, a shell function …), which are expanded in turn."""
        if not cmd.argv:
            self.emit_redirects(cmd.redirects)
            return
        checked = self.command_word(cmd)
        if checked is None:
            return
        cmd = checked
        name = command_name(cmd.argv[0].text)
        args = list(cmd.argv[1:])
        if name == "set" and any(t == "errexit" or re.fullmatch(r"-[a-zA-Z]*e[a-zA-Z]*", t) for t in cmd.words[1:]):
            self.errexit = True
        if name == "shopt" and not {"-u", "-p", "-q"} & set(cmd.words[1:]) and not all(w.static for w in args[1:]):
            self.vars["CDPATH"] = ""  # an option known only at run time: cdable_vars may be among them
        elif name == "shopt" and "cdable_vars" in cmd.words[1:] and "-u" not in cmd.words[1:]:
            self.vars["CDPATH"] = ""  # cd NAME goes to $NAME when NAME is no directory: as unknown as CDPATH
        if name in SETS_VARIABLES:
            self.sets_variables(name, args)
        if name in FROM_DATA or name == "unset":
            self.forget(None if any(not w.static for w in args) else _names(args), numbers=name == "let")
        if name in self.functions and all(w in _SHELL_WRAPPERS for w in cmd.wrappers):
            self.call(cmd, name)  # bash finds a function before any builtin (cd, eval, export …) or program
            return
        handler = _EXPANDERS.get(name)
        if handler is not None and handler(self, cmd, name, args):
            return
        if interp.is_interpreter(name):
            self.interpreter(cmd, name, args)
        else:
            self.emit(cmd)

    def command_word(self, cmd: SimpleCommand) -> SimpleCommand | None:
        """A computed command word (``$X args``) is never trusted; unknown altogether, nothing is expanded."""
        head = cmd.argv[0]
        if head.static and not head.expanded:
            return cmd
        self.out.hard("shell:computed-command", Verdict.ASK, f"the command word {head.text!r} is computed")
        cmd = replace(cmd, computed=True)
        if set(head.inner) & (FETCHERS | DECODERS):
            self.out.hard("shell:remote-code", Verdict.DENY, "the command word comes from fetched/decoded text")
        if not head.static:
            self.emit(cmd)
            return None
        return cmd

    # Each expander below handles one program (or family) that runs other commands, and returns
    # whether it did; one that returns False leaves the command to be judged as a plain program.

    def eval_(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        self.emit(cmd)
        if all(w.static for w in args):
            child = self.recurse(" ".join(w.text for w in args), cmd, "eval")
            if child is not None and not cmd.piped:  # eval runs in this shell: its cd and assignments stay
                self.adopt(child, exact=True)
        else:
            self.dynamic_code(cmd, "eval", args)
        return True

    def trap(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """``trap CODE SIGNAL…`` (or ``trap -- CODE …``): the code runs when the signal comes (EXIT: at the end)."""
        ended = bool(args) and args[0].static and args[0].text == "--"
        if ended:
            args = args[1:]
        if not args or (args[0].static and (args[0].text == "-" or (args[0].text.startswith("-") and not ended))):
            return False  # ``trap -p``, ``trap -l``, ``trap - INT`` (reset): nothing runs
        self.emit(cmd)
        if not args[0].static:
            self.dynamic_code(cmd, "trap", args[:1])
            return True
        self.recurse(args[0].text, cmd, "trap")
        if any(w.text not in ("EXIT", "SIGEXIT", "0") for w in args[1:]) or len(args) < 2:
            self.forget(_names(args[:1]))  # ``trap 'X=/' DEBUG`` runs before every command: X is any value
        return True

    def alias(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        self.emit(cmd)
        for w in args:
            if "=" in w.text:
                self.out.defines.add(w.text.split("=", 1)[0])
                self.recurse(w.text.split("=", 1)[1], cmd, "alias")
        return True

    def watch(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        rest = _strip_options(args, WRAPPER_OPTIONS["watch"], 0)
        self.emit(cmd)
        if rest and all(w.static for w in rest):
            self.recurse(" ".join(w.text for w in rest), cmd, "watch", process=True)
        elif rest:
            self.dynamic_code(cmd, "watch", rest)
        return True

    def cd(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        self.change_dir(name, args)
        self.emit(cmd)
        return True

    def runner(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """``uv run CMD``: the runner is judged, and so is CMD."""
        if not args or args[0].text != RUNNERS[name]:
            return False
        self.emit(cmd)
        rest = _strip_options(args[1:], RUNNER_OPTIONS.made(), 0)
        if rest:
            self.expand(replace(cmd, argv=tuple(rest), wrappers=(*cmd.wrappers, name)))
        return True

    def source(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        self.emit(cmd)
        if not args or not args[0].static:
            self.dynamic_code(cmd, name, args)
        return True

    def code_string(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """``script -c STRING``, ``su -c STRING``, ``flock F -c STRING``: the string is a command line."""
        found = _command_string(args)
        if found is None:
            if name != "su":
                return False
            self.emit(cmd)  # su without -c starts a login shell: judged as the program su
            return True
        self.emit(cmd)
        if found[0] is not None:
            inner = cmd if name == "script" else replace(cmd, wrappers=(*cmd.wrappers, name))
            self.code_word(inner, found[0], f"{name} -c")
        return True

    def sets_variables(self, name: str, args: list[Word]) -> None:
        """``read PAGER``, ``printf -v LD_PRELOAD …``: variables set from data; ``let 'a[$(id)]'``: code."""
        if name == "printf" and not any(w.text == "-v" for w in args):
            return  # printf only prints; with -v it assigns (and evaluates an array subscript)
        for w in args:
            if w.static and envvars.kind(w.text.split("=", 1)[0]) is not envvars.EnvKind.PLAIN:
                self.out.hard("shell:env-code", Verdict.ASK, f"{name} sets {w.text.split('=', 1)[0]} at run time")
            if w.static and ("$(" in w.text or "`" in w.text):
                self.out.hard("shell:dynamic-code", Verdict.ASK, f"{name} evaluates {w.text!r}, which runs code")
            elif name == "let" and w.static:
                self.arithmetic(w.text, "let")
            elif name == "let":
                self.out.hard("shell:dynamic-code", Verdict.ASK, "let evaluates a word known only at run time")

    def git_code(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """``git rebase --exec CMD``, ``git bisect run CMD …``: git runs these; they are judged too."""
        self.emit(cmd)
        texts = [w.text for w in args]
        for i, t in enumerate(texts):
            if t in ("--exec", "-x") and i + 1 < len(args):
                self.code_word(cmd, args[i + 1], f"git {t}")
            elif t.startswith("--exec="):
                self.code_word(cmd, Word.lit(t[7:]) if args[i].static else Word(t, False), "git --exec")
            elif t == "run" and i > 0 and texts[i - 1] == "bisect" and i + 1 < len(args):
                self.expand(replace(cmd, argv=tuple(args[i + 1 :]), wrappers=(*cmd.wrappers, "git bisect run")))
        return True

    def code_word(self, cmd: SimpleCommand, w: Word, what: str, positional: Sequence[Word] = ()) -> None:
        if w.static:
            self.recurse(w.text, cmd, what, positional, process=True)
        else:
            self.dynamic_code(cmd, what, [w])

    def unwrap(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """A wrapper (``sudo``, ``timeout 5``, ``env A=1``) runs the rest of its line: strip its options, expand it."""
        if name == "command" and args and args[0].text in ("-v", "-V"):
            self.emit(cmd)  # a lookup, runs nothing
            return True
        if name == "flock" and self.code_string(cmd, name, args):
            return True
        if name == "env":
            found = self.env_prefix(cmd, args)
            if found is None:
                return True
            cmd, rest = found
            if not rest:
                self.emit(replace(cmd, argv=(Word.lit("env"),)))  # prints the environment
                return True
        elif name in ("then", "do", "!"):
            rest = args
        elif name == "bwrap":
            found_rest = self.bwrap_command(args)
            if found_rest is None:
                self.emit(cmd)
                return True
            rest = found_rest
        else:
            rest = _strip_options(args, WRAPPER_OPTIONS.get(name, _NO_OPTIONS), WRAPPER_POSITIONALS.get(name, 0))
        if not rest:
            self.emit(cmd)
            return True
        self.expand(replace(cmd, argv=tuple(rest), wrappers=(*cmd.wrappers, name)))
        return True

    def bwrap_command(self, args: list[Word]) -> list[Word] | None:
        """``bwrap --ro-bind / / --chdir /w CMD``: the command after bubblewrap's options, each of which takes
        a fixed number of words; None (and an ASK) when an option it does not know hides where CMD starts."""
        i = 0
        while i < len(args):
            w = args[i]
            if w.static and w.text == "--":
                return args[i + 1 :]
            if w.static and not w.text.startswith("-"):
                return args[i:]
            if not w.static or w.text not in BWRAP_ARITY:
                self.out.hard("shell:unknown-wrapper-option", Verdict.ASK, f"bwrap option {w.text!r} is not known")
                return None
            i += 1 + BWRAP_ARITY[w.text]
        return []

    def parallel(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        """GNU ``parallel TEMPLATE ::: ARGS``: a shell runs TEMPLATE once per argument, the argument put where a
        replacement string (``{}``, ``{.}``, ``{=perl=}`` …) stands or appended; without a TEMPLATE each argument
        is itself a command line. Arguments are data, so they are judged as a value known only at run time."""
        found = programs.parse(replace(PARALLEL.made(), subcommands={}), args)
        rest = list(found.operands)
        self.emit(replace(cmd, argv=cmd.argv[: len(cmd.argv) - len(rest)]))
        cut = next((i for i, w in enumerate(rest) if w.static and w.text in PARALLEL_SOURCES), len(rest))
        template, sources = rest[:cut], rest[cut:]
        inner = replace(cmd, wrappers=(*cmd.wrappers, name), piped=not sources and cmd.piped)
        if template and all(w.static for w in template):
            replaced = [value for option, value in found.options if option == "-I" and value is not None]
            code = _parallel_code(" ".join(w.text for w in template), replaced)
            self.recurse(code, inner, "parallel", process=True)
        elif template:
            self.dynamic_code(inner, "parallel", template)
        elif sources and sources[0].text == ":::" and all(w.static for w in sources):
            for w in sources[1:]:
                if w.text not in PARALLEL_SOURCES:
                    self.recurse(w.text, inner, "parallel", process=True)
        else:
            self.dynamic_code(inner, "parallel", sources)  # command lines read from a file or stdin
        return True

    def env_prefix(self, cmd: SimpleCommand, args: list[Word]) -> tuple[SimpleCommand, list[Word]] | None:
        """``env [-C DIR] [-u VAR] [A=1 …] [-S STRING] CMD …``: the command as env starts it, and its argv
        (empty: env prints the environment); None when env runs a string only known at run time."""
        found = programs.parse(replace(WRAPPER_OPTIONS["env"], subcommands={}), args)
        rest = list(found.operands)
        for option, value in found.options:
            if option in ("-C", "--chdir") and value is not None:
                cmd = replace(cmd, cwd=self.directory(cmd.cwd, value))
            elif option in ("-u", "--unset", "-i", "--ignore-environment"):  # what it starts has not that variable
                self.forget(
                    [value.text] if value is not None and value.static and option in ("-u", "--unset") else None
                )
            elif option in ("-S", "--split-string") and value is not None:
                if not value.static:
                    self.dynamic_code(cmd, "env -S", [value])
                    self.emit(cmd)
                    return None
                return cmd, self.split_string(value.text, rest)
        while rest and (rest[0].text == "-" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", rest[0].text)):
            cmd = cmd if rest[0].text == "-" else self.env_assign(cmd, rest[0])
            rest = rest[1:]
        return cmd, rest

    def env_assign(self, cmd: SimpleCommand, w: Word) -> SimpleCommand:
        env = dict(cmd.env)
        var, value = _split_assignment(w)
        self.forget([var])  # what env starts has it with this value, not the one this shell knows
        self.env_assigned(var, value, env=env)
        return replace(cmd, env=tuple(env.items()))

    def split_string(self, text: str, tail: list[Word]) -> list[Word]:
        """``env -S 'CMD ARGS'``: the string split into words as env splits it (shell-like quoting)."""
        import shlex  # here: only env -S needs it

        try:
            return [Word.lit(x) for x in shlex.split(text)] + tail
        except ValueError:
            self.out.hard("shell:unparseable", Verdict.ASK, "env -S string does not split")
            return []

    def directory(self, base: str | None, w: Word) -> str | None:
        """Where ``cd WORD`` from ``base`` goes (logically, as the shell does); None when unknown, as a glob is: the
        shell expands it (``cd ?tether`` is ``cd .tether`` where dotglob is set; until 2026-12-04 it was a folder
        ``?tether``, and ``cd ?tether && rm tether.db`` was allowed)."""
        if not w.static or any(c in w.text for c in "*?["):
            return None
        head = shell_tilde(w.text)
        if head is not None:  # ~- is where the last cd left (cd .git; cd ..; cd ~-), ~+ here, ~N the stack's
            start = base if head == "~+" else self.oldpwd if head == "~-" else None
            return None if start is None else places.place(os.path.normpath(f"{start}{w.text[len(head) :]}"))
        text = os.path.expanduser(w.text) if w.text.startswith("~") else w.text
        if text.startswith("/"):
            return places.place(os.path.normpath(text))
        if base is None or "CDPATH" in self.vars:
            return None
        return places.place(os.path.normpath(f"{base}/{text}"))

    def change_dir(self, name: str, args: list[Word]) -> None:
        """``cd``, ``pushd``, ``popd``: move the tracked directory (and its stack)."""
        words = [w for w in args if w.text != "--"]
        targets = [w for w in words if not w.text.startswith(("-", "+")) or w.text == "-"]
        rotates = any(w.text[:1] in "+-" and w.text[1:].isdigit() for w in words)
        old = self.cwd
        new: str | None
        if rotates:
            new, self.stack = None, [None] * len(self.stack)
        elif name == "popd":
            new = self.stack.pop() if self.stack else None
        elif name == "pushd":
            new = self.directory(old, targets[0]) if targets else self.stack.pop() if self.stack else None
            self.stack.append(old)
        elif not targets:
            new = places.place(os.path.expanduser("~"))
        elif targets[0].text == "-":
            new = self.oldpwd
        else:
            new = self.directory(old, targets[0])
        if new is None:
            self.out.notes.append(f"{name} {' '.join(w.text for w in args)}: directory unknown")
        self.oldpwd = old
        self.cd_unsure = self.cd_unsure or (new != old and not self.errexit)
        self.cwd = new

    def interpreter(self, cmd: SimpleCommand, name: str, args: list[Word]) -> None:
        prog = interp.program(name, [w.text for w in args])
        self.emit(cmd)
        if prog.kind == "stdin":
            body = cmd.stdin_body
            reads_file = any(r.reads for r in cmd.redirects)
            if body is not None:
                if name in SHELLS:
                    if body.body is not None and not body.body_dynamic:
                        self.recurse(body.body, cmd, f"{name} <<", process=True)
                    else:
                        self.out.hard(
                            "shell:dynamic-code", Verdict.ASK, f"{name} runs a here-document built at run time"
                        )
            elif cmd.piped:
                self.out.hard(
                    "shell:pipe-to-interpreter",
                    Verdict.DENY,
                    f"output piped into the interpreter {name!r} runs as code",
                )
            elif not reads_file and cmd.dynamic_tail:
                self.dynamic_code(cmd, f"xargs {name}", list(args))
        elif prog.kind == "inline" and name in SHELLS:
            self.code_word(cmd, args[prog.index], f"{name} -c", args[prog.index + 1 :])
        elif prog.kind == "inline" and not args[prog.index].static:
            self.dynamic_code(cmd, f"{name} inline code", [args[prog.index]])
        elif prog.kind == "script":
            script = args[prog.index]
            if not script.static and script.inner:
                self.dynamic_code(cmd, f"{name} script from a substitution", [script])
            elif script.text in ("/dev/stdin", "/proc/self/fd/0", "/dev/fd/0") and cmd.piped:
                self.out.hard(
                    "shell:pipe-to-interpreter",
                    Verdict.DENY,
                    f"output piped into the interpreter {name!r} runs as code",
                )

    def xargs(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        values = frozenset(
            {"-I", "-n", "-P", "-L", "-d", "-E", "-s", "-a", "--max-args", "--max-procs", "--delimiter", "--arg-file"}
        )
        replace_str = None
        texts = [w.text for w in args]
        for i, t in enumerate(texts):
            if t == "-I" and i + 1 < len(texts):
                replace_str = texts[i + 1]
            elif t.startswith("-I") and len(t) > 2:
                replace_str = t[2:]
            elif t.startswith("--replace"):
                replace_str = t.split("=", 1)[1] if "=" in t else "{}"
            elif t == "-i" or (t.startswith("-i") and len(t) > 2):
                replace_str = t[2:] or "{}"
            if t in ("--",) or not t.startswith("-"):
                if i > 0 and texts[i - 1] in values:
                    continue
                break
        rest = _strip_options(args, SPECS["xargs"], 0)
        self.emit(replace(cmd, argv=cmd.argv[: len(cmd.argv) - len(rest)]))
        if not rest:
            rest = [Word.lit("echo")]
        # with -I the input lands where the replace string is; otherwise it is appended
        tail = [] if replace_str else [Word("{xargs input}", False, "")]
        rest = [_dynamic_at(w, replace_str) if replace_str else w for w in rest] + tail
        inner = replace(
            cmd, argv=tuple(rest), wrappers=(*cmd.wrappers, "xargs"), piped=False, dynamic_tail=True, origin="xargs"
        )
        self.expand(inner)
        return True

    def find(self, cmd: SimpleCommand, name: str, args: list[Word]) -> bool:
        roots = []
        for w in args:
            if w.text.startswith("-") or w.text in ("(", "!", ")"):
                break
            roots.append(w)
        root = roots[0] if roots else Word.lit(".")
        self.emit(cmd)
        i = 0
        while i < len(args):
            a = args[i].text
            if a in ("-exec", "-execdir", "-ok", "-okdir"):
                j = i + 1
                inner: list[Word] = []
                while j < len(args) and args[j].text not in (";", "+"):
                    inner.append(args[j])
                    j += 1
                found = Word(f"{root.text.rstrip('/')}/{{}}", False, root.prefix.rstrip("/") + "/")
                inner = [found if w.text == "{}" else _dynamic_at(w, "{}", root) for w in inner]
                if inner:
                    self.expand(replace(cmd, argv=tuple(inner), wrappers=(*cmd.wrappers, "find"), origin=f"find {a}"))
                i = j + 1
                continue
            i += 1
        return True


_Expander = Callable[[_Walker, SimpleCommand, str, list[Word]], bool]
#: Programs that run other commands, and the walker method that finds those commands. Wrappers come
#: last so that they win: ``exec``, ``command``, ``sudo`` … are always seen through.
_EXPANDERS: dict[str, _Expander] = {
    "eval": _Walker.eval_,
    "trap": _Walker.trap,
    "alias": _Walker.alias,
    "watch": _Walker.watch,
    **{name: _Walker.cd for name in ("cd", "pushd", "popd")},
    "git": _Walker.git_code,
    **{name: _Walker.runner for name in RUNNERS},
    "xargs": _Walker.xargs,
    "parallel": _Walker.parallel,
    "find": _Walker.find,
    **{name: _Walker.source for name in ("source", ".")},
    **{name: _Walker.code_string for name in ("su", "script")},
    **{name: _Walker.unwrap for name in WRAPPERS},
}


@cache
def _rebinds() -> re.Pattern[str]:
    """What in a shell's code gives ``$1``… other values than the words after its ``-c`` code: ``shift``, ``set --``,
    ``getopts``, a function's own arguments (``f() {…}``, ``function f``), a sourced file's. Where one of these
    appears anywhere in the text, none is bound (each then stays unknown, as before). Compiled at the first
    ``sh -c CODE ARG``, not at every cold hook call's import."""
    return re.compile(r"\bshift\b|\bset\b|\bgetopts\b|\bfunction\b|\(\s*\)|\bsource\b|(?:^|[;&|({\s])\.\s")


def _positional(code: str, words: Sequence[Word]) -> dict[str, str]:
    """``$0``, ``$1``, … of ``sh -c CODE A0 A1 …``: each word given and known, unless ``CODE`` may rebind them
    (:func:`_rebinds`, in the code as the shell reads its words: quotes and backslashes taken out, ANSI-C and locale
    strings not worked out, so none is bound). ``sh -c 'rm -rf $0' /`` is then the ``rm -rf /`` it runs, not a delete
    of a target known only at run time; an unbound ``$N`` (a word not given, or computed, or after one computed or a
    glob: ``sh -c 'rm -rf $2' _ $X safe`` is ``rm -rf /`` when X is ``a /``) stays unknown."""
    if not words or "$'" in code or '$"' in code:  # ``sh$'\x69'ft`` is shift: a spelling not worked out binds none
        return {}
    # ``s\hift``, ``sh""ift``, ``s'e't``, a line continued inside the name: the word the shell reads
    bare = re.sub(r"[\\'\"]", "", code.replace("\\\n", ""))
    if _rebinds().search(bare):
        return {}
    bound: dict[str, str] = {}
    for i, w in enumerate(words[:10]):
        if not w.static or any(c in w.text for c in "*?["):
            break  # ``$X``, ``$(cmd)``, a glob may be no word or several: every later one's place is unknown
        bound[str(i)] = w.text
    return bound


def _command_string(args: list[Word]) -> tuple[Word | None] | None:
    """The STRING of ``-c STRING`` in every spelling getopt accepts: ``-qc S``, ``-cS``, ``--command S``,
    ``--command=S``, ``--comm=S`` (and su's ``--session-command``). ``(None,)`` when the option has no
    value; None when it is absent."""
    for i, w in enumerate(args):
        t = w.text
        after = (args[i + 1] if i + 1 < len(args) else None,)
        if t == "--":
            return None
        if len(t) > 2 and any(o.startswith(t.split("=", 1)[0]) for o in ("--command", "--session-command")):
            return (_slice(w, t.index("=") + 1),) if "=" in t else after
        if t.startswith("-") and not t.startswith("--") and "c" in t[1:]:
            start = t.index("c", 1) + 1
            return (_slice(w, start),) if start < len(t) else after
    return None


def _in_double_brackets(node: Any) -> bool:
    """Whether ``node`` is inside ``[[ … ]]``, where ``-eq`` and the like evaluate both sides as arithmetic (``[``, the
    test builtin, reads them as integers)."""
    while node is not None and node.type != "test_command":
        node = node.parent
    return node is not None and bool(node.children) and node.children[0].type == "[["


def _names(args: list[Word]) -> list[str]:
    """Every name a builtin's words may assign (``read -r X Y``, ``printf -v X``, ``let 'X=Y+1'``): each word's
    identifiers, options' letters and a format's words among them — more than it assigns, never fewer."""
    return [n for w in args for n in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", w.text)]


def _slice(w: Word, start: int) -> Word:
    if w.static:
        return Word.lit(w.text[start:])
    return Word(w.text[start:], False, w.prefix[start:], w.inner, w.expanded)


def _split_assignment(w: Word) -> tuple[str, Word]:
    name, _, value = w.text.partition("=")
    if w.static:
        return name, Word(value, True, value, w.inner, w.expanded)
    return name, Word(value, False, w.prefix.partition("=")[2], w.inner, w.expanded)


def _dynamic_at(w: Word, token: str, root: Word | None = None) -> Word:
    if token not in w.text:
        return w
    pre = w.text.split(token, 1)[0]
    if root is not None:
        return Word(w.text.replace(token, root.text.rstrip("/") + "/{}"), False, pre + root.prefix)
    return Word(w.text, False, pre if w.static else w.prefix)


_NO_OPTIONS = Spec()


@cache
def _parallel_replacement() -> re.Pattern[str]:
    """parallel's replacement strings (compiled at first use: only parallel's template is read against it)."""
    return re.compile(r"\{=.*?=\}|\{[^{}\s]*\}")


def _parallel_code(template: str, replace_strings: list[Word]) -> str:
    """parallel's TEMPLATE as the code its shell runs, each argument spelled as a variable known only then."""
    arg = '"$PARALLEL_ARGUMENT"'
    code = _parallel_replacement().sub(arg, template)
    for r in replace_strings:
        code = code.replace(r.text, arg) if r.static and r.text else code
    return code if arg in code else f"{code} {arg}"


def _strip_options(args: list[Word], options: Spec, positionals: int) -> list[Word]:
    """Drop a wrapper's own options, read through its table in every spelling (``--sig KILL``, ``-uroot``,
    ``-0I{}``), and ``positionals`` words such as timeout's DURATION: what is left is the wrapped command."""
    found = programs.parse(replace(options, subcommands={}), args)  # options end at the first operand
    return list(found.operands[positionals:])


def left_for(script: Analysis, others: Sequence[SimpleCommand]) -> list[str]:
    """What a sourced ``script`` leaves the shell that the line's ``others`` may meet: a variable or function they
    name, any variable (``*``), ``IFS`` (how their words split), one that makes programs load code or look elsewhere."""
    named = {n for c in others for n in re.findall(_ARITH_NAME, c.text)}
    return sorted(
        n
        for n in script.sets | script.defines
        if n in named or n in ("*", "IFS") or envvars.kind(n) is not envvars.EnvKind.PLAIN
    )


def analyse(command: str, cwd: str | os.PathLike[str] | None = None) -> Analysis:
    """Flatten ``command`` into the simple commands it runs, plus structural findings (``cwd``: where it starts,
    kept as :func:`tether.places.place` spells it)."""
    out = Analysis()
    if "\x00" in command:
        out.hard("shell:unparseable", Verdict.ASK, "the command contains a NUL byte")
    if len(command) > MAX_INPUT:
        out.hard("shell:too-complex", Verdict.ASK, f"the command is longer than {MAX_INPUT} characters")
        return out
    start = None if cwd is None else places.place(os.fspath(cwd))
    _Walker(command.encode("utf-8", "surrogateescape"), _Session(out), start, 0, {}).run()
    if not out.commands and not out.findings and command.strip():
        out.hard("shell:unparseable", Verdict.ASK, "no command found")
    return out


def _protected_in(value: str) -> str | None:
    """The first path a variable's value names (its words, split at spaces, ``:``, ``=`` and ``,``: a path list,
    ``--basetemp=DIR`` in ``PYTEST_ADDOPTS``) that runs through a place :meth:`.PathPolicy.write` protects, whatever
    the variable: ``PYTEST_ADDOPTS=--basetemp=.tether pytest`` deleted the folder, ``COVERAGE_FILE``,
    ``GIT_TRACE`` and ``LESSHISTFILE`` write the file they name."""
    for word in re.split(r"[\s:=,]+", value):
        if any(part in PROTECTED_NAMES for part in word.split("/")):
            return word
    return None
