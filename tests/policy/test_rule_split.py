"""A rule's ``Tool`` / ``Tool(specifier)`` is read without a regular expression (``policy/rules.split_rule``): the
built-in hook envelope has deny rules, and compiling the pattern that read them cost every cold hook call ~0.55 M
instructions. The pattern stays here as the oracle: every text gets the same answer from both, whitespace of any
kind, newlines, nested and unbalanced parentheses, names that are not ASCII included."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.envelope.schema import Rule
from tether.policy.decision import Verdict
from tether.policy.rules import RuleSyntaxError, parse, split_rule

ORACLE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*(?:\((.*)\))?\s*$", re.DOTALL)


def oracle(text: str) -> tuple[str, str | None] | None:
    m = ORACLE.match(text)
    return None if m is None else (m.group(1), m.group(2))


#: Every character the pattern treats apart, and some it does not: ASCII and Unicode whitespace (the separators
#: 0x1c-0x1f, NEL, no-break and em spaces are str.isspace's and \s's), the name's characters, parentheses, letters
#: beyond ASCII.
ALPHABET = "Bash_x9.-( ):*\t\n\r\x0b\x0c\x1c\x1f\x85\xa0\u2003é$"


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=14))
def test_any_text_is_split_as_the_pattern_split_it(text: str) -> None:
    assert split_rule(text) == oracle(text)


@pytest.mark.parametrize(
    "text",
    [
        "Bash",
        "  Bash  ",
        "Bash(git push:*)",
        "Bash (rm -rf *) \n",
        "Bash()",
        "Bash( )",
        "Bash(a)(b)",
        "Bash(a) x",
        "Bash(a",
        "Bash)a(",
        "Bash((a))",
        "Bash(a\nb)",
        "mcp__github__create_issue",
        "a.b-c_d(x)",
        "9tool",
        "-x",
        "éBash",
        "Bashé",
        "(",
        ")",
        "()",
        "",
        "   ",
        "\x1cBash\x1f",
        "\x85Bash(x)\xa0",
        "Bash\n",
        "Bash(x)\n\n",
    ],
)
def test_edge_cases_as_the_pattern(text: str) -> None:
    assert split_rule(text) == oracle(text)


def test_a_rule_that_is_neither_form_is_refused_naming_it() -> None:
    with pytest.raises(RuleSyntaxError, match="'Bash x' is not Tool or Tool"):
        parse(Rule(id="r", rule="Bash x"), Verdict.DENY)
    with pytest.raises(RuleSyntaxError, match="empty specifier"):
        parse(Rule(id="r", rule="Bash(  )"), Verdict.DENY)


def test_the_hook_envelopes_rules_compile_no_pattern() -> None:
    """What a cold hook call's gate does with the built-in envelope's deny rules compiles no regular expression (a
    fresh interpreter: a pattern compiled once is cached for the process)."""
    probe = """
import re
from tether.hooks.calls import hook_envelope
from tether.policy.decision import Verdict
from tether.policy.rules import compile_rules

deny = hook_envelope().permissions.deny
assert deny, "the built-in hook envelope has deny rules"
compiled = []
real = re.compile
re.compile = lambda pattern, flags=0: compiled.append(pattern) or real(pattern, flags)
assert [r.tool for r in compile_rules(deny, Verdict.DENY)] == [r.rule for r in deny]
print(compiled)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
