"""Four checks a cold hook call runs, written without the regular expression each compiled at import (sre's compiler
is Python: ~3 M instructions of every cold PreToolUse for these four), held to the very patterns they replace:
which interpreter names are Python's (policy/interp.py), which envelope patterns are simple (tether/wildmatch.py),
an unquoted shell word's backslashes (policy/shell.py), the characters of a session id kept in its run's id
(hooks/session.py). Hypothesis over the characters each pattern tests and its neighbours (Unicode digits and
letters, a newline, which ``$`` matches before), and edge samples."""

from __future__ import annotations

import re

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether.canonical import sha256_hex
from tether.hooks.session import run_id_for
from tether.policy import interp
from tether.policy.shell import _unescape_unquoted
from tether.wildmatch import simple

PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[a-z]?$|^ipython3?$")
SIMPLE = re.compile(r"/?[A-Za-z0-9._*-]+(?:/[A-Za-z0-9._*-]+)*/?")
ESCAPE = re.compile(r"\\(.)", re.DOTALL)
UNSAFE = re.compile(r"[^A-Za-z0-9._-]")

#: Characters the patterns test, and some they do not: other digits (Arabic-Indic, fullwidth; a superscript, which
#: is a digit but not decimal), letters outside a-z.
ALPHABET = "0123456789.az_*-/AZ\\\n \t$é٣３²ßıİ"
PIECES = st.sampled_from(["python", "pypy", "ipython", "3", "3.12", ".", "/", "\\", "\n", "a", "Z", "٣", "**", ""])
TEXT = st.lists(st.one_of(PIECES, st.text(alphabet=ALPHABET, max_size=3)), max_size=8).map("".join)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
@example("python")
@example("python3.12")
@example("python3.12a")
@example("python3.12\n")
@example("python3.12\n\n")
@example("python3.")
@example("python.3")
@example("python3..1")
@example("pypy3")
@example("pypython")
@example("ipython3\n")
@example("ipython33")
@example("python٣")
@example("python²")
@example("pythonZ")
@example("")
def test_is_python_is_the_pattern(name: str) -> None:
    assert interp.is_python(name) is bool(PYTHON.match(name)), repr(name)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
@example("/")
@example("//")
@example("a//")
@example("//a")
@example("/a/")
@example("a/b/*.py")
@example("a\n")
@example("")
def test_simple_is_the_pattern(line: str) -> None:
    assert simple(line) is (SIMPLE.fullmatch(line) is not None), repr(line)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
@example("\\")
@example("a\\")
@example("\\\\x")
@example("\\\\\\")
@example("\\\n")
@example("a\\\nb\\\\\nc")
@example("\\\\\n")
def test_unescaping_is_the_pattern(word: str) -> None:
    expected = ESCAPE.sub(lambda m: m.group(1), word.replace("\\\n", ""))
    assert _unescape_unquoted(word) == expected, repr(word)


@settings(max_examples=3000, deadline=None)
@given(TEXT)
@example("s" * 81)
@example("abc-DEF_0.9")
@example("a b")
def test_a_run_id_keeps_what_the_pattern_kept(session_id: str) -> None:
    safe = UNSAFE.sub("", session_id)[:80]
    expected = f"claude-code-{safe if safe == session_id else sha256_hex(session_id)[:32]}"
    assert run_id_for("claude-code", session_id) == expected
