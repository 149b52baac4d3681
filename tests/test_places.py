"""tether.places gives the strings ``PurePosixPath`` gives, for any text: each function held to pathlib by
hypothesis over hostile paths (``..``, ``//`` and ``///`` roots, trailing slashes, ``~``, NUL, lone surrogates,
unicode, very long parts)."""

from __future__ import annotations

from pathlib import PurePosixPath

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tether import places

PARTS = st.sampled_from(["", ".", "..", "a", "b", "~", "~root", ".ssh", "é", "\x00", "a b", "x" * 300, "\ud800", "/"])


def rooted(root: str) -> st.SearchStrategy[str]:
    return st.lists(PARTS, max_size=8).map(lambda ps: root + "/".join(ps))


TEXTS = st.one_of(st.text(), *(rooted(root) for root in ("", "/", "//", "///")))


@settings(max_examples=2000)
@given(TEXTS)
@example("//")
@example("///a/")
@example("//a/./b/")
def test_a_place_and_its_parts_name_and_parent_are_pathlibs(text: str) -> None:
    pure = PurePosixPath(text)
    place = places.place(text)
    assert place == str(pure)
    assert places.place(place) == place
    assert places.parts(place) == pure.parts
    assert places.name(place) == pure.name
    assert places.parent(place) == str(pure.parent)


@settings(max_examples=2000)
@given(TEXTS, TEXTS)
@example("//a", "/")
@example("/a", "//")
@example("/ab", "/a")
@example("a", ".")
def test_relative_and_within_are_pathlibs(text: str, base_text: str) -> None:
    pure, base = PurePosixPath(text), PurePosixPath(base_text)
    try:
        expected: str | None = str(pure.relative_to(base))
    except ValueError:
        expected = None
    assert places.relative(places.place(text), places.place(base_text)) == expected
    assert places.within(places.place(text), places.place(base_text)) is (base == pure or base in pure.parents)


@settings(max_examples=1000)
@given(TEXTS)
def test_a_place_is_relative_to_itself_and_to_each_of_its_parents(text: str) -> None:
    pure = PurePosixPath(text)
    for base in (pure, *pure.parents):
        assert places.relative(str(pure), str(base)) == str(pure.relative_to(base))


@settings(max_examples=2000)
@given(TEXTS, TEXTS)
@example("/", "a")
@example("//", "a")
@example("/a", "")
@example(".", "/b")
def test_join_is_pathlibs(base_text: str, text: str) -> None:
    assert places.join(places.place(base_text), text) == str(PurePosixPath(base_text) / text)
