"""tether.disk answers as ``pathlib.Path`` does, errors included, on a hostile tree: symlink loops (a pair and one
to itself), dangling and chained links, a folder without search permission (when not root), a file where a folder
is expected, and texts with ``..``, ``//``, trailing ``/``, ``~``, NUL, unicode and names too long for the system."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether import disk

PARTS = [
    "",
    ".",
    "..",
    "d",
    "f",
    "loop",
    "self",
    "dangling",
    "link",
    "chain",
    "shut",
    "inner",
    "new",
    "~",
    "é",
    "a\x00b",
    "x" * 300,
    "f/",
    "d//f",
]


@pytest.fixture(autouse=True)
def _cwd_kept() -> Iterator[None]:
    """The tests move into their trees; the next test finds the directory it was started in."""
    here = os.getcwd()
    yield
    os.chdir(here)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("disk")
    (root / "d").mkdir()
    (root / "d" / "f").write_text("x")
    (root / "f").write_text("x")
    (root / "loop").symlink_to("loop2")
    (root / "loop2").symlink_to("loop")
    (root / "self").symlink_to("self")
    (root / "dangling").symlink_to("nowhere")
    (root / "link").symlink_to("d")
    (root / "chain").symlink_to("link/f")
    (root / "shut" / "inner").mkdir(parents=True)
    (root / "shut").chmod(0)
    yield root
    (root / "shut").chmod(0o700)


def outcome(ask: Callable[[], object]) -> object:
    try:
        return ask()
    except Exception as e:  # the kind and message of what Path raises, which disk must raise too
        return (type(e), str(e))


TEXTS = st.lists(st.sampled_from(PARTS), max_size=5).map("/".join)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS, st.booleans())
def test_exists_is_dir_is_file_and_resolve_are_paths(tree: Path, text: str, rooted: bool) -> None:
    given_text = f"{tree}/{text}" if rooted else text
    os.chdir(tree)
    pure = Path(given_text)
    assert outcome(lambda: disk.text(given_text)) == outcome(lambda: str(pure))
    assert outcome(lambda: disk.exists(given_text)) == outcome(pure.exists)
    assert outcome(lambda: disk.is_dir(given_text)) == outcome(pure.is_dir)
    assert outcome(lambda: disk.is_file(given_text)) == outcome(pure.is_file)
    assert outcome(lambda: disk.resolve(given_text)) == outcome(lambda: str(pure.resolve()))
    assert outcome(lambda: disk.exists(pure)) == outcome(pure.exists)  # a Path is taken as its text


def test_the_tree_holds_what_the_answers_differ_on(tree: Path) -> None:
    """Where ``os.path``'s namesakes answer otherwise: the test above would hold a plain ``os.path`` to nothing."""
    os.chdir(tree)
    with pytest.raises(OSError, match="too long"):
        Path("x" * 300).exists()
    assert os.path.exists("x" * 300) is False
    with pytest.raises(RuntimeError, match="Symlink loop"):
        Path("loop").resolve()
    assert os.path.realpath("loop")
    assert Path("f/").is_file() and not os.path.isfile("f/")
    assert Path("").exists() and not os.path.exists("")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXTS.filter(lambda t: not t.startswith("/")), st.booleans(), st.booleans())  # made under the test's own root
def test_mkdir_makes_and_refuses_as_path_does(
    tmp_path_factory: pytest.TempPathFactory, text: str, parents: bool, exist_ok: bool
) -> None:
    def by_path(p: str) -> None:
        Path(p).mkdir(parents=parents, exist_ok=exist_ok)

    def by_disk(p: str) -> None:
        disk.mkdir(p, parents=parents, exist_ok=exist_ok)

    made = []
    for ask in (by_path, by_disk):
        root = tmp_path_factory.mktemp("mk")
        here = root / "1" / "2" / "3" / "4" / "5"  # deep enough that five ".." stay inside root
        (here / "d").mkdir(parents=True)
        (here / "f").write_text("x")
        os.chdir(here)
        result = outcome(lambda: ask(text))  # noqa: B023 (called here, in this turn of the loop)
        made.append((result, sorted(str(p.relative_to(root)) for p in root.rglob("*"))))
    assert made[0] == made[1]


def test_home_is_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    for home in ("/home/x/", "//h", "", "/"):
        monkeypatch.setenv("HOME", home)
        assert disk.home() == str(Path.home())
