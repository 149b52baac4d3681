"""Resuming a run from the console: what ``tether resume RUN`` does, driven in a thread of the server.

The request takes the run's lease and verifies its log before answering (``session.resume``), so a run
another driver holds, a finished run or a broken log is refused on the page that asked; the drive itself
then goes on in the background and the run's page follows it through its live stream. A driver that
stops on an exception (not a run status: those are in the log) is remembered, with the error, for the
run's page to show.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

from tether.events.anchor import Signer
from tether.events.store import EventStore
from tether.kernel import session


@dataclass
class Drivers:
    """The runs this server is driving, and the last error of each driver that failed."""

    db: Path
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def resume(self, run_id: str) -> str:
        """Take the run and start driving it; returns its full id. Raises what ``session.resume`` raises."""
        store = EventStore.open(self.db, create=False, signer=Signer.configured())
        try:
            runtime = session.resume(store, run_id, session.Options())
        except BaseException:
            store.close()
            raise
        self.failures.pop(runtime.run_id, None)

        def drive() -> None:
            try:
                runtime.drive()
            except Exception as e:  # recorded for the page; the log itself stays valid (appends are whole)
                self.failures[runtime.run_id] = f"{e.__class__.__name__}: {e}"
            finally:
                store.close()

        thread = threading.Thread(target=drive, name=f"tether-resume-{runtime.run_id}", daemon=True)
        self.threads[runtime.run_id] = thread
        thread.start()
        return runtime.run_id

    def join(self, timeout: float) -> None:
        """Wait for every driver this server started (a server stopping lets them finish their step)."""
        for thread in list(self.threads.values()):
            thread.join(timeout)
