"""The layer map in docs/design.md is the import-linter contract that `make lint` enforces, line for line."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def contract_layers() -> list[str]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    assert config["root_package"] == "tether"
    return [
        " | ".join(m.strip().strip("()").removeprefix("tether.") for m in layer.split("|"))
        for layer in contract["layers"]
    ]


def documented_layers() -> list[str]:
    design = (REPO / "docs" / "design.md").read_text()
    section = design.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    found = re.search(r"```\n(.*?)```", section, re.S)
    assert found, "docs/design.md's Layers section holds the map in a code block"
    return [line.strip() for line in found.group(1).splitlines() if line.strip()]


def test_the_documented_layer_map_is_the_enforced_contract() -> None:
    assert documented_layers() == contract_layers()


def test_every_package_of_tether_is_on_a_layer() -> None:
    """A new package or top-level module must be placed on the map, or the contract would not constrain it."""
    placed = {m.strip() for layer in contract_layers() for m in layer.split("|")}
    src = REPO / "src" / "tether"
    present = {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    present |= {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
    assert present <= placed, (
        f"{sorted(present - placed)}: place it on a layer of pyproject.toml's [tool.importlinter] contract "
        "and in docs/design.md's layer map"
    )
