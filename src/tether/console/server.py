"""Running the console: uvicorn on the bind the access rules allow, in the foreground or in a thread.

The thread form (:class:`Background`) is for the browser tests, the benchmark and the screenshot script:
the same server, bound to a free loopback port, stopped cleanly.
"""

from __future__ import annotations

import threading
import time

import uvicorn
from starlette.applications import Starlette

from tether.errors import RuntimeFailure
from tether.events.backends import StoreSpec

from .access import Guard, bind_token, is_loopback
from .app import create_app


def _config(app: Starlette, host: str, port: int) -> uvicorn.Config:
    return uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=1, lifespan="off")


def url(host: str, port: int, token: str | None = None) -> str:
    name = f"[{host}]" if ":" in host else host
    return f"http://{name}:{port}/" + (f"?token={token}" if token else "")


def serve(db: StoreSpec, host: str, port: int, token: str | None) -> None:
    """Serve until interrupted. ``token`` must already be the one :func:`bind_token` settled on."""
    if token is None and not is_loopback(host):
        raise RuntimeFailure(f"refusing to serve on {host} without a token")  # bind_token never lets this happen
    app = create_app(db, Guard(host, token))
    uvicorn.Server(_config(app, host, port)).run()
    # A run the console resumed gets a minute to end; past that the process exits as a crash would (the log is
    # whole; `tether resume` picks the run up).
    app.state.console.drivers.join(timeout=60)


class Background:
    """The console in a daemon thread on ``host`` and a free port; ``stop()`` ends it."""

    def __init__(self, db: StoreSpec, host: str = "127.0.0.1", token: str | None = None) -> None:
        self.token = bind_token(host, token)
        self.app = create_app(db, Guard(host, self.token))
        self.server = uvicorn.Server(_config(self.app, host, 0))
        self.thread = threading.Thread(target=self.server.run, name="tether-console", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeFailure("the console did not start")
            time.sleep(0.02)
        self.host = host
        self.port = int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        return url(self.host, self.port)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.app.state.console.drivers.join(timeout=60)
