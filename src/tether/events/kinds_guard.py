"""Event kinds of governed sessions: runs whose tools another program executes (see tether.guard).

- ``session.opened``  right after ``run.started``: which framework and which of its sessions this run
  governs. The run's id is derived from the two, so the same session always finds the same run; this
  event says so in the log, for a reader who only has the log.
- ``session.ended``   the session is over (a verified stop, an unverified one, a close, a spent budget): the
  stop fact that ``next_step`` ends the run on, as it ends tether's own runs.

``session.opened`` is defined in :mod:`.kinds_calls` (every session writes it; ``tether.events`` imports that
module) and named here as ever; this module is one of the registry's later ones (``payload.LATER``): a hook
call builds ``SessionEnded`` only when a session ends, or when a log it reads holds an ending.
"""

from typing import Literal

from tether.plain import Field

from .kinds_calls import SessionOpened
from .payload import Payload, register

__all__ = ["SessionEnded", "SessionOpened"]


@register("session.ended")
class SessionEnded(Payload):
    """A governed session is over: a fact the run cannot go on from, which ``next_step`` turns into the finish.

    ``how`` says what ended it (the status is :func:`tether.kernel.stops.finish_after`'s to name):
    ``verified`` — a stop the required evidence accepted; ``unverified`` — the agent stopped although the
    evidence refused it; ``closed`` — the program closed the session with nothing left open; ``abandoned`` —
    the session ended with work left open (a call without its receipt, a stop not yet accepted);
    ``budget`` — a budget of the envelope is spent (``budget``, ``used`` and ``limit`` name it).
    """

    how: Literal["verified", "unverified", "closed", "abandoned", "budget"]
    reason: str
    by: str = Field("", description="Who ended it: the agent's event (SessionEnd, Stop), the program, tether.")
    budget: str | None = None
    used: float | None = None
    limit: float | None = None
