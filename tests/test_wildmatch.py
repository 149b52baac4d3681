"""tether.wildmatch answers as pathspec answers, for every simple pattern list and any path, in both of the kinds
tether uses: ``GitIgnoreSpec`` (the gate's filesystem lists and rules) and ``PathSpec.from_lines("gitignore")``
(the risk rating); and it declines (None) every pattern that is not simple."""

from __future__ import annotations

import pathspec
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether import wildmatch
from tether.control.risk import CONFIG, SENSITIVE

SEGMENT = st.sampled_from(["a", "b", "ab", ".git", "x.py", "*", "**", "*.py", "a*", "*b*", "-", "_x", "***", "."])
PATTERN = st.builds(
    lambda lead, segs, trail: lead + "/".join(segs) + trail,
    st.sampled_from(["", "/"]),
    st.lists(SEGMENT, min_size=1, max_size=4),
    st.sampled_from(["", "/"]),
)
PART = st.sampled_from(["a", "b", "ab", ".git", "x.py", "a.py", "b.c", "-", "_x", "*", ".", "..", "", "a\n", " "])
PATH = st.builds(
    lambda lead, parts, trail: lead + "/".join(parts) + trail,
    st.sampled_from(["", "/", "./", "//"]),
    st.lists(PART, min_size=1, max_size=5),
    st.sampled_from(["", "/"]),
)


def theirs(lines: list[str], path: str, git: bool) -> bool:
    spec = pathspec.GitIgnoreSpec.from_lines(lines) if git else pathspec.PathSpec.from_lines("gitignore", lines)
    return bool(spec.match_file(path))


@settings(max_examples=1500, deadline=None)
@given(st.lists(PATTERN, min_size=1, max_size=3), PATH, st.booleans())
@example(["*"], "a", True)
@example(["*/"], "a/b", False)
@example(["**/"], "a", True)
@example(["/**"], "a/b", False)
@example(["a/*"], "a/b/c", False)
@example(["a/**/b"], "a/b", True)
@example(["x.py"], "x.py\n", True)
def test_a_simple_list_matches_as_pathspec(lines: list[str], path: str, git: bool) -> None:
    ours = wildmatch.matcher(lines, git=git)
    assert ours is not None, lines
    assert ours.match_file(path) is theirs(lines, path, git), (lines, path, git)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from([SENSITIVE, CONFIG]), PATH)
def test_the_risk_ratings_patterns_match_as_pathspec(globs: tuple[str, ...], path: str) -> None:
    ours = wildmatch.matcher(globs, git=False)
    assert ours is not None
    assert ours.match_file(path) is theirs(list(globs), path, False)


def test_every_other_pattern_is_declined() -> None:
    for line in ("!a", "#a", "a?", "[ab]", "a\\*", "a b", "a ", " a", "a//b", "/", "//", "", "é", "a\n", "a/!b"):
        assert wildmatch.regex(line, git=True) is None and wildmatch.regex(line, git=False) is None, line
        assert wildmatch.matcher(["a", line], git=True) is None
