"""The hook's side of the daemon: find the user's socket, ask it, start it when nobody answers.

Standard library only (this runs on every tool call); the protocol itself is :mod:`.relay`'s, which the Python
launcher runs without importing tether at all. The socket lives in a directory only its user can enter
(``$TETHER_HOOK_SOCKET``, else ``$XDG_RUNTIME_DIR/tether/hookd.sock``, else ``/tmp/tether-<uid>/hookd.sock``); a
directory that another user owns or others can open is not used. No answer from a daemon is never an answer:
the caller then decides in-process. A reply that is not well formed is a refusal: the daemon had the request.

The bash client (``hook.sh`` beside this file) reaches the same daemon over loopback TCP; the daemon publishes
that endpoint in ``<socket>.tcp`` (:func:`.relay.endpoint_path`).
"""

from __future__ import annotations

import os
import sys

from .relay import decode, encode, exchange, private_dir, socket_path
from .wire import Reply, refuse

#: The bash client: ``bash hook.sh PYTHON AGENT [OPTIONS]`` (what ``tether hook install`` writes where bash exists).
HOOK_SCRIPT = os.path.join(os.path.dirname(os.path.realpath(__file__)), "hook.sh")


def ask(request: dict[str, str], raw: bytes, *, start: bool = True) -> Reply | None:
    """The daemon's reply to one hook call, or None (no daemon, a stale one, one that declined: decide
    in-process); a refusal when the daemon had the request but its reply is malformed or cut short.

    With ``start``, a missing daemon is started in the background for the next call.
    """
    path = socket_path()
    message = encode(request, raw)
    if message is None or not private_dir(path):
        return None
    answer = exchange(path, message)
    if answer is None:
        if start:
            spawn(path)
        return None
    if not answer:
        return None
    reply = decode(answer)
    if reply is None:
        return refuse("the daemon's reply is malformed or cut short")
    code, out, err = reply
    return Reply(out.decode(errors="replace"), err.decode(errors="replace"), code)


def spawn(path: str) -> None:
    """Start a daemon for ``path`` in its own session; if another starts at once, one of them gives way."""
    import subprocess

    try:  # noqa: SIM105 — importing contextlib costs the client milliseconds
        subprocess.Popen(
            [sys.executable, "-m", "tether.hooks.daemon", "--socket", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # this call is answered in-process anyway
