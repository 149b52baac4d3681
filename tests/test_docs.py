"""The design notes stay true to the tree: every link stays inside the repository, every file named exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


@pytest.mark.parametrize("note", NOTES, ids=lambda p: p.name)
def test_links_stay_inside_the_repository_and_resolve(note: Path) -> None:
    text = note.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith("#"):
            continue
        assert "://" not in target and not target.startswith("/"), f"{note.name} links outside the repository: {target}"
        path = (note.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(REPO) and path.exists(), f"{note.name} links to a missing {target}"


@pytest.mark.parametrize("note", NOTES, ids=lambda p: p.name)
def test_every_source_file_a_note_names_exists(note: Path) -> None:
    """A path like `kernel/steps.py` in a note names src/tether/kernel/steps.py (or a path from src/ or the root)."""
    named = set(re.findall(r"`([\w./-]+/[\w.-]+\.(?:py|md|yaml))", note.read_text()))
    assert named or note.name != "design.md"
    missing = [
        n
        for n in sorted(named)
        if not any((base / n).exists() for base in (REPO, REPO / "src", REPO / "src" / "tether"))
    ]
    assert not missing, f"{note.name} names files that do not exist: {missing}"


def test_every_function_the_design_names_is_in_the_file_it_names() -> None:
    """ "`kernel/steps.py` (`next_step`)": the decision tables stay true when code moves."""
    design = (REPO / "docs" / "design.md").read_text()
    pairs = re.findall(r"`([\w/]+\.py)`\s*\(`(\w+)`", design)
    assert len(pairs) >= 8
    for path, name in pairs:
        source = (REPO / "src" / "tether" / path).read_text()
        assert re.search(rf"^\s*(def|class) {name}\b|^{name}\s*[:=]", source, re.M), f"{name} is not defined in {path}"
