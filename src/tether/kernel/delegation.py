"""Delegation: a ``delegate`` call runs a child run to its end and hands its receipt back (docs/delegation.md).

In order, inside the parent's ``action.started`` / ``action.completed`` bracket:

1. the child's envelope is derived from the parent's by :func:`tether.envelope.narrow.narrow` — the tools, write
   set and budget share asked for, each budget at most what the parent has left — or the call fails naming
   every widening (``widening``) or the exhausted budget (``budget``);
2. ``delegate.started`` is appended to the parent's log (durable) with the child's run id, chosen here;
3. the child run is created with that id, its parent named in its ``run.started``, and driven to its end by
   the same kernel: same store, same workspace and sandbox backend, its own lease;
4. ``delegate.finished`` records the child's receipt and its spend, which the parent's budget fold counts.

A parent resumed after a crash re-runs the call (the tool is idempotent because of what follows): a call with a
``delegate.finished`` returns that receipt; one with only ``delegate.started`` resumes the child it names, or
creates it under that id if the crash came before it existed. A second child is never started.

How the child run is started or resumed is :mod:`tether.kernel.session`'s job, handed in as ``children`` (the
session imports this module, not the other way round).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from tether.envelope.narrow import NarrowingError, narrow
from tether.envelope.schema import Budgets, Envelope
from tether.events.kinds_delegate import CHARGED, DelegateFinished, DelegateStarted
from tether.events.store import new_run_id
from tether.models.base import Model
from tether.status import RunStatus
from tether.tools.context import Delegation
from tether.tools.delegate import child_tools
from tether.tools.result import ToolResult

from .outcome import OutputContract
from .runtime import Runtime


class Children(Protocol):
    """Starts the child a ``delegate.started`` names (or resumes it, if it exists) and drives it to its end."""

    def __call__(self, parent: Runtime, started: DelegateStarted, envelope: Callable[[], Envelope]) -> Runtime: ...


@dataclass(frozen=True)
class Delegator:
    """The kernel's side of ``ToolContext.delegate`` for one parent run."""

    children: Children

    def __call__(self, parent: Runtime, call_id: str, ask: Delegation) -> ToolResult:
        done = _finished(parent, call_id)
        if done is not None:  # the child's receipt was recorded before a crash: hand it back again
            return receipt(done)
        started = parent.state.children.get(call_id)
        if started is None:
            try:
                child = child_envelope(parent, ask)
            except NarrowingError as e:
                lines = "\n".join(f"- {w}" for w in e.widenings)
                return ToolResult.failure(
                    "widening",
                    f"delegate refused, nothing was started: the child would hold more than this run:\n{lines}",
                    widenings=[w.to_dict() for w in e.widenings],
                )
            except Exhausted as e:
                return ToolResult.failure("budget", f"delegate refused, nothing was started: {e}")
            fs, net = child.environment.filesystem, child.environment.network
            started = DelegateStarted(
                call_id=call_id,
                child_run=new_run_id(),
                task=ask.task,
                tools=[t.name for t in child.tools],
                write=list(fs.write) if fs is not None else [],
                network=list(net.allow) if net is not None else [],
                budgets=child.budgets.model_dump(),
                contract_hash=child.contract_hash,
            )
            parent.append(started)  # durable before the child exists: a crash from here on finds it by this id
        recorded = started

        def envelope() -> Envelope:  # the child as recorded: the same narrowing, the budgets it was granted
            return narrow(
                parent.env,
                tools=recorded.tools,
                write=recorded.write,
                network=recorded.network,
                budgets=Budgets(**recorded.budgets),
            )

        runtime = self.children(parent, recorded, envelope)
        contract = runtime.drive()
        finished = _receipt_of(recorded, contract, runtime)
        parent.append(finished)
        return receipt(finished)


class Exhausted(Exception):
    """A budget of the parent has nothing left to give a child."""


def child_envelope(parent: Runtime, ask: Delegation) -> Envelope:
    """The child's envelope: what ``ask`` narrows to, each budget also capped by what the parent has left."""
    used = parent.state.usage(parent.now())
    left: dict[str, float] = {}
    for name, value in used.items():
        limit = parent.state.limits.get(name)
        if limit is None:
            continue
        left[name] = float(limit) - value
        if left[name] <= 0:
            raise Exhausted(f"budgets.{name} is exhausted: used {value:g} of {float(limit):g}")
    tools = child_tools(parent.env, ask.tools)
    ceiling = Budgets(**{k: (int(v) if k in ("turns", "tokens", "tool_calls") else v) for k, v in left.items()})
    return narrow(
        parent.env, tools=tools, write=ask.write, network=ask.network, budget_share=ask.budget_share, budgets=ceiling
    )


def child_model(model: Model, call_id: str) -> Model:
    """The model a child of ``call_id`` talks to: the parent's, unless it plays a script (each child its own)."""
    for_child = getattr(model, "for_child", None)
    return for_child(call_id) if callable(for_child) else model


def receipt(done: DelegateFinished) -> ToolResult:
    """What the parent's model is shown: the child's status, summary, evidence and spend."""
    spent = ", ".join(f"{k}={v:g}" for k, v in done.spend.items())
    lines = [f"child run {done.child_run} ended {done.status}: {done.summary or '(no summary)'}"]
    if done.evidence:
        lines.append(f"evidence (the child's verified events): {', '.join(done.evidence[:20])}")
    if done.unknowns:
        lines.append("unknowns: " + "; ".join(done.unknowns[:10]))
    lines.append(f"charged to this run: {spent}" + (" (its whole budgets: it has not ended)" if done.reserved else ""))
    data = done.model_dump(mode="json")
    if done.status in (RunStatus.COMPLETE, RunStatus.NO_OP):
        return ToolResult(ok=True, content="\n".join(lines), data=data)
    return ToolResult.failure(f"child_{done.status.value.lower()}", "\n".join(lines), **data)


def _finished(parent: Runtime, call_id: str) -> DelegateFinished | None:
    return parent.state.children_done.get(call_id)


def _receipt_of(started: DelegateStarted, contract: OutputContract, child: Runtime) -> DelegateFinished:
    """The child's outcome and its charge: its spend, or, when it has not ended, its whole budgets."""
    state = child.state
    ended = state.status.terminal
    used = state.usage()
    spend: dict[str, float] = {}
    for name in CHARGED:
        limit = state.limits.get(name)
        spend[name] = float(used[name] if ended or limit is None else max(float(limit), used[name]))
    return DelegateFinished(
        call_id=started.call_id,
        child_run=started.child_run,
        status=contract.status,
        summary=contract.result if ended else contract.next_action,
        evidence=contract.evidence,
        unknowns=contract.unknowns,
        spend=spend,
        reserved=not ended,
    )
