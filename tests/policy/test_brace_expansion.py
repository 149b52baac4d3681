"""The shell analysis expands braces as bash does: each word below is expanded by a real bash and by
:func:`tether.policy.shell.analyse`, and the argument lists must be equal."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tether.policy.braces import expand
from tether.policy.decision import Verdict
from tether.policy.gate import shell_decision
from tether.policy.shell import MAX_BRACE_WORDS, analyse

WORDS = [
    "{/,}",
    "/{,}",
    "x{,}",
    "{,}",
    "a{b,c}d",
    "{a,{b,c}}d",
    "{{a,b}",
    "{a,b}{1,2}",
    "{a}",
    "{}",
    "\\{a,b\\}",
    "{a\\,b}",
    '{"a",b}',
    "{'x y',z}",
    'a{"",b}',
    "{1..3}",
    "{3..1}",
    "{01..3}",
    "{-1..02}",
    "{1..10..3}",
    "{a..e..-2}",
    "{X..Z}",
    "{e..a..2}",
    "{a..}",
    "{1..b}",
    "/etc/{shadow,passwd}",
    "~{,}",
]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash as the oracle")
@pytest.mark.parametrize("word", WORDS)
def test_a_word_expands_to_the_arguments_bash_gives(word: str) -> None:
    line = f"printf '%s\\0' start {word}"
    ran = subprocess.run(["bash", "--norc", "-c", line], capture_output=True, check=True, env={"HOME": "/h"}).stdout
    bash = ran.decode().split("\0")[1:-1]
    (cmd,) = analyse(line, "/w").commands
    ours = [w.text for w in cmd.args[2:]]
    assert [w.replace("~", "/h", 1) if w.startswith("~") else w for w in ours] == bash


def test_more_words_than_the_limit_are_one_unknown_word() -> None:
    (cmd,) = analyse(f"rm -rf /x{{1..{MAX_BRACE_WORDS + 1}}}", "/w").commands
    (word,) = cmd.args[1:]
    assert not word.static and word.prefix == "/x"
    assert expand(list("{a,b}{c,d}{e,f}"), 7) is None
    assert len(expand(list("{a,b}{c,d}{e,f}"), 8) or []) == 8


def test_a_word_of_deeply_nested_or_huge_braces_is_unknown_not_an_analysis_failure(tmp_path: Path) -> None:
    """Two thousand nested braces once ran the expansion into Python's recursion limit (``gate:error``, after
    seconds of work a hook call cannot spend); a sequence past any size overflowed ``len(range)``."""
    nested = shell_decision("rm -rf " + "{/," * 2000 + "b" + "}" * 2000, workspace=tmp_path)
    assert (nested.verdict, nested.deciding_rule) == (Verdict.ASK, "path:unknown"), nested.reason
    huge = shell_decision("rm -rf x{1..99999999999999999999999}", workspace=tmp_path)
    assert (huge.verdict, huge.deciding_rule) == (Verdict.ASK, "path:unknown"), huge.reason
