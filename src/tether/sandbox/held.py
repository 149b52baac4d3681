"""A sandbox whose next command starts held (:class:`.process.Hold`): what must precede the command — the runtime's
synced commit of ``action.started`` — runs while the child starts, and the command begins only after it; and one
whose shells are started before their calls for as long as a run drives it (:mod:`.warm`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from .base import Sandbox
from .bwrap import BwrapSandbox
from .local import LocalSandbox
from .receipt import Receipt


class Held:
    """``sandbox`` for one call whose first command is started held for ``before``; any later command of the same
    call runs as usual (``before`` ran first). ``before`` runs only if a command started: the caller runs it itself
    when it was not run (the tool failed before its command, or the sandbox could not start one)."""

    def __init__(self, sandbox: LocalSandbox | BwrapSandbox, before: Callable[[], None]) -> None:
        self.sandbox = sandbox
        self.name = sandbox.name
        self._before: Callable[[], None] | None = before

    def run(
        self,
        command: str | Sequence[str],
        *,
        cwd: Path,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> Receipt:
        before, self._before = self._before, None
        return self.sandbox.run(command, cwd=cwd, timeout_s=timeout_s, env=env, before=before)


def held(sandbox: Sandbox, before: Callable[[], None]) -> Held | None:
    """``sandbox`` holding its next command for ``before``; None for a sandbox that cannot hold one (a test double,
    another backend): then ``before`` must run before the call."""
    return Held(sandbox, before) if isinstance(sandbox, LocalSandbox | BwrapSandbox) else None


def warmed(sandbox: Sandbox | None) -> AbstractContextManager[None]:
    """While it lasts, ``sandbox``'s shell commands start in shells started before their calls (the local sandbox:
    :mod:`.warm`; bubblewrap: in sandboxes set up before them, :mod:`.ahead`); other sandboxes start each command
    as it comes."""
    return sandbox.warm() if isinstance(sandbox, LocalSandbox | BwrapSandbox) else nullcontext()
