"""Event kinds of a task graph's own log (``tether graph run``; see tether.graph and docs/graphs.md).

A graph is a run in the store whose log holds no agent turns, only the graph's transitions. Workers append
them with compare-and-append, so two workers deciding on the same head cannot both win:

- ``graph.started``    the validated graph: its envelope, every node (envelope, contract hash, workspace, task,
  needs, compensation steps), the lease time to live, the sandbox override, narrowing findings;
- ``node.leased``      a worker takes a node for one attempt (to run it, or to compensate it) until ``expires_at``;
- ``node.renewed``     the holder of that attempt pushes its expiry on (a heartbeat);
- ``node.started``     the attempt's child run, by id, appended BEFORE the child run is created, so a retry
  finds it and resumes it instead of starting a second one;
- ``node.completed`` / ``node.failed``   the child run's verified end status for one attempt; the fold counts
  only the first outcome of the node's current attempt (a worker that lost its lease and finished anyway
  appends an outcome the fold ignores);
- ``node.waiting``     the attempt's run waits for an approval: the lease is given back; once a person answers
  (``tether approve|deny``), the next worker resumes the run;
- ``graph.node``       (in the node's own run, not the graph's) the graph, node and attempt that started it;
- ``node.compensated`` one compensation step of a node: what the gate decided and what running it gave;
- ``graph.finished``   the graph's end status and every node's state.
"""

from __future__ import annotations

from typing import Any, Literal

from tether.plain import Field
from tether.status import RunStatus

from .payload import Payload, new_dict, new_list, register

Phase = Literal["run", "compensate"]


@register("graph.started")
class GraphStarted(Payload):
    name: str
    graph_path: str = Field(description="The GRAPH.yaml the graph was read from.")
    graph: dict[str, Any] = Field(description="The validated graph, node envelopes as absolute paths.")
    contracts: dict[str, str] = Field(
        default_factory=new_dict, description="Each node's (and the graph's) envelope contract hash when it started."
    )
    workspaces: dict[str, str] = Field(
        default_factory=new_dict,
        description="Each node's workspace, resolved: nodes whose workspaces overlap run one at a time.",
    )
    lease_s: float = Field(gt=0, description="How long a node lease lasts unless its holder renews it.")
    sandbox: str | None = Field(None, description="The sandbox backend every node's run uses (else its envelope's).")
    strict: bool = False
    warnings: list[str] = Field(default_factory=new_list, description="Narrowing findings reported, not refused.")
    by: str = ""


@register("node.leased")
class NodeLeased(Payload):
    node: str
    attempt: int = Field(ge=1)
    phase: Phase = "run"
    worker: str = Field(description="host:pid:token of the worker holding the lease.")
    expires_at: float = Field(description="Unix time the lease ends unless renewed.")


@register("node.renewed")
class NodeRenewed(Payload):
    node: str
    attempt: int = Field(ge=1)
    worker: str
    expires_at: float


@register("node.started")
class NodeStarted(Payload):
    node: str
    attempt: int = Field(ge=1)
    run_id: str = Field(description="The node's child run in the same store.")
    graph_run: str = Field(description="The graph's own run id (the parent link).")
    resumed: bool = Field(False, description="True: the child run of an earlier attempt is continued.")


@register("node.completed")
class NodeCompleted(Payload):
    node: str
    attempt: int = Field(ge=1)
    run_id: str
    status: RunStatus
    result: str = ""
    worker: str = ""


@register("node.failed")
class NodeFailed(Payload):
    node: str
    attempt: int = Field(ge=1)
    run_id: str | None = Field(None, description="None when the node failed before its run was created.")
    status: RunStatus
    reason: str = ""
    worker: str = ""


@register("node.waiting")
class NodeWaiting(Payload):
    node: str
    attempt: int = Field(ge=1)
    run_id: str
    approvals: list[str] = Field(default_factory=new_list, description="The pending approval ids of the node's run.")
    worker: str = ""


@register("graph.node")
class GraphNode(Payload):
    """In a node's own run, right after ``run.started``: which graph, node and attempt started it (the child's
    link to its parent, as ``node.started`` is the parent's link to the child)."""

    graph_run: str
    node: str
    attempt: int = Field(ge=1)


@register("node.compensated")
class NodeCompensated(Payload):
    node: str
    step: int = Field(ge=0, description="The step's index in the node's compensate list.")
    attempt: int = Field(ge=1)
    command: str
    verdict: str = Field(
        description="The gate's verdict: ALLOW, ASK or DENY (ASK and DENY are not run); NONE: the node's envelope "
        "changed or no longer loads, so nothing was decided and nothing ran."
    )
    rule: str = ""
    ran: bool
    ok: bool
    exit_code: int | None = None
    output: str = Field("", description="The end of stdout and stderr, bounded.")


@register("graph.finished")
class GraphFinished(Payload):
    status: RunStatus
    nodes: dict[str, str] = Field(default_factory=new_dict, description="Every node's final state.")
    reason: str = ""
