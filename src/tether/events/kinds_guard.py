"""Event kinds of governed sessions: runs whose tools another program executes (see tether.guard).

- ``session.opened``  right after ``run.started``: which framework and which of its sessions this run
  governs. The run's id is derived from the two, so the same session always finds the same run; this
  event says so in the log, for a reader who only has the log.
"""

from __future__ import annotations

from pydantic import Field

from .payload import Payload, register


@register("session.opened")
class SessionOpened(Payload):
    framework: str = Field(description="The program whose tool calls this run gates: langgraph, openai-agents, ...")
    session: str = Field(description="The program's own id of the session (thread id, conversation id).")
    by: str = Field("", description="The user the session was opened as.")
