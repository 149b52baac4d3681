"""Resuming or forking a run from the console: what ``tether resume RUN`` and ``tether fork RUN --at SEQ`` do,
driven in a thread of the server.

The request takes the run's lease and verifies its log before answering (``session.resume``,
``kernel.fork``), so a run another driver holds, a run that cannot go on as asked or a broken log is refused
on the page that asked; the drive itself
then goes on in the background and the run's page follows it through its live stream. A driver that
stops on an exception (not a run status: those are in the log) is remembered, with the error, for the
run's page to show.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from tether.events.anchor import Signer
from tether.events.backends import StoreSpec, open_store
from tether.events.protocol import Store
from tether.kernel import session
from tether.kernel.continuation import Request
from tether.kernel.fork import fork, fork_workspace
from tether.kernel.runtime import Runtime


@dataclass
class Drivers:
    """The runs this server is driving, and the last error of each driver that failed."""

    db: StoreSpec
    threads: dict[str, threading.Thread] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    def resume(self, run_id: str, request: Request) -> str:
        """Take the run and start driving it; returns its full id. Raises what ``session.resume`` raises."""
        store = self._open()
        try:
            runtime = session.resume(store, run_id, session.Options(), request)
        except BaseException:
            store.close()
            raise
        return self._drive(store, runtime)

    def fork(self, run_id: str, at_seq: int, by: str) -> str:
        """Fork the run at ``at_seq`` (its workspace beside the parent's) and drive the fork; returns its id."""
        store = self._open()
        try:
            parent = store.run(run_id).run_id
            runtime = fork(store, parent, at_seq, fork_workspace(store, parent, at_seq), session.Options(), by=by)
        except BaseException:
            store.close()
            raise
        return self._drive(store, runtime)

    def _open(self) -> Store:
        return open_store(self.db, create=False, signer=Signer.configured())

    def _drive(self, store: Store, runtime: Runtime) -> str:
        self.failures.pop(runtime.run_id, None)

        def drive() -> None:
            try:
                runtime.drive()
            except Exception as e:  # recorded for the page; the log itself stays valid (appends are whole)
                self.failures[runtime.run_id] = f"{e.__class__.__name__}: {e}"
            finally:
                store.close()

        thread = threading.Thread(target=drive, name=f"tether-drive-{runtime.run_id}", daemon=True)
        self.threads[runtime.run_id] = thread
        thread.start()
        return runtime.run_id

    def join(self, timeout: float) -> None:
        """Wait for every driver this server started (a server stopping lets them finish their step)."""
        for thread in list(self.threads.values()):
            thread.join(timeout)
