"""Event kinds of delegation: a run handing a sub-task to a child run (payloads only; docs/delegation.md).

- ``delegate.started``   in the parent's log, durable before the child run exists: which call delegates, the
  child's run id (chosen here, so a parent resumed after a crash finds the child instead of starting a second),
  the sub-task, and the child's narrowed tools, write set and budgets.
- ``delegate.finished``  in the parent's log: the child's receipt (status, summary, the evidence it verified)
  and what it spent, which the parent's budget fold counts as its own. A child that did not end (it waits for
  a human) is charged its whole budgets, since a resume may still spend them (``reserved``).

The child names its parent in its own ``run.started`` (``parent_run``, ``parent_call``), so the two logs
point at each other.
"""

from tether.plain import Field
from tether.status import RunStatus

from .payload import Payload, new_list, register

#: The budgets a child's spend is charged to in its parent (wall time is shared: the parent waits meanwhile).
CHARGED = ("usd", "tokens", "turns", "tool_calls")


@register("delegate.started")
class DelegateStarted(Payload):
    call_id: str = Field(description="The parent's delegate call.")
    child_run: str = Field(description="The child run's id.")
    task: str
    tools: list[str] = Field(description="The child's tools (a subset of the parent's).")
    write: list[str] = Field(description="The child's writable globs (covered by the parent's).")
    network: list[str] = Field(description="The hosts the child may reach (covered by the parent's).")
    budgets: dict[str, float | int | None] = Field(description="The child's budgets: at most what the parent had left.")
    contract_hash: str = Field(description="The child envelope's contract hash.")


@register("delegate.finished")
class DelegateFinished(Payload):
    call_id: str
    child_run: str
    status: RunStatus = Field(description="The child's status when it returned (terminal, or waiting).")
    summary: str = ""
    evidence: list[str] = Field(default_factory=new_list, description="The child's evidence: its event ids.")
    unknowns: list[str] = Field(default_factory=new_list)
    spend: dict[str, float] = Field(
        description="What the parent is charged, by budget (usd, tokens, turns, tool_calls)."
    )
    reserved: bool = Field(False, description="The child did not end: charged its whole budgets, not its spend so far.")
