"""The progress line: what a run is waiting on right now, and for how long.

A run can be silent for tens of seconds while the baseline tests, an action, the model or the completion
sensors run. The events say when each of those starts and ends, so the line is driven by them alone: a
phase begins at one event kind and ends at another (:data:`PHASES`). On a terminal it is a rich ``Live``
line on stderr whose clock ticks on its own, removed when the phase ends; when asked for elsewhere
(``--progress`` with stderr not a terminal) each phase is one plain line on stderr when it ends. It is never
on stdout, so ``--json`` output stays JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.text import Text

from tether.events.store import Event

Phase = tuple[str | None, bool]  # what is running now (None: nothing), and whether the clock keeps running
_END: Phase = (None, False)

PHASES: dict[str, Callable[[dict[str, Any]], Phase]] = {
    "run.started": lambda p: ("snapshot and test baseline", False),
    "preflight.completed": lambda p: _END,
    "model.requested": lambda p: (f"waiting for the model (turn {p['turn']})", False),
    "model.responded": lambda p: _END,
    "model.failed": lambda p: _END,
    "action.started": lambda p: (f"running {p['tool']}", False),
    "action.completed": lambda p: _END,
    "action.failed": lambda p: _END,
    "completion.claimed": lambda p: ("verifying the claim: sensors", False),
    "sensor.result": lambda p: (f"verifying the claim: {p['sensor']} {p['result']}, next sensor", True),
    "verify.completed": lambda p: _END,
    "completion.accepted": lambda p: _END,
    "completion.refused": lambda p: _END,
    "run.waiting": lambda p: _END,
    "run.finished": lambda p: _END,
}


class ProgressLine:
    """Follows a run's events; shows the current phase and its elapsed time on ``console`` (stderr)."""

    def __init__(self, console: Console, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.clock = clock
        self.what: str | None = None
        self.since = 0.0
        self._live: Live | None = None

    def __rich__(self) -> Text:
        return Text(f"⧗ {self.what} … {self.clock() - self.since:.1f}s", style="dim")

    def on_event(self, event: Event) -> None:
        step = PHASES.get(event.kind)
        if step is None:
            return
        what, keep_clock = step(event.payload)
        if keep_clock and self.what is not None:
            self.what = what
            return
        self.stop()
        if what is not None:
            self.what, self.since = what, self.clock()
            if self.console.is_terminal:
                self._live = Live(self, console=self.console, transient=True, refresh_per_second=4)
                self._live.start()

    def stop(self) -> None:
        """End the current phase: remove the live line, or say in one plain line how long it took."""
        if self._live is not None:
            self._live.stop()
            self._live = None
        elif self.what is not None:
            self.console.print(f"[dim]{escape(self.what)}: {self.clock() - self.since:.1f}s[/]")
        self.what = None


@contextmanager
def progress_line(console: Console, enabled: bool | None, as_json: bool) -> Iterator[ProgressLine | None]:
    """A progress line if asked (``enabled``), or by default on a terminal without ``--json``; always stopped."""
    if enabled is None:
        enabled = console.is_terminal and not as_json
    line = ProgressLine(console) if enabled else None
    try:
        yield line
    finally:
        if line is not None:
            line.stop()
