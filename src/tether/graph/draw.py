"""``tether graph show``: the graph's nodes with their states, as text or as JSON (both from one fold)."""

from __future__ import annotations

from typing import Any

from .fold import GraphState, NodeState


def depth_order(g: GraphState) -> list[tuple[int, str]]:
    """Nodes by depth (a node is one deeper than the deepest node it needs), in graph order within a depth."""
    depth: dict[str, int] = {}

    def of(node: str) -> int:
        if node not in depth:  # the graph was checked acyclic when it started
            depth[node] = 1 + max((of(n) for n in g.nodes[node].needs), default=-1)
        return depth[node]

    return sorted(((of(n), n) for n in g.nodes), key=lambda dn: (dn[0], list(g.nodes).index(dn[1])))


def as_dict(g: GraphState, now: float) -> dict[str, Any]:
    nodes = []
    for depth, node_id in depth_order(g):
        n = g.nodes[node_id]
        lease = n.lease
        state = g.state_of(node_id, now)
        nodes.append(
            {
                "id": node_id,
                "depth": depth,
                "state": state.value,
                "needs": n.needs,
                "attempt": n.attempt,
                "run_id": n.run_id,
                "status": n.status.value if n.status else None,
                "reason": n.reason,
                "lease": None
                if lease is None
                else {
                    "attempt": lease.attempt,
                    "phase": lease.phase,
                    "worker": lease.worker,
                    "expires_in_s": round(lease.expires_at - now, 1),
                },
                "compensated": {str(k): v for k, v in sorted(n.compensated.items())},
                "ignored_outcomes": n.ignored,
                "waits_for_workspace": g.blocked_by(node_id) if state is NodeState.PENDING else None,
            }
        )
    finished = g.finished
    return {
        "graph_run": g.run_id,
        "name": g.started.name,
        "status": finished.status.value if finished else "RUNNING",
        "reason": finished.reason if finished else "",
        "nodes": nodes,
    }


def as_text(view: dict[str, Any]) -> str:
    """Depth as indentation, an arrow from the nodes each one needs, then what each attempt left behind."""
    lines = [f"graph {view['name']} ({view['graph_run']}): {view['status']}"]
    if view["reason"]:
        lines.append(f"  {view['reason']}")
    width = max(len(n["id"]) for n in view["nodes"])
    for n in view["nodes"]:
        pad = "  " * (n["depth"] + 1)
        needs = f"  <- {', '.join(n['needs'])}" if n["needs"] else ""
        line = f"{pad}[{n['state']:>12}] {n['id']:<{width}}{needs}"
        if n["run_id"]:
            line += f"  run {n['run_id']} (attempt {n['attempt']})"
        lines.append(line)
        if n["reason"]:
            lines.append(f"{pad}{'':14}{n['reason'].splitlines()[0][:160]}")
        if n["waits_for_workspace"]:
            lines.append(f"{pad}{'':14}waits for node {n['waits_for_workspace']}: it runs on the same workspace")
        if n["compensated"]:
            steps = ", ".join(f"step {k} {'ok' if ok else 'NOT done'}" for k, ok in n["compensated"].items())
            lines.append(f"{pad}{'':14}compensation: {steps}")
        if n["ignored_outcomes"]:
            seqs = ", ".join(str(s) for s in n["ignored_outcomes"])
            lines.append(f"{pad}{'':14}outcomes ignored (stale or duplicate attempt): seq {seqs}")
    return "\n".join(lines)
