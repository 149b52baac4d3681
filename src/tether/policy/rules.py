"""Envelope rules: ``Tool`` or ``Tool(specifier)``, compiled once, matched many times.

* For a **shell tool** the specifier matches the *parsed* command words of every simple command
  the string runs (after wrappers, quoting and nesting are seen through), so ``bash(git push:*)``
  also matches ``cd x && env GIT_DIR=. /usr/bin/git -C . push``. ``prefix:*`` (and a trailing
  ``*`` token) means "these words, then anything"; other tokens are ``fnmatch`` globs per word.
* For a **file tool** (``path`` argument) the specifier is a gitignore-style glob relative to
  the workspace (``pathspec``), matched against the *resolved* path.
* For other tools the specifier is an ``fnmatch`` glob on the first of ``url``, ``host``,
  ``target``, ``name`` present in the arguments.
* ``when: {arg: glob}`` adds predicates on arguments; all must hold.
* ``when: tainted(args.NAME, ...)`` (or ``tainted(args)``: any argument) holds when the argument carries
  a value that first appeared in untrusted output. Only deny and ask rules may say it, and the gate alone
  never matches such a rule: it needs the run's provenance, so the one decider applies it
  (``policy/taint.py``).

Deny and ask rules match generously (a word computed at run time may be anything, so it matches
any token; ``git -c x=y -C d push`` is seen as ``git push``). Allow rules match strictly: only
static words, only the words as written (``./git`` is not ``git``).
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from tether import jsonc
from tether.envelope.schema import Rule
from tether.memo import cache
from tether.records import dataclass

from .command import SimpleCommand, command_name
from .decision import Verdict
from .globs import GitIgnoreSpec

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    import re
    from collections.abc import Mapping
    from typing import Any


@cache
def _tainted_condition() -> re.Pattern[str]:
    """A ``when: tainted(...)`` condition (compiled at first use: only an envelope with such rules reads it)."""
    import re

    return re.compile(
        r"^\s*tainted\(\s*(args(?:\.[A-Za-z_][A-Za-z0-9_]*)?(?:\s*,\s*args\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\)\s*$"
    )


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME = _NAME_START | frozenset("0123456789.-")


def split_rule(text: str) -> tuple[str, str | None] | None:
    """A rule's tool and specifier: ``Tool`` (None) or ``Tool(specifier)``, whitespace around each part allowed,
    the specifier running to the last parenthesis; None for anything else. What the pattern
    ``^\\s*([A-Za-z_][A-Za-z0-9_.-]*)\\s*(?:\\((.*)\\))?\\s*$`` (DOTALL) matched, read without compiling it: the
    built-in hook envelope has rules, and compiling the pattern cost every cold hook call ~0.55 M instructions
    (``benchmarks/hook_modules.py``'s call 32.0 -> 31.45 M; tests/policy/test_rule_split.py holds the two to the same
    answers)."""
    s = text.strip()  # str.isspace's whitespace: what \s matches in a str pattern
    if not s or s[0] not in _NAME_START:
        return None
    end = 1
    while end < len(s) and s[end] in _NAME:
        end += 1
    rest = s[end:].lstrip()
    if not rest:
        return s[:end], None
    if rest[0] == "(" and rest[-1] == ")":  # one character cannot be both
        return s[:end], rest[1:-1]
    return None


_SUBJECT_KEYS = ("url", "host", "target", "name")
_SYSTEM_DIRS = ("/bin", "/usr/bin", "/usr/local/bin", "/sbin", "/usr/sbin")


class RuleSyntaxError(ValueError):
    pass


class RuleConditionError(RuleSyntaxError):
    """A rule's ``when`` is wrong (rather than its ``Tool(specifier)``)."""


@dataclass(frozen=True, eq=False, repr=False)
class CompiledRule:
    """An envelope rule, compiled for matching."""

    id: str
    verdict: Verdict
    reason: str
    tool: str
    specifier: str | None
    tokens: tuple[str, ...]
    prefix: bool
    when: tuple[tuple[str, str], ...]
    spec: GitIgnoreSpec | None
    tainted: tuple[str, ...] | None = None
    """``when: tainted(...)``: the arguments named (``*``: any); None for an ordinary rule."""

    # -- shell ------------------------------------------------------------------------------

    def matches_command(self, cmd: SimpleCommand) -> bool:
        if self.specifier is None or self.tokens == ():
            return True
        if not cmd.argv:
            return False
        strict = self.verdict is Verdict.ALLOW
        return any(self._match_words(words, open_tail, strict) for words, open_tail in _word_lists(cmd, strict))

    def _match_words(self, words: list[tuple[str, bool]], open_tail: bool, strict: bool) -> bool:
        toks = self.tokens
        if len(words) < len(toks) and not open_tail:
            return False
        for i, tok in enumerate(toks):
            if i >= len(words):
                return open_tail
            text, static = words[i]
            if not static:
                if strict and tok != "*":
                    return False
                continue
            if not fnmatchcase(text, tok):
                return False
        return self.prefix or len(words) == len(toks)

    # -- files and others -------------------------------------------------------------------

    def matches_path(self, rel: str | None, raw: str) -> bool:
        if self.specifier is None or self.specifier in ("*", "**"):
            return True
        if self.spec is None:
            return False
        if rel is None:
            return self.specifier.startswith("/") and fnmatchcase(raw, self.specifier)
        return self.spec.match_file(rel)

    def matches_subject(self, args: Mapping[str, Any]) -> bool:
        if self.specifier is None or self.specifier == "*":
            return True
        subject = next((args[k] for k in _SUBJECT_KEYS if isinstance(args.get(k), str)), None)
        return subject is not None and fnmatchcase(subject, self.specifier)

    def applies(self, tool: str, args: Mapping[str, Any]) -> bool:
        """Whether this rule is about this call: its tool, and its ``when`` holding of the call's arguments."""
        return self.tool == tool and self.when_holds(args)

    def when_holds(self, args: Mapping[str, Any]) -> bool:
        if self.tainted is not None:
            return False  # provenance is the decider's to judge (policy/taint.py), never the gate's
        for key, glob in self.when:
            if key not in args:
                return False
            value = args[key]
            text = value if isinstance(value, str) else jsonc.dumps(value, sort_keys=True)
            if not fnmatchcase(text, glob):
                return False
        return True


def _word_lists(cmd: SimpleCommand, strict: bool) -> list[tuple[list[tuple[str, bool]], bool]]:
    """The word lists a rule may see for ``cmd``, each with whether more unknown words may follow.

    For deny and ask rules (not ``strict``) this includes what the command *may* be: ``git`` with its
    global options removed, and ``git <unknown>`` when the subcommand could be an alias of anything.
    """
    words = [(w.text, w.static) for w in cmd.argv]
    head = cmd.argv[0].text
    if not strict or "/" not in head or head.rsplit("/", 1)[0] in _SYSTEM_DIRS:
        words[0] = (command_name(head), cmd.argv[0].static and not cmd.computed)
    if strict:
        return [(words, False)]
    open_tail = cmd.dynamic_tail
    lists = [(words, open_tail)]
    if cmd.name == "git":  # a shell call's, whose judge imported these (policy/shellgate.py); a file call's does not
        from .knowledge import GIT_COMMANDS
        from .profile import git_words

        rest, unsure = git_words(cmd)
        lists.append(([("git", True), *[(t, True) for t in rest]], open_tail))
        if unsure or (rest and rest[0] not in GIT_COMMANDS):
            lists.append(([("git", True), ("<alias or unknown>", False)], True))
    lists += [([(w, True), *words], open_tail) for w in cmd.wrappers]
    return lists


def parse(rule: Rule, verdict: Verdict) -> CompiledRule:
    parts = split_rule(rule.rule)
    if parts is None:
        raise RuleSyntaxError(f"{rule.rule!r} is not Tool or Tool(specifier)")
    tool, spec = parts
    tokens: tuple[str, ...] = ()
    prefix = False
    path_spec = None
    if spec is not None:
        spec = spec.strip()
        if not spec:
            raise RuleSyntaxError(f"{rule.rule!r} has an empty specifier")
        import shlex  # here: a rule with a specifier (a call under an envelope without one does without it)

        try:
            toks = shlex.split(spec)
        except ValueError as e:
            raise RuleSyntaxError(f"{rule.rule!r}: {e}") from e
        if toks == ["*"]:
            toks = []
        if toks and toks[-1].endswith(":*"):
            toks[-1] = toks[-1][:-2]
            prefix = True
            if not toks[-1]:
                toks.pop()
        elif len(toks) > 1 and toks[-1] == "*":
            toks.pop()
            prefix = True
        if toks:
            toks[0] = command_name(toks[0])
        tokens = tuple(toks)
        path_spec = GitIgnoreSpec([spec], broken=True)  # compiled at its first match: a refused one matches nothing
    if isinstance(rule.when, str):
        return CompiledRule(
            rule.id, verdict, rule.reason, tool, spec, tokens, prefix, (), path_spec, _tainted(rule, verdict)
        )
    when = tuple((str(k), str(v)) for k, v in rule.when.items())
    return CompiledRule(rule.id, verdict, rule.reason, tool, spec, tokens, prefix, when, path_spec)


def _tainted(rule: Rule, verdict: Verdict) -> tuple[str, ...]:
    """The arguments a ``when: tainted(...)`` condition names (``*`` for ``tainted(args)``)."""
    assert isinstance(rule.when, str)
    m = _tainted_condition().match(rule.when)
    if m is None:
        raise RuleConditionError(
            f"rule {rule.id!r}: when {rule.when!r} is not a condition; expected tainted(args.NAME[, args.NAME ...]), "
            "tainted(args), or a mapping {argument: glob}"
        )
    if verdict is Verdict.ALLOW:
        raise RuleConditionError(
            f"rule {rule.id!r}: when: tainted(...) belongs on a deny or ask rule; an allow rule cannot let "
            "untrusted values through"
        )
    names = [a.strip() for a in m.group(1).split(",")]
    return ("*",) if names == ["args"] else tuple(n.removeprefix("args.") for n in names)


def compile_rules(rules: list[Rule], verdict: Verdict) -> list[CompiledRule]:
    return [parse(r, verdict) for r in rules]
