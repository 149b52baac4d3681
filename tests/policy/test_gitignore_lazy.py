"""The envelope's gitignore-style patterns (``filesystem.read/write/deny``, a file rule's ``Tool(path)``) are compiled
at their first match (policy/globs.py ``GitIgnoreSpec``), pathspec imported then only for a list that holds a
pattern tether.wildmatch does not match itself: a gate built without matching a path never imports pathspec, and
every match is pathspec's own answer, a pattern pathspec refuses matching nothing in a rule (as when the rule
compiled it at once) and raising in a ``filesystem`` list."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import PurePosixPath

import pathspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tether.envelope.schema import Filesystem, Rule
from tether.policy.decision import Verdict
from tether.policy.globs import GitIgnoreSpec
from tether.policy.paths import PathPolicy
from tether.policy.rules import parse

PROBE = r"""
import json, sys
from pathlib import Path
from tether.envelope.schema import Filesystem, Rule
from tether.policy.decision import Verdict
from tether.policy.paths import PathPolicy
from tether.policy.rules import parse
seen = []
policy = PathPolicy(Path(sys.argv[1]), Filesystem(read=["src/**"], write=["out/", "gen?/"], deny=["*.key"]))
rule = parse(Rule(id="r", rule="read_file(docs/**/*.md)"), Verdict.DENY)
seen.append("pathspec" in sys.modules)
w = Path(sys.argv[1])
answers = [policy.read(f"{w}/src/a.py", shell=False),
           policy.read(f"{w}/x.key", shell=False),
           rule.matches_path("docs/a/b.md", "docs/a/b.md"),
           rule.matches_path("a.md", "a.md")]
seen.append("pathspec" in sys.modules)  # simple patterns: tether.wildmatch
answers += [policy.write(f"{w}/out/f"), policy.write(f"{w}/src/a.py"),
            policy.write(f"{w}/gen1/f")]
seen.append("pathspec" in sys.modules)  # "gen?/": pathspec's
print(json.dumps([seen, [a if isinstance(a, bool) else (a and a.rule_id) for a in answers]]))
"""


def test_pathspec_is_imported_at_the_first_match_of_a_pattern_it_must_match(tmp_path: PurePosixPath) -> None:
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path)], capture_output=True, text=True, check=True)
    seen, answers = json.loads(out.stdout)
    assert seen == [False, False, True]
    assert answers == [None, "path:denied", True, False, None, "path:not-writable", None]


def test_a_rule_whose_pattern_pathspec_refuses_matches_nothing() -> None:
    for bad in ("!",):
        with pytest.raises(pathspec.patterns.gitignore.GitIgnorePatternError):
            pathspec.GitIgnoreSpec.from_lines([bad])
        rule = parse(Rule(id="r", rule=f"write_file({bad})"), Verdict.DENY)
        assert rule.matches_path("a/b", "a/b") is False
        assert rule.matches_path("!", "!") is False


def test_a_filesystem_list_with_a_refused_pattern_still_raises_as_pathspec(tmp_path: PurePosixPath) -> None:
    policy = PathPolicy(tmp_path, Filesystem(read=["!"], write=["**"]))  # type: ignore[arg-type]
    with pytest.raises(pathspec.patterns.gitignore.GitIgnorePatternError):
        policy.read(f"{tmp_path}/a", shell=False)


def test_specs_compare_by_their_lines() -> None:
    assert GitIgnoreSpec(["a/**"]) == GitIgnoreSpec(("a/**",))
    assert hash(GitIgnoreSpec(["x"])) == hash(GitIgnoreSpec(["x"]))
    assert GitIgnoreSpec(["a"]) != GitIgnoreSpec(["b"]) and GitIgnoreSpec(["a"]) != GitIgnoreSpec(["a"], broken=True)


SEGMENT = st.sampled_from(["a", "b", "src", ".git", "x.py", "*", "**", "*.py", "?", "[ab]", "a*b", "!a", "\\*", " "])
PATTERN = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join) | st.lists(SEGMENT, min_size=1).map(
    lambda s: "/" + "/".join(s)
)
PATH = st.lists(st.sampled_from(["a", "b", "src", ".git", "x.py", "ab", "a.b", "*", " "]), min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(st.lists(PATTERN, min_size=1, max_size=4), PATH)
def test_a_match_is_pathspecs(lines: list[str], parts: list[str]) -> None:
    path = "/".join(parts)
    try:
        expected = pathspec.GitIgnoreSpec.from_lines(lines).match_file(path)
    except Exception as e:
        with pytest.raises(type(e)):
            GitIgnoreSpec(lines).match_file(path)
        assert GitIgnoreSpec(lines, broken=True).match_file(path) is False
        return
    assert GitIgnoreSpec(lines).match_file(path) is expected
