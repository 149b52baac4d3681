"""Starting a graph: check everything, record ``graph.started``, then let N worker processes drive it.

Nothing is created for a graph that does not check: GRAPH.yaml (fields, ids, needs, cycles), then the
graph's envelope and every node's strictly validated (as ``tether run`` would), each finding naming the
file and field. The graph log records each node envelope's contract hash (a worker refuses to run a node
whose envelope file changed since) and each node's resolved workspace (nodes whose workspaces overlap run one
at a time: :mod:`.fold`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tether.envelope.narrow import widenings
from tether.errors import EnvelopeInvalid, InputError, Problem
from tether.events.backends import StoreSpec
from tether.events.kinds_graph import GraphStarted
from tether.events.protocol import Store
from tether.kernel import session
from tether.kernel.approvals import whoami

from .fold import GRAPH_TASK
from .spec import Graph, load_graph


def check_graph(path: Path) -> tuple[Graph, dict[str, session.Loaded]]:
    """The graph and its envelopes strictly validated (key "graph", then each node id); :class:`EnvelopeInvalid`
    lists every problem found, each named with the graph's field that points at the envelope."""
    graph = load_graph(path)
    problems: list[Problem] = []
    loaded: dict[str, session.Loaded] = {}
    where = [("$.envelope", "graph", graph.envelope)] + [
        (f"$.nodes[{i}].envelope", n.id, n.envelope) for i, n in enumerate(graph.nodes)
    ]
    for field, name, envelope in where:
        try:
            loaded[name] = session.load_checked(envelope)
        except EnvelopeInvalid as e:
            problems += [Problem(f"{field} -> {p.path}", p.found, p.expected, p.file or envelope) for p in e.problems]
        except InputError as e:  # a missing or unreadable file: named with the graph's field
            problems.append(Problem(field, str(e).splitlines()[0], "a readable, valid envelope", str(path)))
    if problems:
        raise EnvelopeInvalid(problems)
    return graph, loaded


def _workspace(loaded: session.Loaded) -> Path:
    return (loaded.base_dir / loaded.envelope.environment.workspace).resolve()


def widening_problems(graph: Graph, loaded: dict[str, session.Loaded]) -> list[Problem]:
    """Every way a node's envelope holds more than the graph's (:func:`tether.envelope.narrow.widenings`).

    Workspaces are compared where they lead, not as written: envelopes in different directories name the
    same workspace with different relative paths."""
    parent = loaded["graph"]
    parent_ws = _workspace(parent)
    problems: list[Problem] = []
    for i, node in enumerate(graph.nodes):
        child = loaded[node.id]
        env = child.envelope
        if _workspace(child) == parent_ws:
            same = env.environment.model_copy(update={"workspace": parent.envelope.environment.workspace})
            env = env.model_copy(update={"environment": same})
        field = f"$.nodes[{i}].envelope"
        found = widenings(parent.envelope, env)
        problems += [Problem(f"{field} -> {w.path}", w.child, f"at most {w.parent}", node.envelope) for w in found]
    return problems


def start_graph(
    store: Store, path: Path, *, strict: bool = False, sandbox: str | None = None, by: str | None = None
) -> tuple[str, list[Problem]]:
    """Check the graph and create its log (``graph.started``): its run id and the narrowing findings (refused
    with ``strict``, recorded as warnings without). Nothing runs yet; nothing is created for a refused graph."""
    graph, loaded = check_graph(path)
    found = widening_problems(graph, loaded)
    if strict and found:
        raise EnvelopeInvalid(found)
    started = GraphStarted(
        name=graph.name,
        graph_path=str(path.resolve()),
        graph=graph.model_dump(mode="json"),
        contracts={name: one.envelope.contract_hash for name, one in loaded.items()},
        workspaces={n.id: str(_workspace(loaded[n.id])) for n in graph.nodes},
        lease_s=graph.lease_s,
        sandbox=sandbox,
        strict=strict,
        warnings=[str(p) for p in found],
        by=by or whoami(),
    )
    return store.create_run(f"{GRAPH_TASK}{graph.name}", [started]), found


def spawn_workers(db: StoreSpec, graph_run: str, n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` worker processes (``tether graph work``) on this machine; their progress goes to stderr."""
    argv = [sys.executable, "-m", "tether.cli.main", "graph", "work", graph_run, "--db", str(db)]
    return [subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL) for _ in range(n)]
