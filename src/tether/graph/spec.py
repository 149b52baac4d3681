"""GRAPH.yaml: a task graph's definition, read and checked before anything runs.

A graph names its own envelope (the ceiling) and its nodes; each node is a run with its own envelope and
task, waits for the nodes it ``needs``, and may declare compensation steps (shell commands run, through the
gate and the sandbox of the node's envelope, when the graph fails). Every finding names the file, the field
(a JSON path) and what was expected, and all are reported together; a cycle is refused naming its nodes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tether.envelope.document import read_document
from tether.envelope.load import parse_model
from tether.errors import EnvelopeInvalid, Problem

NODE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MAX_NODES = 500


class Step(BaseModel):
    """One compensation step: a shell command, decided by the node envelope's gate, run in its sandbox."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: str = Field(min_length=1, max_length=4096)


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: str
    envelope: str = Field(min_length=1, description="The node's envelope, relative to the graph file.")
    task: str = Field(min_length=1)
    needs: list[str] = Field(default_factory=list)
    compensate: list[Step] = Field(
        default_factory=list, description="Undo steps in the order of the effects they undo; run last first."
    )


class Graph(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int = Field(1, ge=1, le=1)
    name: str = Field(min_length=1, max_length=200)
    envelope: str = Field(min_length=1, description="The graph's envelope: every node's may only narrow it.")
    lease_s: float = Field(30.0, ge=0.5, le=3600, description="A node lease's time to live, renewed by its holder.")
    nodes: list[Node] = Field(min_length=1, max_length=MAX_NODES)

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)


def load_graph(path: Path) -> Graph:
    """Read GRAPH.yaml; envelope paths become absolute (relative to the file). Raises :class:`EnvelopeInvalid`."""
    file = str(path)
    graph = parse_model(Graph, read_document(path), file)
    problems = structure_problems(graph, file)
    if problems:
        raise EnvelopeInvalid(problems)
    base = path.resolve().parent
    return graph.model_copy(
        update={
            "envelope": str((base / graph.envelope).resolve()),
            "nodes": [n.model_copy(update={"envelope": str((base / n.envelope).resolve())}) for n in graph.nodes],
        }
    )


def structure_problems(graph: Graph, file: str) -> list[Problem]:
    """Node ids well formed and unique, every ``needs`` naming another node, and no cycle."""
    problems: list[Problem] = []
    seen: set[str] = set()
    for i, node in enumerate(graph.nodes):
        if not NODE_ID.match(node.id):
            problems.append(Problem(f"$.nodes[{i}].id", repr(node.id), "letters, digits, '_', '-', '.'", file))
        if node.id in seen:
            problems.append(Problem(f"$.nodes[{i}].id", repr(node.id), "an id no other node has", file))
        seen.add(node.id)
    ids = {n.id for n in graph.nodes}
    for i, node in enumerate(graph.nodes):
        for j, need in enumerate(node.needs):
            if need not in ids or need == node.id:
                expected = "another node's id" if need == node.id else f"one of {sorted(ids)}"
                problems.append(Problem(f"$.nodes[{i}].needs[{j}]", repr(need), expected, file))
    if not problems:
        cycle = find_cycle({n.id: n.needs for n in graph.nodes})
        if cycle:
            where = f"$.nodes[{[n.id for n in graph.nodes].index(cycle[0])}].needs"
            problems.append(Problem(where, "a cycle: " + " -> ".join([*cycle, cycle[0]]), "no cycle", file))
    return problems


def find_cycle(needs: dict[str, list[str]]) -> list[str]:
    """One cycle of the dependency graph (its nodes in order), or [] when there is none. Iterative DFS."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in needs:
        if state.get(root):
            continue
        path: list[str] = []
        stack: list[tuple[str, int]] = [(root, 0)]
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            if i < len(needs[node]):
                stack.append((node, i + 1))
                nxt = needs[node][i]
                if state.get(nxt) == 1:
                    return path[path.index(nxt) :]
                if not state.get(nxt):
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return []


def graph_of(recorded: dict[str, Any]) -> Graph:
    """The graph as ``graph.started`` recorded it (already validated when it was recorded)."""
    return Graph.model_validate(recorded)
