"""Building task graphs for tests: node envelopes compiled from the built-in template, scripted models only."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tether.envelope.compile import builtin_template, compile_envelope


def bash(command: str) -> list[dict[str, Any]]:
    """A scripted trajectory: one bash call, then finish."""
    return [
        {"tool_calls": [{"name": "bash", "args": {"command": command}}]},
        {"tool_calls": [{"name": "finish", "args": {"summary": f"ran {command}"}}]},
    ]


def node_envelope(
    directory: Path,
    turns: list[dict[str, Any]],
    *,
    workspace: str = "../ws",
    tweak: Callable[[dict[str, Any]], None] | None = None,
) -> Path:
    """A compiled envelope (plan, template, trajectory) in ``directory``: writes to out/ only, echo allowed,
    the policy sensor the only required one, so a node is a real governed run that costs little."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "plan.yaml").write_text(builtin_template("plan.yaml"))
    env = yaml.safe_load(builtin_template("envelope.yaml"))
    env["environment"]["workspace"] = workspace
    env["environment"]["filesystem"]["write"] = ["out/**"]
    env["verification"] = {"sensors": [{"name": "policy", "required": True}], "must_fix": "none"}
    env["outputs"]["no_op"] = "never"
    env["budgets"]["churn_pct"] = 100
    env["permissions"]["allow"].append(
        {"id": "allow-echo", "rule": "bash(echo:*)", "reason": "the test's effect", "match": ["echo hi"]}
    )
    if tweak is not None:
        tweak(env)
    (directory / "template.yaml").write_text(yaml.safe_dump(env, sort_keys=False))
    compile_envelope(directory / "plan.yaml", directory / "envelope.yaml", directory / "template.yaml")
    (directory / "trajectory.yaml").write_text(yaml.safe_dump({"turns": turns}, sort_keys=False))
    return directory / "envelope.yaml"


def write_graph(root: Path, nodes: dict[str, dict[str, Any]], *, lease_s: float = 30.0, name: str = "g") -> Path:
    """GRAPH.yaml under ``root`` with a shared workspace ``root/ws`` (out/ made), the graph's own envelope, and
    one envelope per node. ``nodes``: id -> {turns, needs?, compensate? (commands), tweak?, workspace? (a
    directory under ``root`` instead of ws)}."""
    (root / "ws" / "out").mkdir(parents=True, exist_ok=True)
    node_envelope(root / "top", bash("true"))
    listed = []
    for node_id, spec in nodes.items():
        workspace = spec.get("workspace", "ws")
        (root / workspace / "out").mkdir(parents=True, exist_ok=True)
        node_envelope(root / node_id, spec["turns"], workspace=f"../{workspace}", tweak=spec.get("tweak"))
        entry: dict[str, Any] = {"id": node_id, "envelope": f"{node_id}/envelope.yaml", "task": f"node {node_id}"}
        if spec.get("needs"):
            entry["needs"] = spec["needs"]
        if spec.get("compensate"):
            entry["compensate"] = [{"command": c} for c in spec["compensate"]]
        listed.append(entry)
    graph = {"name": name, "envelope": "top/envelope.yaml", "lease_s": lease_s, "nodes": listed}
    path = root / "graph.yaml"
    path.write_text(yaml.safe_dump(graph, sort_keys=False))
    return path
