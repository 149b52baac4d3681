"""The Python API: ``Harness(envelope, model=…, tools=[…]).run(task)``.

One synchronous core; ``arun`` runs it in a worker thread rather than keeping a
second, async copy of the loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tether.envelope.schema import Envelope
from tether.errors import InputError
from tether.events.anchor import Signer
from tether.events.backends import StoreSpec, default_spec, local_dir, open_store, spec_of
from tether.events.protocol import Store
from tether.models.base import Model
from tether.tools.contract import Tool

from . import scheduler, session
from .approvals import ApprovalAnswer, ApprovalRequest, Approver, record_answer, whoami
from .continuation import BUDGET_OPTIONS, Request
from .fork import fork
from .outcome import OutputContract
from .runtime import EventSink
from .schedule import Schedule


class Harness:
    """Run governed agent tasks against one envelope.

    ``envelope`` is a path (strictly validated, plan binding included) or an
    :class:`Envelope` (validated except the plan binding, relative to ``base_dir``).
    Without an ``approver`` the run stops in WAITING_APPROVAL on an ASK; answer
    with :meth:`approve` / :meth:`deny` (or the CLI) and call :meth:`resume`.
    """

    def __init__(
        self,
        envelope: Envelope | str | Path,
        *,
        model: Model | str | None = None,
        tools: Sequence[Tool] = (),
        workspace: str | Path | None = None,
        db: str | Path | None = None,
        sandbox: str | None = None,
        approver: Approver | None = None,
        on_event: EventSink | None = None,
        base_url: str | None = None,
    ) -> None:
        self.loaded = session.load_checked(envelope)
        ws = Path(workspace) if workspace else (self.loaded.base_dir / self.loaded.envelope.environment.workspace)
        self.options = session.Options(
            model=model,
            base_url=base_url,
            workspace=ws.resolve(),
            sandbox=sandbox,
            tools=tools,
            approver=approver,
            on_event=on_event,
        )
        self.envelope = self.loaded.envelope
        where = self.options.workspace or Path.cwd()
        self.db: StoreSpec = spec_of(db) if db else default_spec(where)
        self.local = local_dir(self.db, where)  # memory.db: beside a file, in the workspace's .tether/ for a URL

    def store(self) -> Store:
        """The run store (a file, or a ``postgresql://`` URL); with an anchor key configured (``tether key init``),
        checkpoints are signed."""
        return open_store(self.db, signer=Signer.configured(), local=self.local)

    def run(self, task: str, *, continue_plan: bool = False) -> OutputContract:
        """Run ``task``; ``continue_plan`` starts from the task list of the latest earlier run on the workspace."""
        options = dataclasses.replace(self.options, continue_plan=continue_plan)
        with self.store() as store:
            source = self.loaded.path or self.envelope
            return session.start(store, source, task, options).drive()

    async def arun(self, task: str, *, continue_plan: bool = False) -> OutputContract:
        return await asyncio.to_thread(lambda: self.run(task, continue_plan=continue_plan))

    def resume(
        self,
        run_id: str,
        *,
        note: str | None = None,
        budget: Mapping[str, float] | None = None,
        attempts: int = 0,
        by: str | None = None,
        trust_imported: bool = False,
    ) -> OutputContract:
        """Continue a stopped run, as ``tether resume`` does (:mod:`tether.kernel.continuation` says which stop
        needs what): ``note`` is a message the model is shown, ``budget`` raises limits by name (usd, tokens,
        turns, wall_s, tool_calls), ``attempts`` allows more refused completion claims. Raises
        :class:`~tether.kernel.continuation.ResumeRefused` for a run that cannot go on as asked, and
        :class:`~tether.kernel.continuation.ImportedRun` for an imported one unless ``trust_imported``.
        """
        raised = {BUDGET_OPTIONS.get(name, name): float(value) for name, value in (budget or {}).items()}
        request = Request(by or whoami(), "Harness.resume", note, raised, attempts)
        options = dataclasses.replace(self.options, trust_imported=trust_imported)
        with self.store() as store:
            return session.resume(store, run_id, options, request).drive()

    async def aresume(
        self,
        run_id: str,
        *,
        note: str | None = None,
        budget: Mapping[str, float] | None = None,
        attempts: int = 0,
        by: str | None = None,
        trust_imported: bool = False,
    ) -> OutputContract:
        return await asyncio.to_thread(
            lambda: self.resume(
                run_id, note=note, budget=budget, attempts=attempts, by=by, trust_imported=trust_imported
            )
        )

    def fork(
        self,
        run_id: str,
        at_seq: int,
        workspace: str | Path,
        *,
        envelope: str | Path | None = None,
        model: Model | str | None = None,
        trust_imported: bool = False,
    ) -> OutputContract:
        """Fork ``run_id`` at ``at_seq`` into the new ``workspace`` (rebuilt from the log) and go on live.

        As ``tether fork``: the fork shares the parent's log up to ``at_seq``; ``envelope`` and ``model``
        replace the parent's for the continuation (see :mod:`tether.kernel.fork`). An imported run goes on under
        its own envelope only with ``trust_imported``.
        """
        options = dataclasses.replace(self.options, trust_imported=trust_imported)
        options = dataclasses.replace(options, model=model) if model is not None else options
        with self.store() as store:
            source = Path(envelope) if envelope is not None else None
            return fork(store, run_id, at_seq, Path(workspace), options, envelope=source).drive()

    def approve(self, approval_id: str, *, for_run: bool = False, by: str | None = None) -> ApprovalRequest:
        """Approve a pending action (then :meth:`resume`); refused on a run another driver holds or a broken log."""
        with self.store() as store:
            return record_answer(store, approval_id, ApprovalAnswer("run" if for_run else "once", by or whoami()))

    def deny(self, approval_id: str, reason: str, *, by: str | None = None) -> ApprovalRequest:
        """Deny a pending action with a reason the model is told (then :meth:`resume`)."""
        with self.store() as store:
            return record_answer(store, approval_id, ApprovalAnswer("deny", by or whoami(), reason))

    def schedule(self, name: str, cron: str, task: str, *, now: datetime | None = None, **settings: Any) -> Schedule:
        """Add a schedule that fires ``task`` under this envelope (a file: its bytes are hashed) on ``cron``, as
        ``tether schedule add`` does; ``settings`` are :func:`~tether.kernel.scheduler.define`'s (budget,
        daily_usd, missed, grace_s, max_failures, noop_if). See docs/schedules.md."""
        if self.loaded.path is None:
            raise InputError("a schedule needs an envelope file: a firing checks its bytes against the ones added")
        at = now or datetime.now(UTC)
        added = scheduler.define(
            name, cron=cron, envelope=self.loaded.path, task=task, now=at, workspace=self.options.workspace, **settings
        )
        with self.store() as store:
            return scheduler.add(store, added)

    def fire_schedules(self, now: datetime | None = None) -> list[scheduler.Outcome]:
        """One scheduler pass over the store's schedules at ``now`` (default: the clock), as ``tether scheduler
        --once``, with this harness's model, sandbox and event sink."""
        o = self.options
        options = scheduler.Options(model=o.model, sandbox=o.sandbox, on_event=o.on_event)
        with self.store() as store:
            return scheduler.tick(store, now or datetime.now(UTC), options)
