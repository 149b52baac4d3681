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


#: How a daemon starts: as a hook process does (launch.py, then :func:`.entry.full_path`), ``-I -S`` (no
#: ``PYTHON*`` variables, no user site, no working directory on the path), this tether's directory appended,
#: then ``site``. ``python -m`` would put the working directory first on the path: the project's, where the
#: agent runs its hooks, so a cloned repository's ``tether/`` (or ``yaml.py``) would run as the developer and
#: stay resident as their gate; ``PYTHONPATH`` or the user site would let a developer replace a managed gate.
DAEMON = (
    "import sys; sys.path.append(sys.argv.pop(1)); import site; site.main(); import runpy;"
    " runpy.run_module('tether.hooks.daemon', run_name='__main__', alter_sys=True)"
)


def spawn(path: str) -> None:
    """Start a daemon for ``path`` in its own session (:data:`DAEMON`); if another starts at once, one of them
    gives way."""
    import subprocess

    parent = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:  # noqa: SIM105 — importing contextlib costs the client milliseconds
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", DAEMON, parent, "--socket", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        pass  # this call is answered in-process anyway
