"""The public surface is pinned: what the README documents is what `tether` exports."""

from __future__ import annotations

import re
from pathlib import Path

import tether

README = Path(__file__).resolve().parents[1] / "README.md"


def test_exports_are_pinned() -> None:
    assert sorted(tether.__all__) == sorted(
        [
            "Envelope",
            "Event",
            "EventStore",
            "Harness",
            "OutputContract",
            "RunState",
            "Tool",
            "ToolContext",
            "ToolResult",
            "compile_envelope",
            "load_envelope",
            "strict_problems",
            "tool",
        ]
    )
    assert all(hasattr(tether, name) for name in tether.__all__)


def test_readme_imports_exist() -> None:
    names = set()
    for line in re.findall(r"^from tether import (.+)$", README.read_text(), flags=re.M):
        names |= {n.strip() for n in line.split(",")}
    assert names and names <= set(tether.__all__)


def test_readme_has_exactly_two_setup_commands() -> None:
    text = README.read_text()
    block = text.split("## Two commands", 1)[1].split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make demo", "make test"]
