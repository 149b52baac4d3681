"""What the host hands a tool when it runs: where, through which sandbox, under which envelope."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.envelope.schema import Envelope
    from tether.sandbox.base import Sandbox

    from .result import ToolResult


@dataclass(frozen=True)
class Delegation:
    """What a ``delegate`` call asks for: a sub-task and the narrowing of the caller's envelope it runs under.

    ``tools``, ``write`` and ``network`` None keep the caller's; ``budget_share`` is the share of each of the
    caller's budgets the child gets, never more than what the caller has left.
    """

    task: str
    tools: list[str] | None
    write: list[str] | None
    budget_share: float
    network: list[str] | None = None


@dataclass(frozen=True)
class ToolContext:
    """Everything a tool may touch.

    ``timeout_s`` is the effective timeout for this call (the kernel takes it from the
    envelope's contract for the tool, falling back to the tool's own contract). Tools that
    run commands never exceed it; a ``timeout_s`` argument from the model can only lower it.
    """

    workspace: Path
    sandbox: Sandbox
    envelope: Envelope
    timeout_s: float
    stored_result: Callable[[str], str | None] | None = None
    """The whole text of an earlier shortened result of this run, by call id (``read_result``); None outside a run."""
    delegate: Callable[[Delegation], ToolResult] | None = None
    """Runs a child run for this call and returns its receipt (``delegate``); the kernel's, None outside a run."""

    def on(self, sandbox: Sandbox) -> ToolContext:
        """This context with ``sandbox`` for its own: ``dataclasses.replace(self, sandbox=sandbox)`` without its walk
        over the class's fields (a held command's context, once a shell step: 3.7 -> 1.7 us, issue 18).
        ``tests/tools/test_context_on.py`` holds it to ``replace`` for every field, one added later included."""
        return ToolContext(self.workspace, sandbox, self.envelope, self.timeout_s, self.stored_result, self.delegate)
