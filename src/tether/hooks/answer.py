"""The one function that turns a parsed hook call into the agent's reply: used in-process and by the daemon.

Every failure becomes a refusal (exit 2, which blocks the tool call, the prompt or the stop): a hook that
crashed must not let the agent go on as if tether had said yes.
"""

from __future__ import annotations

from tether.errors import TetherError
from tether.events.backends import is_url

from .session import Settings, handle
from .wire import Reply, refuse, reply

TYPE_CHECKING = False  # not typing's: a cold hook call does not import typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def settings_from(request: dict[str, Any]) -> Settings:
    """The request's settings (absolute paths, as the client resolved them; the store may be a URL). A path is
    kept as the text it came as (read as ``Path`` reads it where it is used: tether/disk.py); a store that is not a
    URL by :func:`is_url` stays one, the same text asked again."""

    def path(key: str) -> str | None:
        value = request.get(key)
        return value if isinstance(value, str) and value else None

    db = request.get("db")
    spec = db if isinstance(db, str) and is_url(db) else path("db")  # a postgresql:// URL is kept as text
    return Settings(str(request["agent"]), envelope=path("envelope"), db=spec, project=path("project"))


def answer(request: dict[str, Any], data: dict[str, Any], later: list[Callable[[], None]] | None = None) -> Reply:
    """Handle one hook call and put the outcome in the agent's format; never raises. ``later``: where the
    daemon collects what may run once the reply is sent (:func:`.session.handle`)."""
    try:
        settings = settings_from(request)
        return reply(settings.agent, str(data["hook_event_name"]), handle(settings, data, later))
    except TetherError as e:
        return refuse(str(e))
    except Exception as e:
        import traceback  # only here: it costs a call that goes well milliseconds

        return refuse(f"internal error: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}")
