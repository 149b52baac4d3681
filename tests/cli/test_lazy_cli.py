"""The lazy command table (cli/main.py): every row loads, says what its command says, and start-up imports
nothing it does not need."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest
import typer

from tether.cli.main import COMMANDS


def loaded(module: str) -> dict[str, object]:
    """The click commands ``tether.cli.<module>.register`` adds, by name."""
    scratch = typer.Typer()
    scratch.callback()(lambda: None)
    importlib.import_module(f"tether.cli.{module}").register(scratch)
    return dict(typer.main.get_group(scratch).commands)


@pytest.mark.parametrize("module", sorted({m for m, _ in COMMANDS.values()}))
def test_every_registered_command_has_its_row_and_the_same_short_help(module: str) -> None:
    commands = loaded(module)
    rows = {name for name, (m, _) in COMMANDS.items() if m == module}
    assert set(commands) == rows, f"{module} registers {sorted(commands)}; the table says {sorted(rows)}"
    for name, command in commands.items():
        text = getattr(command, "short_help", None) or getattr(command, "help", None) or ""
        shown = " ".join(text.strip().split("\n\n")[0].split())  # what the rich help shows: the first paragraph
        assert shown == COMMANDS[name][1], f"`tether --help` would show a stale line for {name}"


def python(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return dict(json.loads(out.stdout.splitlines()[-1]))


PROBE = """
import json, sys
from tether.cli.main import main
try:
    main({args!r})
except SystemExit:
    pass
mods = [m for m in sys.modules if m.startswith("tether.cli.") and m.endswith("_cmds")]
print(json.dumps({{"cmds": sorted(mods), "pydantic": "pydantic" in sys.modules, "typer": "typer" in sys.modules}}))
"""


def test_help_lists_every_command_without_importing_any() -> None:
    seen = python(PROBE.format(args=["--help"]))
    assert seen["cmds"] == []


def test_version_imports_neither_typer_nor_pydantic() -> None:
    seen = python(PROBE.format(args=["--version"]))
    assert seen == {"cmds": [], "pydantic": False, "typer": False}


def test_a_command_imports_only_its_own_module() -> None:
    seen = python(PROBE.format(args=["schema", "--help"]))
    assert seen["cmds"] == ["tether.cli.envelope_cmds"]


def test_an_unknown_command_is_a_usage_error(tmp_path: object) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "tether.cli.main", "nosuch"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 2 and "No such command 'nosuch'" in out.stderr
