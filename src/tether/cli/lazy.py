"""The root command group that imports a sub-command's module only when that command is used.

``tether run`` should not pay for the console, the OpenTelemetry exporter and every other command's imports;
``tether --help`` should pay for none of them. The table of commands is :data:`tether.cli.main.COMMANDS`,
handed in by :meth:`LazyGroup.of` (this module imports nothing from the CLI).
"""

from __future__ import annotations

import importlib
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup


class LazyGroup(TyperGroup):
    """A typer group whose commands come from a table ``name -> (module, short help)``, loaded on first use.

    Loading a module calls its ``register(app)`` on a throwaway typer app and adopts every command it adds, so
    a module that registers several commands (``run_cmds``) is imported once. While help is being formatted,
    a command not loaded yet is shown from the table's short help instead of being imported.
    """

    table: dict[str, tuple[str, str]] = {}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False

    @classmethod
    def of(cls, table: dict[str, tuple[str, str]]) -> type[LazyGroup]:
        """The group class for ``table`` (typer instantiates the class itself, so the table rides on it)."""
        return type("TetherGroup", (cls,), {"table": table})

    def list_commands(self, ctx: Any) -> list[str]:
        loaded = super().list_commands(ctx)
        return [*loaded, *(name for name in self.table if name not in self.commands)]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in self.table:
            module, short_help = self.table[cmd_name]
            if self._listing:
                return TyperCommand(cmd_name, help=short_help)
            self._load(module)
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False

    def _load(self, module: str) -> None:
        """Import ``tether.cli.<module>`` and adopt the commands its ``register`` adds."""
        scratch = typer.Typer()
        scratch.callback()(_noop)  # always a group, even for a module that registers one command
        importlib.import_module(f"{__package__}.{module}").register(scratch)
        group = typer.main.get_group(scratch)
        for name, command in group.commands.items():
            self.commands.setdefault(name, command)


def _noop() -> None:
    """(the scratch app's callback: makes typer build a group)"""
